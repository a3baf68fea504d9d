package topology

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// The planner places the pending members of a whole tree at once:
//
//   - top-down: a group picks a domain of its Required level inside its parent's domain,
//     then its children (or pods) are placed inside it;
//   - best fit: among the domains that can hold the group, the one with the least room to
//     spare is tried first, so that large domains stay whole for large gangs;
//   - Preferred: inside its domain a group first tries to fit whole into one domain of its
//     Preferred level, then of each broader level;
//   - bounded backtracking: when a child cannot be placed in the domain its parent chose,
//     the parent tries its next candidate domain (at most maxCandidates per level);
//   - pods onto nodes: largest first, each on the node it fills the most (best fit), so
//     heterogeneous pods are packed, not assumed identical;
//   - slices: a PodGroup with sliceSize is packed a slice at a time, each slice into one
//     domain of its slice level (slices.go).
//
// Capacity is the snapshot's free capacity minus what other trees' plans promised. Members
// already assumed or bound pin the domains of their groups.

// pending is one member to place.
type pending struct {
	pod   *v1.Pod
	need  capacity.Resources
	shape *shape       // where it may go, by the fitter
	group podgroup.Key // its PodGroup
}

// planner holds the state of one planning run. Every change is logged so that a failed
// attempt can be rolled back to a mark.
type planner struct {
	c   *cluster
	fit fitter
	// scope is the domain a preemption's dry run frees, nil otherwise: domains apart from it
	// hold no node the plan may use, and are not looked at.
	scope *domain
	// budget caps packing attempts, deadline the time of one run: within them every
	// candidate domain is considered.
	budget   int
	deadline time.Time

	// taken is the free capacity of the nodes the plan took from (freeAt); dirty counts, per
	// domain id, the nodes of the domain whose free capacity is not the topology's (promised
	// elsewhere or taken by the plan), whose room bestFitFor cannot take from the cache.
	taken map[int]capacity.Resources
	dirty map[int]int
	// cached: the fitter's eligibility is the pod spec's alone (no node excluded for this
	// plan), so a domain's room may come from the cache (room.go).
	cached  bool
	assign  map[types.UID]*node
	domains map[podgroup.Key]*domain
	undo    []change

	pendingOf map[podgroup.Key][]*pending // PodGroup → members to place
	demand    map[podgroup.Key]capacity.Resources
	// minDemand is the least a group needs to be ready (minCount smallest pods, or the
	// minGroupCount smallest children): a domain with less room in sum is not tried.
	minDemand map[podgroup.Key]capacity.Resources
	placedOf  map[podgroup.Key][]*node // subtree → nodes of assumed and bound members
	// goneOf are the nodes of the subtree's members placed on nodes the cluster does not have
	// (deleted as a bind landed, or not yet seen): with no other member placed, a Required
	// level cannot be pinned until they are removed.
	goneOf   map[podgroup.Key][]string
	shapes   map[podgroup.Key]shapeCount
	failures []failure

	// Exclusive placement (exclusive.go): domains held by exclusive groups placed or planned
	// before, the domains this plan's exclusive groups claimed, the tree's groups by key,
	// and what keeps an exclusive group out of a domain ("" when nothing does).
	held    holdings
	claims  holdings
	views   map[podgroup.Key]*podgroup.GroupView
	foreign func(d *domain, g podgroup.Key) string
}

// change is one logged mutation.
type change struct {
	node   *node // capacity taken on node by pod
	pod    *pending
	group  podgroup.Key // domain set for group
	before *domain
	isDom  bool
	// a claim of domain claimKey at claimLevel, by group
	isClaim    bool
	claimLevel int
	claimKey   string
}

// failure records that a group found no domain at a level.
type failure struct {
	group *podgroup.GroupView
	level int // -1: anywhere in its parent's domain
	pods  []*pending
	best  int // the most of its pods any candidate domain could take
	cands int
	// ineligible counts the candidates with no node the pods may use; why lists the reasons
	// the fitter gave for their nodes (listReasons).
	ineligible int
	why        string
	// refusing counts the nodes of the other candidates that have room for a pod but whose
	// Filter refuses it (running pods' anti-affinity, spread, ports...), roomy those with room
	// that take it; refusal lists the reasons given (listReasons).
	refusing, roomy int
	refusal         string
	pin             string // why candidates were restricted, if they were
	// slice is the group's slice constraint when it cut the group inside the candidates
	// (size 0 otherwise); best then counts pods placed in slices.
	slice slicing
}

