package schedulerperf

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/rest"
	kubescheduler "k8s.io/kubernetes/pkg/scheduler"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"

	_ "github.com/lockstep-sched/lockstep/pkg/apis/config/scheme"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/scheduler"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// lockstep holds lockstep's plugins; the lockstep test cases enable them through
// manifests/scheduler-config.yaml (their pods use schedulerName lockstep-scheduler). Each
// workload's scheduler gets its own components; they lead at once (scheduler_perf runs no
// leader election), so status is written as in a real cluster.
var lockstep = func() *scheduler.Scheduler {
	s := scheduler.New(scheduler.Options{})
	s.Elected().Lead()
	return s
}()

// BenchmarkPerfScheduling runs performance-config.yaml. Select workloads with
// -perf-scheduling-label-filter (short: the small variants; performance: 5000 nodes; waiting:
// the waiting workloads at 1000 to 15,000 nodes).
func BenchmarkPerfScheduling(b *testing.B) {
	// A workload fails unless all its pods are scheduled in time: a gang left partially
	// bound fails it. Native topology-aware scheduling of 1000-pod gangs takes minutes on 2
	// cores; the short workloads take seconds.
	timeout := 30 * time.Minute
	if strings.Contains(perf.PerfSchedulingLabelFilter, "short") {
		timeout = 3 * time.Minute
	}
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "lockstep", lockstep.Registry(),
		perf.WithPrepareFn(prepare), perf.WithPodsSchedulingTimeout(timeout),
		perf.WithPreRunFn(fastEtcd), perf.WithNodeUpdateFn(slowAfterNodes))
}

// fastEtcd runs before a workload's etcd starts: its nodes are created without added latency.
func fastEtcd(ktesting.TContext, *perf.Workload) (func(), error) { return nil, setEtcdLatency("") }

// slowAfterNodes runs once a workload's nodes exist: from then on, with LOCKSTEP_ETCD_LATENCY
// set, every round trip to etcd takes that long (main_test.go).
func slowAfterNodes(ktesting.TContext, *kubescheduler.Scheduler, *perf.Workload, *v1.NodeList) error {
	return setEtcdLatency(etcdLatency)
}

// prepare readies a workload's apiserver for lockstep, counts the requests it serves,
// records the window of a waiting workload (window_test.go), slows the binds of a SlowBinds
// mode (slowbinds_test.go) and, for a process mode, starts lockstep's binary
// (process_test.go).
func prepare(tCtx ktesting.TContext) error {
	countRequests(tCtx)
	recordWindow(tCtx)
	if err := installCRDs(tCtx); err != nil {
		return err
	}
	if err := slowBinds(tCtx); err != nil {
		return err
	}
	if processMode(tCtx) {
		return startProcess(tCtx)
	}
	return nil
}

// installCRDs creates lockstep's CRDs from manifests/crds once the apiserver of a workload
// runs (the scheduler is already running: lockstep's plugins wait for the API).
func installCRDs(tCtx ktesting.TContext) error {
	cfg := rest.CopyConfig(tCtx.RESTConfig())
	extensions, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cfg.ContentType = "application/json"
	lockstep, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return testenv.InstallCRDs(tCtx, extensions, lockstep)
}
