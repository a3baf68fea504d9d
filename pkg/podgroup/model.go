package podgroup

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
)

// Model is the group model of one scheduler, shared by its profiles. It keeps, under one
// lock, the Index of groups, the Members of each PodGroup (filed by a filing.Book) and the
// Attempts the scheduler makes, and splits its work by role:
//   - the Model itself takes the informers' news (groups, pods, Jobs, nodes) and keeps the
//     trees and their members (membership.go, settle.go);
//   - the Gate answers the plugins' read-only questions: may a pod be scheduled, in which
//     order, what its tree looks like (gate.go, views.go, status.go);
//   - Permits owns the attempts: reservations, waits at Permit, failures, deadlines and
//     retries, and is the only one to allow or reject a waiting pod (permits.go,
//     retries.go).
//
// It tells the scheduler what follows (activate, allow or reject pods) through Scheduler,
// never while holding its lock, except Permits' allowing, which must not be interleaved
// with a rejection (see Permits).
type Model struct {
	mu       sync.Mutex
	index    *Index
	members  *Members
	book     *filing.Book
	permits  *Permits
	gate     *Gate
	sched    Scheduler
	evictor  Evictor
	teller   Teller
	status   StatusQueue
	recorder events.EventRecorder
	clock    Clock
	logger   klog.Logger

	// profiles are the scheduler names served, with what each profile's plugins set.
	profiles map[string]*Profile
	// synced reports whether the caches and handlers have seen every object that existed
	// at start; until then members are held and remembered in held.
	synced func() bool
	// held are pods turned away before the model could answer for them (not synced yet, or
	// not seen by the model's own pod handler yet); they are activated once it can.
	held map[types.UID]*v1.Pod
	// room is what each node has free, to tell news that can help a waiting gang (room.go).
	room *nodeRoom
	// left is the last pod a room hint asked about and what it requested (RoomHelps): the
	// queue asks about one deletion for every waiting pod.
	left struct {
		uid   types.UID
		freed capacity.Resources
		// more: its leaving frees more than room (freesMoreThanRoomLocked).
		more bool
	}
	// noticed are the pods told, by an event, that their PodGroup does not exist, and the
	// type of the last event each was told (once each: Normal, then Warning; see
	// noticeMissingGroupLocked).
	noticed map[types.UID]string
	// waitsLeft are the nodes of members' reservations that ended without a bind, whose
	// nominations the model clears (nominations.go).
	waitsLeft waitsLeft
	// groupWarnings are, per unit (a Job, the object its pods' labels name), when its timer
	// looks again at its pods still waiting for the PodGroup the workload controller
	// creates, to warn those that waited too long (groupStillMissing).
	groupWarnings map[filing.Unit]time.Time
	// knownReady remembers, per PodGroup, whether its path was ready by the pods that exist
	// at the last refresh: a flip to ready activates its gated members.
	knownReady map[Key]bool
	// leading: the scheduler leads (Lead was called); only the leader releases gangs.
	leading bool
	// regroupings logs where what the model says of running pods changed (regrouping.go).
	regroupings regroupings
	// nativeKinds are the kinds of native groups the model reads (ReadNative): only then does
	// a pod's spec.schedulingGroup file it.
	nativeKinds sets.Set[Kind]
	// foreign are the pods of other schedulers in native groups (foreign.go).
	foreign *foreign

	priorityLister schedulinglisters.PriorityClassLister
}

// Profile is one scheduling profile the model serves.
type Profile struct {
	// Name is the profile's schedulerName.
	Name string
	// JobGroupTimeout is how long pods of a Job that gets a gang wait for its PodGroup.
	JobGroupTimeout time.Duration
	// PartialBindTimeout is how long a gang stays partially bound before it is released
	// whole (partial.go).
	PartialBindTimeout time.Duration
	// Validators check group specs against the profile's configuration (e.g. topology
	// levels); a group that fails one is Invalid.
	Validators []Validator
}

