// Package reservation holds the domains held for starving gangs and the room held for the
// followers of gangs whose leaders bound: what each holds on a node, which pods it holds back,
// and how long it lives. LockstepTopology decides when and where a gang gets one (its dry
// runs share the planner's); every profile's plugin reads the same store, which the group
// model's observer frees when a tree is scheduled or gone.
package reservation

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Reservations keep big gangs from starving behind small ones. A gang (tree) that has failed
// to fit for longer than its reserveAfter, and that would fit if the running pods of lower or
// equal priority in some domain ended, gets that domain held for it: the plan it would have
// there, node by node, is reserved, and no new pod of equal or lower priority may take room
// the plan needs, while pods that leave the plan's room whole still may (backfill). As the
// pods in the way end, their room is not given to others; the gang binds once all of them
// are gone, or sooner in a domain that frees first.
//
//   - The domain is the one of the root's Required level (the whole cluster without one)
//     that is likely to be free soonest: the fewest pods in the way that may never end by
//     themselves (pods of ReplicaSets, StatefulSets...), then the fewest pods in the way.
//     The same dry runs as preemption find it (LockstepTopology's), counting pods of equal
//     priority too, and giving back every pod the plan can live with.
//   - One reservation at a time per level and priority, for the tree that has waited
//     longest, so that small work still flows everywhere else; a tree that could not fit
//     even then holds nothing back.
//   - Held: on each node of the plan, what the plan needs there beyond what the pods in the
//     way still hold (HeldOn), every reservation of a node counted together (HeldOnNode).
//     Other trees' plans do without it (promised), and Filter refuses a pod of equal or lower
//     priority a node where it would cut into it (Refusal; a domain an exclusive group is to
//     take is closed whole). Pods of higher priority, the tree's own members
//     and pods of other schedulers are not held back.
//   - It ends when the tree is scheduled or gone, when it has lasted reservationTimeout (the
//     tree waits its turn again, from the back of the line), or when the tree stops asking
//     for it (it is refreshed each time the tree fails, and lapses otherwise). A domain that
//     cannot hold the plan any more (a higher-priority pod took room in it) is chosen again.
//   - It also ends when preemption frees a domain for the tree instead (pods evicted, or the
//     last pods in the way already leaving); then how it ended is counted by what becomes of
//     the tree (Preempts): bound if it is scheduled, released if it starves again.

// Reservation is a domain held for one tree.
type Reservation struct {
	Root     podgroup.Key
	Priority int32
	// Level is the level of the domain, -1 for the whole cluster; Domain names it.
	Level  int
	Domain string
	// Need is what the tree's plan needs on each of its nodes.
	Need map[string]capacity.Resources
	// Blockers are the pods in the way (that must end first), and their nodes.
	Blockers map[types.UID]string
	// Closed are the domain's nodes when the tree takes the domain to itself (exclusive):
	// no other pod may land there at all.
	Closed sets.Set[string]
	// Pods describes the members planned ("4 pods × 8 cpu").
	Pods string
	// Since is when the reservation began; Deadline when it ends at the latest
	// (reservationTimeout); Expires when it lapses unless the tree asks for it again.
	Since, Deadline, Expires time.Time
	// Waiting is when the tree started waiting: a tree of its priority that has waited
	// longer goes first, at any level.
	Waiting time.Time
}

// yieldsTo reports whether the reservation gives way to a tree of priority that started
// waiting at since: one of the same priority that has waited longer.
func (r *Reservation) YieldsTo(priority int32, since time.Time) bool {
	return r.Priority == priority && !since.IsZero() && since.Before(r.Waiting)
}

// heldOn returns what the reservation holds on a node: what the plan needs there beyond what
// its blockers on the node still request.
func (r *Reservation) HeldOn(ni fwk.NodeInfo) capacity.Resources {
	need, ok := r.Need[ni.Node().Name]
	if !ok {
		return capacity.Resources{}
	}
	held := need.Clone()
	for _, pi := range ni.GetPods() {
		if _, blocker := r.Blockers[pi.GetPod().UID]; blocker {
			held.Sub(capacity.PodRequests(pi.GetPod()))
		}
	}
	return held.AtLeastZero()
}

// Waiter is a starving tree seen lately: its turn for a reservation. fits says whether its
// last dry run found a domain it could take once the pods in the way ended, checked when: a
// tree that could not fit even then does not hold back those behind it.
type Waiter struct {
	Level    int
	Priority int32
	// Since is when the tree started waiting; Seen when it last asked; Checked when its last
	// dry run was made, and Fits what it found.
	Since, Seen, Checked time.Time
	Fits                 bool
}

