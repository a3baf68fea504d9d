package topology

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

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
//     The same dry runs as preemption find it (victims.go), counting pods of equal priority
//     too, and giving back every pod the plan can live with.
//   - One reservation at a time per level and priority, for the tree that has waited
//     longest, so that small work still flows everywhere else; a tree that could not fit
//     even then holds nothing back.
//   - Held: on each node of the plan, what the plan needs there beyond what the pods in the
//     way still hold. Other trees' plans do without it (promised), and Filter refuses a pod
//     of equal or lower priority a node where it would cut into it (a domain an exclusive
//     group is to take is closed whole). Pods of higher priority, the tree's own members
//     and pods of other schedulers are not held back.
//   - It ends when the tree is scheduled or gone, when it has lasted reservationTimeout (the
//     tree waits its turn again, from the back of the line), or when the tree stops asking
//     for it (it is refreshed each time the tree fails, and lapses otherwise). A domain that
//     cannot hold the plan any more (a higher-priority pod took room in it) is chosen again.

// Reservation is a domain held for one tree.
type Reservation struct {
	Root     podgroup.Key
	Priority int32
	// Level is the level of the domain, -1 for the whole cluster; Domain names it.
	Level  int
	Domain string
	// Need is what the tree's plan needs on each of its nodes.
	Need map[string]Resources
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
func (r *Reservation) yieldsTo(priority int32, since time.Time) bool {
	return r.Priority == priority && !since.IsZero() && since.Before(r.Waiting)
}

// heldOn returns what the reservation holds on a node: what the plan needs there beyond what
// its blockers on the node still request.
func (r *Reservation) heldOn(ni fwk.NodeInfo) Resources {
	need, ok := r.Need[ni.Node().Name]
	if !ok {
		return Resources{}
	}
	held := need.Clone()
	for _, pi := range ni.GetPods() {
		if _, blocker := r.Blockers[pi.GetPod().UID]; blocker {
			held.Sub(PodRequests(pi.GetPod()))
		}
	}
	return held.atLeastZero()
}

// atLeastZero returns r with negative amounts raised to zero.
func (r Resources) atLeastZero() Resources {
	out := r.Clone()
	out.MilliCPU, out.Memory, out.Pods = max(out.MilliCPU, 0), max(out.Memory, 0), max(out.Pods, 0)
	for k, v := range out.Scalar {
		out.Scalar[k] = max(v, 0)
	}
	return out
}

// waiter is a starving tree seen lately: its turn for a reservation. fits says whether its
// last dry run found a domain it could take once the pods in the way ended, checked when: a
// tree that could not fit even then does not hold back those behind it.
type waiter struct {
	level    int
	priority int32
	since    time.Time
	seen     time.Time
	checked  time.Time
	fits     bool
}

// fitRecheck is how often a starving tree's dry run is made again while it waits its turn.
const fitRecheck = 30 * time.Second

// Reservations are the live reservations of every tree, for every profile's plugin, and the
// starving trees waiting for one.
type Reservations struct {
	mu     sync.Mutex
	byRoot map[podgroup.Key]*Reservation
	// followers are the rooms held for the followers of trees whose leaders bound
	// (Plans.TreeScheduled): held against other pods as reservations are, but apart from the
	// line of starving trees; they end when the tree is scheduled or gone, or at Deadline.
	followers map[podgroup.Key]*Reservation
	waiters   map[podgroup.Key]waiter
	// requeued are the trees whose reservation timed out, and when: they wait their turn
	// again from then.
	requeued map[podgroup.Key]time.Time
	now      func() time.Time
}

// waiterTTL is how long a starving tree that stopped failing keeps its place in line.
const waiterTTL = 2 * time.Minute

// reservationTTL is how long a reservation lasts unless its tree fails again (a starving tree
// fails at least every backoffSeconds).
const reservationTTL = 2 * time.Minute

func newReservations(now func() time.Time) *Reservations {
	return &Reservations{byRoot: map[podgroup.Key]*Reservation{}, followers: map[podgroup.Key]*Reservation{},
		waiters: map[podgroup.Key]waiter{}, requeued: map[podgroup.Key]time.Time{}, now: now}
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
		delete(rs.waiters, root)
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
func (rs *Reservations) holdForFollowers(r *Reservation) {
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
func (rs *Reservations) waiterOf(root podgroup.Key) (waiter, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	w, ok := rs.waiters[root]
	return w, ok
}

// turn records that a starving tree waits at a level and priority, and returns the tree
// whose turn it is there: the live holder if there is one, else, of the trees that could fit
// (or have not been checked yet), the one that has waited longest (roots break ties).
func (rs *Reservations) turn(root podgroup.Key, w waiter) podgroup.Key {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	now := rs.now()
	rs.waiters[root] = w
	for k := range rs.byRoot {
		if r := rs.liveLocked(k); r != nil && k != root && r.Level == w.level && r.Priority == w.priority && !r.yieldsTo(w.priority, w.since) {
			return k
		}
	}
	first, best := root, w
	for k, o := range rs.waiters {
		if now.Sub(o.seen) > waiterTTL {
			delete(rs.waiters, k)
			continue
		}
		if k == root || o.level != w.level || o.priority != w.priority || (!o.checked.IsZero() && !o.fits) {
			continue
		}
		if o.since.Before(best.since) || (o.since.Equal(best.since) && k.Less(first)) {
			first, best = k, o
		}
	}
	return first
}

// forgetWaiter drops a tree from the line (it cannot fit even with room freed, or it is
// scheduled or gone).
func (rs *Reservations) forgetWaiter(root podgroup.Key) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.waiters, root)
}

// waitingSince is when a tree waits its turn from: when it started waiting, or when its last
// reservation timed out.
func (rs *Reservations) waitingSince(root podgroup.Key, started time.Time) time.Time {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if t, ok := rs.requeued[root]; ok && t.After(started) {
		return t
	}
	return started
}

// store keeps a reservation, replacing the tree's earlier one.
func (rs *Reservations) store(r *Reservation) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, had := rs.byRoot[r.Root]; !had {
		metrics.reservations.WithLabelValues("started").Inc()
	}
	rs.byRoot[r.Root] = r
	rs.gaugesLocked()
}