// Scheduler is what the model asks of the scheduler it serves.
type Scheduler interface {
	// Activate moves pods to the active queue, whatever held them back.
	Activate(logger klog.Logger, pods []*v1.Pod)
	// Hold sends pods that failed back through PreEnqueue, which holds them while their tree
	// backs off: out of the scheduling queue's passes at cluster events (heldFromNowLocked).
	Hold(logger klog.Logger, pods []*v1.Pod)
	// Allow lets a pod waiting at Permit bind; Reject refuses it.
	Allow(pod *v1.Pod)
	Reject(pod *v1.Pod, msg string)
	// Live reports whether a pod exists and is not being deleted, from the scheduler's pod
	// cache, which is updated before any event handler runs.
	Live(pod *v1.Pod) bool
}

// StatusQueue is told which groups' conditions may have changed.
type StatusQueue interface {
	Enqueue(k Key)
	EnqueueAfter(k Key, d time.Duration)
}

// RoundObserver hears when a tree's attempt ends (its plan, if any, is stale then), when a
// tree was scheduled, and when a group is gone: what was held for the tree may go. It also
// says whether a tree waits for the pods its preemption evicts.
type RoundObserver interface {
	AttemptEnded(root Key)
	TreeScheduled(root Key)
	TreeGone(root Key)
	// AwaitsVictims reports whether root's tree has a live plan made by preempting
	// (preempted), and whether pods it evicts are still there (waiting). The model asks it
	// with its lock held: it must not call the model.
	AwaitsVictims(root Key) (preempted, waiting bool)
}

// Clock is the model's time and timers.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns the current time.
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc runs f in its own goroutine after d.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Options configure a Model.
type Options struct {
	Scheduler Scheduler
	// Evictor evicts the bound members of half-bound gangs the model releases (nil: none
	// is).
	Evictor Evictor
	// Teller writes why they wait on gang members no scheduling cycle tried (nil: none is).
	Teller   Teller
	Status   StatusQueue
	Recorder events.EventRecorder
	Clock    Clock
	Observer RoundObserver
	Logger   klog.Logger
	// Workloads files the pods of Jobs; nil for Jobs that get a gang by their own spec
	// (filing.JobGangs), their PodGroups created by a workload controller.
	Workloads filing.Workloads
}

// DefaultRetryFloor is the least time between two attempts of a tree that news retries.
const DefaultRetryFloor = time.Second

// New returns a model that is fed by calling its handlers; Watch connects it to informers.
func New(opts Options) *Model {
	m := &Model{
		index:       NewIndex(),
		members:     NewMembers(),
		book:        filing.NewBook(opts.Workloads),
		sched:       opts.Scheduler,
		evictor:     opts.Evictor,
		teller:      opts.Teller,
		status:      opts.Status,
		recorder:    opts.Recorder,
		clock:       opts.Clock,
		logger:      opts.Logger,
		profiles:    map[string]*Profile{},
		synced:      func() bool { return true },
		held:        map[types.UID]*v1.Pod{},
		room:        newNodeRoom(),
		noticed:     map[types.UID]string{},
		waitsLeft:   waitsLeft{},
		knownReady:  map[Key]bool{},
		nativeKinds: sets.New[Kind](),
		foreign:     newForeign(),

		groupWarnings: map[filing.Unit]time.Time{},
	}
	if m.clock == nil {
		m.clock = RealClock{}
	}
	if m.status == nil {
		m.status = nopStatus{}
	}
	m.gate = &Gate{m: m}
	m.permits = newPermits(m, opts.Observer)
	return m
}

// Gate is the model's read-only role: what the plugins ask before and while scheduling.
func (m *Model) Gate() *Gate { return m.gate }

// Permits is the model's role that owns the scheduler's attempts.
func (m *Model) Permits() *Permits { return m.permits }

type nopStatus struct{}

func (nopStatus) Enqueue(Key)                     {}
func (nopStatus) EnqueueAfter(Key, time.Duration) {}

