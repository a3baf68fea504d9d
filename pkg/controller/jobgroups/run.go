package jobgroups

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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
	// LeaderElect runs the controller only while it holds the Lease LeaseNamespace/LeaseName
	// (its own, not the scheduler's: the two elect independently).
	LeaderElect    bool
	LeaseNamespace string
	LeaseName      string
}

// Run runs the controller until ctx is done, behind leader election if asked.
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

	run := func(ctx context.Context) {
		kubeInformers := informers.NewSharedInformerFactory(kube, 0)
		lsInformers := externalversions.NewSharedInformerFactory(ls, 0)
		c, err := New(ls, kubeInformers.Batch().V1().Jobs(), lsInformers.Scheduling().V1alpha1().Workloads(),
			lsInformers.Scheduling().V1alpha1().PodGroups(), recorder, opts.SchedulerNames)
		if err != nil {
			logger.Error(err, "Building the controller")
			return
		}
		kubeInformers.Start(ctx.Done())
		lsInformers.Start(ctx.Done())
		c.Run(ctx, max(opts.Workers, 1))
	}
	if !opts.LeaderElect {
		run(ctx)
		return nil
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.LeaseNamespace, opts.LeaseName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: run,
			OnStoppedLeading: func() { logger.Info("Lost the lease; the controller stopped") },
		},
	})
	return nil
}