// planBudget caps the number of packing attempts of one run, whatever the backtracking.
const planBudget = 20000

// newPlanner returns a planner of c whose members go where fit allows, within limit.
func newPlanner(c *cluster, fit fitter, limit time.Duration) *planner {
	p := &planner{
		c:         c,
		fit:       fit,
		budget:    planBudget,
		deadline:  time.Now().Add(limit),
		taken:     map[int]capacity.Resources{},
		dirty:     map[int]int{},
		assign:    map[types.UID]*node{},
		domains:   map[podgroup.Key]*domain{},
		pendingOf: map[podgroup.Key][]*pending{},
		demand:    map[podgroup.Key]capacity.Resources{},
		minDemand: map[podgroup.Key]capacity.Resources{},
		placedOf:  map[podgroup.Key][]*node{},
		goneOf:    map[podgroup.Key][]string{},
		shapes:    map[podgroup.Key]shapeCount{},
		held:      holdings{},
		claims:    holdings{},
		views:     map[podgroup.Key]*podgroup.GroupView{},
		foreign:   func(*domain, podgroup.Key) string { return "" },
	}
	switch fit.(type) {
	case *frameworkFitter, *specFitter:
		p.cached = true
	}
	for i := range c.over {
		p.markDirty(c.nodes[i], 1)
	}
	return p
}

// outcome is the result of planning a tree.
type outcome struct {
	ok       bool
	assign   map[types.UID]*node
	requests map[types.UID]capacity.Resources
	domains  map[podgroup.Key]*domain
	// refused are groups of a tree that was placed without them (a CompositePodGroup needs
	// only minGroupCount children): their members must not be placed anywhere else.
	refused  map[podgroup.Key]failure
	failures []failure
}

// plan places the pending members of the tree rooted at root.
func (p *planner) plan(root *podgroup.GroupView) outcome {
	p.index(root)
	anywhere := p.c.anywhere
	ok := p.placeGroup(root, anywhere)
	out := outcome{ok: ok, failures: p.failures}
	if !ok {
		return out
	}
	out.assign, out.domains = p.assign, p.domains
	out.requests = map[types.UID]capacity.Resources{}
	for _, list := range p.pendingOf {
		for _, pd := range list {
			out.requests[pd.pod.UID] = pd.need
		}
	}
	out.refused = map[podgroup.Key]failure{}
	root.Walk(func(g *podgroup.GroupView) {
		if _, placed := p.domains[g.Key]; placed {
			return
		}
		for i := len(p.failures) - 1; i >= 0; i-- {
			if p.failures[i].group.Key == g.Key {
				out.refused[g.Key] = p.failures[i]
				return
			}
		}
		if g.Parent != nil {
			if f, ok := out.refused[g.Parent.Key]; ok {
				out.refused[g.Key] = f
			}
		}
	})
	return out
}

// index computes what each group has to place, its demand and its pins.
func (p *planner) index(root *podgroup.GroupView) {
	var walk func(g *podgroup.GroupView) (capacity.Resources, []*node, []string)
	walk = func(g *podgroup.GroupView) (capacity.Resources, []*node, []string) {
		var demand capacity.Resources
		var placed []*node
		var gone []string
		var parts []capacity.Resources // what each pod (PodGroup) or child (composite) needs at least
		p.views[g.Key] = g
		for _, pod := range g.Pending {
			pd := &pending{pod: pod, need: capacity.PodRequests(pod), shape: p.fit.shapeOf(pod), group: g.Key}
			p.pendingOf[g.Key] = append(p.pendingOf[g.Key], pd)
			demand.Add(pd.need)
			parts = append(parts, pd.need)
		}
		for _, name := range g.PlacedNodes {
			if n, ok := p.c.byName[name]; ok {
				placed = append(placed, n)
			} else {
				gone = append(gone, name)
			}
		}
		for _, c := range g.Children {
			d, pl, gn := walk(c)
			demand.Add(d)
			placed = append(placed, pl...)
			gone = append(gone, gn...)
			parts = append(parts, p.minDemand[c.Key])
		}
		need := g.Min
		if g.Key.Kind == podgroup.KindPodGroup {
			need -= len(g.PlacedNodes)
		}
		sort.Slice(parts, func(i, j int) bool { return bigger(parts[j], parts[i]) })
		var least capacity.Resources
		for i := 0; i < need && i < len(parts); i++ {
			least.Add(parts[i])
		}
		p.demand[g.Key], p.minDemand[g.Key], p.placedOf[g.Key], p.goneOf[g.Key] = demand, least, placed, gone
		return demand, placed, gone
	}
	walk(root)
}

