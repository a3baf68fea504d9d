package jobframework

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
)

// Options configure a running controller.
type Options struct {
	// SchedulerNames are the profiles whose workloads get groups.
	SchedulerNames []string
	// Workers sync objects in parallel.
	Workers int
	// Synced, when set, is called after each sync that left nothing to retry, with the object
	// as it was synced: whoever must know that the controller has acted on an object as it is
	// now (a test's "no groups were made" check) waits for its resourceVersion here.
	Synced func(kind schema.GroupVersionKind, obj Object)
}

// Run runs the controller for adapters, on their informers f (started by the caller, or
// after Run registered its handlers: f's factories are started again here), until ctx is
// done. The caller decides when it may run: the scheduler runs it while it leads, so that
// one replica manages workloads.
func Run(ctx context.Context, cfg *rest.Config, adapters []Adapter, f Informers, opts Options) error {
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
	lsInformers := externalversions.NewSharedInformerFactory(ls, 0)
	groups := lsInformers.Scheduling().V1alpha1()
	r, err := NewReconciler(ls, adapters, f, GroupInformers{Workloads: groups.Workloads(), Composites: groups.CompositePodGroups(), PodGroups: groups.PodGroups()},
		broadcaster.NewRecorder(scheme.Scheme, Name), opts.SchedulerNames)
	if err != nil {
		return err
	}
	r.afterSync = opts.Synced
	lsInformers.Start(ctx.Done())
	f.Kube.Start(ctx.Done())
	if f.Pods != nil {
		f.Pods.Start(ctx.Done())
	}
	if f.Dynamic != nil {
		f.Dynamic.Start(ctx.Done())
	}
	r.Run(ctx, opts.Workers)
	return nil
}
