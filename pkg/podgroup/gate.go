package podgroup

import (
	"fmt"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Gate is the model's read-only role: whether a pod may enter the scheduling queue or cycle
// and in which order (here), what its tree looks like for planning and preemption
// (views.go, preemption.go, exclusive.go), and which condition its groups should carry
// (status.go). Its answers change nothing of the attempts; Admit only remembers the pods it
// turned away, to activate them when it can answer.
type Gate struct {
	m *Model
	// sortKeys are the queue-sort keys of the pods Admit let into the queue, fixed until the
	// pod enters the queue again: QueueSort reads them under the queue's lock, lock-free.
	sortKeys sync.Map // types.UID → SortKey
	// turnHolders are the profiles that run LockstepScout (pkg/plugins/scout), which holds
	// the members waiting their turn (AwaitsTurn) where LockstepGang lets them through.
	turnHolders sync.Map // profile name → struct{}
}

// AddProfile registers a profile the model serves (see Model.AddProfile).
func (g *Gate) AddProfile(p Profile) { g.m.AddProfile(p) }

// HoldTurns registers a profile that runs LockstepScout.
func (g *Gate) HoldTurns(profile string) { g.turnHolders.Store(profile, struct{}{}) }

// TurnsHeld reports whether LockstepScout holds the members of profile that wait their turn.
func (g *Gate) TurnsHeld(profile string) bool {
	_, ok := g.turnHolders.Load(profile)
	return ok
}

// AwaitsTurn answers LockstepScout's PreEnqueue: whether the member waits for its tree's
// scout (another member) or for its tree's backoff to end, and the verdict saying so (Peek:
// no side effects; a tree with no scout yet gets one from Admit, LockstepGang's).
func (g *Gate) AwaitsTurn(pod *v1.Pod) (Verdict, bool) {
	v := g.Peek(pod)
	return v, v.Code.AwaitsTurn()
}

// VerdictCode says whether a pod may enter the scheduling queue or cycle.
type VerdictCode int

const (
	// Proceed: schedule the pod.
	Proceed VerdictCode = iota
	// NotMember: the pod belongs to no group; lockstep has nothing to say.
	NotMember
	// MissingGroup: the pod's PodGroup does not exist (yet).
	MissingGroup
	// Invalid: the pod's group or one of its ancestors is invalid.
	Invalid
	// WaitingForPods: the tree cannot be ready with the pods that exist.
	WaitingForPods
	// BackingOff: the tree's last attempt failed moments ago.
	BackingOff
	// Syncing: the scheduler just started and has not seen every pod yet.
	Syncing
	// Unseen: the model's pod informer has not delivered the pod yet.
	Unseen
	// Suspended: the pod's Job is suspended (queued, or being preempted, by Kueue): none of
	// its pods binds until it is resumed.
	Suspended
	// AwaitingKueue: a member's scheduling gates hold the tree (holdsTree: Kueue has not
	// placed it yet; or, in a native group, any gate): the gang is tried once none does, with
	// every member's node selector final.
	AwaitingKueue
	// AwaitingScout: the tree has no attempt in progress, and another member (its scout) is
	// trying it for all (scout.go).
	AwaitingScout
)

var verdictNames = [...]string{"Proceed", "NotMember", "MissingGroup", "Invalid", "WaitingForPods", "BackingOff", "Syncing", "Unseen", "Suspended", "AwaitingKueue", "AwaitingScout"}

func (c VerdictCode) String() string { return verdictNames[c] }

// AwaitsTurn reports whether the verdict holds a member until its tree's scout or backoff
// lets it in: holds only the group model ends (it activates the members), never a cluster
// event the scheduling queue sees.
func (c VerdictCode) AwaitsTurn() bool { return c == BackingOff || c == AwaitingScout }

// Verdict is the answer to "may this pod be scheduled now?", with a message a person can act
// on whenever the answer is no.
type Verdict struct {
	Code    VerdictCode
	Group   Key
	Root    Key
	Message string
	// MinResources, with Proceed, is the PodGroup's minResources while it waits for its
	// initial scheduling (MinResources), read under the same lock as the verdict.
	MinResources v1.ResourceList
}

// checkMode says who asks: the queue (PreEnqueue), the scheduling cycle (PreFilter), or a
// queueing hint (which must not change anything).
type checkMode int

const (
	modeEnqueue checkMode = iota
	modeCycle
	modePeek
)

// Admit answers PreEnqueue: a pod waits out of the queue until its PodGroup and every
// ancestor exist, its tree is valid and enough pods exist for its path to be ready (or its
// group was initially scheduled), while its tree backs off after a failed attempt, and,
// for a gang with no attempt in progress, until its scout found room for it (scout.go).
// Pods held because the model has not seen them yet are activated when it has. A pod whose PodGroup does not exist is told so by an event: Normal
// while lockstep's workload controller is creating it, Warning once the wait is longer than
// it should need or at once for a group nobody else creates (noticeMissingGroupLocked;
// events are recorded while the scheduler leads; becoming leader announces again). A pod
// let in gets its queue-sort key, fixed while it is queued.
func (g *Gate) Admit(logger klog.Logger, pod *v1.Pod) Verdict {
	v, key := g.check(logger, pod, modeEnqueue, 0)
	if v.Code == Proceed {
		g.sortKeys.Store(pod.UID, key)
	} else {
		g.sortKeys.Delete(pod.UID)
	}
	return v
}

// Check answers PreFilter: Admit's rules, and a tree that failed moments ago backs off; a
// scout lets trees the queue puts ahead of it try room news brings first (yieldLocked).
// nodes is the number of nodes in the cycle's snapshot (0: unknown).
func (g *Gate) Check(logger klog.Logger, pod *v1.Pod, nodes int) Verdict {
	v, _ := g.check(logger, pod, modeCycle, nodes)
	return v
}

// Peek answers Admit's question without side effects, for queueing hints.
func (g *Gate) Peek(pod *v1.Pod) Verdict {
	v, _ := g.check(klog.Background(), pod, modePeek, 0)
	return v
}

// Queueable answers a room hint: whether Peek would let the pod proceed (Proceed, or in no
// group). A hint runs for every waiting pod at every pod deletion and node change, so what
// holds a tree most of its wait, its backoff or its scout, is read first, and no message is
// built: with 10,000 gangs waiting, Peek's full check at each event was most of the
// scheduler's CPU. Whatever else check would answer, a tree held so does not proceed.
func (g *Gate) Queueable(pod *v1.Pod) bool {
	m := g.m
	m.mu.Lock()
	held := false
	if mem := m.members.Of(pod.UID); mem != nil && m.synced() {
		if root, ok := m.index.RootOf(mem.Group); ok {
			held = m.permits.backoffLeftLocked(root) > 0
			if !held && m.scoutedLocked(mem.Group) {
				_, held = m.permits.scoutPeekLocked(pod, root)
			}
		}
	}
	m.mu.Unlock()
	if held {
		return false
	}
	v := g.Peek(pod)
	return v.Code == Proceed || v.Code == NotMember
}

// RoomHelps answers a room hint for the pod left, gone from its node: false when the pod's
// tree last failed whole for want of room and that node cannot take the smallest of its
// pending members even with what left requested freed (nodeRoom.helpsWith). The queue asks
// it about every waiting pod at every deletion; a no spares a thousand waiting gangs a try
// each for a small pod leaving a full node. The model's own room news (retries.go) retries
// the trees the node can help once its informer sees the pod go, so a no is never lost news.
// True for anything else: a pod in no tree, a tree not yet failed or whose pods not only
// room decides (roomOnly) or that takes a domain to itself, a pod that kept members off
// other nodes too (freesMoreThanRoomLocked).
func (g *Gate) RoomHelps(pod, left *v1.Pod) bool {
	if left == nil || left.Spec.NodeName == "" {
		return true
	}
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.members.Of(pod.UID)
	if mem == nil || !m.synced() {
		return true
	}
	root, ok := m.index.RootOf(mem.Group)
	if !ok {
		return true
	}
	r := m.permits.attempts.rounds[root]
	if r == nil || !r.needKnown {
		return true
	}
	if m.left.uid != left.UID || m.left.uid == "" {
		m.left.uid, m.left.freed, m.left.more = left.UID, capacity.PodRequests(left), m.freesMoreThanRoomLocked(left)
	}
	return m.left.more || m.room.helpsWith(left.Spec.NodeName, m.left.freed, r.need)
}

// scoutedLocked reports whether the members of PodGroup k are tried by a scout while their
// tree has no attempt in progress: the group is not scheduled and binds only with others.
func (m *Model) scoutedLocked(k Key) bool {
	return !m.index.Get(k).Scheduled() && m.index.needsMany(k)
}

func (g *Gate) check(logger klog.Logger, pod *v1.Pod, mode checkMode, nodes int) (Verdict, SortKey) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if mode == modeCycle {
		m.permits.cycleLocked(g.cycleKey(pod))
		delete(m.waitsLeft, pod.UID) // this cycle's failure handler answers for its nomination
	}
	if job, ok := m.book.Job(pod); ok && filing.Suspended(job) && m.servesLocked(pod) && !terminated(pod) {
		// Whatever its group: a pod of a suspended Job never binds (Kueue suspends a running
		// Job to preempt it; its pending pods must not bind alone while they are deleted).
		// Activated when the Job is resumed (OnJobUpdate).
		return Verdict{Code: Suspended, Message: fmt.Sprintf("Job %s is suspended (queued or preempted by Kueue?): its pods are scheduled once it is resumed", job.Name)}, SortKey{}
	}
	mem := m.members.Of(pod.UID)
	if mem == nil || !m.synced() {
		k, ok := m.fileLocked(pod)
		if !ok || terminated(pod) {
			return Verdict{Code: NotMember}, SortKey{}
		}
		if mode != modePeek {
			m.held[pod.UID] = pod
		}
		if !m.synced() {
			return Verdict{Code: Syncing, Group: k, Message: "lockstep is starting: waiting until it has seen every group and pod (if this lasts, are lockstep's CRDs installed?)"}, SortKey{}
		}
		return Verdict{Code: Unseen, Group: k, Message: fmt.Sprintf("waiting for lockstep to observe pod %s", pod.Name)}, SortKey{}
	}
	if !maps.Equal(mem.Pod.Labels, pod.Labels) {
		// Its labels changed (they may move it to another group) and the model has not seen
		// it yet: a verdict for its old group could hold it for good. It waits for the model,
		// which activates it when it files the change.
		if mode != modePeek {
			m.held[pod.UID] = pod
		}
		return Verdict{Code: Unseen, Group: mem.Group, Message: fmt.Sprintf("waiting for lockstep to observe pod %s", pod.Name)}, SortKey{}
	}
	k := mem.Group
	grp := m.index.Get(k)
	if !grp.Exists() {
		msg := m.missingGroupMessage(pod, k)
		if mode == modeEnqueue {
			m.awaitGroupLocked(pod)
			// No group object to carry a condition: tell the pod, Normal while the workload
			// controller may still be creating it, Warning once that is not what it waits for.
			if u, again := m.noticeMissingGroupLocked(logger, pod, k, msg); !again.IsZero() {
				m.armGroupWarningLocked(u, again)
			}
		}
		return Verdict{Code: MissingGroup, Group: k, Message: msg}, SortKey{}
	}
	if grp.problem != "" {
		return Verdict{Code: Invalid, Group: k, Message: fmt.Sprintf("PodGroup %q is invalid: %s", k.Name, grp.problem)}, SortKey{}
	}
	root, ok := m.index.RootOf(k)
	if !ok {
		return Verdict{Code: Invalid, Group: k, Message: fmt.Sprintf("the tree of PodGroup %q is invalid", k.Name)}, SortKey{}
	}
	known := m.index.readiness(m.members.Known, true)
	if !known.path(k) {
		return Verdict{Code: WaitingForPods, Group: k, Root: root,
			Message: fmt.Sprintf("waiting for pods of PodGroup %q: %s", k.Name, known.shortfall(k, "exist"))}, SortKey{}
	}
	if msg := m.gatedMessageLocked(root); msg != "" {
		// Members whose gates hold their tree (holdsTree): Kueue's topology-aware scheduling
		// pins each pod (node selector) before it removes the pod's gate, and a gang tried
		// before every pin is in would place members where their new selectors exclude them;
		// a native group's gated member holds its group, as upstream's does. Activated when
		// the last such gate goes (filePodLocked).
		return Verdict{Code: AwaitingKueue, Group: k, Root: root, Message: msg}, SortKey{}
	}
	// A tree backing off is held out of the queue too (PreEnqueue): a member popped only to be
	// turned away would get its PodScheduled condition written with the backoff's words, then
	// with the next attempt's, at every attempt. The model activates a scout of the tree
	// (scout.go) when the backoff ends or news comes.
	// Queueing hints ask too: the model, not the hint, retries a tree backing off.
	if left := m.permits.backoffLeftLocked(root); left > 0 {
		if mode != modePeek {
			logger.V(4).Info("Gang backs off", "pod", klog.KObj(pod), "group", k, "root", root, "left", left)
		}
		return Verdict{Code: BackingOff, Group: k, Root: root,
			// The same words at every retry: the pod's PodScheduled condition is not written again.
			Message: fmt.Sprintf("gang %s backs off after a failed attempt; retried when the backoff ends or the cluster changes", root.Name)}, SortKey{}
	}
	// A tree with no attempt in progress is tried by its scout alone (scout.go).
	if m.scoutedLocked(k) {
		switch mode {
		case modeEnqueue:
			if scout, held := m.permits.scoutHoldsLocked(logger, pod, k, root); held {
				logger.V(5).Info("Member waits for its gang's scout", "pod", klog.KObj(pod), "group", k, "root", root, "scout", scout)
				return m.awaitingScoutLocked(k, root, scout), SortKey{}
			}
		case modePeek:
			if scout, held := m.permits.scoutPeekLocked(pod, root); held {
				return m.awaitingScoutLocked(k, root, scout), SortKey{}
			}
		case modeCycle:
			m.permits.scoutTriedLocked(pod.UID, root)
			if why, yield := m.permits.yieldLocked(logger, pod, root, nodes); yield {
				return Verdict{Code: BackingOff, Group: k, Root: root, Message: why}, SortKey{}
			}
		}
	}
	v := Verdict{Code: Proceed, Group: k, Root: root, MinResources: m.minResourcesLocked(k)}
	if mode != modeEnqueue {
		return v, SortKey{}
	}
	return v, m.sortKeyLocked(pod, root, m.permits.queueTimeLocked(root))
}

