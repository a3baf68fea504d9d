package jobgroups

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
)

// Options configures a running controller.
type Options struct {
	// SchedulerNames are the profiles whose Jobs get gangs.
	SchedulerNames []string
	// Workers sync Jobs in parallel.
	Workers int
}

// Run runs the controller until ctx is done. The caller decides when it may run: the
// scheduler starts it while it leads, so that one replica manages Jobs.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	logger := klog.FromContext(ctx).WithName(Name)
	ctx = klog.NewContext(ctx, logger)
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), Name)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lsCfg := rest.CopyConfig(cfg)
	lsCfg.ContentType = "application/json" // CRDs do not speak protobuf
	ls, err := versioned.NewForConfig(lsCfg)
	if err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, Name)

	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	lsInformers := externalversions.NewSharedInformerFactory(ls, 0)
	c, err := New(ls, kubeInformers.Batch().V1().Jobs(), lsInformers.Scheduling().V1alpha1().Workloads(),
		lsInformers.Scheduling().V1alpha1().PodGroups(), recorder, opts.SchedulerNames)
	if err != nil {
		return err
	}
	kubeInformers.Start(ctx.Done())
	lsInformers.Start(ctx.Done())
	c.Run(ctx, max(opts.Workers, 1))
	return nil
}
