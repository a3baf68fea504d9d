package topology

import (
	"context"
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PreFilter narrows a gang member to the node its tree's plan gives it, planning the tree
// first if it has no live plan, and planning again if that node no longer has room. Members
// the plan did not place keep to their group's domain; members of groups the plan could not
// place are refused with the planner's explanation. Members of basic trees, and replacements
// in groups already scheduled, keep to the domains their placed siblings chose; replacements
// of a scheduled gang whose constrained group has no placed member left are planned whole.
//
// Where exclusive groups hold domains, a pod no plan narrowed to its node also gets, in the
// cycle state, the nodes closed to it, which Filter refuses (exclusive.go), and the
// reservations that hold room against it (reservations.go). A member narrowed to one node by
// anything else than its plan (its group's domain is one host) is checked like any pod: only
// a plan already did without the room they hold.
func (pl *Topology) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	res, s := pl.preFilter(ctx, state, pod, nodes)
	if podgroup.Planning(state) || (!s.IsSuccess() && !s.IsSkip()) || pl.narrowedByPlan(pod, res) {
		return res, s
	}
	if closed := pl.closedTo(pod, nodes); len(closed) > 0 {
		state.Write(closedKey, closed)
		if s.IsSkip() {
			s = nil
		}
	}
	if held := pl.holdsAgainst(pod); len(held) > 0 {
		state.Write(reservedKey, held)
		if s.IsSkip() {
			s = nil
		}
	}
	return res, s
}

// narrowedByPlan reports whether res narrows the pod to the one node its tree's live plan
// gives it.
func (pl *Topology) narrowedByPlan(pod *v1.Pod, res *fwk.PreFilterResult) bool {
	if res == nil || res.NodeNames.Len() != 1 {
		return false
	}
	sum, ok := pl.trees.Summary(pod)
	if !ok {
		return false
	}
	plan := pl.plans.Get(sum.Root)
	if plan == nil {
		return false
	}
	pp, planned := plan.Pods[pod.UID]
	return planned && res.NodeNames.Has(pp.Node)
}