// placeGroup places g (and its subtree) inside within, trying candidate domains of its
// Required level in best-fit order, each first at its Preferred level.
func (p *planner) placeGroup(g *podgroup.GroupView, within *domain) bool {
	required, preferred := p.c.constraintLevels(g)
	if why := sliceProblem(p.c.levels, g.Topology); why != "" {
		p.fail(g, required, nil, why)
		return false
	}
	cands := []*domain{within}
	level := within.level
	if required > within.level {
		cands, level = p.c.within(within, required), required
	}
	cands, pin := p.pinned(g, cands, level)
	if excl := p.c.exclusiveLevel(g); excl >= 0 && excl == level {
		cands, pin = p.unheld(g, cands, level, pin)
	}
	demand, least := p.demand[g.Key], p.minDemand[g.Key]
	all := cands
	cands = p.bestFit(p.inScope(cands), g, least)
	for _, d := range cands {
		if p.exhausted() {
			break
		}
		for l := preferred; l > d.level; l-- {
			for _, sub := range p.placedFirst(g, p.bestFit(p.inScope(p.c.within(d, l)), g, demand)) {
				if p.exhausted() {
					break
				}
				if p.placeInOrRollback(g, sub) {
					return true
				}
			}
		}
		if p.placeInOrRollback(g, d) {
			return true
		}
	}
	// A dry run's failure is read only for the groups its plan leaves out, and only its
	// scope's domains could have held them: the others are not looked at (they are every
	// rack of the cluster, with every node of each).
	p.fail(g, level, p.inScope(all), pin)
	return false
}

// inScope returns the domains of ds that a dry run's scope may use: those that hold it or lie
// in it. Every domain, when the plan has no scope.
func (p *planner) inScope(ds []*domain) []*domain {
	if p.scope == nil || p.scope.level < 0 {
		return ds
	}
	out := make([]*domain, 0, 1)
	for _, d := range ds {
		if d.level < 0 || d.key == p.scope.key || strings.HasPrefix(p.scope.key, d.key+"/") || strings.HasPrefix(d.key, p.scope.key+"/") {
			out = append(out, d)
		}
	}
	return out
}

// exhausted reports whether the run used its budget of packing attempts or of time.
func (p *planner) exhausted() bool {
	return p.budget <= 0 || time.Now().After(p.deadline)
}

func (p *planner) placeInOrRollback(g *podgroup.GroupView, d *domain) bool {
	mark := len(p.undo)
	if p.placeIn(g, d) {
		return true
	}
	p.rollback(mark)
	return false
}

// placeIn places g inside domain d: a PodGroup's pods onto its nodes, a CompositePodGroup's
// children one by one, largest demand first.
func (p *planner) placeIn(g *podgroup.GroupView, d *domain) bool {
	p.setDomain(g.Key, d)
	if excl := p.c.exclusiveLevel(g); excl >= 0 && excl == d.level {
		p.claim(g.Key, d)
	}
	if g.Key.Kind == podgroup.KindPodGroup {
		needed := g.Min - len(g.PlacedNodes)
		if s, ok := p.c.sliceOf(g); ok {
			n, ok := p.packSlices(g, d, s)
			return ok && n >= needed
		}
		return p.pack(p.pendingOf[g.Key], d.nodes) >= needed
	}
	children := append([]*podgroup.GroupView(nil), g.Children...)
	sort.SliceStable(children, func(i, j int) bool {
		return bigger(p.demand[children[i].Key], p.demand[children[j].Key])
	})
	ready := 0
	for _, c := range children {
		mark := len(p.undo)
		if p.placeGroup(c, d) {
			ready++
		} else {
			p.rollback(mark)
		}
	}
	return ready >= g.Min
}

