package testenv

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lockstep-sched/lockstep/internal/trainercontroller"
)

// The upstream Kubeflow Trainer v2 controller manager (github.com/kubeflow/trainer/v2, the
// version pinned in tools/controllers/go.mod) runs as its own process like the JobSet
// controller, next to it: it turns TrainJobs into JobSets, which the JobSet controller turns
// into Jobs, and, for runtimes with the coscheduling podGroupPolicy, into scheduler-plugins
// PodGroups. No webhook is registered with the apiserver (see internal/trainercontroller):
// the JobSet template of a test runtime must set what the JobSet webhook would default (see
// DefaultJobSet).

var (
	// TrainJobGVR is the TrainJob resource served once the Trainer CRDs are installed.
	TrainJobGVR = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	// ClusterTrainingRuntimeGVR is the cluster-scoped runtime TrainJobs refer to.
	ClusterTrainingRuntimeGVR = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "clustertrainingruntimes"}
	// TrainingRuntimeGVR is the namespaced runtime.
	TrainingRuntimeGVR = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainingruntimes"}
	// SchedulerPluginsPodGroupGVR is the scheduler-plugins PodGroup Trainer's coscheduling
	// plugin creates (not lockstep's PodGroup, scheduling.lockstep.dev).
	SchedulerPluginsPodGroupGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
)

var trainerBuild = toolBuild{module: "controllers"}

// trainerController builds bin/trainer-controller-manager once per test process and returns
// it with the directories of the github.com/kubeflow/trainer/v2 and
// sigs.k8s.io/scheduler-plugins modules.
func trainerController(t *testing.T) (binary, trainerDir, schedulerPluginsDir string) {
	t.Helper()
	bin, dirs := trainerBuild.get(t, "trainer-controller-manager", "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
		"github.com/kubeflow/trainer/v2", "sigs.k8s.io/scheduler-plugins")
	return bin, dirs[0], dirs[1]
}

// StartTrainerController installs the Trainer CRDs (TrainJob, TrainingRuntime,
// ClusterTrainingRuntime) and the scheduler-plugins PodGroup CRD from the modules
// tools/controllers pins, and runs the upstream Trainer controller manager against this
// test's apiserver until the test ends; it returns once the manager is ready. Start the JobSet
// controller first (StartJobSetController): Trainer watches JobSets and needs their CRD at
// start. It runs without leader election, metrics, certificate management or webhook
// configurations; its webhook server listens on a free loopback port with a throwaway
// certificate and nothing calls it. Its log (zap level 2) is printed if the test failed.
func (e *Env) StartTrainerController(t *testing.T) *Process {
	t.Helper()
	bin, trainerDir, schedulerPluginsDir := trainerController(t)
	crds := trainercontroller.CRDPaths(trainerDir)
	for i, gvr := range []schema.GroupVersionResource{TrainJobGVR, TrainingRuntimeGVR, ClusterTrainingRuntimeGVR} {
		e.installCRD(t, crds[i], gvr)
	}
	e.installCRD(t, trainercontroller.PodGroupCRDPath(schedulerPluginsDir), SchedulerPluginsPodGroupGVR)
	dir := t.TempDir()
	healthPort := freePort(t)
	cfgPath, err := trainercontroller.WriteConfig(dir, freePort(t), healthPort)
	if err != nil {
		t.Fatal(err)
	}
	// Run through env(1) for TMPDIR: the webhook server reads its certificate below it.
	p := run(t, "trainer-controller-manager", dir, "env", trainercontroller.TempDirEnv(dir), bin,
		"--config="+cfgPath, "--kubeconfig="+e.Kubeconfig, "--zap-log-level=2")
	waitReady(t, p, trainercontroller.ReadyURL(healthPort))
	return p
}

// CreateClusterTrainingRuntime creates a ClusterTrainingRuntime named name with spec (mlPolicy,
// podGroupPolicy, template: a JobSet template).
func (e *Env) CreateClusterTrainingRuntime(t *testing.T, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "ClusterTrainingRuntime",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	created, err := dynamic.NewForConfigOrDie(e.Config).Resource(ClusterTrainingRuntimeGVR).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ClusterTrainingRuntime %s: %v", name, err)
	}
	return created
}

// CreateTrainJob creates a TrainJob ns/name running on the ClusterTrainingRuntime runtime,
// with spec.trainer trainer (e.g. numNodes) when not nil.
func (e *Env) CreateTrainJob(t *testing.T, ns, name, runtime string, trainer map[string]any) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{
		"runtimeRef": map[string]any{
			"apiGroup": "trainer.kubeflow.org",
			"kind":     "ClusterTrainingRuntime",
			"name":     runtime,
		},
	}
	if trainer != nil {
		spec["trainer"] = trainer
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "trainer.kubeflow.org/v1alpha1",
		"kind":       "TrainJob",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
	created, err := dynamic.NewForConfigOrDie(e.Config).Resource(TrainJobGVR).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating TrainJob %s/%s: %v", ns, name, err)
	}
	return created
}

// InstallSchedulerPluginsCRD installs the scheduler-plugins PodGroup CRD
// (scheduling.x-k8s.io/v1alpha1) from the sigs.k8s.io/scheduler-plugins module
// tools/controllers pins, and waits until it is served.
func (e *Env) InstallSchedulerPluginsCRD(t *testing.T) {
	t.Helper()
	_, _, schedulerPluginsDir := trainerController(t)
	e.installCRD(t, trainercontroller.PodGroupCRDPath(schedulerPluginsDir), SchedulerPluginsPodGroupGVR)
}
