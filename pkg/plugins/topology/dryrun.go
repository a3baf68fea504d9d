package topology

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// dryRun is the planner as one gang preemption or reservation decision sees it
// (gangpreemption.DryRun): the domains of the level the tree's root requires, and the tree
// planned on a simulated copy of the cluster. Its domains share one cache of Filter verdicts.
type dryRun struct {
	pl       *Topology
	tree     *podgroup.GroupView
	topo     *topology
	verdicts *verdictCache
	// level is the level the tree's root requires, -1 for none (the cluster is its domain).
	level int
}

var _ gangpreemption.DryRun = &dryRun{}

func (pl *Topology) newDryRun(tree *podgroup.GroupView, infos []fwk.NodeInfo) *dryRun {
	topo := pl.topology.get(pl.levels, infos)
	level, _ := topo.constraintLevels(tree)
	return &dryRun{pl: pl, tree: tree, topo: topo, verdicts: newVerdictCache(), level: level}
}

// Domains are the domains of the level the tree's root requires, the whole cluster if it
// requires none.
func (d *dryRun) Domains() []gangpreemption.Domain {
	level := d.level
	d.topo.mu.Lock()
	defer d.topo.mu.Unlock()
	if level < 0 {
		cluster := d.pl.domainOf(d.topo.anywhere)
		cluster.Version = d.topo.versionOf(d.topo.anywhere)
		return []gangpreemption.Domain{cluster}
	}
	offered := d.topo.offeredLocked(d.pl, level)
	out := make([]gangpreemption.Domain, len(offered.list))
	for i, gd := range offered.list {
		out[i] = gd
		out[i].Version = d.topo.versionOf(offered.doms[i])
	}
	return out
}

// DomainOf returns the place in Domains of the domain that holds the node.
func (d *dryRun) DomainOf(node string) (int, bool) {
	level := d.level
	if level < 0 {
		return 0, d.topo.byName[node] != nil
	}
	n := d.topo.byName[node]
	if n == nil {
		return 0, false
	}
	key, ok := n.domainOf(level)
	if !ok {
		return 0, false
	}
	d.topo.mu.Lock()
	defer d.topo.mu.Unlock()
	i, ok := d.topo.offeredLocked(d.pl, level).at[key]
	return i, ok
}

// offered are the domains of one level as gang preemption is offered them, the topology's
// own (for their versions), and the place of each among them by key: built once per
// topology, as its domains do not change.
type offered struct {
	list []gangpreemption.Domain
	doms []*domain
	at   map[string]int
}

// offeredLocked returns the domains of the level as offered, without their versions. The
// caller holds t.mu.
func (t *topology) offeredLocked(pl *Topology, level int) *offered {
	if o := t.offered[level]; o != nil {
		return o
	}
	ds := t.sub[""][level]
	o := &offered{list: make([]gangpreemption.Domain, len(ds)), doms: ds, at: make(map[string]int, len(ds))}
	for i, dom := range ds {
		o.list[i] = pl.domainOf(dom)
		o.at[dom.key] = i
	}
	if t.offered == nil {
		t.offered = map[int]*offered{}
	}
	t.offered[level] = o
	return o
}

// Evicting returns the pods other trees' plans are evicting.
func (d *dryRun) Evicting() gangpreemption.Evictions { return d.pl.plans.Evicting(d.tree.Key) }

// Exclusive reports whether a group of the tree takes its domain to itself.
func (d *dryRun) Exclusive() bool { return exclusiveTree(d.topo, d.tree) }

// Plan plans the tree on infos, on dom's nodes only, as if removed were gone.
func (d *dryRun) Plan(ctx context.Context, infos []fwk.NodeInfo, dom gangpreemption.Domain, removed []fwk.PodInfo) (gangpreemption.Placement, bool) {
	inDomain := sets.New(dom.Nodes...)
	scope := &planScope{domain: d.topo.domains[dom.Key], verdicts: d.verdicts, removed: removed, outside: func(n *node) string {
		if inDomain.Has(n.name) {
			return ""
		}
		return "outside the domain being freed"
	}}
	plan, _ := d.pl.planTree(ctx, d.tree, infos, scope)
	if plan == nil {
		return nil, false
	}
	return plan, true
}