// pack puts pods onto nodes, largest first, each on the first node with room in packOrder
// (fullest sub-domain, then fullest node first). It returns how many it placed.
func (p *planner) pack(pods []*pending, nodes []*node) int {
	p.budget--
	order := append([]*pending(nil), pods...)
	sort.SliceStable(order, func(i, j int) bool { return bigger(order[i].need, order[j].need) })
	var need capacity.Resources
	if len(order) > 0 {
		need = order[0].need
	}
	nodes = p.packOrder(nodes, need)
	placed := 0
	for _, pd := range order {
		for _, n := range nodes {
			if p.freeAt(n.idx).Fits(pd.need) && !p.closed(n, pd.group) && p.fit.allows(pd.shape, n) && p.fit.admits(pd.shape, n) {
				p.take(n, pd)
				placed++
				break
			}
		}
	}
	return placed
}

// pinned restricts candidates to the domain members already placed (assumed or bound) are
// in; pin says why when it did.
func (p *planner) pinned(g *podgroup.GroupView, cands []*domain, level int) ([]*domain, string) {
	placed := p.placedOf[g.Key]
	if level < 0 {
		return cands, ""
	}
	if len(placed) == 0 {
		if gone := p.goneOf[g.Key]; len(gone) > 0 {
			return nil, goneMember(gone[0], p.c.levels[level])
		}
		return cands, ""
	}
	keys := sets.New[string]()
	for _, n := range placed {
		k, ok := n.domainOf(level)
		if !ok {
			return nil, "member placed on node " + n.name + " outside every " + levelName(p.c.levels[level])
		}
		keys.Insert(k)
	}
	if keys.Len() > 1 {
		return nil, "members already placed in " + levelName(p.c.levels[level]) + "s " + joinSorted(keys)
	}
	var out []*domain
	for _, d := range cands {
		if keys.Has(d.key) {
			out = append(out, d)
		}
	}
	return out, "members already placed in " + levelName(p.c.levels[level]) + " " + lastSegment(keys.UnsortedList()[0])
}

// goneMember says why a group whose only placed members are on a node the cluster does not
// have cannot be pinned: the node's domain is unknown, and the members still count.
func goneMember(node, level string) string {
	return "member placed on node " + node + ", which is not in the cluster (deleted?): its " +
		levelName(level) + " is unknown until the member is removed"
}

// placedFirst moves the domains that already hold members of g to the front, so that a
// Preferred level keeps a group together with its placed members when it can.
func (p *planner) placedFirst(g *podgroup.GroupView, ds []*domain) []*domain {
	placed := p.placedOf[g.Key]
	if len(placed) == 0 || len(ds) == 0 {
		return ds
	}
	holds := func(d *domain) bool {
		for _, n := range placed {
			if k, ok := n.domainOf(d.level); ok && k == d.key {
				return true
			}
		}
		return false
	}
	sort.SliceStable(ds, func(i, j int) bool { return holds(ds[i]) && !holds(ds[j]) })
	return ds
}

// bestFit returns the domains that can hold the group, tightest first. Room is counted in
// slots of the group's largest shape: how many such pods fit on the domain's nodes, by every
// resource they request (extended resources included), on the nodes the fitter allows them
// (taints, selectors, affinity...). A domain whose room is split into pieces too small for one
// pod, or lies on nodes the pods may not use, does not look roomy. The fewest spare slots
// come first, then the least free CPU, then by name; domains with fewer slots than pods
// (a composite may need fewer children) come last, roomiest first; domains whose eligible
// nodes cannot hold least in sum are left out.
func (p *planner) bestFit(ds []*domain, g *podgroup.GroupView, least capacity.Resources) []*domain {
	_, _, count := p.shapeOf(g)
	return p.bestFitFor(ds, g, least, count)
}

// bestFitFor is bestFit for count pods of the group's shape: a slice rather than the group.
func (p *planner) bestFitFor(ds []*domain, g *podgroup.GroupView, least capacity.Resources, count int64) []*domain {
	rep, shape, _ := p.shapeOf(g)
	ok := p.c.ranking[:0]
	defer func() { p.c.ranking = ok[:0] }()
	rooms := p.rooms(rep, shape)
	for _, d := range ds {
		total, slots := p.room(rooms, d, g, rep, shape, count)
		if !total.Fits(least) || (count > 0 && slots == 0) {
			continue
		}
		ok = append(ok, scoredDomain{d, slots - count, total.MilliCPU})
	}
	slices.SortFunc(ok, compareFit)
	out := make([]*domain, len(ok))
	for i, s := range ok {
		out[i] = s.d
	}
	return out
}

