// Command lockstep-scheduler is the kube-scheduler with lockstep's plugins compiled in. It
// takes the kube-scheduler's flags; run it with a KubeSchedulerConfiguration whose profile
// (schedulerName: lockstep-scheduler) enables the plugins, as manifests/ does.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"

	"github.com/lockstep-sched/lockstep/pkg/scheduler"
)

func main() {
	os.Exit(cli.Run(scheduler.NewCommand()))
}