// domainOf names a domain and lists its nodes for gang preemption.
func (pl *Topology) domainOf(d *domain) gangpreemption.Domain {
	out := gangpreemption.Domain{Name: d.describe(pl.levels), Key: d.key, Nodes: make([]string, len(d.nodes))}
	for i, n := range d.nodes {
		out.Nodes[i] = n.name
	}
	return out
}

// describe names a domain in messages: "rack z0-b0-r1", or "the cluster".
func (d *domain) describe(levels []string) string {
	if d.level < 0 {
		return "the cluster"
	}
	return levelName(levels[d.level]) + " " + d.name()
}

// NodeOf is where the plan puts a member (gangpreemption.Placement).
func (p *Plan) NodeOf(member types.UID) (string, bool) {
	pp, ok := p.Pods[member]
	return pp.Node, ok
}

// planOf is the plan a dry run of this plugin made for a choice.
func planOf(c *gangpreemption.Choice) *Plan { return c.Plan.(*Plan) }

// cheapestDomain returns the cheapest domain the tree could be freed in, by mode, nil if none.
func (pl *Topology) cheapestDomain(ctx context.Context, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo, mode gangpreemption.Mode) *gangpreemption.Choice {
	return pl.gangPreemption.Cheapest(ctx, pl.newDryRun(tree, infos), tree, p, infos, mode)
}

// selectVictims returns the cheapest domain whose lower-priority pods can be evicted so
// that the tree fits, or nil and why none can. A lone gang that cannot have room for every
// pending member may still have it for its minimum, or more: it takes room for the most of
// them it can (upstream's gang preemption places as many pods as it can, and at least
// minCount), pod (the preemptor) first among them.
func (pl *Topology) selectVictims(ctx context.Context, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo, pod *v1.Pod) (*gangpreemption.Choice, string) {
	if c := pl.cheapestDomain(ctx, tree, p, infos, gangpreemption.Preempt); c != nil {
		return c, ""
	}
	if c := pl.mostThatFit(ctx, tree, p, infos, pod); c != nil {
		return c, ""
	}
	return nil, pl.noDomain(tree, infos, fmt.Sprintf("evicting every pod of priority below %d", p.Priority))
}

// mostThatFit returns the cheapest domain to free for the most pending members of a lone
// gang (no child groups, no followers) that it can free room for, at least as many as its
// minimum still needs and fewer than all, or nil. The count is searched by halves: fewer
// members never need more room.
func (pl *Topology) mostThatFit(ctx context.Context, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo, pod *v1.Pod) *gangpreemption.Choice {
	need := tree.Min - len(tree.PlacedNodes)
	if !tree.Gang || len(tree.Children) > 0 || need < 1 || need >= len(tree.Pending) || slices.ContainsFunc(tree.Pending, podgroup.IsFollower) {
		return nil
	}
	pending := slices.Clone(tree.Pending)
	if i := slices.IndexFunc(pending, func(m *v1.Pod) bool { return pod != nil && m.UID == pod.UID }); i > 0 {
		pending[0], pending[i] = pending[i], pending[0]
	}
	var best *gangpreemption.Choice
	for lo, hi := need, len(pending)-1; lo <= hi; {
		n := (lo + hi) / 2
		fewer := *tree
		fewer.Pending = pending[:n]
		if c := pl.cheapestDomain(ctx, &fewer, p, infos, gangpreemption.Preempt); c != nil {
			best, lo = c, n+1
		} else {
			hi = n - 1
		}
	}
	return best
}

// noDomain says why no domain could be freed: "<what> would not make room in any rack".
func (pl *Topology) noDomain(tree *podgroup.GroupView, infos []fwk.NodeInfo, what string) string {
	level, _ := pl.topology.get(pl.levels, infos).constraintLevels(tree)
	where := "the cluster"
	if level >= 0 {
		where = "any " + levelName(pl.levels[level])
	}
	return fmt.Sprintf("%s would not make room in %s", what, where)
}

// exclusiveTree reports whether a group of the tree takes a domain to itself: then no pod
// may stay in the domain freed for it.
func exclusiveTree(topo *topology, tree *podgroup.GroupView) bool {
	excl := false
	tree.Walk(func(g *podgroup.GroupView) { excl = excl || topo.exclusiveLevel(g) >= 0 })
	return excl
}
