package topology

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PreFilter narrows a gang member to the node its tree's plan gives it, planning the tree
// first if it has no live plan, and planning again if that node no longer has room. Members
// the plan did not place keep to their group's domain; members of groups the plan could not
// place are refused with the planner's explanation. Members of basic trees keep to the
// domain their placed siblings chose.
func (pl *Topology) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	sum, ok := pl.groups.Summary(pod)
	if !ok || (!sum.Gang && !sum.Topology) || (!sum.Topology && !pl.planGangs) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !sum.Gang {
		tree, ok := pl.groups.Tree(pod)
		if !ok {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		return pl.keepWithSiblings(tree, sum.Group, nodes)
	}
	plan := pl.groups.Plan(sum.Root)
	if plan != nil {
		if pp, ok := plan.Pods[pod.UID]; ok && !pl.stillFits(pp) {
			metrics.replans.WithLabelValues("capacity").Inc()
			plan = nil
		} else if !plan.Unplanned {
			metrics.planReuse.Inc()
		}
	}
	if plan == nil {
		tree, ok := pl.groups.Tree(pod)
		if !ok {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		if !sum.Topology && !plannable(tree) {
			plan = &podgroup.Plan{Root: sum.Root, Unplanned: true, Created: time.Now()}
		} else {
			var why string
			if plan, why = pl.planTree(tree, nodes); plan == nil {
				pl.groups.NoteUnplaceable(pod, why)
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "cannot place the gang: "+why)
			}
		}
		pl.groups.StorePlan(plan)
	}
	if plan.Unplanned {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if pp, ok := plan.Pods[pod.UID]; ok {
		return &fwk.PreFilterResult{NodeNames: sets.New(pp.Node)}, nil
	}
	if why, ok := plan.Refused[sum.Group]; ok {
		pl.groups.NoteUnplaceable(pod, why)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "cannot place the group: "+why)
	}
	if dom, ok := plan.Domains[sum.Group]; ok && dom != nil {
		return &fwk.PreFilterResult{NodeNames: dom}, nil
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the plugin has no Filter.
func (pl *Topology) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// stillFits reports whether a planned node still has room for the member.
func (pl *Topology) stillFits(pp podgroup.PlannedPod) bool {
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(pp.Node)
	if err != nil {
		return false
	}
	return podgroup.FreeOn(ni).Fits(pp.Request)
}

// planTree plans the whole tree; on failure it returns the explanation.
func (pl *Topology) planTree(tree *podgroup.GroupView, nodes []fwk.NodeInfo) (*podgroup.Plan, string) {
	start := time.Now()
	if hasTopology, _ := constrained(tree); !hasTopology {
		plan, why := pl.anywhere.plan(tree, nodes, pl.groups.Promised(tree.Key))
		metrics.planDuration.Observe(time.Since(start).Seconds())
		if plan == nil {
			metrics.plans.WithLabelValues("unplaceable").Inc()
			metrics.failures.WithLabelValues("any").Inc()
			return nil, why
		}
		metrics.plans.WithLabelValues("placed").Inc()
		return plan, ""
	}
	c := newCluster(pl.topology.get(pl.levels, nodes), nodes, pl.groups.Promised(tree.Key))
	out := newPlanner(c, pl.maxCands).plan(tree)
	metrics.planDuration.Observe(time.Since(start).Seconds())
	if !out.ok {
		metrics.plans.WithLabelValues("unplaceable").Inc()
		level := "any"
		if f := out.failures[len(out.failures)-1]; f.level >= 0 {
			level = levelName(pl.levels[f.level])
		}
		metrics.failures.WithLabelValues(level).Inc()
		return nil, c.explain(tree, out.failures)
	}
	metrics.plans.WithLabelValues("placed").Inc()
	plan := &podgroup.Plan{
		Root:    tree.Key,
		Pods:    map[types.UID]podgroup.PlannedPod{},
		Domains: map[podgroup.Key]sets.Set[string]{},
		Refused: map[podgroup.Key]string{},
		Chosen:  map[podgroup.Key]string{},
		Created: time.Now(),
	}
	for uid, n := range out.assign {
		plan.Pods[uid] = podgroup.PlannedPod{Node: n.name, Request: out.requests[uid]}
	}
	for k, d := range out.domains {
		if d.level >= 0 {
			plan.Chosen[k] = fmt.Sprintf("%s %s", levelName(pl.levels[d.level]), d.name())
			if k.Kind == podgroup.KindPodGroup {
				names := sets.New[string]()
				for _, n := range d.nodes {
					names.Insert(n.name)
				}
				plan.Domains[k] = names
			}
		}
	}
	for k, f := range out.refused {
		plan.Refused[k] = c.describeFailure(f)
	}
	pl.logger.V(4).Info("Planned tree", "root", tree.Key, "pods", len(plan.Pods), "domains", plan.Chosen)
	return plan, ""
}

// keepWithSiblings narrows a member of a basic tree to the domains its placed siblings
// chose: for each Required key on its path, the domain of the members already placed in
// that group's subtree.
func (pl *Topology) keepWithSiblings(tree *podgroup.GroupView, key podgroup.Key, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	var path []*podgroup.GroupView
	tree.Walk(func(g *podgroup.GroupView) {
		if g.Key == key {
			for v := g; v != nil; v = v.Parent {
				path = append(path, v)
			}
		}
	})
	c := newCluster(pl.topology.get(pl.levels, nodes), nodes, nil)
	allowed := sets.New[string]()
	for _, n := range c.nodes {
		allowed.Insert(n.name)
	}
	narrowed := false
	for _, g := range path {
		var placed []string
		g.Walk(func(v *podgroup.GroupView) { placed = append(placed, v.PlacedNodes...) })
		for _, t := range g.Topology {
			level := c.levelOf(t.Key)
			if t.Mode == v1alpha1.TopologyPreferred || level < 0 || len(placed) == 0 {
				continue
			}
			anchor, ok := c.byName[placed[0]]
			if !ok {
				continue
			}
			want, ok := anchor.domainOf(level)
			if !ok {
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("member of %s placed on node %s outside every %s", g.Key, anchor.name, levelName(t.Key)))
			}
			for _, n := range c.nodes {
				if k, ok := n.domainOf(level); !ok || k != want {
					allowed.Delete(n.name)
				}
			}
			narrowed = true
		}
	}
	if !narrowed {
		return nil, nil
	}
	if allowed.Len() == 0 {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "no node is in the domains the group's placed members chose")
	}
	return &fwk.PreFilterResult{NodeNames: allowed}, nil
}