// Reservations are the live reservations of every tree, for every profile's plugin, and the
// starving trees waiting for one.
type Reservations struct {
	mu     sync.Mutex
	byRoot map[podgroup.Key]*Reservation
	// followers are the rooms held for the followers of trees whose leaders bound
	// (Plans.TreeScheduled): held against other pods as reservations are, but apart from the
	// line of starving trees; they end when the tree is scheduled or gone, or at Deadline.
	followers map[podgroup.Key]*Reservation
	waiters   map[podgroup.Key]Waiter
	// line orders the waiters that may take a turn, per level and priority (line.go);
	// swept is when expired waiters were last dropped from every line.
	line  lines
	swept time.Time
	// preempting are the reservations of trees that preempt instead (Preempts): nothing is
	// held for them any more, but how each ended is not known until its tree is scheduled,
	// starves again or is gone.
	preempting map[podgroup.Key]*Reservation
	// requeued are the trees whose reservation timed out, and when: they wait their turn
	// again from then.
	requeued map[podgroup.Key]time.Time
	// published are the extended resources whose reserved capacity the gauge shows.
	published map[v1.ResourceName]bool
	now       func() time.Time
}

// waiterTTL is how long a starving tree that stopped failing keeps its place in line.
const waiterTTL = 2 * time.Minute

// TTL is how long a reservation lasts unless its tree fails again (a starving tree
// fails at least every backoffSeconds).
const TTL = 2 * time.Minute

// New returns an empty store on the clock now.
func New(now func() time.Time) *Reservations {
	return &Reservations{byRoot: map[podgroup.Key]*Reservation{}, followers: map[podgroup.Key]*Reservation{},
		waiters: map[podgroup.Key]Waiter{}, line: lines{}, preempting: map[podgroup.Key]*Reservation{}, requeued: map[podgroup.Key]time.Time{},
		published: map[v1.ResourceName]bool{}, now: now}
}

// SetClock makes the store tell time by now.
func (rs *Reservations) SetClock(now func() time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.now = now
}

// Now is the store's time.
func (rs *Reservations) Now() time.Time { return rs.now() }

// Sizes counts what the store keeps, per kind (diagnostics: flat while trees come and go).
func (rs *Reservations) Sizes() map[string]int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return map[string]int{"reservations": len(rs.byRoot), "followers": len(rs.followers), "waiters": len(rs.waiters),
		"line": rs.line.len(), "preempting": len(rs.preempting), "requeued": len(rs.requeued)}
}

// Get returns the live reservation of root, nil if it has none.
func (rs *Reservations) Get(root podgroup.Key) *Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.liveLocked(root)
}

// liveLocked returns root's reservation unless it ended: held as long as it may (the tree
// waits its turn again, from now) or not asked for lately.
func (rs *Reservations) liveLocked(root podgroup.Key) *Reservation {
	r := rs.byRoot[root]
	switch {
	case r == nil:
	case rs.now().After(r.Deadline):
		rs.releaseLocked(root, "timeout")
		rs.dropWaiterLocked(root)
		rs.requeued[root] = rs.now()
		return nil
	case rs.now().After(r.Expires):
		rs.releaseLocked(root, "lapsed")
		return nil
	}
	return r
}

// All returns the live reservations, the rooms held for followers included.
func (rs *Reservations) All() []*Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.expirePreemptingLocked()
	out := make([]*Reservation, 0, len(rs.byRoot)+len(rs.followers))
	for root := range rs.byRoot {
		if r := rs.liveLocked(root); r != nil {
			out = append(out, r)
		}
	}
	for root := range rs.followers {
		if r := rs.liveFollowersLocked(root); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// holdForFollowers holds r, the room a tree's plan gave the followers of its leaders, which
// were allowed: until the tree is scheduled (the followers bound) or gone, or r's Deadline.
func (rs *Reservations) HoldForFollowers(r *Reservation) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.followers[r.Root] = r
}

// Followers returns the room held for root's followers, nil if none.
func (rs *Reservations) Followers(root podgroup.Key) *Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.liveFollowersLocked(root)
}

// liveFollowersLocked returns the room held for root's followers unless its time is up.
func (rs *Reservations) liveFollowersLocked(root podgroup.Key) *Reservation {
	r := rs.followers[root]
	if r != nil && rs.now().After(r.Deadline) {
		delete(rs.followers, root)
		return nil
	}
	return r
}

// Holding returns the live reservations that hold capacity against a tree (or pod) of
// priority: those of trees of equal or higher priority other than except.
func (rs *Reservations) Holding(priority int32, except podgroup.Key) []*Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.byRoot) == 0 && len(rs.followers) == 0 {
		return nil
	}
	var out []*Reservation
	for root := range rs.byRoot {
		if root == except {
			continue
		}
		if r := rs.liveLocked(root); r != nil && r.Priority >= priority {
			out = append(out, r)
		}
	}
	for root := range rs.followers {
		if root == except {
			continue
		}
		if r := rs.liveFollowersLocked(root); r != nil && r.Priority >= priority {
			out = append(out, r)
		}
	}
	return out
}

