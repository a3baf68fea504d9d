// Package schedulerperf benchmarks lockstep on upstream's scheduler_perf harness
// (k8s.io/kubernetes/test/integration/scheduler_perf): the same workload shapes upstream uses
// for its native gang and topology plugins, run for plain per-pod scheduling, the native
// v1.37 plugins (feature gates on) and lockstep, in one run on one machine.
//
//	make bench           # the short variants (10-100 nodes): part of make test
//	make bench-perf      # the 5000-node variants; see docs/benchmarks.md
//	make bench-waiting   # what waiting gangs cost per minute (window_test.go)
package schedulerperf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/pkg/features"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
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
	if err := slowEtcd(os.Getenv("LOCKSTEP_ETCD_LATENCY")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Collect the per-plugin metrics of lockstep's plugins too.
	perf.PluginNames = append(perf.PluginNames, gang.Name, topology.Name)
	if err := registerSchedulerMetrics(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := perf.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// slowEtcd, given a latency (LOCKSTEP_ETCD_LATENCY=250ms), puts hack/slowetcd on PATH as
// etcd in front of the real one: once a workload's nodes exist (slowAfterNodes), its
// apiserver waits that long for each round trip to etcd, as a busy production apiserver makes
// its clients wait, where the in-process one answers a bind in a millisecond and hides what
// caps binds in flight. Nodes are created at full speed: one by one, they would take minutes.
func slowEtcd(latency string) error {
	if latency == "" {
		return nil
	}
	if _, err := time.ParseDuration(latency); err != nil {
		return fmt.Errorf("LOCKSTEP_ETCD_LATENCY: %w", err)
	}
	real, err := exec.LookPath("etcd")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "slowetcd")
	if err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "etcd"), "./hack/slowetcd")
	build.Dir = testenv.RepoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building hack/slowetcd: %w", err)
	}
	etcdLatency, latencyFile = latency, filepath.Join(dir, "latency")
	os.Setenv("SLOWETCD_REAL", real)
	os.Setenv("SLOWETCD_LATENCY_FILE", latencyFile)
	return os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// etcdLatency is LOCKSTEP_ETCD_LATENCY, and latencyFile where hack/slowetcd reads the latency
// it adds now ("" when there is no slowetcd).
var etcdLatency, latencyFile string

// setEtcdLatency sets the latency hack/slowetcd adds from now on, if it runs.
func setEtcdLatency(d string) error {
	if latencyFile == "" {
		return nil
	}
	if err := os.WriteFile(latencyFile, []byte(d), 0o644); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond) // slowetcd reads it every 100 ms
	return nil
}

// registerSchedulerMetrics registers kube-scheduler's metrics with GenericWorkload on. The
// scheduler registers them once per process, those of native pod groups only if the gate is
// on at that time, so the first workload's gates would decide: after a Warmup or a plain
// workload, the native modes would count no pod-group attempt
// (scheduler_podgroup_schedule_attempts_total, the waiting workloads' gang attempts).
func registerSchedulerMetrics() error {
	gate := utilfeature.DefaultMutableFeatureGate
	was := gate.Enabled(features.GenericWorkload)
	if err := gate.SetFromMap(map[string]bool{string(features.GenericWorkload): true}); err != nil {
		return err
	}
	schedulermetrics.Register()
	return gate.SetFromMap(map[string]bool{string(features.GenericWorkload): was})
}
