package podgroup

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
)

func init() {
	// Events regarding our objects are recorded through the scheduler's recorder, which
	// resolves object references with client-go's scheme.
	utilruntime.Must(v1alpha1.AddToScheme(clientgoscheme.Scheme))
}

// Manager is the group model of one scheduler instance, shared by every profile and plugin.
type Manager struct {
	mu     sync.Mutex
	groups groups
	rounds map[Key]*round
	// podKeys remembers the group of each tracked pod, since labels may change.
	podKeys map[types.UID]Key
	// schedulerNames are the profiles served; pods of other schedulers are not counted.
	schedulerNames sets.Set[string]
	// noGroupEvents dedups "waiting for PodGroup" events per pod.
	noGroupEvents sets.Set[types.UID]
	// handles are the frameworks of the profiles served, by scheduler name.
	handles map[string]fwk.Handle
	// podsSynced reports whether the group caches and the pod handler have seen every
	// existing object; until then members are held and remembered in heldAtStart.
	podsSynced  cache.InformerSynced
	heldAtStart []*v1.Pod
	// waitingRoots counts roots with members waiting at Permit.
	waitingRoots int
	// plans are the placement plans of roots; planTTL bounds how long one promises capacity.
	plans   map[Key]*Plan
	planTTL time.Duration
	// validators check group specs against rules a CRD schema cannot express (plugin config).
	validators []Validator
	// Jobs: the scheduler's Job lister, the pods each Job controls (by Job UID), Jobs with
	// a timer for a late PodGroup, and how long pods wait for it.
	jobLister       batchlisters.JobLister
	jobPods         map[types.UID]map[types.UID]*v1.Pod
	jobTimers       sets.Set[types.UID]
	jobGroupTimeout time.Duration

	client    versioned.Interface
	pgLister  listers.PodGroupLister
	cpgLister listers.CompositePodGroupLister
	activator fwk.PodActivator
	recorder  events.EventRecorder
	status    *statusWriter
	clock     clock.WithDelayedExecution
	logger    klog.Logger
}

var (
	managersMu sync.Mutex
	// managers holds one Manager per scheduler instance, keyed by its informer factory, so
	// that every profile's plugins share one model (and a restarted scheduler gets a new one).
	managers = map[any]*Manager{}
)

// For returns the Manager of the scheduler that owns handle, creating and starting it on
// first use. The CRDs must be installed: a missing API fails the plugin with an error that
// says so, instead of a scheduler that silently never schedules a gang.
func For(ctx context.Context, handle fwk.Handle) (*Manager, error) {
	managersMu.Lock()
	defer managersMu.Unlock()
	factoryKey := any(handle.SharedInformerFactory())
	if m, ok := managers[factoryKey]; ok {
		m.addProfile(handle)
		return m, nil
	}
	cfg := handle.KubeConfig()
	if cfg == nil {
		return nil, fmt.Errorf("lockstep needs the scheduler's kubeconfig to watch %s objects", v1alpha1.GroupName)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json" // CRDs do not speak protobuf
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkAPI(client.Discovery()); err != nil {
		// Not fatal: the scheduler may start before the CRDs are installed (as a Deployment
		// applied with them can). Members wait, and their PreEnqueue status says why, until
		// the API is served and the caches sync; every other pod schedules as usual.
		klog.FromContext(ctx).Error(err, "lockstep's API is not served yet; gang members wait until it is")
	}
	m, err := NewManager(ctx, handle, client)
	if err != nil {
		return nil, err
	}
	managers[factoryKey] = m
	go func() {
		<-ctx.Done()
		managersMu.Lock()
		delete(managers, factoryKey)
		managersMu.Unlock()
	}()
	return m, nil
}

// NewManager builds and starts the model of the scheduler that owns handle, watching groups
// through client and pods through the scheduler's own informer. It does not wait: until the
// group caches and the pod handler have synced, Check holds members (a restarted scheduler
// must count the members already bound, and the CRDs may be installed after the scheduler
// starts), and activates them once everything has synced.
func NewManager(ctx context.Context, handle fwk.Handle, client versioned.Interface) (*Manager, error) {
	logger := klog.FromContext(ctx).WithName("podgroup")
	RegisterMetrics()
	m := newManager(logger, client, clock.RealClock{})
	m.activator = handle
	m.recorder = handle.EventRecorder()
	m.addProfile(handle)

	factory := externalversions.NewSharedInformerFactory(client, 0)
	pgInformer := factory.Scheduling().V1alpha1().PodGroups()
	cpgInformer := factory.Scheduling().V1alpha1().CompositePodGroups()
	m.pgLister = pgInformer.Lister()
	m.cpgLister = cpgInformer.Lister()
	groupHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    m.onGroup,
		UpdateFunc: func(_, obj any) { m.onGroup(obj) },
		DeleteFunc: m.onGroupDelete,
	}
	var synced []cache.InformerSynced
	for _, inf := range []cache.SharedIndexInformer{pgInformer.Informer(), cpgInformer.Informer()} {
		reg, err := inf.AddEventHandler(groupHandler)
		if err != nil {
			return nil, err
		}
		synced = append(synced, reg.HasSynced)
	}
	// Jobs, to file their pods under the PodGroups lockstep's Job controller creates.
	jobInformer := handle.SharedInformerFactory().Batch().V1().Jobs()
	m.jobLister = jobInformer.Lister()
	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.onJob,
		UpdateFunc: func(_, obj any) { m.onJob(obj) },
		DeleteFunc: m.onJob,
	}); err != nil {
		return nil, err
	}
	// The scheduler's own pod informer: the same stream the scheduling queue sees.
	podReg, err := handle.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.onPod(nil, obj) },
		UpdateFunc: m.onPod,
		DeleteFunc: m.onPodDelete,
	})
	if err != nil {
		return nil, err
	}
	synced = append(synced, podReg.HasSynced)
	m.podsSynced = func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}

	factory.Start(ctx.Done())
	go m.status.run(ctx)
	go func() {
		// Pods held while the caches synced are looked at again once they have.
		if cache.WaitForNamedCacheSync("lockstep", ctx.Done(), m.podsSynced) {
			m.mu.Lock()
			held := m.heldAtStart
			m.heldAtStart = nil
			m.mu.Unlock()
			m.activate(held)
		}
	}()
	return m, nil
}