// release ends the reservation of root, if any, and says why (for the metric).
func (rs *Reservations) release(root podgroup.Key, why string) *Reservation {
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
	metrics.reservations.WithLabelValues(why).Inc()
	if why == "bound" {
		metrics.reservationBindWait.Observe(rs.now().Sub(r.Since).Seconds())
	}
	rs.gaugesLocked()
	return r
}

// gaugesLocked publishes how many reservations are held and how much capacity they reserve.
func (rs *Reservations) gaugesLocked() {
	var total Resources
	for _, r := range rs.byRoot {
		for _, n := range r.Need {
			total.Add(n)
		}
	}
	metrics.reservationsHeld.Set(float64(len(rs.byRoot)))
	metrics.reservedCapacity.WithLabelValues(string(v1.ResourceCPU)).Set(float64(total.MilliCPU) / 1000)
	metrics.reservedCapacity.WithLabelValues(string(v1.ResourceMemory)).Set(float64(total.Memory))
	for name, v := range total.Scalar {
		metrics.reservedCapacity.WithLabelValues(string(name)).Set(float64(v))
	}
}

// --- deciding ---

// reserve is asked, after a starving tree's attempt failed and preemption could not help,
// whether a domain is held for it. It refreshes the tree's reservation, or makes one when it
// is the tree's turn, and returns what its condition says ("" for none: the tree holds
// nothing).
func (pl *Topology) reserve(ctx context.Context, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo) string {
	logger := klog.FromContext(ctx)
	rs := pl.plans.reservations
	now := rs.now()
	r := rs.Get(p.Root) // one held as long as it may is gone: the tree waits its turn again
	// After a reservation timed out, the tree waits reserveAfter again, from then, before
	// anything is held for it: the domain it held is not held again at its next failure.
	if p.ReserveAfter <= 0 || p.WaitingSince.IsZero() || now.Sub(rs.waitingSince(p.Root, p.WaitingSince)) < p.ReserveAfter {
		rs.release(p.Root, "released")
		return ""
	}
	topo := pl.topology.get(pl.levels, infos)
	level, _ := topo.constraintLevels(tree)
	if r != nil && (r.Priority != p.Priority || r.Level != level) {
		rs.release(p.Root, "released")
		r = nil
	}
	if r != nil && pl.holds(r, infos) {
		r = refreshed(r, now)
		rs.store(r)
		return pl.describeReservation(r, infos)
	}
	since := rs.waitingSince(p.Root, p.WaitingSince)
	if r != nil {
		since = r.Waiting // the tree keeps its place; its domain is chosen again
	}
	// Its dry runs see the reservations of trees that waited less give way to it.
	tree.WaitingSince = since
	w := waiter{level: level, priority: p.Priority, since: since, seen: now}
	if old, ok := rs.waiterOf(p.Root); ok && now.Sub(old.checked) < fitRecheck {
		w.checked, w.fits = old.checked, old.fits
	}
	var c *preemptionChoice
	if w.checked.IsZero() {
		// Whether it could fit once the pods in the way ended is known before its turn: a
		// tree that could not does not hold back those behind it.
		c = pl.cheapestDomain(ctx, tree, p, infos, freeing{})
		w.checked, w.fits = now, c != nil
	}
	if first := rs.turn(p.Root, w); first != p.Root || !w.fits {
		if !w.fits {
			rs.release(p.Root, "released")
			logger.V(4).Info("Gang starves but would not fit even with room freed; nothing is reserved", "root", p.Root)
		} else {
			logger.V(4).Info("Gang starves; another holds or is next for a reservation", "root", p.Root, "next", first)
		}
		return ""
	}
	if c == nil {
		c = pl.cheapestDomain(ctx, tree, p, infos, freeing{})
	}
	if c == nil {
		rs.release(p.Root, "released")
		rs.turn(p.Root, waiter{level: level, priority: p.Priority, since: since, seen: now, checked: now})
		return ""
	}
	nr := &Reservation{Root: p.Root, Priority: p.Priority, Level: level, Domain: c.domain, Need: map[string]Resources{},
		Blockers: map[types.UID]string{}, Since: now, Deadline: now.Add(p.ReservationTimeout), Expires: now.Add(reservationTTL),
		Waiting: since}
	if r != nil {
		nr.Since, nr.Deadline = r.Since, r.Deadline
	}
	var planned []*pending
	for _, pp := range c.plan.Pods {
		n := nr.Need[pp.Node]
		n.Add(pp.Request)
		nr.Need[pp.Node] = n
		planned = append(planned, &pending{need: pp.Request})
	}
	nr.Pods = describePods(planned)
	for _, pod := range c.pods() {
		nr.Blockers[pod.UID] = pod.Spec.NodeName
	}
	if exclusiveTree(topo, tree) && level >= 0 {
		nr.Closed = sets.New[string]()
		for _, d := range topo.sub[""][level] {
			if d.describe(pl.levels) == c.domain {
				for _, n := range d.nodes {
					nr.Closed.Insert(n.name)
				}
			}
		}
	}
	// Reservations of trees that have waited less give way where they hold the same nodes,
	// or the same level.
	for _, o := range rs.All() {
		if o.Root == nr.Root || !o.yieldsTo(nr.Priority, nr.Waiting) {
			continue
		}
		if o.Level == nr.Level || overlaps(o, nr) {
			rs.release(o.Root, "released")
			logger.V(2).Info("Reservation gives way to a gang that has waited longer", "root", o.Root, "domain", o.Domain, "to", nr.Root)
		}
	}
	rs.store(nr)
	msg := pl.describeReservation(nr, infos)
	if r == nil {
		logger.V(2).Info("Reservation for a starving gang", "root", p.Root, "domain", nr.Domain, "priority", p.Priority,
			"waited", now.Sub(p.WaitingSince).Round(time.Second), "blockers", len(nr.Blockers), "pods", nr.Pods)
		if rec := pl.handle.EventRecorder(); rec != nil && p.Object != nil {
			rec.Eventf(p.Object, nil, v1.EventTypeNormal, "Reserving", "Scheduling", "Reserving %s for %s after waiting %s: %d pods of priority up to %d must end first",
				nr.Domain, nr.Pods, now.Sub(p.WaitingSince).Round(time.Second), len(nr.Blockers), blockersPriority(c))
		}
	}
	return msg
}