func (pl *Topology) preFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if podgroup.Planning(state) || podgroup.Refused(state) {
		// The planner's own dry runs, or a member the gang holds back (its tree is backing
		// off): no plan is made or used in this cycle.
		return nil, fwk.NewStatus(fwk.Skip)
	}
	logger := klog.FromContext(ctx)
	sum, ok := pl.trees.Summary(pod)
	if !ok || (!sum.Gang && !sum.Topology) || (!sum.Topology && !pl.planGangs) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if !sum.Gang || sum.Scheduled {
		if !sum.Topology {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		tree, ok := pl.trees.Tree(pod)
		if !ok {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		g := unanchored(tree, sum.Group)
		if !sum.Gang || g == nil {
			first := ""
			if !sum.Gang && g != nil {
				first = pl.firstPlacement(ctx, tree, pod, sum, nodes)
			}
			res, s := pl.keepWithSiblings(tree, sum.Group, nodes, first)
			if res != nil {
				logger.V(4).Info("Member kept in its group's domains", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "nodes", res.NodeNames.Len(), "firstOfItsDomain", first != "")
			}
			return res, s
		}
		if !pendingWhole(g) {
			msg := fmt.Sprintf("no member of %s is left to anchor its domain: its replacements are placed together once they meet its minimum (%d)", g.Key, g.Min)
			logger.V(4).Info("Replacement waits for the others", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "why", msg)
			pl.notes.NoteUnplaceable(pod, msg)
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
		}
		logger.V(4).Info("Replacements of a scheduled gang are placed whole: no member of the group is left to anchor its domain", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "unanchored", g.Key)
	}
	plan := pl.plans.Get(sum.Root)
	if plan != nil && len(plan.Victims) > 0 {
		// The tree preempted: its members wait for the victims, then go where the plan says.
		if left := pl.victimsLeft(plan); left > 0 {
			msg := fmt.Sprintf("waiting for %d preempted pods to leave %s", left, plan.Freed)
			logger.V(4).Info("Member waits for its gang's victims", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "why", msg)
			pl.notes.NoteUnplaceable(pod, msg)
			return nil, fwk.NewStatus(fwk.Unschedulable, msg)
		}
		logger.V(4).Info("Victims are gone; the tree is placed by its preemption plan", "pod", klog.KObj(pod), "root", sum.Root, "domain", plan.Freed)
		done := *plan
		done.Victims, plan = nil, &done
		pl.plans.Store(plan)
		pl.notes.NotePreempting(sum.Root, "")
	}
	if plan != nil {
		if pp, ok := plan.Pods[pod.UID]; ok && !pl.stillFits(pp) {
			metrics.replans.WithLabelValues("capacity").Inc()
			logger.V(4).Info("Planned node is full; planning the tree again", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "node", pp.Node)
			plan = nil
		} else if !plan.Unplanned {
			metrics.planReuse.Inc()
		}
	}
	if plan == nil {
		// A preemption plan the tree had ended (expired, dropped) before it was retried: its
		// condition stops saying it preempts.
		pl.notes.NotePreempting(sum.Root, "")
		tree, ok := pl.trees.Tree(pod)
		if !ok {
			return nil, fwk.NewStatus(fwk.Skip)
		}
		if !sum.Topology && !plannable(tree) {
			plan = &Plan{Root: sum.Root, Unplanned: true, Expires: time.Now().Add(pl.planTTL)}
		} else {
			var why string
			if plan, why = pl.planTree(ctx, tree, nodes, nil); plan == nil {
				pl.notes.NoteUnplaceable(pod, why)
				logger.V(4).Info("No placement for the tree", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "why", why)
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "cannot place the gang: "+why)
			}
		}
		pl.plans.Store(plan)
		pl.clearNominations(logger, tree, pod)
	}
	if plan.Unplanned {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if pp, ok := plan.Pods[pod.UID]; ok {
		logger.V(4).Info("Member narrowed to its planned node", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "node", pp.Node)
		state.Write(plannedKey, plannedNode(pp.Node))
		return &fwk.PreFilterResult{NodeNames: sets.New(pp.Node)}, nil
	}
	if why, ok := plan.Refused[sum.Group]; ok {
		pl.notes.NoteUnplaceable(pod, why)
		logger.V(4).Info("Member's group has no place in the plan", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "why", why)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "cannot place the group: "+why)
	}
	if plan.Left.Has(pod.UID) {
		// As a refused group's: the plan decided, no node would; room that appears retries it.
		msg := "its gang is placed without it: no room for a member beyond the minimum; tried again when room appears"
		logger.V(4).Info("Member left out of its tree's plan", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "why", msg)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	}
	if dom, ok := plan.Domains[sum.Group]; ok && dom != nil {
		logger.V(4).Info("Member kept in its group's planned domain", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "domain", plan.Chosen[sum.Group])
		return &fwk.PreFilterResult{NodeNames: dom}, nil
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the nodes Filter refuses (exclusive domains) are not
// recomputed for preemption's dry runs.
func (pl *Topology) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// stillFits reports whether a planned node still has room for the member.
func (pl *Topology) stillFits(pp PlannedPod) bool {
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(pp.Node)
	if err != nil {
		return false
	}
	return capacity.FreeOn(ni).Fits(pp.Request)
}

// promised returns, per node, the capacity the tree may not count on: what other trees' live
// plans promised to their pending members, what pods nominated to the node request —
// victims' room a preemption freed, or members that waited at Permit when a scheduler
// restarted — and what reservations of other trees of at least its priority hold
// (reservations.go). The scheduler's Filter counts nominated pods of at least the pod's
// priority as if they were there, so the plan must too, or Filter refuses it. The tree's own
// members and pods a plan already counted are left out. It also returns the nodes the tree
// may not use at all: those of domains reserved for another tree to take whole.
func (pl *Topology) promised(tree *podgroup.GroupView, topo *topology, nodes []fwk.NodeInfo) (*promisedCapacity, sets.Set[string]) {
	plans, counted := pl.plans.Promised(tree.Key, pl.trees.Pending)
	p := &promisedCapacity{handle: pl.handle, nominations: pl.nominations, plans: plans, counted: counted, members: sets.New[types.UID](), priority: int32(math.MaxInt32)}
	tree.Walk(func(g *podgroup.GroupView) {
		for _, m := range g.Pending {
			p.members.Insert(m.UID)
			p.priority = min(p.priority, corev1helpers.PodPriority(m))
		}
	})
	return p, pl.heldFrom(tree, tree.Priority, topo, nodes, plans)
}

// promisedCapacity is what a plan of one tree must leave free on each node: what other
// plans and reservations hold there, and the nominated pods the scheduler's Filter counts.
type promisedCapacity struct {
	handle      fwk.Handle
	nominations *Nominations
	plans       map[string]capacity.Resources
	counted     sets.Set[types.UID]
	members     sets.Set[types.UID]
	priority    int32
}

// onNode returns what is promised on the named node, and whether anything is.
func (p *promisedCapacity) onNode(name string) (capacity.Resources, bool) {
	r, any := p.plans[name]
	r = r.Clone()
	for _, pi := range p.handle.NominatedPodsForNode(name) {
		pod := pi.GetPod()
		if p.members.Has(pod.UID) || p.counted.Has(pod.UID) || corev1helpers.PodPriority(pod) < p.priority {
			continue
		}
		r.Add(capacity.PodRequests(pod))
		any = true
	}
	return r, any
}

// all returns what is promised on every node with anything promised, for planners that
// weigh whole domains: the nodes of other plans and, of the nominator's, those Nominations
// lists (every node of nodes without it).
func (p *promisedCapacity) all(nodes []fwk.NodeInfo) map[string]capacity.Resources {
	out := make(map[string]capacity.Resources, len(p.plans))
	add := func(name string) {
		if _, done := out[name]; done {
			return
		}
		if r, ok := p.onNode(name); ok {
			out[name] = r
		}
	}
	if p.nominations == nil {
		for _, ni := range nodes {
			if n := ni.Node(); n != nil {
				add(n.Name)
			}
		}
		return out
	}
	for name := range p.plans {
		add(name)
	}
	for _, name := range p.nominations.Nodes() {
		add(name)
	}
	return out
}

// planScope narrows a plan for preemption's dry runs: to the nodes of one domain, on
// simulated nodes (victims removed) whose Filter verdicts are kept apart, without metrics.
type planScope struct {
	// domain is the domain (nil: the cluster); the planner looks at no domain apart from it
	// (planner.apart). outside says why a node is not in it, "" for its nodes.
	domain   *domain
	outside  func(*node) string
	verdicts *verdictCache
	// removed are the pods taken out of the simulated nodes (victims, pods leaving), which
	// the PreFilter states forget too.
	removed []fwk.PodInfo
}

// simulated are the nodes whose NodeInfos the dry run copied: those of the pods it removed.
func (s *planScope) simulated() []string {
	seen := sets.New[string]()
	for _, pi := range s.removed {
		seen.Insert(pi.GetPod().Spec.NodeName)
	}
	return sets.List(seen)
}

// planTree plans the whole tree (within scope, if any); on failure it returns the
// explanation.
func (pl *Topology) planTree(ctx context.Context, tree *podgroup.GroupView, nodes []fwk.NodeInfo, scope *planScope) (*Plan, string) {
	logger := klog.FromContext(ctx)
	start := time.Now()
	var topo *topology
	if scope != nil {
		topo = pl.topology.getSimulated(pl.levels, nodes, scope.simulated()) // a preemption's dry run
	} else {
		topo = pl.topology.get(pl.levels, nodes)
	}
	promise, reservedElsewhere := pl.promised(tree, topo, nodes)
	fit := pl.fitter(ctx, topo, nodes, tree, scope)
	defer fit.release()
	if len(reservedElsewhere) > 0 {
		fit = excluding{fitter: fit, out: func(n *node) string {
			if reservedElsewhere.Has(n.name) {
				return "reserved for another gang to take whole"
			}
			return ""
		}}
	}
	observe := func(result, level string) {
		if scope != nil {
			return
		}
		metrics.planDuration.Observe(time.Since(start).Seconds())
		metrics.plans.WithLabelValues(result).Inc()
		if level != "" {
			metrics.failures.WithLabelValues(level).Inc()
		}
	}
	held := pl.holdings(topo, tree.Key)
	if hasTopology, _ := constrained(tree); !hasTopology {
		if len(held) > 0 {
			// No group of the tree is exclusive: every held domain is closed to it.
			fit = excluding{fitter: fit, out: func(n *node) string {
				if g, ok := held.holder(n, func(podgroup.Key) bool { return false }); ok {
					return fmt.Sprintf("held exclusively by %s", g)
				}
				return ""
			}}
		}
		plan, why := pl.anywhere.plan(tree, topo, nodes, promise.all(nodes), fit)
		if plan == nil {
			observe("unplaceable", "any")
			return nil, why
		}
		observe("placed", "")
		plan.Expires = start.Add(pl.planTTL)
		plan.Priority, plan.FollowersTimeout = tree.Priority, followersTimeout(tree)
		logger.V(4).Info("Planned gang", "root", tree.Key, "pods", len(plan.Pods), "dryRun", scope != nil)
		return plan, ""
	}
	promised := promise.all(nodes)
	c := newCluster(topo, promised)
	planner := newPlanner(c, fit, pl.planLimit)
	if scope != nil {
		planner.scope = scope.domain
	}
	planner.held, planner.foreign = held, pl.foreignPods(nodes, promised)
	out := planner.plan(tree)
	if !out.ok {
		level := "any"
		if f := out.failures[len(out.failures)-1]; f.level >= 0 {
			level = levelName(pl.levels[f.level])
		}
		observe("unplaceable", level)
		return nil, c.explain(tree, out.failures)
	}
	observe("placed", "")
	plan := &Plan{
		Root:             tree.Key,
		Pods:             map[types.UID]PlannedPod{},
		Domains:          map[podgroup.Key]sets.Set[string]{},
		Refused:          map[podgroup.Key]string{},
		Chosen:           map[podgroup.Key]string{},
		Expires:          start.Add(pl.planTTL),
		Priority:         tree.Priority,
		FollowersTimeout: followersTimeout(tree),
	}
	for uid, n := range out.assign {
		plan.Pods[uid] = PlannedPod{Node: n.name, Request: out.requests[uid]}
	}
	for k, list := range planner.pendingOf {
		if _, refused := out.refused[k]; refused || tree.Key.Kind != podgroup.KindPodGroup {
			// A refused group's members are refused with it; in a composite tree a child
			// group left out is not held here (the tree's attempt decides for it).
			continue
		}
		for _, pd := range list {
			if _, placed := out.assign[pd.pod.UID]; !placed {
				plan.leave(pd.pod.UID)
			}
		}
	}
	for k, d := range out.domains {
		if g := planner.views[k]; g != nil && d.level >= 0 && d.level == topo.exclusiveLevel(g) {
			plan.Holds = append(plan.Holds, hold{group: k, level: d.level, domain: d.key})
		}
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
	logger.V(4).Info("Planned tree", "root", tree.Key, "pods", len(plan.Pods), "domains", chosenNames(plan.Chosen), "dryRun", scope != nil)
	return plan, ""
}

// fitter returns what decides where the tree's members may go: the profile's own Filter
// plugins, or, where the handle cannot run PreFilter plugins, the pods' node selection.
func (pl *Topology) fitter(ctx context.Context, topo *topology, nodes []fwk.NodeInfo, tree *podgroup.GroupView, scope *planScope) fitter {
	var fit fitter
	if pre, ok := pl.handle.(preFilterRunner); ok {
		var pods []*v1.Pod
		tree.Walk(func(g *podgroup.GroupView) { pods = append(pods, g.Pending...) })
		verdicts := pl.verdicts
		var removed []fwk.PodInfo
		if scope != nil {
			verdicts, removed = scope.verdicts, scope.removed
		}
		fit = newFrameworkFitter(ctx, pl.handle, pre, topo, nodes, verdicts, pods, removed)
	} else {
		fit = newSpecFitter(topo.eligibility())
	}
	if refused := pl.plans.Refusals(tree.Key); len(refused) > 0 {
		fit = excluding{fitter: fit, out: func(n *node) string {
			if why, ok := refused[n.name]; ok {
				return "refused a planned member before: " + why
			}
			return ""
		}}
	}
	if scope != nil && scope.outside != nil {
		fit = excluding{fitter: fit, out: scope.outside}
	}
	return fit
}

// chosenNames is Plan.Chosen for logs.
func chosenNames(chosen map[podgroup.Key]string) map[string]string {
	out := make(map[string]string, len(chosen))
	for k, d := range chosen {
		out[k.String()] = d
	}
	return out
}

// unanchored returns the first group on the path from key to the tree's root that has a
// topology constraint and no placed member in its subtree, or nil. Replacements in such a
// group (a scheduled gang whose pods were all deleted: a node failed, its controller
// restarted them) have no siblings to follow: placed one by one, the first would pick a
// domain for itself alone and pin the others there, room or not. They are planned whole
// instead, as the gang was at its start, once enough of them exist to meet its minimum
// (pendingWhole; a controller recreates its pods one by one), and bind one by one where the
// plan puts them.
func unanchored(tree *podgroup.GroupView, key podgroup.Key) *podgroup.GroupView {
	return unanchoredBy(tree, key, func(g *podgroup.GroupView) bool { return len(g.Topology) > 0 })
}

// unanchoredBy returns the first group on the path from key to the tree's root that
// constrained says has a constraint to anchor and that has no placed member in its subtree,
// or nil.
func unanchoredBy(tree *podgroup.GroupView, key podgroup.Key, constrained func(*podgroup.GroupView) bool) *podgroup.GroupView {
	for g := groupIn(tree, key); g != nil; g = g.Parent {
		if !constrained(g) {
			continue
		}
		placed := false
		g.Walk(func(v *podgroup.GroupView) { placed = placed || len(v.PlacedNodes) > 0 })
		if !placed {
			return g
		}
	}
	return nil
}

// groupIn returns the view of group key in tree, nil if it is not there.
func groupIn(tree *podgroup.GroupView, key podgroup.Key) *podgroup.GroupView {
	var out *podgroup.GroupView
	tree.Walk(func(g *podgroup.GroupView) {
		if g.Key == key {
			out = g
		}
	})
	return out
}

// pendingWhole reports whether g's pending members meet its minimum: a PodGroup's count, a
// CompositePodGroup's children that do.
func pendingWhole(g *podgroup.GroupView) bool {
	if g.Key.Kind == podgroup.KindPodGroup {
		return len(g.Pending) >= g.Min
	}
	n := 0
	for _, c := range g.Children {
		if pendingWhole(c) {
			n++
		}
	}
	return n >= g.Min
}

// keepWithSiblings narrows a member of a basic tree to the domains its placed siblings
// chose: for each Required key on its path, the domain of the members already placed in
// that group's subtree, or, where none is, the domain of first (the node the tree's plan
// gave the member, firstPlacement), if any; and, where its PodGroup has slices, to the
// domain of the slice its placed members left open, so that a member placed outside a plan
// (a replacement in a scheduled gang) completes the slice rather than starting one.
func (pl *Topology) keepWithSiblings(tree *podgroup.GroupView, key podgroup.Key, nodes []fwk.NodeInfo, first string) (*fwk.PreFilterResult, *fwk.Status) {
	var path []*podgroup.GroupView
	for v := groupIn(tree, key); v != nil; v = v.Parent {
		path = append(path, v)
	}
	c := newCluster(pl.topology.get(pl.levels, nodes), nil)
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
			if t.Mode == v1alpha1.TopologyPreferred || t.SliceSize != nil || level < 0 {
				continue
			}
			if len(placed) == 0 {
				if first == "" {
					continue
				}
				placed = []string{first}
			}
			anchor := c.anchor(placed)
			if anchor == nil {
				return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("%s: %s", g.Key, goneMember(placed[0], t.Key)))
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
	if len(path) > 0 {
		if level, open := c.openSlices(path[0]); open != nil {
			for _, n := range c.nodes {
				if k, ok := n.domainOf(level); !ok || !open.Has(k) {
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

// followersTimeout is how long the room a plan of tree gives followers is held once its
// leaders bound: the longest of its groups'.
func followersTimeout(tree *podgroup.GroupView) time.Duration {
	var d time.Duration
	tree.Walk(func(g *podgroup.GroupView) { d = max(d, g.FollowersTimeout) })
	return d
}
