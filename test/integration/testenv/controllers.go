package testenv

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1beta1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	jobcontroller "k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/test/integration/util"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/scheduler"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// StartKubeControllers runs the upstream Job controller and garbage collector in-process,
// as kube-controller-manager would, until the test ends.
func (e *Env) StartKubeControllers(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	t.Cleanup(cancel)
	cfg := rest.CopyConfig(e.Config)
	informerSet := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "job-informers")), 0)
	// Where the native kinds are served (WorkloadWithJob on), the Job controller makes every
	// Job's native Workload and PodGroup, as kube-controller-manager does.
	var workloads schedulinginformers.WorkloadInformer
	var podGroups schedulinginformers.PodGroupInformer
	if e.GroupAPI == podgroup.APINative {
		workloads, podGroups = informerSet.Scheduling().V1beta1().Workloads(), informerSet.Scheduling().V1beta1().PodGroups()
	}
	jc, err := jobcontroller.NewController(ctx, kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "job-controller")),
		informerSet.Core().V1().Pods(), informerSet.Batch().V1().Jobs(), workloads, podGroups)
	if err != nil {
		t.Fatal(err)
	}
	startGC := util.CreateGCController(ctx, t, *cfg, informerSet)
	informerSet.Start(ctx.Done())
	go jc.Run(ctx, 2)
	startGC()
	informerSet.WaitForCacheSync(ctx.Done())
}

// JobController is a running lockstep Job controller.
type JobController struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Stop stops the controller and waits for it.
func (j *JobController) Stop() {
	if j.cancel == nil {
		return
	}
	j.cancel()
	<-j.done
	j.cancel = nil
}

// StartJobController runs lockstep's workload controller (Jobs and JobSets) for the
// lockstep-scheduler profile, as the binary does while it leads, until stopped or the test
// ends.
func (e *Env) StartJobController(t *testing.T) *JobController {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	// As lockstep's ServiceAccount: the manifests' RBAC is what lets it create groups owned,
	// with blockOwnerDeletion, by Jobs and JobSets.
	kubeClient := kubernetes.NewForConfigOrDie(e.LockstepConfig)
	adapters, f, err := scheduler.WorkloadKinds(ctx, e.LockstepConfig, kubeClient, informers.NewSharedInformerFactory(kubeClient, 0))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	j := &JobController{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		if err := jobframework.Run(ctx, e.LockstepConfig, adapters, f, jobframework.Options{SchedulerNames: []string{lt.SchedulerName}, Workers: 2}); err != nil {
			t.Errorf("workload controller: %v", err)
		}
	}()
	t.Cleanup(j.Stop)
	return j
}
