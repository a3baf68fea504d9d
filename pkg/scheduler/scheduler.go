// Package scheduler assembles the lockstep scheduler: the upstream kube-scheduler with
// lockstep's plugins registered, the components they share built once per scheduler and
// injected into them, and what runs only while the scheduler leads (status writes, events,
// the Job controller).
package scheduler

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	kubescheduler "k8s.io/kubernetes/pkg/scheduler"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	// Registers lockstep's plugin args in the kube-scheduler's config scheme.
	_ "github.com/lockstep-sched/lockstep/pkg/apis/config/scheme"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/coscheduling"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/job"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/leaderworkerset"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/raycluster"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/kueueworkloads"
	"github.com/lockstep-sched/lockstep/pkg/leader"
	"github.com/lockstep-sched/lockstep/pkg/plugins/bind"
	"github.com/lockstep-sched/lockstep/pkg/plugins/gang"
	"github.com/lockstep-sched/lockstep/pkg/plugins/scout"
	"github.com/lockstep-sched/lockstep/pkg/plugins/topology"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Options are lockstep's own settings of a scheduler.
type Options struct {
	// WorkloadController runs lockstep's workload controller (groups for Jobs and JobSets)
	// while the scheduler leads. Off, pods of those workloads wait for no group.
	WorkloadController bool
	// WorkloadControllerWorkers are the objects the controller syncs in parallel.
	WorkloadControllerWorkers int
	// WorkloadControllerElsewhere: the workload controller runs in another process, so
	// pods wait for the groups it creates even though this one does not run it.
	WorkloadControllerElsewhere bool
	// IgnoreNativeGroups: lockstep reads only its own kinds, not the native
	// scheduling.k8s.io groups the cluster may serve.
	IgnoreNativeGroups bool
}

// Scheduler is one lockstep scheduler: its plugins' shared components and its leadership.
type Scheduler struct {
	opts    Options
	elected *leader.Elected

	mu sync.Mutex
	// shared holds the components of each kube-scheduler built from this Scheduler's
	// registry, by its informer factory: one in a binary, one per workload in benchmarks.
	shared map[informers.SharedInformerFactory]*shared
}

// shared are the components one kube-scheduler's profiles share.
type shared struct {
	groups *podgroup.Components
	plans  *topology.Plans
	// nominations lists the nodes the scheduler's queue may hold nominated pods for.
	nominations *topology.Nominations
	// changes tells the topologies of every profile which nodes changed.
	changes *topology.NodeChanges
	// binds is the window of every profile's binds.
	binds bind.Windows
	// workloads are the workload kinds lockstep makes groups for, on informers that both
	// the group model (filing) and the workload controller read.
	workloads []jobframework.Adapter
	informers jobframework.Informers
}

// New returns a Scheduler; Registry or Plugins give its plugins to kube-scheduler, Run runs
// it.
func New(opts Options) *Scheduler {
	return &Scheduler{opts: opts, elected: leader.New(), shared: map[informers.SharedInformerFactory]*shared{}}
}

// Elected is the scheduler's leadership. Run makes it follow kube-scheduler's lease (or lead
// at once without leader election); a caller that starts the scheduler some other way (as
// scheduler_perf does) calls Lead itself.
func (s *Scheduler) Elected() *leader.Elected { return s.elected }

// Registry returns lockstep's plugins as an out-of-tree registry.
func (s *Scheduler) Registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{
		gang.Name: func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			c, err := s.components(ctx, h)
			if err != nil {
				return nil, err
			}
			return gang.New(ctx, obj, h, c.groups.Model.Gate(), c.groups.Model.Permits())
		},
		scout.Name: func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			c, err := s.components(ctx, h)
			if err != nil {
				return nil, err
			}
			return scout.New(ctx, obj, h, c.groups.Model.Gate())
		},
		bind.Name: func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			c, err := s.components(ctx, h)
			if err != nil {
				return nil, err
			}
			return bind.New(ctx, obj, h, &c.binds)
		},
		topology.Name: func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			c, err := s.components(ctx, h)
			if err != nil {
				return nil, err
			}
			return topology.New(ctx, obj, h, topology.Shared{
				Trees:       c.groups.Model.Gate(),
				Notes:       c.groups.Model.Permits(),
				Plans:       c.plans,
				Nominations: c.nominations,
				Changes:     c.changes,
				Guard:       func(h fwk.Handle) fwk.Handle { return podgroup.Guard(h, c.groups.Model.Permits(), gang.Name) },
			})
		},
	}
}

// Plugins returns lockstep's plugins as kube-scheduler command options.
func (s *Scheduler) Plugins() []app.Option {
	var out []app.Option
	for name, factory := range s.Registry() {
		out = append(out, app.WithPlugin(name, factory))
	}
	return out
}