// scoredDomain is a domain bestFitFor ranks: the slots it has to spare (fewer than the
// pods when negative) and its free CPU.
type scoredDomain struct {
	d     *domain
	spare int64
	cpu   int64
}

// compareFit orders domains as bestFitFor ranks them; no two compare equal (keys differ).
func compareFit(a, b scoredDomain) int {
	wa, wb := a.spare >= 0, b.spare >= 0
	switch {
	case wa != wb:
		if wa {
			return -1
		}
		return 1
	case wa && a.spare != b.spare:
		return cmp.Compare(a.spare, b.spare) // best fit: the fewest slots to spare
	case !wa && a.spare != b.spare:
		return cmp.Compare(b.spare, a.spare) // part of the group: the roomiest
	case a.cpu != b.cpu:
		return cmp.Compare(a.cpu, b.cpu)
	case a.d.cpu != b.d.cpu:
		// As much room either way: the domain more of which is in use (the larger), so
		// that an idle domain stays whole for a gang that needs all of it, as upstream's
		// placement scoring (most allocated) would choose.
		return cmp.Compare(b.d.cpu, a.d.cpu)
	}
	return strings.Compare(a.d.key, b.d.key)
}

// shapeOf returns the member with the largest request among a group's pending pods, that
// request, and how many pending pods there are.
func (p *planner) shapeOf(g *podgroup.GroupView) (*pending, capacity.Resources, int64) {
	if s, ok := p.shapes[g.Key]; ok {
		return s.rep, s.need, s.count
	}
	var rep *pending
	var largest capacity.Resources
	var count int64
	g.Walk(func(v *podgroup.GroupView) {
		for _, pd := range p.pendingOf[v.Key] {
			if count == 0 || bigger(pd.need, largest) {
				rep, largest = pd, pd.need
			}
			count++
		}
	})
	p.shapes[g.Key] = shapeCount{rep, largest, count}
	return rep, largest, count
}

type shapeCount struct {
	rep   *pending
	need  capacity.Resources
	count int64
}

// packOrder returns the nodes of a domain fullest sub-domain first: the nodes of the
// sub-domain (zone, block, rack...) with the fewest free slots of need come first, one
// sub-domain after the other, and inside it the fullest nodes first. Packing a gang in this
// order fills what is already broken into, keeps the gang in as few sub-domains as it can,
// and leaves empty ones whole. Slots count the scarce resource (GPUs for GPU pods); free CPU
// breaks ties.
func (p *planner) packOrder(nodes []*node, need capacity.Resources) []*node {
	if len(nodes) == 0 {
		return nodes
	}
	depth := len(p.c.levels)
	cpuOnly := need.MilliCPU == 0 && need.Memory == 0 && len(need.Scalar) == 0
	// Each node's free slots and CPU, read once: the sort compares them O(n log n) times.
	keys := make([]packKey, len(nodes))
	for i, n := range nodes {
		free := p.freeAt(n.idx)
		keys[i] = packKey{n: n, slots: free.MilliCPU, cpu: free.MilliCPU}
		if !cpuOnly {
			keys[i].slots = free.Copies(need)
		}
	}
	// Free slots and CPU per domain of every level above the nodes', keyed by its path, then
	// kept with each node by level.
	levels := max(depth-1, 0)
	sums := map[string][2]int64{}
	for _, k := range keys {
		for l := 0; l < len(k.n.path) && l < levels; l++ {
			if key, ok := k.n.domainOf(l); ok {
				v := sums[key]
				sums[key] = [2]int64{v[0] + k.slots, v[1] + k.cpu}
			}
		}
	}
	flat := make([][2]int64, len(keys)*levels)
	for i := range keys {
		keys[i].sums = flat[i*levels : (i+1)*levels]
		for l := range levels {
			if key, ok := keys[i].n.domainOf(l); ok {
				keys[i].sums[l] = sums[key]
			}
		}
	}
	slices.SortStableFunc(keys, func(a, b packKey) int { return a.compare(b, levels) })
	out := make([]*node, len(keys))
	for i, k := range keys {
		out[i] = k.n
	}
	return out
}

