package gangpreemption

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podshape"
)

// The reprieve of a preemption dry run: once the tree was planned on a domain with every
// candidate victim taken out, each victim the plan does without is given back, most
// important first (upstream's reprieve, with the plan held fixed). Giving one back puts its
// pods back on the simulated nodes and into the PreFilter state of every member's shape
// (RunPreFilterExtensionAddPod, as upstream's SelectVictimsOnNode does), and checks the
// planned members again with every Filter: those on the victim's nodes, or, when placement
// depends on other pods (the members' inter-pod affinity, spread constraints or host ports,
// or the victim's own required anti-affinity, which reaches across its topology domain),
// every planned member. A victim the plan cannot live with is taken out again.

// reprieve is the state of one domain's reprieve.
type reprieve struct {
	e   *Evaluator
	ctx context.Context
	sim *simulation
	pre preFilterRunner // nil where the handle runs no PreFilter plugins: resources only
	// members are the planned members, by node then name; interacting: they depend on other
	// pods (and on each other).
	members     []plannedMember
	interacting bool
	// shapes hold, per shape of member, its PreFilter state as the simulation stands.
	shapes map[string]*reprieveShape
	// refused: the PreFilter plugins refuse a member outright; nothing can be given back.
	refused bool
}

type plannedMember struct {
	pod   *v1.Pod
	node  string
	shape string
	// req is the pod's requests, and placed the pod on its node, as fits adds it to a copy of
	// the node: made once per dry run, not once per victim given back.
	req    capacity.Resources
	placed fwk.PodInfo
}

// placedInfo returns the member as placed on its node (nil if its PodInfo cannot be made).
func (m *plannedMember) placedInfo() fwk.PodInfo {
	if m.placed == nil {
		placed := m.pod.DeepCopy()
		placed.Spec.NodeName = m.node
		if pi, err := framework.NewPodInfo(placed); err == nil {
			m.placed = pi
		}
	}
	return m.placed
}

type reprieveShape struct {
	pod   *v1.Pod
	state fwk.CycleState
}

// newReprieve prepares the reprieve of plan on sim, from which removed were taken.
func (e *Evaluator) newReprieve(ctx context.Context, sim *simulation, plan Placement, members map[types.UID]*v1.Pod, removed []fwk.PodInfo) *reprieve {
	r := &reprieve{e: e, ctx: ctx, sim: sim, pre: e.pre, shapes: map[string]*reprieveShape{}}
	var pods []*v1.Pod
	for uid, p := range members {
		node, ok := plan.NodeOf(uid)
		if !ok {
			continue
		}
		pods = append(pods, p)
		r.members = append(r.members, plannedMember{pod: p, node: node, shape: podshape.Key(p, true), req: capacity.PodRequests(p)})
	}
	sortMembers(r.members)
	r.interacting, _ = podshape.Interacts(pods)
	if r.pre == nil {
		return r
	}
	for _, m := range r.members {
		if _, ok := r.shapes[m.shape]; ok {
			continue
		}
		st := framework.NewCycleState()
		podgroup.MarkPlanning(st)
		if _, s, _ := r.pre.RunPreFilterPlugins(ctx, st, m.pod); !s.IsSuccess() && s.Code() != fwk.Unschedulable {
			r.refused = true
		}
		for _, pi := range removed {
			if ni := sim.get(pi.GetPod().Spec.NodeName); ni != nil {
				e.handle.RunPreFilterExtensionRemovePod(ctx, st, m.pod, pi, ni)
			}
		}
		r.shapes[m.shape] = &reprieveShape{pod: m.pod, state: st}
	}
	return r
}

// giveBack puts a victim's pods back and reports whether the plan still holds with them; if
// it does not, they are taken out again.
func (r *reprieve) giveBack(logger klog.Logger, u *Unit) bool {
	return r.giveBackAll([]*Unit{u})
}

// giveBackApart gives back at once the victims of units on no node a member is planned on,
// and returns them if the plan still holds with them all; if it does not, it gives back none
// (each is then tried alone, most important first). Their room is not the plan's, so one by
// one they would be given back all the same unless the members' placement depends on other
// pods; where it does (inter-pod affinity), a check made once spares a check of every member
// per victim: on upstream's GangPreemptionAffinity workload, 900 such victims per decision,
// and cloning the members' PreFilter states for each was most of the decision's CPU. The
// plan holding with all of them back is what makes the choice valid, and none of them is
// evicted: the choice has no more victims than the one-by-one reprieve would have had.
func (r *reprieve) giveBackApart(units []*Unit) []*Unit {
	planned := sets.New[string]()
	for _, m := range r.members {
		planned.Insert(m.node)
	}
	var apart []*Unit
units:
	for _, u := range units {
		for node := range u.roomsByNode() {
			if planned.Has(node) {
				continue units
			}
		}
		apart = append(apart, u)
	}
	if len(apart) < 2 || !r.giveBackAll(apart) {
		return nil
	}
	return apart
}

