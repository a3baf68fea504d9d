package schedulerperf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
	"sigs.k8s.io/yaml"

	_ "github.com/lockstep-sched/lockstep/pkg/apis/config/scheme"
	"github.com/lockstep-sched/lockstep/pkg/plugins/gang"
	"github.com/lockstep-sched/lockstep/pkg/plugins/topology"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// registry holds lockstep's plugins; the lockstep test cases enable them through
// manifests/scheduler-config.yaml (their pods use schedulerName lockstep-scheduler).
var registry = frameworkruntime.Registry{
	gang.Name:     gang.New,
	topology.Name: topology.New,
}

// BenchmarkPerfScheduling runs performance-config.yaml. Select workloads with
// -perf-scheduling-label-filter (short: the small variants; performance: 5000 nodes).
func BenchmarkPerfScheduling(b *testing.B) {
	// A workload fails unless all its pods are scheduled in time: a gang left partially
	// bound fails it. Native topology-aware scheduling of 1000-pod gangs takes minutes on 2
	// cores; the short workloads take seconds.
	timeout := 30 * time.Minute
	if strings.Contains(perf.PerfSchedulingLabelFilter, "short") {
		timeout = 3 * time.Minute
	}
	perf.RunBenchmarkPerfScheduling(b, "performance-config.yaml", "lockstep", registry,
		perf.WithPrepareFn(installCRDs), perf.WithPodsSchedulingTimeout(timeout))
}

// installCRDs creates lockstep's CRDs from manifests/crds once the apiserver of a workload
// runs (the scheduler is already running: lockstep's plugins wait for the API).
func installCRDs(tCtx ktesting.TContext) error {
	client, err := apiextensionsclient.NewForConfig(tCtx.RESTConfig())
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "manifests", "crds", "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return err
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(tCtx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if err := wait.PollUntilContextTimeout(tCtx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return err
		}
	}
	return nil
}