// Watch connects the model to the scheduler's informers (pods, nodes, Jobs, PriorityClasses),
// to lockstep's (groups) and to the native groups' source (nil: none, or already watching). It only registers handlers; the caller starts the factories.
// Until the caches have synced, members are held (a restarted scheduler must count the
// members already bound first), then activated.
func (m *Model) Watch(ctx context.Context, kube informers.SharedInformerFactory, lockstep externalversions.SharedInformerFactory, native *NativeSource) error {
	var synced []cache.InformerSynced
	add := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return err
		}
		synced = append(synced, reg.HasSynced)
		return nil
	}
	groupHandler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.OnGroup(nil, obj) },
		UpdateFunc: m.OnGroup,
		DeleteFunc: m.OnGroupDelete,
	}
	if err := add(lockstep.Scheduling().V1alpha1().PodGroups().Informer(), groupHandler); err != nil {
		return err
	}
	if err := add(lockstep.Scheduling().V1alpha1().CompositePodGroups().Informer(), groupHandler); err != nil {
		return err
	}
	jobs := kube.Batch().V1().Jobs()
	m.mu.Lock()
	m.book.SetJobs(jobs.Lister())
	m.mu.Unlock()
	if err := add(jobs.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    m.OnJob,
		UpdateFunc: m.OnJobUpdate,
		DeleteFunc: m.OnJobDelete,
	}); err != nil {
		return err
	}
	m.priorityLister = kube.Scheduling().V1().PriorityClasses().Lister()
	// A PriorityClass a group names, created or edited, changes its running gang's priority.
	if _, err := kube.Scheduling().V1().PriorityClasses().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.OnPriorityClass() },
		UpdateFunc: func(any, any) { m.OnPriorityClass() },
		DeleteFunc: func(any) { m.OnPriorityClass() },
	}); err != nil {
		return err
	}
	// The scheduler's own pod informer: the same stream the scheduling queue sees.
	if err := add(kube.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.OnPod(nil, obj) },
		UpdateFunc: m.OnPod,
		DeleteFunc: m.OnPodDelete,
	}); err != nil {
		return err
	}
	if _, err := kube.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    m.OnNodeAdd,
		UpdateFunc: m.onNodeUpdate,
		DeleteFunc: m.OnNodeDelete,
	}); err != nil {
		return err
	}
	if s, ok := m.book.Workloads().(interface{ HasSynced() bool }); ok {
		// Workload kinds of other APIs (scheduler-plugins PodGroups) file pods too.
		synced = append(synced, s.HasSynced)
	}
	if native != nil {
		// The native groups served at start (their informers started by now).
		synced = append(synced, native.HasSynced)
	}
	m.mu.Lock()
	// Synced once is synced for good: an informer added later (a workload kind whose CRD is
	// installed while lockstep runs) must not hold pods again, for nothing would release
	// them; pods of such a kind wait for their objects by their filing instead.
	var once atomic.Bool
	m.synced = func() bool {
		if once.Load() {
			return true
		}
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		once.Store(true)
		return true
	}
	m.mu.Unlock()
	go func() {
		if cache.WaitForNamedCacheSync("lockstep", ctx.Done(), m.HasSynced) {
			m.mu.Lock()
			held := m.takeHeldLocked()
			m.mu.Unlock()
			m.activate(m.logger, held)
			m.Synced()
		}
	}()
	return nil
}

// Synced is told when the model has seen every group and pod that existed when it started:
// every group's life is looked at again with all of them (what a restarted scheduler missed
// before was not lost).
func (m *Model) Synced() {
	m.update(m.logger, func(eff *effects) {
		for _, k := range m.index.Keys() {
			eff.touch(m.index.TopOf(k))
		}
	})
}

// HasSynced reports whether the model has seen every group and pod that existed when it
// started.
func (m *Model) HasSynced() bool {
	m.mu.Lock()
	s := m.synced
	m.mu.Unlock()
	return s()
}

// AddProfile registers a profile the model serves (its plugins call it as they are built),
// or adds to the registration: validators accumulate, a timeout replaces the default.
func (m *Model) AddProfile(p Profile) {
	m.mu.Lock()
	prof := m.profiles[p.Name]
	if prof == nil {
		prof = &Profile{Name: p.Name, JobGroupTimeout: 2 * time.Minute, PartialBindTimeout: DefaultPartialBindTimeout}
		m.profiles[p.Name] = prof
	}
	if p.JobGroupTimeout > 0 {
		prof.JobGroupTimeout = p.JobGroupTimeout
	}
	if p.PartialBindTimeout > 0 {
		prof.PartialBindTimeout = p.PartialBindTimeout
	}
	prof.Validators = append(prof.Validators, p.Validators...)
	eff := m.newEffects(m.logger)
	if len(p.Validators) > 0 {
		for _, k := range m.index.Keys() {
			eff.reshape(m.index.TopOf(k))
		}
		m.noteAllLocked() // a group may be valid no longer, or again
	}
	m.settleLocked(eff)
	m.mu.Unlock()
	m.apply(eff)
}