// HasSynced reports whether the model has seen every group and pod that existed when it
// started.
func (m *Manager) HasSynced() bool { return m.podsSynced() }

// checkAPI fails fast, with an actionable message, when the CRDs are not installed.
func checkAPI(d discovery.DiscoveryInterface) error {
	resources, err := d.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("API %s is not served: install lockstep's CRDs (kubectl apply -f manifests/crds/)", v1alpha1.SchemeGroupVersion)
		}
		return fmt.Errorf("discovering %s: %w", v1alpha1.SchemeGroupVersion, err)
	}
	have := sets.New[string]()
	for _, r := range resources.APIResources {
		have.Insert(r.Name)
	}
	for _, want := range []string{"podgroups", "compositepodgroups"} {
		if !have.Has(want) {
			return fmt.Errorf("resource %s.%s is not served: install lockstep's CRDs (kubectl apply -f manifests/crds/)", want, v1alpha1.GroupName)
		}
	}
	return nil
}

func newManager(logger klog.Logger, client versioned.Interface, clk clock.WithDelayedExecution) *Manager {
	m := &Manager{
		groups:          groups{},
		rounds:          map[Key]*round{},
		podKeys:         map[types.UID]Key{},
		schedulerNames:  sets.New[string](),
		noGroupEvents:   sets.New[types.UID](),
		handles:         map[string]fwk.Handle{},
		podsSynced:      func() bool { return true },
		plans:           map[Key]*Plan{},
		planTTL:         time.Minute,
		jobPods:         map[types.UID]map[types.UID]*v1.Pod{},
		jobTimers:       sets.New[types.UID](),
		jobGroupTimeout: 2 * time.Minute,
		client:          client,
		clock:           clk,
		logger:          logger,
	}
	m.status = newStatusWriter(m)
	return m
}

func (m *Manager) addProfile(handle fwk.Handle) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.schedulerNames.Insert(handle.ProfileName())
	m.handles[handle.ProfileName()] = handle
}

// Handle returns the framework of the profile that schedules pod.
func (m *Manager) Handle(pod *v1.Pod) fwk.Handle {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.handles[pod.Spec.SchedulerName]
}

// FirstNotice reports whether this is the first time the caller asks about uid, so that a
// pod gets one event per reason, not one per queue pass. Forgotten when the pod is deleted.
func (m *Manager) FirstNotice(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.noGroupEvents.Has(uid) {
		return false
	}
	m.noGroupEvents.Insert(uid)
	return true
}

// getOrCreate returns the entry for k, creating an empty one.
func (m *Manager) getOrCreate(k Key) *group {
	g := m.groups[k]
	if g == nil {
		g = newGroup(k)
		m.groups[k] = g
	}
	return g
}