// sortKeyLocked is the queue-sort key of a member pod of root's tree, queued by time t.
func (m *Model) sortKeyLocked(pod *v1.Pod, root Key, t time.Time) SortKey {
	return SortKey{Priority: m.priorityLocked(pod, root), Finishing: !m.permits.attempts.Ended(root) || m.halfBoundLocked(root), Time: t, Root: root.String()}
}

func (m *Model) awaitingScoutLocked(k, root Key, scout types.UID) Verdict {
	var pod *v1.Pod
	if mem := m.members.Of(scout); mem != nil {
		pod = mem.Pod
	}
	return Verdict{Code: AwaitingScout, Group: k, Root: root, Message: scoutMessage(root, pod)}
}

// halfBoundLocked reports whether some members of root's tree are bound (or ran) although
// the tree was never scheduled whole: a leader that died between a gang's binds left it so,
// running pods whose peers are not bound. Its members go first.
func (m *Model) halfBoundLocked(root Key) bool {
	if m.index.Get(root).Life().Placed() {
		return false
	}
	half := false
	m.index.visit(root, func(g *Group) bool { // allocates nothing: asked for every queued tree
		if g.Key().Kind != KindPodGroup {
			return true
		}
		switch g.Life().State() {
		case Held, Pending, Waiting: // not placed; not evicted by a release or a preemption
			half = m.members.BoundOrRan(g.Key()) > 0
		}
		return !half
	})
	return half
}