func (m *Model) servesLocked(pod *v1.Pod) bool {
	_, ok := m.profiles[pod.Spec.SchedulerName]
	return ok
}

func (m *Model) validatorsLocked() []Validator {
	var out []Validator
	for _, p := range m.profiles {
		out = append(out, p.Validators...)
	}
	return out
}

// effects are what the model asks of the scheduler after a change, applied once its lock
// is released, and the trees the change touched, which settleLocked brings up to date
// before the lock is released.
type effects struct {
	logger   klog.Logger
	activate []*v1.Pod
	// hold are pods that failed, to send back through PreEnqueue (Scheduler.Hold).
	hold []*v1.Pod
	tell []telling
	// unnominate are members whose nominations their ended waits left (nominations.go).
	unnominate []*v1.Pod
	reject     []rejection
	evict      []eviction
	ended      []Key
	// dirty are the tops of trees to refresh (settle.go), true for those whose shape (groups,
	// validity) may have changed.
	dirty map[Key]bool
}

// telling is what members no cycle tried are told (Teller).
type telling struct {
	pods []*v1.Pod
	msg  string
}

type rejection struct {
	pod *v1.Pod
	msg string
}

func (m *Model) newEffects(logger klog.Logger) *effects {
	if logger.GetSink() == nil {
		logger = m.logger
	}
	return &effects{logger: logger, dirty: map[Key]bool{}}
}

func (e *effects) rejectPod(p *v1.Pod, msg string) {
	e.reject = append(e.reject, rejection{pod: p, msg: msg})
}

// touch marks the tree of top for a refresh.
func (e *effects) touch(top Key) {
	if _, ok := e.dirty[top]; !ok {
		e.dirty[top] = false
	}
}

// reshape marks the tree of top for a refresh of its shape.
func (e *effects) reshape(top Key) { e.dirty[top] = true }

// apply carries out effects. Never called with m.mu held.
func (m *Model) apply(e *effects) {
	if m.sched != nil {
		for _, r := range e.reject {
			m.sched.Reject(r.pod, r.msg)
		}
	}
	m.permits.ended(e.ended)
	m.activate(e.logger, e.activate)
	if m.sched != nil && len(e.hold) > 0 {
		m.sched.Hold(e.logger, e.hold)
	}
	if m.teller != nil {
		// Queued: API writes, off the scheduling cycle that may have failed the gang.
		for _, t := range e.tell {
			m.teller.Tell(e.logger, t.pods, t.msg)
		}
		for _, p := range e.unnominate {
			m.teller.Unnominate(e.logger, p)
		}
	}
	if m.evictor != nil {
		// Only the release timer (its own goroutine) evicts: no scheduling cycle waits.
		for _, ev := range e.evict {
			if m.recorder != nil {
				action := "Releasing"
				if ev.reason != ReasonGangReleased {
					action = "Preempting"
				}
				m.recorder.Eventf(ev.group, nil, v1.EventTypeWarning, ev.reason, action, "%s", ev.why)
			}
			m.evictor.Evict(e.logger, ev.pods, ev.reason, ev.why)
		}
	}
}

// activate hands pods to the queue in the order it sorts them (queueOrderLocked): the first
// first, each once. Never called with m.mu held.
func (m *Model) activate(logger klog.Logger, pods []*v1.Pod) {
	if len(pods) == 0 || m.sched == nil {
		return
	}
	if len(pods) > 1 {
		m.mu.Lock()
		pods = m.queueOrderLocked(pods)
		m.mu.Unlock()
	}
	m.sched.Activate(logger, pods)
}