// dropIfEmpty forgets entries nothing refers to any more.
func (m *Manager) dropIfEmpty(k Key) {
	if g := m.groups[k]; g != nil && g.empty() {
		delete(m.groups, k)
		delete(m.rounds, k)
	}
}

// linkParent records g as a child of its parent (creating the parent's entry if needed).
func (m *Manager) linkParent(g *group) {
	if pk, ok := g.parentKey(); ok {
		m.getOrCreate(pk).children.Insert(g.key)
	}
}

func (m *Manager) unlinkParent(g *group) {
	if pk, ok := g.parentKey(); ok {
		if p := m.groups[pk]; p != nil {
			p.children.Delete(g.key)
			m.dropIfEmpty(pk)
		}
	}
}

func keyOfObject(obj any) (Key, bool) {
	switch o := obj.(type) {
	case *v1alpha1.PodGroup:
		return PodGroupKey(o.Namespace, o.Name), true
	case *v1alpha1.CompositePodGroup:
		return CompositePodGroupKey(o.Namespace, o.Name), true
	}
	return Key{}, false
}

func (m *Manager) onGroup(obj any) {
	k, ok := keyOfObject(obj)
	if !ok {
		return
	}
	m.mu.Lock()
	g := m.getOrCreate(k)
	m.unlinkParent(g)
	switch o := obj.(type) {
	case *v1alpha1.PodGroup:
		g.pg = o
	case *v1alpha1.CompositePodGroup:
		g.cpg = o
	}
	// The entry may have been dropped by unlinkParent's cleanup of a self-parent.
	m.groups[k] = g
	m.linkParent(g)
	activate := m.refreshLocked(k)
	m.mu.Unlock()
	m.activate(activate)
}

func (m *Manager) onGroupDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	k, ok := keyOfObject(obj)
	if !ok {
		return
	}
	m.mu.Lock()
	var activate []*v1.Pod
	if g := m.groups[k]; g != nil {
		oldTop := m.groups.topOf(k)
		m.unlinkParent(g)
		g.pg, g.cpg = nil, nil
		g.scheduled, g.failure, g.problem = false, "", ""
		// The group and its subtree are re-evaluated (its children lose their parent), and so
		// is the tree it belonged to (its parent lost a child).
		activate = m.refreshLocked(k)
		if oldTop != k {
			activate = append(activate, m.refreshLocked(oldTop)...)
		}
		m.dropIfEmpty(k)
	}
	m.mu.Unlock()
	m.activate(activate)
}

// tracked reports whether the model counts a pod: it names a group, is served by one of our
// profiles and is neither terminated nor terminating.
func (m *Manager) tracked(pod *v1.Pod) (Key, bool) {
	if !m.schedulerNames.Has(pod.Spec.SchedulerName) {
		return Key{}, false
	}
	k, ok := m.keyOfLocked(pod)
	if !ok {
		return Key{}, false
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return Key{}, false
	}
	return k, true
}

func (m *Manager) onPod(_, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	m.mu.Lock()
	m.rememberJobPodLocked(pod, false)
	activate := m.upsertPodLocked(pod)
	m.mu.Unlock()
	m.activate(activate)
}

// upsertPodLocked adds, updates or removes a pod in the model; it returns pods to activate.
func (m *Manager) upsertPodLocked(pod *v1.Pod) []*v1.Pod {
	var activate []*v1.Pod
	oldKey, had := m.podKeys[pod.UID]
	newKey, has := m.tracked(pod)
	if had && (!has || oldKey != newKey) {
		activate = append(activate, m.removePodLocked(pod.UID, oldKey)...)
	}
	if !has {
		return activate
	}
	g := m.getOrCreate(newKey)
	mem, ok := g.members[pod.UID]
	if !ok {
		g.addMember(&member{pod: pod, bound: pod.Spec.NodeName != ""})
		m.podKeys[pod.UID] = newKey
		return append(activate, m.refreshLocked(newKey)...)
	}
	wasBound := mem.bound
	g.setMember(pod.UID, func(mem *member) {
		mem.pod = pod
		mem.bound = pod.Spec.NodeName != ""
		if mem.bound {
			mem.assumed, mem.failed = false, false
		}
	})
	if !wasBound && pod.Spec.NodeName != "" {
		m.observeBoundLocked(newKey)
	}
	return activate
}