// components returns the components of the kube-scheduler that owns h, building and
// starting them on its first plugin. The CRDs need not be installed yet.
func (s *Scheduler) components(ctx context.Context, h fwk.Handle) (*shared, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := h.SharedInformerFactory()
	if c, ok := s.shared[key]; ok {
		c.groups.Frameworks.Add(h)
		return c, nil
	}
	cfg := h.KubeConfig()
	if cfg == nil {
		return nil, fmt.Errorf("lockstep needs the scheduler's kubeconfig to watch %s objects", v1alpha1.GroupName)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json" // CRDs do not speak protobuf
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	adapters, wlInformers, err := WorkloadKinds(ctx, h.KubeConfig(), h.ClientSet(), h.SharedInformerFactory())
	if err != nil {
		return nil, err
	}
	plans := topology.NewPlans()
	nominations, err := topology.NewNominations(h.SharedInformerFactory().Core().V1().Pods().Informer())
	if err != nil {
		return nil, err
	}
	changes, err := topology.NewNodeChanges(h.SharedInformerFactory().Core().V1().Pods().Informer(),
		h.SharedInformerFactory().Core().V1().Nodes().Informer())
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, err
	}
	groups, err := podgroup.NewComponents(ctx, h, podgroup.ComponentOptions{
		Client:       client,
		Recorder:     leader.GateRecorder(h.EventRecorder(), s.elected),
		Observer:     plans,
		PermitPlugin: gang.Name,
		Workloads:    jobframework.Filer{Adapters: adapters, Created: s.opts.WorkloadController || s.opts.WorkloadControllerElsewhere},
		Admissions:   kueueworkloads.New(meta, wlInformers.APIs),
		Native:       s.nativeGroups(wlInformers.APIs),
	})
	if err != nil {
		return nil, err
	}
	for _, a := range adapters {
		if n, ok := a.(jobframework.Notifier); ok {
			n.Notify(groups.Model.OnLabelled)
		}
	}
	groups.Frameworks.Add(h)
	groups.Start(ctx)
	wlInformers.Dynamic.Start(ctx.Done())
	s.elected.Run(ctx, groups.Lead)
	c := &shared{groups: groups, plans: plans, nominations: nominations, changes: changes, workloads: adapters, informers: wlInformers}
	s.shared[key] = c
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		delete(s.shared, key)
		s.mu.Unlock()
	}()
	return c, nil
}

// nativeGroups returns what tells the group model when the native kinds are served; nil when
// lockstep ignores them.
func (s *Scheduler) nativeGroups(apis *jobframework.APIs) podgroup.Served {
	if s.opts.IgnoreNativeGroups {
		return nil
	}
	return apis
}

// WorkloadKinds returns the adapters of the workload kinds lockstep makes groups for, in the
// Filer's order of precedence (JobSets, RayClusters, LeaderWorkerSets, scheduler-plugins
// PodGroups, Jobs), and the
// informers they read: the scheduler's own, labelled pods in every phase, and a dynamic
// factory for kinds served by CRDs that may be installed at any time (watched from the
// moment they are served, with no restart).
// factory is the scheduler's informer factory, or a new one for a controller of its own.
func WorkloadKinds(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, factory informers.SharedInformerFactory) ([]jobframework.Adapter, jobframework.Informers, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, jobframework.Informers{}, err
	}
	f := jobframework.Informers{
		Kube: factory,
		Pods: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = coscheduling.Label
		})),
		Dynamic: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		APIs:    jobframework.NewAPIs(ctx, kube.Discovery(), dyn),
	}
	jobSets, rayClusters, lws := jobset.New(), raycluster.New(), leaderworkerset.New()
	adapters := []jobframework.Adapter{jobSets, rayClusters, lws, coscheduling.New(dyn, jobSets, rayClusters, lws), job.New()}
	for _, a := range adapters {
		if _, err := a.Watch(f, nil); err != nil {
			return nil, f, err
		}
	}
	return adapters, f, nil
}

// Run runs a kube-scheduler set up with this Scheduler's plugins (app.Setup) as
// kube-scheduler's app.Run does, its failure handler guarded against stray nominations
// (guardNominations) and kept from rewriting a condition for a node count alone
// (keepFailureWords), and lockstep's leader-only parts while it leads: with leader election,
// from the moment it holds the lease (it exits when it loses it); without, at once.
func (s *Scheduler) Run(ctx context.Context, cc *schedulerserverconfig.CompletedConfig, sched *kubescheduler.Scheduler) error {
	if cc.LeaderElection != nil {
		cc.LeaderElection.Lock = leader.WrapLock(cc.LeaderElection.Lock, s.elected)
	} else {
		s.elected.Lead()
	}
	if s.opts.WorkloadController {
		var names []string
		for _, p := range cc.ComponentConfig.Profiles {
			names = append(names, p.SchedulerName)
		}
		opts := jobframework.Options{SchedulerNames: names, Workers: max(s.opts.WorkloadControllerWorkers, 1)}
		cfg := rest.CopyConfig(cc.KubeConfig)
		s.mu.Lock()
		var c *shared
		for _, sh := range s.shared {
			c = sh
		}
		s.mu.Unlock()
		if c != nil {
			s.elected.Run(ctx, func(ctx context.Context) {
				if err := jobframework.Run(ctx, cfg, c.workloads, c.informers, opts); err != nil {
					klog.FromContext(ctx).Error(err, "Workload controller failed")
				}
			})
		}
	}
	s.mu.Lock()
	c := s.shared[cc.InformerFactory]
	s.mu.Unlock()
	if c != nil {
		sched.FailureHandler = guardNominations(keepFailureWords(sched.FailureHandler, cc.InformerFactory.Core().V1().Pods().Lister()), c.nominations, c.groups.Model.Permits())
	}
	return app.Run(ctx, cc, sched)
}