// SortKey is what QueueSort orders a gang member by: its tree's priority (the root's
// priorityClassName, else the pod's), whether the tree is part placed, the later of its
// root's creation and last failure, and the root's key, so that members of one tree leave
// the queue together.
type SortKey struct {
	Priority int32
	// Finishing: part of the tree is placed but it is not scheduled whole: an attempt is under
	// way (members reserved or waiting at Permit, the rest let in when it started), or a
	// leader died between its binds. Within a priority, such trees go first: the room their
	// plan holds waits for them. Behind the scouts of thousands of older trees that news
	// retried, an attempt's members came out of the queue after its wait had timed out, and
	// each next tree's attempt did the same (10,000 gangs at 15,000 nodes,
	// test/integration/gang's TestReactionUnderLoad).
	Finishing bool
	Time      time.Time
	Root      string
}

// Before reports whether a pod of key k leaves the queue before one of key o: a higher
// priority, a part-placed tree first, the earlier time, then the root's key (QueueSort breaks
// the remaining ties by when each pod was queued).
func (k SortKey) Before(o SortKey) bool {
	if k.Priority != o.Priority {
		return k.Priority > o.Priority
	}
	if k.Finishing != o.Finishing {
		return k.Finishing
	}
	if !k.Time.Equal(o.Time) {
		return k.Time.Before(o.Time)
	}
	return k.Root < o.Root
}

