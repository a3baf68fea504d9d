package topology

import (
	"fmt"
	"slices"
	"sort"
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
// explanation on failure.
func (a *anywhere) plan(root *podgroup.GroupView, topo *topology, infos []fwk.NodeInfo, promised map[string]capacity.Resources, fit fitter) (*Plan, string) {
	var pods []*pending
	groupOf := map[types.UID]*podgroup.GroupView{}
	root.Walk(func(g *podgroup.GroupView) {
		for _, p := range g.Pending {
			pods = append(pods, &pending{pod: p, need: capacity.PodRequests(p), shape: fit.shapeOf(p)})
			groupOf[p.UID] = g
		}
	})
	sort.SliceStable(pods, func(i, j int) bool { return bigger(pods[i].need, pods[j].need) })
	n := len(infos)
	if n == 0 {
		return nil, "there are no nodes"
	}
	// The free capacity of infos as the topology read it (only nodes that changed since the
	// last plan are read again), less what is promised on them (promised lists the few nodes
	// with anything promised) and what the plan took: a node looked at costs no allocation.
	base := newCluster(topo, promised)
	free := map[int]capacity.Resources{} // the nodes the plan took from
	freeOf := func(i int) capacity.Resources {
		if r, ok := free[i]; ok {
			return r
		}
		return base.freeAt(i)
	}
	start := int(a.start.Add(1) % uint64(n))
	plan := &Plan{Root: root.Key, Pods: map[types.UID]PlannedPod{}, Domains: map[podgroup.Key]sets.Set[string]{},
		Refused: map[podgroup.Key]string{}, Chosen: map[podgroup.Key]string{}}
	placed := map[podgroup.Key]int{}
	reasons := map[string]int{}
	// Members no node could take: a later member of the same shape that needs as much is not
	// looked for (nodes only lose room as the plan goes). A gang that does not fit costs one
	// pass over the nodes per shape, not one per member.
	var unplaced []*pending
	for _, pd := range pods {
		if slices.ContainsFunc(unplaced, func(u *pending) bool { return u.shape == pd.shape && pd.need.Fits(u.need) }) {
			continue
		}
		best := a.choose(pd, n, start, topo, freeOf, fit, reasons)
		if best < 0 {
			unplaced = append(unplaced, pd)
			continue
		}
		r := freeOf(best).Clone()
		r.Sub(pd.need)
		free[best] = r
		fit.planned(pd.pod, topo.nodes[best])
		plan.Pods[pd.pod.UID] = PlannedPod{Node: infos[best].Node().Name, Request: pd.need}
		placed[groupOf[pd.pod.UID].Key]++
	}
	if !readyWith(root, placed) {
		msg := fmt.Sprintf("%s %s: not enough free capacity for %s on the nodes the pods may use; they could take %d",
			root.Key.Kind, root.Key.Name, describePods(pods), len(plan.Pods))
		if why := commonest(reasons); why != "" {
			msg += "; nodes with room refused them: " + why
		}
		return nil, msg
	}
	for _, pd := range pods {
		if _, ok := plan.Pods[pd.pod.UID]; !ok && !podgroup.IsFollower(pd.pod) && root.Key.Kind == podgroup.KindPodGroup {
			plan.leave(pd.pod.UID) // a single PodGroup's member beyond its minimum (as planTree)
		}
	}
	return plan, ""
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

// commonest returns the reason given most often, "" if none.
func commonest(reasons map[string]int) string {
	best, n := "", 0
	for r, c := range reasons {
		if r != "" && (c > n || (c == n && r < best)) {
			best, n = r, c
		}
	}
	return best
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
