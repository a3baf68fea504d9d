// Package podgrouptest runs lockstep plugins in unit tests the way upstream plugin tests run
// theirs: a real scheduling framework, fake clientsets, real informers, and the group model
// on top. It also builds the objects those tests need.
package podgrouptest

import (
	"context"
	"github.com/go-logr/logr"
	"sync"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

func init() {
	schedmetrics.Register() // the framework records into the scheduler's metrics
}

// Env is a scheduling framework with plugins under test.
type Env struct {
	Ctx        context.Context
	Framework  framework.Framework
	Queue      internalqueue.SchedulingQueue
	Components *podgroup.Components
	Activated  *Activator
	Recorder   *events.FakeRecorder
	// Client is the fake clientset behind the informers (preemption patches and deletes
	// victims through it).
	Client *kubefake.Clientset
	// Lockstep is the fake clientset behind lockstep's informers (groups).
	Lockstep *fake.Clientset
}

// Activator records the pods plugins ask the queue to activate.
type Activator struct {
	mu   sync.Mutex
	pods []string
}

// Activate records pods by namespace/name.
func (a *Activator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range pods {
		a.pods = append(a.pods, k)
	}
}

// Take returns the pods activated so far, by namespace/name, and forgets them.
func (a *Activator) Take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.pods
	a.pods = nil
	return out
}

// Pods returns the pods activated so far, by namespace/name.
func (a *Activator) Pods() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.pods...)
}

// PluginFactory builds a plugin on the framework handle and the shared group model.
type PluginFactory func(ctx context.Context, fh fwk.Handle, groups *podgroup.Components) (fwk.Plugin, error)

// Plugin is a plugin under test and the extension points it is enabled at.
type Plugin struct {
	Name    string
	Factory PluginFactory
	// Points lists extension points: "PreEnqueue", "QueueSort", "PreFilter", "Filter",
	// "PostFilter", "PreScore", "Score", "Reserve", "Permit".
	Points []string
}

// Options shape an Env.
type Options struct {
	// Observer is told when attempts end.
	Observer podgroup.RoundObserver
	// Filters enables the upstream plugins that decide where a pod may run (PreFilter and
	// Filter of NodeResourcesFit, NodeName, NodeUnschedulable, NodeAffinity, TaintToleration,
	// NodePorts, InterPodAffinity, PodTopologySpread) with their default args, as the default
	// profile has them.
	Filters bool
	// DRA enables the upstream DynamicResources plugin (PreFilter, Filter, Reserve) with the
	// scheduler's DRA manager over the fake clientset, which also holds Objects (ResourceClaims,
	// ResourceSlices, DeviceClasses).
	DRA     bool
	Objects []runtime.Object
	// Native are native scheduling.k8s.io groups the model reads (as a NativeSource feeds
	// them), before it sees any pod.
	Native []runtime.Object
	// Clock is the model's (nil: the wall clock).
	Clock podgroup.Clock
	// Untracked backs the informers with the fake clientset without managed fields, which
	// builds a REST mapper per request: for soaks of hundreds of thousands of requests.
	Untracked bool
	// Quiet discards the components' logs (a test's logs are kept in memory until it ends).
	Quiet bool
}

// filterPlugins are the upstream plugins Options.Filters enables.
var filterPlugins = []string{names.NodeResourcesFit, names.NodeName, names.NodeUnschedulable, names.NodeAffinity,
	names.TaintToleration, names.NodePorts, names.InterPodAffinity, names.PodTopologySpread}