// compare is Before as a sort's comparison: -1 if k leaves the queue first, 1 if o does, 0
// for keys equal in every way Before reads.
func (k SortKey) compare(o SortKey) int {
	switch {
	case k.Before(o):
		return -1
	case o.Before(k):
		return 1
	}
	return 0
}

// cycleKey is the queue-sort key of a pod in its scheduling cycle: the one Admit gave it, or,
// for a pod in no group, loneKey.
func (g *Gate) cycleKey(pod *v1.Pod) SortKey {
	if key, ok := g.SortKey(pod); ok {
		return key
	}
	return loneKey(pod)
}

// loneKey is the queue-sort key of a pod in no group, as QueueSort orders it but by its
// creation, not its queue time.
func loneKey(pod *v1.Pod) SortKey {
	return SortKey{Priority: corev1helpers.PodPriority(pod), Time: pod.CreationTimestamp.Time, Root: "Pod " + pod.Namespace + "/" + pod.Name}
}

// SortKey returns the queue-sort key Admit gave a member when it last let it into the
// queue; false for pods it did not (pods in no group). It takes no lock of the model: the
// queue asks it under its own lock, twice per comparison, and a key that changed while the
// pod sits in the queue's heap would break the heap's order.
func (g *Gate) SortKey(pod *v1.Pod) (SortKey, bool) {
	v, ok := g.sortKeys.Load(pod.UID)
	if !ok {
		return SortKey{}, false
	}
	return v.(SortKey), true
}