// packKey is a node as packOrder sorts it: its free slots and CPU, and those of its domain at
// each level above the nodes'.
type packKey struct {
	n          *node
	slots, cpu int64
	sums       [][2]int64
}

// compare orders a and b as packOrder does: the sub-domain with fewer free slots (then less
// free CPU) first, one sub-domain after the other, then the fuller node, then by name.
func (a packKey) compare(b packKey, levels int) int {
	for l := range levels {
		ka, oka := a.n.domainOf(l)
		kb, okb := b.n.domainOf(l)
		if !oka && !okb && l < len(a.n.path) && l < len(b.n.path) {
			continue // neither has this level's label: their domains below decide
		}
		if !oka || !okb {
			break
		}
		if ka == kb {
			continue
		}
		if sa, sb := a.sums[l], b.sums[l]; sa != sb {
			if sa[0] != sb[0] {
				return cmp.Compare(sa[0], sb[0])
			}
			return cmp.Compare(sa[1], sb[1])
		}
		return strings.Compare(ka, kb) // one sub-domain after the other
	}
	if a.slots != b.slots {
		return cmp.Compare(a.slots, b.slots)
	}
	if a.cpu != b.cpu {
		return cmp.Compare(a.cpu, b.cpu)
	}
	return strings.Compare(a.n.name, b.n.name)
}

// fail records why g found no domain, from the same numbers the ranking uses: the candidate
// domains with no node the pods may use (and every reason, listReasons), and how many of its pods
// the roomiest of the others could take.
func (p *planner) fail(g *podgroup.GroupView, level int, cands []*domain, pin string) {
	var pods []*pending
	g.Walk(func(v *podgroup.GroupView) { pods = append(pods, p.pendingOf[v.Key]...) })
	f := failure{group: g, level: level, pods: pods, cands: len(cands), pin: pin}
	cut, sliced := p.c.sliceOf(g)
	if sliced && cut.level > level {
		f.slice = cut
	}
	rep, shape, count := p.shapeOf(g)
	smallest := smallestNeed(pods)
	reasons := map[string]int{}
	type room struct {
		d     *domain
		slots int64
		// some: a node of the domain has room for the group's smallest pod; where none has,
		// no pod of the group can be packed there, and the domain is not packed.
		some bool
	}
	var usable []room
	refusals := map[string]int{}
	var whys []string // why each node of the domain looked at is refused, until one is not
	for _, d := range cands {
		var slots int64
		eligible, some := false, false
		whys = whys[:0]
		for _, n := range d.nodes {
			if rep != nil && !p.fit.eligible(rep.shape, n) {
				if !eligible {
					whys = append(whys, p.fit.ineligible(rep.shape, n))
				}
				continue
			}
			eligible = true
			if count > 0 {
				free := p.freeAt(n.idx)
				some = some || free.Fits(smallest)
				copies := free.Copies(shape)
				slots += copies
				if copies > 0 && rep != nil && !p.closed(n, g.Key) {
					if p.fit.allows(rep.shape, n) {
						f.roomy++
					} else {
						f.refusing++
						refusals[p.fit.why(rep.shape, n)]++
					}
				}
			}
		}
		if !eligible {
			f.ineligible++
			for _, why := range whys {
				reasons[why]++
			}
			continue
		}
		usable = append(usable, room{d, slots, some})
	}
	f.why = listReasons(reasons)
	f.refusal = listReasons(refusals)
	sort.SliceStable(usable, func(i, j int) bool { return usable[i].slots > usable[j].slots })
	const maxExplained = 64
	for i, r := range usable {
		if i >= maxExplained {
			break
		}
		if !r.some {
			// A full cluster's racks: packing each (its nodes sorted) to place nothing was
			// most of a waiting rack-required gang's failed attempt at 15,000 nodes.
			continue
		}
		mark := len(p.undo)
		n := 0
		if sliced {
			if placed, ok := p.packSlices(g, r.d, cut); ok {
				n = placed
			}
		} else {
			n = p.pack(pods, r.d.nodes)
		}
		f.best = max(f.best, n)
		p.rollback(mark)
	}
	p.failures = append(p.failures, f)
}

// smallestNeed returns, of each resource, the least any of the pods requests (pods of one
// shape: that shape): a node without room for it has room for none of them.
func smallestNeed(pods []*pending) capacity.Resources {
	var least capacity.Resources
	for i, pd := range pods {
		if i == 0 {
			least = pd.need
			continue
		}
		least = least.Least(pd.need)
	}
	return least
}