// overlaps reports whether two reservations hold room on a common node.
func overlaps(a, b *Reservation) bool {
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

// blockersPriority is the highest priority of the pods a reservation waits for.
func blockersPriority(c *preemptionChoice) int32 {
	prio := int32(0)
	for _, p := range c.pods() {
		prio = max(prio, podPriority(p))
	}
	return prio
}

// refreshed returns r lasting another reservationTTL (its deadline ends it first).
func refreshed(r *Reservation, now time.Time) *Reservation {
	c := *r
	c.Expires = now.Add(reservationTTL)
	return &c
}

// holds reports whether the plan still fits its nodes once the blockers are gone: no pod of
// higher priority took room it needs, no node went away. Room the tree's own members hold
// (reserved in the attempt that just failed, being released) counts as the tree's.
func (pl *Topology) holds(r *Reservation, infos []fwk.NodeInfo) bool {
	left := len(r.Need)
	for _, ni := range infos {
		n := ni.Node()
		if n == nil {
			continue
		}
		need, ok := r.Need[n.Name]
		if !ok {
			continue
		}
		left--
		free := FreeOn(ni)
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if _, blocker := r.Blockers[pod.UID]; blocker {
				free.Add(PodRequests(pod))
			} else if sum, ok := pl.trees.Summary(pod); ok && sum.Root == r.Root {
				free.Add(PodRequests(pod))
			}
		}
		if !free.Fits(need) {
			return false
		}
	}
	return left == 0
}