// queueOrderLocked sorts pods by the key the queue will sort them by once Admit lets them in
// (a pod in no group by its priority and creation), keeping the order of pods with one key,
// and drops a pod named twice (one update may activate a pod for two reasons: it left its
// group and its wait ended).
//
// The queue moves the pods of one activation to its active queue one by one, under a lock its
// scheduling loop does not take to pop (the active queue has its own): pods handed over in no
// order could be popped before an earlier one was pushed. With 2500 waiting gangs at 15,000
// nodes, the scout of the 3rd or 5th oldest gang that news retried was popped before the
// oldest's was pushed, and took the node that was the oldest's (test/integration/gang's
// TestReactionUnderLoad). Handed over in order (Scheduler.Activate), the queue never holds a
// later pod without the earlier ones.
func (m *Model) queueOrderLocked(pods []*v1.Pod) []*v1.Pod {
	keys := make(map[types.UID]SortKey, len(pods))
	unique := pods[:0]
	for _, p := range pods {
		if _, dup := keys[p.UID]; !dup {
			keys[p.UID] = m.queueKeyLocked(p)
			unique = append(unique, p)
		}
	}
	slices.SortStableFunc(unique, func(a, b *v1.Pod) int { return keys[a.UID].compare(keys[b.UID]) })
	return unique
}

// queueKeyLocked is the key Admit would give pod now: its tree's for a member (Gate.Admit),
// else loneKey.
func (m *Model) queueKeyLocked(pod *v1.Pod) SortKey {
	if k, ok := m.groupOfLocked(pod); ok {
		if root, ok := m.index.RootOf(k); ok {
			return m.sortKeyLocked(pod, root, m.permits.queueTimeLocked(root))
		}
	}
	return loneKey(pod)
}

func (m *Model) takeHeldLocked() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(m.held))
	for _, p := range m.held {
		out = append(out, p)
	}
	clear(m.held)
	return out
}

// update runs fn under the lock, settles the trees it touched, and applies its effects.
func (m *Model) update(logger klog.Logger, fn func(eff *effects)) {
	m.mu.Lock()
	eff := m.newEffects(logger)
	fn(eff)
	m.settleLocked(eff)
	m.mu.Unlock()
	m.apply(eff)
}

// --- groups ---

// OnGroup records a PodGroup or CompositePodGroup that was added (old nil) or updated. A
// change of spec is news for the tree: if it was held back after a failed attempt, it is
// retried now (a lowered minimum, for one, may let it fit).
func (m *Model) OnGroup(old, obj any) { m.onGroup(old, obj, "") }

// OnNativeGroup is OnGroup for a native scheduling.k8s.io group (FromNative).
func (m *Model) OnNativeGroup(old, obj any) {
	cur, why := FromNative(obj)
	if cur == nil {
		return
	}
	var prev any
	if old != nil {
		prev, _ = FromNative(old)
	}
	m.onGroup(prev, cur, why)
}

// OnNativeGroupDelete is OnGroupDelete for a native group.
func (m *Model) OnNativeGroupDelete(obj any) {
	if cur, _ := FromNative(obj); cur != nil {
		m.OnGroupDelete(cur)
	}
}

func (m *Model) onGroup(old, obj any, specProblem string) {
	k, ok := KeyOfObject(obj)
	if !ok {
		return
	}
	m.update(m.logger, func(eff *effects) {
		// The trees the group left and joined, the members of each noted once: membership
		// does not change with a group, only the trees' shapes.
		tops := []Key{m.index.TopOf(k)}
		for _, top := range m.index.UpsertRead(obj, specProblem) {
			eff.reshape(top)
			tops = append(tops, top)
		}
		m.noteTreesLocked(tops...)
		m.refileGroupUnitsLocked(eff, k)
		// What the object says of the group's life is read back: a restart, a new leader, its
		// own write coming back, or a late event (never older than what the model decided).
		m.fireLocked(eff, k, Restored, "its object read back")
		if old != nil && specChanged(old, obj) {
			if root, ok := m.index.RootOf(k); ok {
				m.permits.pokeLocked(root, fmt.Sprintf("%s changed", k))
			}
		}
	})
}

func specChanged(old, cur any) bool {
	switch o := old.(type) {
	case *v1alpha1.PodGroup:
		c, ok := cur.(*v1alpha1.PodGroup)
		return !ok || !reflect.DeepEqual(o.Spec, c.Spec)
	case *v1alpha1.CompositePodGroup:
		c, ok := cur.(*v1alpha1.CompositePodGroup)
		return !ok || !reflect.DeepEqual(o.Spec, c.Spec)
	}
	return true
}