// memberKeyLocked returns the group of a pod the scheduler is working on. The scheduler's
// queue and the model receive pods through separate handlers of one informer, so a pod can
// reach Reserve before the model's handler ran: it is added then.
func (m *Manager) memberKeyLocked(pod *v1.Pod) (Key, bool) {
	if k, ok := m.podKeys[pod.UID]; ok {
		return k, true
	}
	if _, ok := m.tracked(pod); !ok {
		return Key{}, false
	}
	m.upsertPodLocked(pod)
	k, ok := m.podKeys[pod.UID]
	return k, ok
}

func (m *Manager) onPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	m.mu.Lock()
	var activate []*v1.Pod
	m.rememberJobPodLocked(pod, true)
	if k, ok := m.podKeys[pod.UID]; ok {
		activate = m.removePodLocked(pod.UID, k)
	}
	m.noGroupEvents.Delete(pod.UID)
	m.mu.Unlock()
	m.activate(activate)
}

func (m *Manager) removePodLocked(uid types.UID, k Key) []*v1.Pod {
	delete(m.podKeys, uid)
	g := m.groups[k]
	if g == nil {
		return nil
	}
	if _, ok := g.removeMember(uid); ok {
		if r := m.rounds[m.rootOrSelf(k)]; r != nil {
			m.removeWaiterLocked(r, uid)
			delete(r.failed, uid)
		}
	}
	activate := m.refreshLocked(k)
	m.dropIfEmpty(k)
	return activate
}

// rootOrSelf is the key rounds are stored under: the root, or the group itself while its
// hierarchy is invalid.
func (m *Manager) rootOrSelf(k Key) Key {
	if r, ok := m.groups.rootOf(k); ok {
		return r
	}
	return k
}

// refreshLocked re-validates and re-evaluates every group a change at k can affect: the
// subtree of the highest group above k. It queues status updates for groups whose state
// changed and returns the pending pods of PodGroups that just became ready by known pods,
// for the caller to activate once the lock is released (a pod gated in PreEnqueue is only
// looked at again when something activates it).
func (m *Manager) refreshLocked(k Key) []*v1.Pod {
	top := m.groups.topOf(k)
	keys := m.groups.subtree(top)
	for _, key := range keys {
		g := m.groups[key]
		problem := ""
		if g.exists() {
			problem = m.groups.hierarchyProblem(key)
			for _, v := range m.validators {
				if problem != "" {
					break
				}
				problem = v(key, g.topology())
			}
		}
		if problem != g.problem {
			g.problem = problem
			m.status.enqueueNow(key)
		}
	}
	known := m.groups.readiness(countKnown)
	var activate []*v1.Pod
	for _, key := range keys {
		g := m.groups[key]
		ready := known.path(key)
		if ready != g.wasReady {
			g.wasReady = ready
			m.status.enqueue(key)
			if ready && key.Kind == KindPodGroup {
				for _, mem := range g.members {
					if !mem.bound && !mem.assumed {
						activate = append(activate, mem.pod)
					}
				}
			}
		} else if !ready && g.exists() && !g.scheduled {
			m.status.enqueue(key)
		}
	}
	return activate
}

// Validator returns why a group's topology constraints cannot be honored, or "".
type Validator func(k Key, topology []v1alpha1.TopologyConstraint) string

// AddValidator adds a check of group specs (a plugin's configuration, e.g. its topology
// levels) and re-validates every group: a group that fails it is Invalid, with the message.
func (m *Manager) AddValidator(v Validator) {
	m.mu.Lock()
	m.validators = append(m.validators, v)
	tops := sets.New[Key]()
	for k := range m.groups {
		tops.Insert(m.groups.topOf(k))
	}
	var activate []*v1.Pod
	for top := range tops {
		activate = append(activate, m.refreshLocked(top)...)
	}
	m.mu.Unlock()
	m.activate(activate)
}

// activate moves gated or backing-off pods to the active queue. Never called with m.mu held.
func (m *Manager) activate(pods []*v1.Pod) {
	if len(pods) == 0 || m.activator == nil {
		return
	}
	byKey := make(map[string]*v1.Pod, len(pods))
	for _, p := range pods {
		byKey[p.Namespace+"/"+p.Name] = p
	}
	m.activator.Activate(m.logger, byKey)
}

// treePodGroups returns the PodGroups of the tree rooted at root.
func (m *Manager) treePodGroups(root Key) []*group {
	var out []*group
	for _, k := range m.groups.subtree(root) {
		if k.Kind == KindPodGroup {
			out = append(out, m.groups[k])
		}
	}
	return out
}

func sortedKeys(s sets.Set[Key]) []Key {
	out := s.UnsortedList()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// now is the Manager's clock, replaceable in tests.
func (m *Manager) now() time.Time { return m.clock.Now() }