// describeReservation says what is held and how far it is from free, for the tree's condition
// (reason Reserving): "rack r3 held since 12:04:05 UTC for 4 pods × 8 cpu: 2 of 4 nodes free;
// waiting for 3 pods of priority up to 100 to end".
func (pl *Topology) describeReservation(r *Reservation, infos []fwk.NodeInfo) string {
	ready, left := 0, 0
	prio := int32(0)
	for _, ni := range infos {
		n := ni.Node()
		if n == nil {
			continue
		}
		if need, ok := r.Need[n.Name]; ok && FreeOn(ni).Fits(need) {
			ready++
		}
		for _, pi := range ni.GetPods() {
			if _, ok := r.Blockers[pi.GetPod().UID]; ok {
				left++
				prio = max(prio, podPriority(pi.GetPod()))
			}
		}
	}
	msg := fmt.Sprintf("%s held since %s for %s: %d of %d nodes free", r.Domain, r.Since.UTC().Format("15:04:05 MST"), r.Pods, ready, len(r.Need))
	if left > 0 {
		msg += fmt.Sprintf("; waiting for %d pods of priority up to %d to end", left, prio)
	}
	return msg
}

// --- holding ---

// reservedKey is where PreFilter leaves the reservations that hold against a pod, for Filter.
const reservedKey fwk.StateKey = Name + "/reserved"

// reserved are the reservations that hold capacity against one pod.
type reserved []*Reservation

// Clone implements fwk.StateData; the list is not changed after PreFilter.
func (r reserved) Clone() fwk.StateData { return r }