// OnGroupDelete forgets a group. Its members stay members (of a missing group, which holds
// them); members of its tree waiting at Permit are released when their tree can no longer be
// ready.
func (m *Model) OnGroupDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	k, ok := KeyOfObject(obj)
	if !ok {
		return
	}
	m.update(m.logger, func(eff *effects) {
		// Its pending members are queued again, to be held and told that their group is
		// gone rather than keep the reason of their last attempt.
		for _, sk := range m.index.Subtree(k) {
			if sk.Kind == KindPodGroup {
				eff.activate = append(eff.activate, m.pendingOfLocked(sk)...)
			}
		}
		tops := []Key{k, m.index.TopOf(k)} // k, out of the index once deleted, counts its own members
		m.fireLocked(eff, k, Deleted, "its object was deleted")
		for _, top := range m.index.Delete(obj) {
			eff.reshape(top)
			tops = append(tops, top)
		}
		m.noteTreesLocked(tops...)
		m.refileGroupUnitsLocked(eff, k)
	})
	// Once the change settled (its members' reservations released with its tree), what was
	// kept about the group goes, in one place.
	m.update(m.logger, func(*effects) { m.goneLocked(k) })
	if m.permits.observer != nil {
		m.permits.observer.TreeGone(k)
	}
}

// goneLocked forgets everything kept about a group whose object is gone (unless one of the
// same key was created since): the one path that frees a group's state. What it held for
// its tree's attempts (outcome, round and its timers), whether its path was ready, and what
// its status writer remembers (told through the queue: the writer forgets a group it finds
// gone). Plans and reservations are freed by the observer (TreeGone).
func (m *Model) goneLocked(k Key) {
	if m.index.Get(k).Exists() {
		return
	}
	m.permits.forgetGroupLocked(k)
	m.members.ForgetGroup(k)
	delete(m.knownReady, k)
	m.status.Enqueue(k)
}

// --- pods ---

// OnPod records a pod that was added (old nil) or updated.
func (m *Model) OnPod(oldObj, obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	old, _ := oldObj.(*v1.Pod)
	m.update(m.logger, func(eff *effects) {
		if m.servesLocked(pod) {
			m.book.Remember(pod)
		}
		m.filePodLocked(eff, pod)
		m.fileForeignLocked(pod)
		m.nominationLocked(eff, old, pod)
		m.permits.scoutRefusedLocked(eff, old, pod)
		m.room.pod(old, pod)
		if holdsRoom(old) && !holdsRoom(pod) {
			m.permits.pokeLeftLocked(old, fmt.Sprintf("pod %s/%s finished on node %s", pod.Namespace, pod.Name, old.Spec.NodeName))
		}
	})
}

// OnPodDelete forgets a pod. A pod that had a node leaves room: trees that failed for want
// of room are retried.
func (m *Model) OnPodDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	m.update(m.logger, func(eff *effects) {
		m.book.Forget(pod)
		m.gate.forget(pod.UID)
		m.removeMemberLocked(eff, pod.UID, fmt.Sprintf("pod %s was deleted", pod.Name))
		m.foreign.remove(pod.UID)
		delete(m.held, pod.UID)
		delete(m.noticed, pod.UID)
		delete(m.waitsLeft, pod.UID)
		m.room.pod(pod, nil)
		if pod.Spec.NodeName != "" {
			m.permits.pokeLeftLocked(pod, fmt.Sprintf("pod %s/%s left node %s", pod.Namespace, pod.Name, pod.Spec.NodeName))
		}
	})
}

// --- capacity ---

func (m *Model) onNodeUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*v1.Node)
	n, ok2 := newObj.(*v1.Node)
	if !ok1 || !ok2 {
		return
	}
	m.mu.Lock()
	m.room.setNode(n)
	switch why := nodeNews(o, n); why {
	case "":
	case nodeGrew:
		m.permits.pokeRoomLocked(n.Name, fmt.Sprintf("node %s %s", n.Name, why))
	default:
		m.permits.pokeStalledLocked(fmt.Sprintf("node %s %s", n.Name, why))
	}
	m.mu.Unlock()
}

// nodeGrew is nodeNews for a node whose allocatable grew: news only for gangs it can now take
// a member of.
const nodeGrew = "grew"

