package topology

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Gangs without topology constraints are planned too, in a cheaper way: each member, largest
// first, goes to the fullest of the first anywhereSample nodes (scanned from a start that
// rotates between plans, as the scheduler samples nodes) that have room for it and that the
// scheduler's Filter plugins accept. The plan narrows every member to one node, so a member
// is filtered against one node instead of hundreds, and the gang is packed instead of
// spread, as gang schedulers bin-pack (KAI, Volcano). Members with inter-pod affinities,
// topology spread constraints or preferred node affinity are left to the scheduler's own
// scoring: their gangs are not planned.

// anywhereSample is how many fitting nodes a member chooses among.
const anywhereSample = 64

// plannable reports whether every pending member can be planned without changing what the
// scheduler's scoring would honor for it.
func plannable(root *podgroup.GroupView) bool {
	ok := true
	root.Walk(func(g *podgroup.GroupView) {
		for _, p := range g.Pending {
			if !plainPlacement(p) {
				ok = false
			}
		}
	})
	return ok
}

func plainPlacement(p *v1.Pod) bool {
	if len(p.Spec.TopologySpreadConstraints) > 0 {
		return false
	}
	a := p.Spec.Affinity
	if a == nil {
		return true
	}
	if a.PodAffinity != nil || a.PodAntiAffinity != nil {
		return false
	}
	return a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0
}

// anywhere plans trees without topology constraints.
type anywhere struct {
	start atomic.Uint64
}

// plan places the pending members of root on nodes the fitter allows; it returns the
// explanation on failure. A PodGroup's members are placed largest first. A
// CompositePodGroup's children are placed one after the other, largest demand first (as
// planTree does), and a child that cannot be ready gives its room back and is refused: the
// tree is ready without it, and its members must not take the room the plan gives their
// siblings (a member the plan does not narrow goes wherever the scheduler finds room).
func (a *anywhere) plan(root *podgroup.GroupView, topo *topology, infos []fwk.NodeInfo, promised map[string]capacity.Resources, fit fitter) (*Plan, string) {
	if len(infos) == 0 {
		return nil, "there are no nodes"
	}
	// The free capacity of infos as the topology read it (only nodes that changed since the
	// last plan are read again), less what is promised on them (promised lists the few nodes
	// with anything promised) and what the plan took: a node looked at costs no allocation.
	r := &anywhereRun{a: a, topo: topo, infos: infos, fit: fit, base: newCluster(topo, promised),
		free: map[int]capacity.Resources{}, placed: map[podgroup.Key]int{}, reasons: map[string]int{},
		start: int(a.start.Add(1) % uint64(len(infos))), pending: map[podgroup.Key][]*pending{},
		plan: &Plan{Root: root.Key, Pods: map[types.UID]PlannedPod{}, Domains: map[podgroup.Key]sets.Set[string]{},
			Refused: map[podgroup.Key]string{}, Chosen: map[podgroup.Key]string{}}}
	root.Walk(func(g *podgroup.GroupView) {
		for _, p := range g.Pending {
			r.pending[g.Key] = append(r.pending[g.Key], &pending{pod: p, need: capacity.PodRequests(p), shape: fit.shapeOf(p), group: g.Key})
		}
	})
	if !r.place(root) {
		pods := r.pendingOf(root)
		if r.most == 0 {
			if absent := topo.absentFor(pods); len(absent) > 0 {
				return nil, fmt.Sprintf("%s %s: %s", root.Key.Kind, root.Key.Name, absentMessage(absent))
			}
		}
		msg := fmt.Sprintf("%s %s: not enough free capacity for %s on the nodes the pods may use; they could take %d",
			root.Key.Kind, root.Key.Name, describePods(pods), r.most)
		if whys := refusedFor(r.reasons); whys != "" {
			msg += "; nodes with room refused them: " + whys
		}
		return nil, msg
	}
	plan := r.plan
	root.Walk(func(g *podgroup.GroupView) {
		if _, refused := plan.Refused[g.Key]; refused {
			return
		}
		for _, p := range g.Pending {
			if _, ok := plan.Pods[p.UID]; !ok && !podgroup.IsFollower(p) {
				plan.leave(p.UID) // a member beyond its group's minimum (as planTree's PodGroups)
			}
		}
	})
	return plan, ""
}

// anywhereRun is the state of one anywhere plan.
type anywhereRun struct {
	a       *anywhere
	topo    *topology
	infos   []fwk.NodeInfo
	fit     fitter
	base    *cluster
	free    map[int]capacity.Resources // the nodes the plan took from
	start   int
	plan    *Plan
	pending map[podgroup.Key][]*pending // each PodGroup's pending members, read once a plan
	placed  map[podgroup.Key]int
	reasons map[string]int
	// unplaced are members no node could take: a later member of the same shape that needs
	// as much is not looked for while nodes only lose room (cleared when a child gives its
	// room back). A gang that does not fit costs one pass over the nodes per shape, not one
	// per member.
	unplaced []*pending
	// most is the largest number of members the plan held at once, for the explanation.
	most int
}

func (r *anywhereRun) freeOf(i int) capacity.Resources {
	if f, ok := r.free[i]; ok {
		return f
	}
	return r.base.freeAt(i)
}

// pendingOf returns the pending members of g's subtree, largest first.
func (r *anywhereRun) pendingOf(g *podgroup.GroupView) []*pending {
	var pods []*pending
	g.Walk(func(c *podgroup.GroupView) { pods = append(pods, r.pending[c.Key]...) })
	sort.SliceStable(pods, func(i, j int) bool { return bigger(pods[i].need, pods[j].need) })
	return pods
}