// forget drops what the gate remembers of a pod that is gone.
func (g *Gate) forget(uid types.UID) { g.sortKeys.Delete(uid) }

// MinResources is PodGroup k's minResources while it waits for its initial scheduling (an
// early check of the whole gang), nil once it was scheduled or when it sets none.
func (g *Gate) MinResources(k Key) v1.ResourceList {
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	return g.m.minResourcesLocked(k)
}

func (m *Model) minResourcesLocked(k Key) v1.ResourceList {
	g := m.index.Get(k)
	if g == nil || g.Scheduled() {
		return nil
	}
	return g.MinResources()
}

// GroupOf returns the group of a pod: its member's group, or the group the filing rules give
// a pod not seen yet.
func (g *Gate) GroupOf(pod *v1.Pod) (Key, bool) {
	g.m.mu.Lock()
	defer g.m.mu.Unlock()
	return g.m.groupOfLocked(pod)
}

// Related reports whether group k matters to pod: it is on the chain of parents the pod's
// PodGroup names (even ones not observed yet), or it has the same root.
func (g *Gate) Related(pod *v1.Pod, k Key) bool {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	pk, ok := m.groupOfLocked(pod)
	if !ok {
		return false
	}
	cur := pk
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		if cur == k {
			return true
		}
		grp := m.index.Get(cur)
		if grp == nil {
			break
		}
		p, ok := grp.ParentKey()
		if !ok {
			break
		}
		cur = p
	}
	r1, ok1 := m.index.RootOf(pk)
	r2, ok2 := m.index.RootOf(k)
	return ok1 && ok2 && r1 == r2
}
