package topology

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Slices (TopologyConstraint.sliceSize, Kueue's podset-slice-required-topology): a PodGroup
// is cut into slices of size pods, each inside one domain of the slice level, so that the
// pods that talk most (a JobSet replica, a pipeline stage) are close while the gang as a
// whole may span a broader domain. A domain may hold several slices. When the group's size
// or minimum is not a multiple of size, one slice may be short (Kueue's partial slice).
//
// The planner places a PodGroup with slices inside its domain d (its Required domain, a
// Preferred sub-domain, or anywhere) in three steps, each on the nodes of one sub-domain of
// the slice level at a time (d itself when it lies inside one):
//   - first it completes the slices its placed members (assumed or bound) left open: a
//     domain with k of them has (size - k%size)%size places left in its open slice;
//   - then the pending pods, largest first, in whole slices, each in the tightest
//     sub-domain that takes it whole (best fit, as domains are chosen for whole groups);
//   - then, where a short slice is allowed and none was left open, the rest in the one
//     sub-domain that takes the most of them.
//
// Slices constrain PodGroups only: CompositePodGroups cannot carry sliceSize (the API
// refuses it), and the planner does not look for it there.

// slicing is a PodGroup's slice constraint: slices of size pods, each in a domain of level.
type slicing struct {
	size  int
	level int
}

// sliceOf returns a PodGroup's slice constraint; false when it has none, when its key is not
// a level, or for a CompositePodGroup.
func (t *topology) sliceOf(g *podgroup.GroupView) (slicing, bool) {
	if g.Key.Kind != podgroup.KindPodGroup {
		return slicing{}, false
	}
	for _, c := range g.Topology {
		if c.SliceSize == nil || *c.SliceSize < 1 || c.Mode == v1alpha1.TopologyPreferred {
			continue
		}
		if l := t.levelOf(c.Key); l >= 0 {
			return slicing{size: int(*c.SliceSize), level: l}, true
		}
	}
	return slicing{}, false
}

// sliceProblem says why a group's slice constraint is refused, "" if it is not: its level is
// broader than the group's Required level. Such slices would hold trivially, but a user who
// wrote them meant something else, and Kueue refuses them too ("podset slice topology is
// above the podset topology"), so the group is reported rather than silently planned. Keys
// that are not levels are reported by the plugin's validation.
func sliceProblem(levels []string, topology []v1alpha1.TopologyConstraint) string {
	required, slice := -1, -1
	var size int32
	for _, c := range topology {
		switch l := slices.Index(levels, c.Key); {
		case c.SliceSize != nil:
			slice, size = l, *c.SliceSize
		case c.Mode != v1alpha1.TopologyPreferred:
			required = l
		}
	}
	if slice < 0 || required < 0 || slice >= required {
		return ""
	}
	return fmt.Sprintf("slices of %d pods each within one %s cannot be cut inside the group's %s: the slice level must be the Required level or finer",
		size, levelName(levels[slice]), levelName(levels[required]))
}

// sliceCounts counts the nodes in each domain of a level.
func sliceCounts(nodes []*node, level int) map[string]int {
	counts := map[string]int{}
	for _, n := range nodes {
		if k, ok := n.domainOf(level); ok {
			counts[k]++
		}
	}
	return counts
}

// mayShort reports whether one slice of g may be short: its size or its minimum is not a
// multiple of the slice size.
func (s slicing) mayShort(g *podgroup.GroupView) bool {
	return (len(g.PlacedNodes)+len(g.Pending))%s.size != 0 || g.Min%s.size != 0
}

// packSlices places the pending pods of PodGroup g inside d in slices, as the file comment
// says, and returns how many it placed; false when the slices its placed members left open
// cannot all be completed and more than one would stay short.
func (p *planner) packSlices(g *podgroup.GroupView, d *domain, s slicing) (int, bool) {
	pods := append([]*pending(nil), p.pendingOf[g.Key]...)
	sort.SliceStable(pods, func(i, j int) bool { return bigger(pods[i].need, pods[j].need) })
	subs := p.c.within(d, s.level)
	if s.level <= d.level && len(d.nodes) > 0 {
		// d lies inside one domain of the slice level: every slice goes there, but the
		// slices the placed members left open elsewhere still count.
		k, _ := d.nodes[0].domainOf(s.level)
		subs = []*domain{{level: s.level, key: k, nodes: d.nodes}}
	}
	inside := make(map[string]*domain, len(subs))
	for _, sub := range subs {
		inside[sub.key] = sub
	}
	mayShort, short, placed := s.mayShort(g), false, 0

	// Open slices, the nearest to whole first; those outside d stay as they are.
	held := sliceCounts(p.placedOf[g.Key], s.level)
	open := make([]string, 0, len(held))
	for k, n := range held {
		if n%s.size != 0 {
			open = append(open, k)
		}
	}
	sort.Slice(open, func(i, j int) bool {
		if ri, rj := held[open[i]]%s.size, held[open[j]]%s.size; ri != rj {
			return ri > rj
		}
		return open[i] < open[j]
	})
	for _, k := range open {
		left := s.size - held[k]%s.size
		if sub, ok := inside[k]; ok && len(pods) > 0 {
			n := p.pack(pods[:min(left, len(pods))], sub.nodes)
			placed, left, pods = placed+n, left-n, p.unplaced(pods)
		}
		if left > 0 {
			if short || !mayShort {
				return placed, false
			}
			short = true
		}
	}

	// Whole slices.
	for len(pods) >= s.size && p.packSlice(g, pods[:s.size], subs, true) == s.size {
		placed, pods = placed+s.size, pods[s.size:]
	}

	// A short slice with what is left.
	if len(pods) > 0 && mayShort && !short {
		placed += p.packSlice(g, pods[:min(len(pods), s.size-1)], subs, false)
	}
	return placed, true
}

// packSlice places pods as one slice, on the nodes of the first of subs, in best-fit order,
// that takes them all, and returns how many it placed. A whole slice is all or nothing; a
// short one, when no sub-domain takes all the pods, gets as many as the one that takes the
// most can.
func (p *planner) packSlice(g *podgroup.GroupView, pods []*pending, subs []*domain, whole bool) int {
	least := pods[len(pods)-1].need // the smallest: pods come largest first
	if whole {
		least = capacity.Resources{}
		for _, pd := range pods {
			least.Add(pd.need)
		}
	}
	var most *domain
	taken := 0
	for _, sub := range p.bestFitFor(subs, g, least, int64(len(pods))) {
		if p.exhausted() {
			break
		}
		mark := len(p.undo)
		n := p.pack(pods, sub.nodes)
		if n == len(pods) {
			return n
		}
		p.rollback(mark)
		if n > taken {
			most, taken = sub, n
		}
	}
	if whole || most == nil {
		return 0
	}
	return p.pack(pods, most.nodes)
}

// unplaced returns the pods the plan has not placed yet, in order.
func (p *planner) unplaced(pods []*pending) []*pending {
	out := make([]*pending, 0, len(pods))
	for _, pd := range pods {
		if _, ok := p.assign[pd.pod.UID]; !ok {
			out = append(out, pd)
		}
	}
	return out
}

// openSlices returns the domains of a PodGroup's slice level where its placed members leave
// a slice open and the most of it is filled, so that a member placed outside a plan (a
// replacement in a scheduled gang, a member of a basic group) completes it; nil when no
// slice is open.
func (c *cluster) openSlices(g *podgroup.GroupView) (int, sets.Set[string]) {
	s, ok := c.sliceOf(g)
	if !ok {
		return 0, nil
	}
	var placed []*node
	for _, name := range g.PlacedNodes {
		if n, ok := c.byName[name]; ok {
			placed = append(placed, n)
		}
	}
	best, out := 0, sets.New[string]()
	for k, n := range sliceCounts(placed, s.level) {
		switch r := n % s.size; {
		case r == 0 || r < best:
		case r > best:
			best, out = r, sets.New(k)
		default:
			out.Insert(k)
		}
	}
	if out.Len() == 0 {
		return 0, nil
	}
	return s.level, out
}