// giveBackAll puts the victims' pods back and reports whether the plan still holds with
// them; if it does not, they are taken out again.
func (r *reprieve) giveBackAll(units []*Unit) bool {
	if r.refused {
		return false
	}
	for _, u := range units {
		r.apply(u, true)
	}
	if r.fits(onOneOf(units), units) {
		return true
	}
	for _, u := range slices.Backward(units) {
		r.apply(u, false)
	}
	return false
}

// onOneOf returns whether a pod of one of units is on a node: read from the unit's own nodes
// for one (each victim given back alone), from their nodes gathered once for many.
func onOneOf(units []*Unit) func(node string) bool {
	if len(units) == 1 {
		return units[0].On
	}
	nodes := sets.New[string]()
	for _, u := range units {
		for node := range u.roomsByNode() {
			nodes.Insert(node)
		}
	}
	return nodes.Has
}

// roomOnItsNodes reports whether the nodes of units, with their pods back, still have room by
// resources for the members planned there: the check every Filter run below would make
// first, made once. Without it, a tree whose members interact (inter-pod affinity) ran every
// member's Filter again for each of a thousand small victims that could never be given back
// (upstream's GangPreemptionAffinity workload: a third of the scheduler's CPU).
func (r *reprieve) roomOnItsNodes(on func(node string) bool) bool {
	need := map[string]capacity.Resources{}
	for _, m := range r.members {
		if on(m.node) {
			n := need[m.node]
			n.Add(m.req)
			need[m.node] = n
		}
	}
	for node, n := range need {
		ni := r.sim.get(node)
		if ni == nil || !capacity.FreeOn(ni).Fits(n) {
			return false
		}
	}
	return true
}

// apply puts a victim's pods back on their nodes (add) or takes them out, in the simulation
// and in every shape's PreFilter state.
func (r *reprieve) apply(u *Unit, add bool) {
	logger := klog.FromContext(r.ctx)
	for _, pi := range u.Pods() {
		if add {
			r.sim.add(pi)
		} else {
			r.sim.remove(logger, pi.GetPod())
		}
		ni := r.sim.get(pi.GetPod().Spec.NodeName)
		if ni == nil {
			continue
		}
		for _, s := range r.shapes {
			if add {
				r.e.handle.RunPreFilterExtensionAddPod(r.ctx, s.state, s.pod, pi, ni)
			} else {
				r.e.handle.RunPreFilterExtensionRemovePod(r.ctx, s.state, s.pod, pi, ni)
			}
		}
	}
}

// fits checks the planned members again with the units' pods back (on: a pod of theirs is on
// the node): every member when
// placement depends on other pods, else those on the units' nodes. Members are added to the
// nodes (and, when they interact, to the states) one after the other, as the plan placed them.
func (r *reprieve) fits(on func(node string) bool, units []*Unit) bool {
	if !r.roomOnItsNodes(on) {
		return false
	}
	global := r.interacting || slices.ContainsFunc(units, repels)
	var states map[string]fwk.CycleState
	if r.pre != nil {
		states = make(map[string]fwk.CycleState, len(r.shapes))
		for k, s := range r.shapes {
			states[k] = s.state.Clone()
		}
	}
	infos := map[string]fwk.NodeInfo{}
	for i := range r.members {
		m := &r.members[i]
		if !global && !on(m.node) {
			continue
		}
		ni, ok := infos[m.node]
		if !ok {
			base := r.sim.get(m.node)
			if base == nil {
				return false
			}
			ni = base.Snapshot()
			infos[m.node] = ni
		}
		if states == nil {
			if !capacity.FreeOn(ni).Fits(m.req) {
				return false
			}
		} else if !r.e.handle.RunFilterPlugins(r.ctx, states[m.shape], m.pod, ni).IsSuccess() {
			return false
		}
		pi := m.placedInfo()
		if pi == nil {
			continue
		}
		ni.AddPodInfo(pi)
		if global && states != nil {
			for k, st := range states {
				r.e.handle.RunPreFilterExtensionAddPod(r.ctx, st, r.shapes[k].pod, pi, ni)
			}
		}
	}
	return true
}

// repels reports whether a victim's pods carry required anti-affinity, which refuses pods
// anywhere in its topology domain, not only on its own node.
func repels(u *Unit) bool {
	for _, pi := range u.Pods() {
		if a := pi.GetPod().Spec.Affinity; a != nil && a.PodAntiAffinity != nil &&
			len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
	}
	return false
}

func sortMembers(ms []plannedMember) {
	less := func(a, b plannedMember) bool {
		if a.node != b.node {
			return a.node < b.node
		}
		return a.pod.Name < b.pod.Name
	}
	for i := 1; i < len(ms); i++ {
		for j := i; j > 0 && less(ms[j], ms[j-1]); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
}
