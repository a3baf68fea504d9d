package topology

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/reservation"
)

// Reservations keep big gangs from starving behind small ones (the store and what a
// reservation holds: pkg/reservation). A gang (tree) that has failed to fit for longer than
// its reserveAfter, and that would fit if the running pods of lower or equal priority in some
// domain ended, gets that domain held for it: the plan it would have there, node by node.
// The domain is the one of the root's Required level (the whole cluster without one) likely
// to be free soonest: the fewest pods in the way that may never end by themselves, then the
// fewest pods in the way, found by the same dry runs as preemption (pkg/gangpreemption), counting
// pods of equal priority too. One reservation at a time per level and priority, for the tree
// that has waited longest; one of a lower priority gives way where a higher one needs its
// nodes, so two never hold the same room. A tree that could not fit even then holds nothing
// back.

// fitRecheck is how often a starving tree's dry run is made again while it waits its turn.
const fitRecheck = 30 * time.Second

// reserve is asked, after a starving tree's attempt failed and preemption could not help,
// whether a domain is held for it. It refreshes the tree's reservation, or makes one when it
// is the tree's turn, and returns what its condition says ("" for none: the tree holds
// nothing).
func (pl *Topology) reserve(ctx context.Context, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo) string {
	logger := klog.FromContext(ctx)
	rs := pl.plans.reservations
	// Preemption could not help: a reservation the tree gave up for one did not place it.
	rs.Starves(p.Root)
	now := rs.Now()
	r := rs.Get(p.Root) // one held as long as it may is gone: the tree waits its turn again
	// After a reservation timed out, the tree waits reserveAfter again, from then, before
	// anything is held for it: the domain it held is not held again at its next failure.
	if p.ReserveAfter <= 0 || p.WaitingSince.IsZero() || now.Sub(rs.WaitingSince(p.Root, p.WaitingSince)) < p.ReserveAfter {
		rs.Release(p.Root, "released")
		return ""
	}
	topo := pl.topology.get(pl.levels, infos)
	level, _ := topo.constraintLevels(tree)
	if r != nil && (r.Priority != p.Priority || r.Level != level) {
		rs.Release(p.Root, "released")
		r = nil
	}
	if r != nil && pl.holds(r, topo, infos) {
		r = reservation.Refreshed(r, now)
		rs.Store(r)
		return pl.describeReservation(r, topo, infos)
	}
	since := rs.WaitingSince(p.Root, p.WaitingSince)
	if r != nil {
		since = r.Waiting // the tree keeps its place; its domain is chosen again
	}
	// Its dry runs see the reservations of trees that waited less give way to it.
	tree.WaitingSince = since
	w := reservation.Waiter{Level: level, Priority: p.Priority, Since: since, Seen: now}
	if old, ok := rs.WaiterOf(p.Root); ok && old.Level == level && old.Priority == p.Priority {
		w.Checked, w.Fits = old.Checked, old.Fits // a verdict for the same level and priority
	}
	var c *gangpreemption.Choice
	if now.Sub(w.Checked) >= fitRecheck {
		// Whether it could fit once the pods in the way ended is known before its turn: a
		// tree that could not does not hold back those behind it. Behind a tree whose turn
		// comes first whatever this one finds, the verdict decides nothing yet: it keeps the
		// one it had (none: it waits in the line unchecked).
		if ahead, ok := rs.Ahead(p.Root, w); ok {
			logger.V(4).Info("Gang starves behind another that goes first; no dry run yet", "root", p.Root, "next", ahead)
		} else {
			c = pl.cheapestDomain(ctx, tree, p, infos, gangpreemption.Reserve)
			w.Checked, w.Fits = now, c != nil
		}
	}
	unfit := !w.Checked.IsZero() && !w.Fits
	if first := rs.Turn(p.Root, w); first != p.Root || unfit {
		if unfit {
			rs.Release(p.Root, "released")
			logger.V(4).Info("Gang starves but would not fit even with room freed; nothing is reserved", "root", p.Root)
		} else {
			logger.V(4).Info("Gang starves; another holds or is next for a reservation", "root", p.Root, "next", first)
		}
		return ""
	}
	if c == nil {
		c = pl.cheapestDomain(ctx, tree, p, infos, gangpreemption.Reserve)
	}
	if c == nil {
		rs.Release(p.Root, "released")
		rs.Turn(p.Root, reservation.Waiter{Level: level, Priority: p.Priority, Since: since, Seen: now, Checked: now})
		return ""
	}
	nr := &reservation.Reservation{Root: p.Root, Priority: p.Priority, Level: level, Domain: c.Domain.Name, Need: map[string]capacity.Resources{},
		Blockers: map[types.UID]string{}, Since: now, Deadline: now.Add(p.ReservationTimeout), Expires: now.Add(reservation.TTL),
		Waiting: since}
	if r != nil {
		nr.Since, nr.Deadline = r.Since, r.Deadline
	}
	var planned []*pending
	for _, pp := range planOf(c).Pods {
		n := nr.Need[pp.Node]
		n.Add(pp.Request)
		nr.Need[pp.Node] = n
		planned = append(planned, &pending{need: pp.Request})
	}
	nr.Pods = describePods(planned)
	for _, pod := range c.Pods() {
		nr.Blockers[pod.UID] = pod.Spec.NodeName
	}
	if exclusiveTree(topo, tree) && level >= 0 {
		nr.Closed = sets.New(c.Domain.Nodes...)
	}
	// Two reservations never hold the same room: those of trees of lower priority give way
	// where they hold the same nodes (their trees choose again, seeing this one), those of
	// trees of the same priority that have waited less where they hold the same nodes or the
	// same level.
	for _, o := range rs.All() {
		switch {
		case o.Root == nr.Root:
		case o.Priority < nr.Priority && reservation.Overlaps(o, nr):
			rs.Release(o.Root, "released")
			logger.V(2).Info("Reservation gives way to a gang of higher priority", "root", o.Root, "domain", o.Domain, "to", nr.Root)
		case o.YieldsTo(nr.Priority, nr.Waiting) && (o.Level == nr.Level || reservation.Overlaps(o, nr)):
			rs.Release(o.Root, "released")
			logger.V(2).Info("Reservation gives way to a gang that has waited longer", "root", o.Root, "domain", o.Domain, "to", nr.Root)
		}
	}
	rs.Store(nr)
	msg := pl.describeReservation(nr, topo, infos)
	if r == nil {
		logger.V(2).Info("Reservation for a starving gang", "root", p.Root, "domain", nr.Domain, "priority", p.Priority,
			"waited", now.Sub(p.WaitingSince).Round(time.Second), "blockers", len(nr.Blockers), "pods", nr.Pods)
		if rec := pl.handle.EventRecorder(); rec != nil && p.Object != nil {
			rec.Eventf(p.Object, nil, v1.EventTypeNormal, "Reserving", "Scheduling", "Reserving %s for %s after waiting %s: %d pods of priority up to %d there must end first",
				nr.Domain, nr.Pods, now.Sub(p.WaitingSince).Round(time.Second), blockersThere(nr), c.HighestPodPriority())
		}
	}
	return msg
}