// waiterOf returns what the line knows of a tree.
func (rs *Reservations) WaiterOf(root podgroup.Key) (Waiter, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	w, ok := rs.waiters[root]
	if ok && expired(w, rs.now()) {
		return Waiter{}, false // it lost its place; dropped at the next sweep
	}
	return w, ok
}

// turn records that a starving tree waits at a level and priority, and returns the tree
// whose turn it is there: the live holder if there is one, else, of the trees that could fit
// (or have not been checked yet), the one that has waited longest (roots break ties).
func (rs *Reservations) Turn(root podgroup.Key, w Waiter) podgroup.Key {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	now := rs.now()
	rs.setWaiterLocked(root, w)
	if k, ok := rs.holderLocked(root, w); ok {
		return k
	}
	rs.sweepLocked(now)
	return rs.firstLocked(root, w, now)
}

// holderLocked returns the tree, other than root, holding a live reservation at w's level and
// priority that does not give way to root, if any.
func (rs *Reservations) holderLocked(root podgroup.Key, w Waiter) (podgroup.Key, bool) {
	for k := range rs.byRoot {
		if r := rs.liveLocked(k); r != nil && k != root && r.Level == w.Level && r.Priority == w.Priority && !r.YieldsTo(w.Priority, w.Since) {
			return k, true
		}
	}
	return podgroup.Key{}, false
}

// forgetWaiter drops a tree from the line (it cannot fit even with room freed, or it is
// scheduled or gone).
func (rs *Reservations) ForgetWaiter(root podgroup.Key) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.dropWaiterLocked(root)
}

// waitingSince is when a tree waits its turn from: when it started waiting, or when its last
// reservation timed out.
func (rs *Reservations) WaitingSince(root podgroup.Key, started time.Time) time.Time {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if t, ok := rs.requeued[root]; ok && t.After(started) {
		return t
	}
	return started
}

// store keeps a reservation, replacing the tree's earlier one. A new one ends the one the
// tree gave up for a preemption, if any: the preemption did not place the tree.
func (rs *Reservations) Store(r *Reservation) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, had := rs.byRoot[r.Root]; !had {
		rs.settleLocked(r.Root, "released")
		metrics.events.WithLabelValues("started").Inc()
	}
	rs.byRoot[r.Root] = r
	rs.gaugesLocked()
}

// release ends the reservation of root, if any, and says why (for the metric).
func (rs *Reservations) Release(root podgroup.Key, why string) *Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.releaseLocked(root, why)
}

func (rs *Reservations) releaseLocked(root podgroup.Key, why string) *Reservation {
	r := rs.byRoot[root]
	if r == nil {
		return nil
	}
	delete(rs.byRoot, root)
	rs.endedLocked(r, why)
	rs.gaugesLocked()
	return r
}

// endedLocked counts how a reservation ended, once: bound observes how long its gang waited
// from its start.
func (rs *Reservations) endedLocked(r *Reservation, why string) {
	metrics.events.WithLabelValues(why).Inc()
	if why == "bound" {
		metrics.bindWait.Observe(rs.now().Sub(r.Since).Seconds())
	}
}

// Preempts ends root's reservation, if any, because preemption frees a domain for the tree
// instead: pods evicted, or pods already leaving — often the last of those the reservation
// waited for, or pods of lower priority left in its domain once those of its priority ended.
// Nothing is held for the tree any more, but how the reservation ended is what becomes of
// the tree: bound if it is scheduled (TreeScheduled), released if it starves again (Starves,
// or a new reservation) or is gone, timeout if none of this happened by its deadline.
// Counted released now, a gang that binds a moment later in the room its reservation kept
// for it would never be counted bound, nor its wait observed. It returns the reservation
// that ended, nil if root had none.
func (rs *Reservations) Preempts(root podgroup.Key) *Reservation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.liveLocked(root) // one past its deadline or expiry ended so
	if r == nil {
		return nil
	}
	delete(rs.byRoot, root)
	rs.preempting[root] = r
	rs.gaugesLocked()
	return r
}

// Starves records that root failed again and preemption could not help: a reservation it
// gave up for a preemption (Preempts) did not bring it its room, and ended released.
func (rs *Reservations) Starves(root podgroup.Key) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.settleLocked(root, "released")
}

// settleLocked counts how the reservation root gave up for a preemption ended, if it has one.
func (rs *Reservations) settleLocked(root podgroup.Key, why string) {
	if r := rs.preempting[root]; r != nil {
		delete(rs.preempting, root)
		rs.endedLocked(r, why)
	}
}