// demandOf is what the pending members of g's subtree request in all.
func (r *anywhereRun) demandOf(g *podgroup.GroupView) capacity.Resources {
	var d capacity.Resources
	g.Walk(func(c *podgroup.GroupView) {
		for _, pd := range r.pending[c.Key] {
			d.Add(pd.need)
		}
	})
	return d
}

// place places the pending members of g's subtree and reports whether g is ready with them.
// A child of a composite that is not ready is taken back and refused.
func (r *anywhereRun) place(g *podgroup.GroupView) bool {
	if g.Key.Kind == podgroup.KindPodGroup {
		r.placePods(r.pendingOf(g))
		return readyWith(g, r.placed)
	}
	children := append([]*podgroup.GroupView(nil), g.Children...)
	demand := make(map[podgroup.Key]capacity.Resources, len(children))
	for _, c := range children {
		demand[c.Key] = r.demandOf(c)
	}
	sort.SliceStable(children, func(i, j int) bool { return bigger(demand[children[i].Key], demand[children[j].Key]) })
	for _, c := range children {
		if !r.place(c) {
			r.refuse(c)
		}
	}
	return readyWith(g, r.placed)
}

// placePods places each member on the node choose picks for it.
func (r *anywhereRun) placePods(pods []*pending) {
	n := len(r.infos)
	for _, pd := range pods {
		if slices.ContainsFunc(r.unplaced, func(u *pending) bool { return u.shape == pd.shape && pd.need.Fits(u.need) }) {
			continue
		}
		best := r.a.choose(pd, n, r.start, r.topo, r.freeOf, r.fit, r.reasons)
		if best < 0 {
			r.unplaced = append(r.unplaced, pd)
			continue
		}
		f := r.freeOf(best).Clone()
		f.Sub(pd.need)
		r.free[best] = f
		r.fit.planned(pd.pod, r.topo.nodes[best])
		r.plan.Pods[pd.pod.UID] = PlannedPod{Node: r.infos[best].Node().Name, Request: pd.need}
		r.placed[pd.group]++
		r.most = max(r.most, len(r.plan.Pods))
	}
}

// refuse takes back what the plan placed of c's subtree, which cannot be ready, and refuses
// its groups: their members wait until the tree is planned again.
func (r *anywhereRun) refuse(c *podgroup.GroupView) {
	pods := r.pendingOf(c)
	var took int
	for _, pd := range pods {
		pp, ok := r.plan.Pods[pd.pod.UID]
		if !ok {
			continue
		}
		took++
		i := r.topo.byName[pp.Node].idx
		f := r.freeOf(i).Clone()
		f.Add(pd.need)
		r.free[i] = f
		r.fit.unplanned(pd.pod, r.topo.nodes[i])
		delete(r.plan.Pods, pd.pod.UID)
		r.placed[pd.group]--
	}
	if took > 0 {
		r.unplaced = nil // nodes have room again
	}
	why := fmt.Sprintf("%s %s: not enough free capacity for %s beside the groups placed with it; the nodes it may use could take %d of them",
		c.Key.Kind, c.Key.Name, describePods(pods), took)
	c.Walk(func(g *podgroup.GroupView) { r.plan.Refused[g.Key] = why })
}

// choose returns the node for one member, -1 if none: the fullest of the next anywhereSample
// nodes with room that the member's spec lets it use (cheap checks), verified with the full
// Filter fullest first. The Filter runs on the node chosen, and on the ones before it that
// refuse, not on every node sampled; if every sampled node refuses, the next sample is taken.
func (a *anywhere) choose(pd *pending, n, start int, topo *topology, freeOf func(int) capacity.Resources, fit fitter, reasons map[string]int) int {
	sample := make([]int, 0, anywhereSample)
	for k := 0; k < n; {
		sample = sample[:0]
		for ; k < n && len(sample) < anywhereSample; k++ {
			i := (start + k) % n
			if !freeOf(i).Fits(pd.need) {
				continue
			}
			if !fit.eligible(pd.shape, topo.nodes[i]) {
				reasons[fit.ineligible(pd.shape, topo.nodes[i])]++
				continue
			}
			sample = append(sample, i)
		}
		sort.SliceStable(sample, func(x, y int) bool { return freeOf(sample[x]).MilliCPU < freeOf(sample[y]).MilliCPU })
		for _, i := range sample {
			nd := topo.nodes[i]
			if !fit.allows(pd.shape, nd) {
				reasons[fit.why(pd.shape, nd)]++
				continue
			}
			if fit.admits(pd.shape, nd) {
				return i
			}
		}
	}
	return -1
}

// refusedFor lists the reasons nodes with room gave, the deciding first, without counts: a
// node is counted once per member it was tried for.
func refusedFor(reasons map[string]int) string {
	return strings.Join(podgroup.DecidingFirst(reasons), "; ")
}

// readyWith reports whether a tree is ready with the planned members added to the placed ones.
func readyWith(g *podgroup.GroupView, planned map[podgroup.Key]int) bool {
	if g.Key.Kind == podgroup.KindPodGroup {
		return len(g.PlacedNodes)+planned[g.Key] >= g.Min
	}
	ready := 0
	for _, c := range g.Children {
		if readyWith(c, planned) {
			ready++
		}
	}
	return ready >= g.Min
}
