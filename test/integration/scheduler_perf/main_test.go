// Package schedulerperf benchmarks lockstep on upstream's scheduler_perf harness
// (k8s.io/kubernetes/test/integration/scheduler_perf): the same workload shapes upstream uses
// for its native gang and topology plugins, run for plain per-pod scheduling, the native
// v1.37 plugins (feature gates on) and lockstep, in one run on one machine.
//
//	make bench        # the short variants (10-100 nodes): part of make test
//	make bench-perf   # the 5000-node variants; see docs/benchmarks.md
package schedulerperf

import (
	"fmt"
	"os"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/lockstep-sched/lockstep/pkg/plugins/gang"
	"github.com/lockstep-sched/lockstep/pkg/plugins/topology"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	if err := testenv.EnsureEtcd(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Collect the per-plugin metrics of lockstep's plugins too.
	perf.PluginNames = append(perf.PluginNames, gang.Name, topology.Name)
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