// NewEnv starts a framework whose group model sees groups (PodGroups, CompositePodGroups),
// whose pod informer sees pods and whose snapshot holds nodes (and the bound pods). The model
// is built as pkg/scheduler builds it.
func NewEnv(t testing.TB, groups []runtime.Object, pods []*v1.Pod, nodes []*v1.Node, opts Options, plugins ...Plugin) *Env {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	if opts.Quiet {
		ctx = klog.NewContext(ctx, logr.Discard())
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)

	kubeObjs := append([]runtime.Object(nil), opts.Objects...)
	var bound []*v1.Pod
	for _, p := range pods {
		kubeObjs = append(kubeObjs, p)
		if p.Spec.NodeName != "" {
			bound = append(bound, p)
		}
	}
	kubeClient := kubefake.NewClientset(kubeObjs...)
	if opts.Untracked {
		kubeClient = kubefake.NewSimpleClientset(kubeObjs...) //nolint:staticcheck // managed fields cost a REST mapper per request
	}
	informerFactory := informers.NewSharedInformerFactory(kubeClient, 0)
	env := &Env{Ctx: ctx, Activated: &Activator{}, Recorder: events.NewFakeRecorder(100), Client: kubeClient}
	lockstepClient := fake.NewSimpleClientset(groups...)
	env.Lockstep = lockstepClient
	registry := frameworkruntime.Registry{defaultbinder.Name: defaultbinder.New}
	profile := &schedconfig.KubeSchedulerProfile{
		SchedulerName: lt.SchedulerName,
		Plugins: &schedconfig.Plugins{
			Bind: schedconfig.PluginSet{Enabled: []schedconfig.Plugin{{Name: defaultbinder.Name}}},
		},
	}
	for _, pl := range plugins {
		pl := pl
		registry[pl.Name] = func(ctx context.Context, _ runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
			if env.Components == nil {
				c, err := podgroup.NewComponents(ctx, fh, podgroup.ComponentOptions{
					Client: lockstepClient, Recorder: env.Recorder, Observer: opts.Observer, PermitPlugin: permitPlugin(plugins), Clock: opts.Clock})
				if err != nil {
					return nil, err
				}
				c.Frameworks.Add(fh)
				if len(opts.Native) > 0 {
					c.Model.ReadNative(podgroup.KindPodGroup)
					for _, o := range opts.Native {
						c.Model.OnNativeGroup(nil, o)
					}
				}
				c.Start(ctx)
				env.Components = c
			}
			return pl.Factory(ctx, fh, env.Components)
		}
		for _, point := range pl.Points {
			set := pluginSet(profile.Plugins, point)
			set.Enabled = append(set.Enabled, schedconfig.Plugin{Name: pl.Name, Weight: 1})
		}
	}
	if opts.Filters {
		defaults, err := latest.Default()
		if err != nil {
			t.Fatal(err)
		}
		inTree := intree.NewInTreeRegistry()
		for _, name := range filterPlugins {
			registry[name] = inTree[name]
			profile.Plugins.PreFilter.Enabled = append(profile.Plugins.PreFilter.Enabled, schedconfig.Plugin{Name: name})
			profile.Plugins.Filter.Enabled = append(profile.Plugins.Filter.Enabled, schedconfig.Plugin{Name: name})
		}
		profile.PluginConfig = defaults.Profiles[0].PluginConfig
	}
	// Nominations (env.Framework.AddNominatedPod) are kept as the scheduler's queue keeps
	// them: a nominated pod's requests are known while the pod is in the queue.
	less := func(a, b fwk.QueuedEntityInfo) bool { return env.Framework.QueueSortFunc()(a, b) }
	env.Queue = internalqueue.NewSchedulingQueue(less, informerFactory)
	var frameworkOpts []frameworkruntime.Option
	// synced are what must have seen the objects the test made before the env is used:
	// informers' caches sync before their handlers have run, and the DRA manager reads the
	// claims through a handler of its own (an assume cache).
	var synced []func() bool
	if opts.DRA {
		if !opts.Filters {
			t.Fatal("Options.DRA needs Options.Filters")
		}
		claims := assumecache.NewAssumeCache(klog.FromContext(ctx), informerFactory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
		want := 0
		for _, o := range opts.Objects {
			if _, ok := o.(*resourcev1.ResourceClaim); ok {
				want++
			}
		}
		synced = append(synced, func() bool { return len(claims.List(nil)) >= want })
		slices, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{
			SliceInformer: informerFactory.Resource().V1().ResourceSlices(), KubeClient: kubeClient})
		if err != nil {
			t.Fatal(err)
		}
		frameworkOpts = append(frameworkOpts, frameworkruntime.WithSharedDRAManager(dynamicresources.NewDRAManager(ctx, claims, slices, informerFactory)))
		registry[names.DynamicResources] = intree.NewInTreeRegistry()[names.DynamicResources]
		for _, point := range []string{"PreFilter", "Filter", "Reserve"} {
			set := pluginSet(profile.Plugins, point)
			set.Enabled = append(set.Enabled, schedconfig.Plugin{Name: names.DynamicResources})
		}
	}
	if len(profile.Plugins.QueueSort.Enabled) == 0 {
		registry[queuesort.Name] = queuesort.New
		profile.Plugins.QueueSort.Enabled = []schedconfig.Plugin{{Name: queuesort.Name}}
	}
	// The scheduler's snapshot, as the scheduler gives it to the framework twice (preemption
	// reads the mutable one).
	snapshot := cache.NewSnapshot(bound, nodes)
	frameworkOpts = append(frameworkOpts,
		frameworkruntime.WithInformerFactory(informerFactory),
		frameworkruntime.WithClientSet(kubeClient),
		frameworkruntime.WithPodNominator(env.Queue),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap()),
		frameworkruntime.WithPodActivator(env.Activated),
		frameworkruntime.WithEventRecorder(env.Recorder),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithMutableSnapshotLister(snapshot),
	)
	fh, err := frameworkruntime.NewFramework(ctx, registry, profile, frameworkOpts...)
	if err != nil {
		t.Fatal(err)
	}
	env.Framework = fh
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	synced = append(synced, env.Components.Model.HasSynced)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal("the objects never synced into the group model and the DRA manager")
	}
	return env
}

// permitPlugin is the plugin under test enabled at Permit, whose waits the model ends.
func permitPlugin(plugins []Plugin) string {
	for _, pl := range plugins {
		for _, p := range pl.Points {
			if p == "Permit" {
				return pl.Name
			}
		}
	}
	return ""
}

func pluginSet(p *schedconfig.Plugins, point string) *schedconfig.PluginSet {
	switch point {
	case "PreEnqueue":
		return &p.PreEnqueue
	case "QueueSort":
		return &p.QueueSort
	case "PreFilter":
		return &p.PreFilter
	case "Filter":
		return &p.Filter
	case "PostFilter":
		return &p.PostFilter
	case "PreScore":
		return &p.PreScore
	case "Score":
		return &p.Score
	case "Reserve":
		return &p.Reserve
	case "Permit":
		return &p.Permit
	}
	panic("unknown extension point " + point)
}

// NodeInfos returns the framework snapshot's nodes.
func (e *Env) NodeInfos(t testing.TB) []fwk.NodeInfo {
	t.Helper()
	nodes, err := e.Framework.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}