// expirePreemptingLocked ends, as timed out, the reservations given up for a preemption
// whose tree was neither scheduled, nor starved again, nor gone by their deadline: held,
// they would have ended so too.
func (rs *Reservations) expirePreemptingLocked() {
	now := rs.now()
	for root, r := range rs.preempting {
		if now.After(r.Deadline) {
			rs.settleLocked(root, "timeout")
		}
	}
}

// gaugesLocked publishes how many reservations are held and how much capacity they reserve;
// a resource no reservation needs any more is published at 0, not left at its last value.
func (rs *Reservations) gaugesLocked() {
	var total capacity.Resources
	for _, r := range rs.byRoot {
		for _, n := range r.Need {
			total.Add(n)
		}
	}
	metrics.held.Set(float64(len(rs.byRoot)))
	metrics.capacity.WithLabelValues(string(v1.ResourceCPU)).Set(float64(total.MilliCPU) / 1000)
	metrics.capacity.WithLabelValues(string(v1.ResourceMemory)).Set(float64(total.Memory))
	for name := range rs.published {
		if _, ok := total.Scalar[name]; !ok {
			metrics.capacity.WithLabelValues(string(name)).Set(0)
			delete(rs.published, name)
		}
	}
	for name, v := range total.Scalar {
		metrics.capacity.WithLabelValues(string(name)).Set(float64(v))
		rs.published[name] = true
	}
}

// overlaps reports whether two reservations hold room on a common node.
func Overlaps(a, b *Reservation) bool {
	for n := range a.Need {
		if _, ok := b.Need[n]; ok || b.Closed.Has(n) {
			return true
		}
	}
	for n := range a.Closed {
		if _, ok := b.Need[n]; ok || b.Closed.Has(n) {
			return true
		}
	}
	return false
}

// refreshed returns r lasting another TTL (its deadline ends it first).
func Refreshed(r *Reservation, now time.Time) *Reservation {
	c := *r
	c.Expires = now.Add(TTL)
	return &c
}

// NodesOf returns the nodes the reservations rs hold room on or close: where HeldOnNode may
// find anything.
func NodesOf(rs []*Reservation) sets.Set[string] {
	out := sets.New[string]()
	for _, r := range rs {
		for n := range r.Need {
			out.Insert(n)
		}
		for n := range r.Closed {
			out.Insert(n)
		}
	}
	return out
}

// HeldOnNode is what the reservations rs hold on node ni together (those skip leaves out do
// not count): the sum of what each holds there, as every plan and Filter count it; closedBy
// is one that closes the node whole (exclusive), by those that hold room on it.
func HeldOnNode(rs []*Reservation, ni fwk.NodeInfo, skip func(*Reservation) bool) (held capacity.Resources, closedBy *Reservation, by []*Reservation) {
	name := ni.Node().Name
	for _, r := range rs {
		if skip != nil && skip(r) {
			continue
		}
		if r.Closed.Has(name) {
			return capacity.Resources{}, r, nil
		}
		if _, ok := r.Need[name]; ok {
			held.Add(r.HeldOn(ni))
			by = append(by, r)
		}
	}
	return held, nil, by
}

// Refusal says why node ni is refused to a pod needing req, "" if no reservation refuses it:
// the pod must fit beside what every reservation holds there together, as a plan counts it.
func Refusal(rs []*Reservation, ni fwk.NodeInfo, req capacity.Resources) string {
	held, closedBy, by := HeldOnNode(rs, ni, nil)
	if closedBy != nil {
		return fmt.Sprintf("node(s) reserved for gang %s (%s)", closedBy.Root.Name, closedBy.Domain)
	}
	if len(by) == 0 {
		return ""
	}
	free := capacity.FreeOn(ni)
	free.Sub(held)
	if free.Fits(req) {
		return ""
	}
	return fmt.Sprintf("node(s) reserved for gang %s (%s)", by[0].Root.Name, by[0].Domain)
}

// TreeScheduled releases what was held for a tree that was scheduled: its reservation, or
// the one it gave up for the preemption that placed it, ends bound.
func (rs *Reservations) TreeScheduled(root podgroup.Key) { rs.forget(root, "bound") }

// TreeGone releases what was held for a group that is gone (a root's reservation).
func (rs *Reservations) TreeGone(root podgroup.Key) { rs.forget(root, "released") }

func (rs *Reservations) forget(root podgroup.Key, why string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.releaseLocked(root, why)
	rs.settleLocked(root, why)
	delete(rs.followers, root)
	rs.dropWaiterLocked(root)
	delete(rs.requeued, root)
}
