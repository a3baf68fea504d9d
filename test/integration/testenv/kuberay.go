package testenv

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-sched/lockstep/internal/kuberaycontroller"
	"github.com/lockstep-sched/lockstep/internal/trainercontroller"
)

// The upstream KubeRay operator (github.com/ray-project/kuberay/ray-operator, the version
// pinned in tools/lws-kuberay/go.mod) runs as its own process like the JobSet and Trainer
// controllers: it turns RayClusters into head and worker pods, RayJobs into a RayCluster and,
// once that is Ready, a submitter batch/v1 Job, and, with the scheduler-plugins batch
// scheduler, gang RayClusters into scheduler-plugins PodGroups. No webhook is registered (see
// internal/kuberaycontroller). Pods never run without RunPods: a RayCluster is Ready only
// once all its pods are Running and Ready.

var (
	// RayClusterGVR, RayJobGVR and RayServiceGVR are KubeRay's kinds, served once
	// StartKubeRayOperator installed the CRDs.
	RayClusterGVR = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	RayJobGVR     = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}
	RayServiceGVR = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"}
)

var kubeRayBuild = toolBuild{module: "lws-kuberay"}

// kubeRayOperator builds bin/kuberay-operator once per test process and returns it with the
// directories of the github.com/ray-project/kuberay/ray-operator module (its CRDs) and of the
// sigs.k8s.io/scheduler-plugins module it is built against (the PodGroup CRD whose Go types
// it writes).
func kubeRayOperator(t *testing.T) (binary, rayDir, schedulerPluginsDir string) {
	t.Helper()
	bin, dirs := kubeRayBuild.get(t, "kuberay-operator", "github.com/ray-project/kuberay/ray-operator",
		"github.com/ray-project/kuberay/ray-operator", "sigs.k8s.io/scheduler-plugins")
	return bin, dirs[0], dirs[1]
}

// KubeRayOption configures StartKubeRayOperator.
type KubeRayOption func(*kuberaycontroller.Options)

// KubeRayBatchScheduler runs the operator with the batch scheduler name
// (kuberaycontroller.BatchSchedulerPlugins, or BatchSchedulerNone, the default).
func KubeRayBatchScheduler(name string) KubeRayOption {
	return func(o *kuberaycontroller.Options) { o.BatchScheduler = name }
}

// StartKubeRayOperator installs the RayCluster, RayJob and RayService CRDs from the module
// tools/lws-kuberay pins and runs the upstream KubeRay operator against this test's apiserver, as
// its superuser, until the test ends; it returns once the operator's readiness probe answers
// (its caches may still be syncing: wait for what it makes). It runs without leader election,
// metrics or webhooks. With the scheduler-plugins batch scheduler, the scheduler-plugins
// PodGroup CRD is installed first, from the scheduler-plugins module KubeRay is built
// against (the same CRD as the one tools/controllers pins, InstallSchedulerPluginsCRD):
// KubeRay reads and creates PodGroups only for gang RayClusters, which fail to reconcile
// while the CRD is missing. Its log (info: every reconcile step) is printed if the test
// failed.
func (e *Env) StartKubeRayOperator(t *testing.T, opts ...KubeRayOption) *Process {
	t.Helper()
	var o kuberaycontroller.Options
	for _, opt := range opts {
		opt(&o)
	}
	bin, rayDir, schedulerPluginsDir := kubeRayOperator(t)
	crds := kuberaycontroller.CRDPaths(rayDir)
	for i, gvr := range []schema.GroupVersionResource{RayClusterGVR, RayJobGVR, RayServiceGVR} {
		e.installCRD(t, crds[i], gvr)
	}
	if o.BatchScheduler == kuberaycontroller.BatchSchedulerPlugins {
		e.installCRD(t, trainercontroller.PodGroupCRDPath(schedulerPluginsDir), SchedulerPluginsPodGroupGVR)
	}
	healthPort := freePort(t)
	args, err := kuberaycontroller.Args(o, e.Kubeconfig, healthPort)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, "kuberay-operator", t.TempDir(), bin, args...)
	waitReady(t, p, kuberaycontroller.ReadyURL(healthPort))
	return p
}