// holds reports whether the plan still fits its nodes once the blockers are gone: no pod of
// higher priority took room it needs, no node went away. Room the tree's own members hold
// (reserved in the attempt that just failed, being released) counts as the tree's. It reads
// the reserved nodes only (topology.infoOf): a re-check costs the same in any cluster.
func (pl *Topology) holds(r *reservation.Reservation, topo *topology, infos []fwk.NodeInfo) bool {
	for name, need := range r.Need {
		ni := topo.infoOf(infos, name)
		if ni == nil {
			return false
		}
		free := capacity.FreeOn(ni)
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if _, blocker := r.Blockers[pod.UID]; blocker {
				free.Add(capacity.PodRequests(pod))
			} else if sum, ok := pl.trees.Summary(pod); ok && sum.Root == r.Root {
				free.Add(capacity.PodRequests(pod))
			}
		}
		if !free.Fits(need) {
			return false
		}
	}
	return true
}

// describeReservation says what is held and how far it is from free, for the tree's condition
// (reason Reserving): "rack r3 held since 12:04:05 UTC for 4 pods × 8 cpu: 2 of 4 nodes free;
// waiting for 3 pods of priority up to 100 there to end". It reads the reserved nodes and the
// blockers' nodes only.
func (pl *Topology) describeReservation(r *reservation.Reservation, topo *topology, infos []fwk.NodeInfo) string {
	ready, left := 0, 0
	prio := int32(0)
	for name, need := range r.Need {
		if ni := topo.infoOf(infos, name); ni != nil && capacity.FreeOn(ni).Fits(need) {
			ready++
		}
	}
	for name := range blockersIn(r) {
		ni := topo.infoOf(infos, name)
		if ni == nil {
			continue
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
		msg += fmt.Sprintf("; waiting for %d pods of priority up to %d there to end", left, prio)
	}
	return msg
}

// blockersIn returns the nodes the reservation holds that blockers run on. The blockers are
// whole gangs, some of whose pods may run outside the domain: only those on its nodes must
// end for the room to be there, and only they are counted.
func blockersIn(r *reservation.Reservation) sets.Set[string] {
	on := sets.New[string]()
	for _, node := range r.Blockers {
		if onHeldNode(r, node) {
			on.Insert(node)
		}
	}
	return on
}

// blockersThere counts the blockers on the nodes the reservation holds.
func blockersThere(r *reservation.Reservation) int {
	n := 0
	for _, node := range r.Blockers {
		if onHeldNode(r, node) {
			n++
		}
	}
	return n
}

// onHeldNode reports whether the reservation holds room on node, or closes it.
func onHeldNode(r *reservation.Reservation, node string) bool {
	_, held := r.Need[node]
	return held || r.Closed.Has(node)
}

// --- holding ---

// reservedKey is where PreFilter leaves the reservations that hold against a pod, for Filter.
const reservedKey fwk.StateKey = Name + "/reserved"

// reserved are the reservations that hold capacity against one pod.
type reserved []*reservation.Reservation

// Clone implements fwk.StateData; the list is not changed after PreFilter.
func (r reserved) Clone() fwk.StateData { return r }

// refusal says why node ni is refused to a pod needing req, "" if no reservation refuses it.
func (r reserved) refusal(ni fwk.NodeInfo, req capacity.Resources) string {
	return reservation.Refusal(r, ni, req)
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
// (other than tree's), and returns the nodes exclusive ones close. It reads the reservations'
// nodes only (topology.infoOf): every plan of a full cluster with a reservation runs it.
func (pl *Topology) heldFrom(tree *podgroup.GroupView, priority int32, topo *topology, nodes []fwk.NodeInfo, promised map[string]capacity.Resources) sets.Set[string] {
	rs := pl.plans.reservations.Holding(priority, tree.Key)
	if len(rs) == 0 {
		return nil
	}
	var closed sets.Set[string]
	// The tree has waited longer than a reservation's tree of its priority: it goes first.
	yields := func(r *reservation.Reservation) bool { return r.YieldsTo(tree.Priority, tree.WaitingSince) }
	for name := range reservation.NodesOf(rs) {
		ni := topo.infoOf(nodes, name)
		if ni == nil {
			continue
		}
		held, closedBy, by := reservation.HeldOnNode(rs, ni, yields)
		switch {
		case closedBy != nil:
			if closed == nil {
				closed = sets.New[string]()
			}
			closed.Insert(name)
		case len(by) > 0:
			h := promised[name]
			h.Add(held)
			promised[name] = h
		}
	}
	return closed
}

func podPriority(p *v1.Pod) int32 { return corev1helpers.PodPriority(p) }
