package testenv

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	jobcontroller "k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/test/integration/util"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobgroups"
	"github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
)

// StartKubeControllers runs the upstream Job controller and garbage collector in-process,
// as kube-controller-manager would, until the test ends.
func (e *Env) StartKubeControllers(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	t.Cleanup(cancel)
	cfg := rest.CopyConfig(e.Config)
	informerSet := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "job-informers")), 0)
	jc, err := jobcontroller.NewController(ctx, kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "job-controller")),
		informerSet.Core().V1().Pods(), informerSet.Batch().V1().Jobs(), nil, nil)
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

// StartJobController runs lockstep's Job controller for the lockstep-scheduler profile, as
// --job-controller does (without leader election), until stopped or the test ends.
func (e *Env) StartJobController(t *testing.T) *JobController {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	kubeClient := kubernetes.NewForConfigOrDie(e.Config)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kubeClient.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	kubeInformers := informers.NewSharedInformerFactory(kubeClient, 0)
	lsInformers := externalversions.NewSharedInformerFactory(e.Lockstep, 0)
	c, err := jobgroups.New(e.Lockstep, kubeInformers.Batch().V1().Jobs(), lsInformers.Scheduling().V1alpha1().Workloads(),
		lsInformers.Scheduling().V1alpha1().PodGroups(), broadcaster.NewRecorder(scheme.Scheme, jobgroups.Name), []string{SchedulerName})
	if err != nil {
		t.Fatal(err)
	}
	kubeInformers.Start(ctx.Done())
	lsInformers.Start(ctx.Done())
	j := &JobController{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		defer broadcaster.Shutdown()
		c.Run(ctx, 2)
	}()
	t.Cleanup(j.Stop)
	return j
}