func (p *planner) take(n *node, pd *pending) {
	r, ok := p.taken[n.idx]
	if !ok {
		r = p.c.freeAt(n.idx).Clone()
		p.markDirty(n, 1)
	}
	r.Sub(pd.need)
	p.taken[n.idx] = r
	p.assign[pd.pod.UID] = n
	p.undo = append(p.undo, change{node: n, pod: pd})
	p.fit.planned(pd.pod, n)
}

// claim records that exclusive group k takes domain d in this plan.
func (p *planner) claim(k podgroup.Key, d *domain) {
	p.undo = append(p.undo, change{group: k, isClaim: true, claimLevel: d.level, claimKey: d.key})
	p.claims.set(d.level, d.key, k)
}

func (p *planner) setDomain(k podgroup.Key, d *domain) {
	p.undo = append(p.undo, change{group: k, before: p.domains[k], isDom: true})
	p.domains[k] = d
}

// rollback undoes every change after mark.
func (p *planner) rollback(mark int) {
	for i := len(p.undo) - 1; i >= mark; i-- {
		c := p.undo[i]
		if c.isClaim {
			delete(p.claims[c.claimLevel], c.claimKey)
			continue
		}
		if c.isDom {
			if c.before == nil {
				delete(p.domains, c.group)
			} else {
				p.domains[c.group] = c.before
			}
			continue
		}
		r := p.taken[c.node.idx]
		r.Add(c.pod.need)
		p.taken[c.node.idx] = r
		delete(p.assign, c.pod.pod.UID)
		p.fit.unplanned(c.pod.pod, c.node)
	}
	p.undo = p.undo[:mark]
}

// bigger orders requests: more CPU, then more memory, then more extended resources.
func bigger(a, b capacity.Resources) bool {
	if a.MilliCPU != b.MilliCPU {
		return a.MilliCPU > b.MilliCPU
	}
	if a.Memory != b.Memory {
		return a.Memory > b.Memory
	}
	var sa, sb int64
	for _, v := range a.Scalar {
		sa += v
	}
	for _, v := range b.Scalar {
		sb += v
	}
	return sa > sb
}

// related reports whether group h is g, above g or below g in the tree: an exclusive
// domain h holds is open to g.
func (p *planner) related(g, h podgroup.Key) bool {
	for v := p.views[g]; v != nil; v = v.Parent {
		if v.Key == h {
			return true
		}
	}
	for v := p.views[h]; v != nil; v = v.Parent {
		if v.Key == g {
			return true
		}
	}
	return false
}

// closed reports whether node n lies in a domain an exclusive group unrelated to g holds or
// claimed in this plan.
func (p *planner) closed(n *node, g podgroup.Key) bool {
	if len(p.held) == 0 && len(p.claims) == 0 {
		return false
	}
	mine := func(h podgroup.Key) bool { return p.related(g, h) }
	if _, ok := p.held.holder(n, mine); ok {
		return true
	}
	_, ok := p.claims.holder(n, mine)
	return ok
}

// unheld leaves out the candidate domains an exclusive group may not take: held or claimed
// by another group, or with other pods in them; pin says why when none is left.
func (p *planner) unheld(g *podgroup.GroupView, cands []*domain, level int, pin string) ([]*domain, string) {
	var out []*domain
	why := ""
	for _, d := range cands {
		if h, ok := p.held[level][d.key]; ok && h != g.Key {
			why = fmt.Sprintf("%s %s is held by %s", levelName(p.c.levels[level]), lastSegment(d.key), h)
			continue
		}
		if h, ok := p.claims[level][d.key]; ok && h != g.Key {
			why = fmt.Sprintf("%s %s is taken by %s", levelName(p.c.levels[level]), lastSegment(d.key), h)
			continue
		}
		if f := p.foreign(d, g.Key); f != "" {
			why = fmt.Sprintf("%s %s is not empty: %s", levelName(p.c.levels[level]), lastSegment(d.key), f)
			continue
		}
		out = append(out, d)
	}
	if len(out) == 0 && len(cands) > 0 {
		pin = fmt.Sprintf("exclusive: no %s to itself (e.g. %s)", levelName(p.c.levels[level]), why)
	}
	return out, pin
}