// refusal says why node ni is refused to a pod needing req, "" if no reservation refuses it:
// the pod must fit beside what every reservation holds there together, as a plan counts it.
func (r reserved) refusal(ni fwk.NodeInfo, req Resources) string {
	held, closedBy, by := heldOnNode(r, ni, nil)
	if closedBy != nil {
		return fmt.Sprintf("node(s) reserved for gang %s (%s)", closedBy.Root.Name, closedBy.Domain)
	}
	if len(by) == 0 {
		return ""
	}
	free := FreeOn(ni)
	free.Sub(held)
	if free.Fits(req) {
		return ""
	}
	return fmt.Sprintf("node(s) reserved for gang %s (%s)", by[0].Root.Name, by[0].Domain)
}

// heldOnNode is what the reservations rs hold on node ni together (those skip leaves out do
// not count): the sum of what each holds there, as every plan and Filter count it; closedBy
// is one that closes the node whole (exclusive), by those that hold room on it.
func heldOnNode(rs []*Reservation, ni fwk.NodeInfo, skip func(*Reservation) bool) (held Resources, closedBy *Reservation, by []*Reservation) {
	name := ni.Node().Name
	for _, r := range rs {
		if skip != nil && skip(r) {
			continue
		}
		if r.Closed.Has(name) {
			return Resources{}, r, nil
		}
		if _, ok := r.Need[name]; ok {
			held.Add(r.heldOn(ni))
			by = append(by, r)
		}
	}
	return held, nil, by
}

// holdsAgainst returns the reservations that hold capacity against a pod: a member's tree
// priority and root, or a pod's own priority.
func (pl *Topology) holdsAgainst(pod *v1.Pod) reserved {
	if len(pl.plans.reservations.All()) == 0 {
		return nil
	}
	prio, root := podPriority(pod), podgroup.Key{}
	if p, ok := pl.trees.Preemptor(pod); ok {
		prio, root = p.Priority, p.Root
	}
	return pl.plans.reservations.Holding(prio, root)
}

// heldFrom adds to promised, per node, what reservations of trees of priority or above hold
// (other than tree's), and returns the nodes exclusive ones close.
func (pl *Topology) heldFrom(tree *podgroup.GroupView, priority int32, nodes []fwk.NodeInfo, promised map[string]Resources) sets.Set[string] {
	rs := pl.plans.reservations.Holding(priority, tree.Key)
	if len(rs) == 0 {
		return nil
	}
	var closed sets.Set[string]
	// The tree has waited longer than a reservation's tree of its priority: it goes first.
	yields := func(r *Reservation) bool { return r.yieldsTo(tree.Priority, tree.WaitingSince) }
	for _, ni := range nodes {
		n := ni.Node()
		if n == nil {
			continue
		}
		held, closedBy, by := heldOnNode(rs, ni, yields)
		switch {
		case closedBy != nil:
			if closed == nil {
				closed = sets.New[string]()
			}
			closed.Insert(n.Name)
		case len(by) > 0:
			h := promised[n.Name]
			h.Add(held)
			promised[n.Name] = h
		}
	}
	return closed
}

// TreeScheduled releases what was held for a tree that was scheduled.
func (rs *Reservations) TreeScheduled(root podgroup.Key) { rs.forget(root, "bound") }

// TreeGone releases what was held for a group that is gone (a root's reservation).
func (rs *Reservations) TreeGone(root podgroup.Key) { rs.forget(root, "released") }

func (rs *Reservations) forget(root podgroup.Key, why string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.releaseLocked(root, why)
	delete(rs.followers, root)
	delete(rs.waiters, root)
	delete(rs.requeued, root)
}

func podPriority(p *v1.Pod) int32 { return corev1helpers.PodPriority(p) }

// reservationNames lists reservations for logs.
func reservationNames(rs []*Reservation) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Root.String() + " " + r.Domain
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