// nodeNews says how a node changed in a way that may let a pod fit, or "".
func nodeNews(o, n *v1.Node) string {
	switch {
	case o.Spec.Unschedulable && !n.Spec.Unschedulable:
		return "became schedulable"
	case !reflect.DeepEqual(o.Labels, n.Labels):
		return "was relabeled"
	case !reflect.DeepEqual(o.Spec.Taints, n.Spec.Taints):
		return "changed taints"
	}
	for name, q := range n.Status.Allocatable {
		if oq, ok := o.Status.Allocatable[name]; !ok || q.Cmp(oq) > 0 {
			return nodeGrew
		}
	}
	return ""
}

// OnNodeDelete releases the members waiting at Permit with a reservation on a node that is
// gone: allowed, they would bind to it. They are scheduled again; their trees keep waiting
// for them if they can still be ready.
func (m *Model) OnNodeDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	m.update(m.logger, func(eff *effects) {
		m.room.deleteNode(node.Name)
		m.permits.nodeGoneLocked(eff, node.Name)
	})
}

// OnNodeAdd retries the trees that failed for want of room; a node added under the name of
// one deleted is a node again.
func (m *Model) OnNodeAdd(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		m.OnCapacity("node added")
		return
	}
	m.mu.Lock()
	delete(m.permits.gone, node.Name)
	m.room.setNode(node)
	m.permits.pokeRoomLocked(node.Name, fmt.Sprintf("node %s added", node.Name))
	m.mu.Unlock()
}

// OnCapacity tells the model that room may have appeared (a node added or grown, a pod
// gone): trees that failed for want of room are retried now.
func (m *Model) OnCapacity(why string) {
	m.mu.Lock()
	m.permits.pokeStalledLocked(why)
	m.mu.Unlock()
}

// --- priority ---

// priorityLocked is the priority of a member's tree: its root's priorityClassName, else
// the pod's own.
func (m *Model) priorityLocked(pod *v1.Pod, root Key) int32 {
	if g := m.index.Get(root); g.Exists() && g.PriorityClassName() != "" && m.priorityLister != nil {
		if pc, err := m.priorityLister.Get(g.PriorityClassName()); err == nil {
			return pc.Value
		}
	}
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// Lead is called when the scheduler becomes the leader: what a standby did not announce is
// announced now (events per pod, conditions), and held members are looked at again.
func (m *Model) Lead() {
	m.mu.Lock()
	m.leading = true
	m.noticed = map[types.UID]string{}
	roots := sets.New[Key]()
	for _, k := range m.index.Keys() {
		if m.index.Get(k).Life().State() == PartiallyBound {
			if root, ok := m.index.RootOf(k); ok {
				roots.Insert(root)
			}
		}
	}
	for root := range roots {
		m.permits.armPartialLocked(root) // decisions a standby's timers left
	}
	for _, k := range m.index.Keys() {
		if m.index.Get(k).Exists() {
			m.status.Enqueue(k)
		}
	}
	var pods []*v1.Pod
	for _, k := range m.members.Groups() {
		pods = append(pods, m.pendingOfLocked(k)...)
	}
	m.mu.Unlock()
	m.activate(m.logger, pods)
}

// Sizes counts what the model keeps, per kind of state (diagnostics: a scheduler that has run
// a hundred thousand gangs keeps what its live groups and pods need, no more).
func (m *Model) Sizes() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	as, ms := m.permits.attempts, m.members
	out := map[string]int{
		"groups": len(m.index.entries), "exclusive": m.index.exclusive.Len(),
		"members": len(ms.byUID), "memberGroups": len(ms.byGroup), "bound": len(ms.bound), "ran": len(ms.ran), "succeeded": len(ms.succeeded), "kueueGated": len(ms.kueueGated),
		"attempts": len(as.byPod), "attemptGroups": len(as.byGroup), "inFlight": len(as.inFlight), "rounds": len(as.rounds), "heldRounds": len(as.held.all), "outcomes": len(as.outcomes),
		"knownReady": len(m.knownReady), "held": len(m.held), "noticed": len(m.noticed), "groupWarnings": len(m.groupWarnings), "gone": len(m.permits.gone), "foreign": len(m.foreign.groupOf),
	}
	for k, v := range m.book.Sizes() {
		out["book."+k] = v
	}
	m.gate.sortKeys.Range(func(any, any) bool { out["sortKeys"]++; return true })
	return out
}
