package gangpreemption

import (
	"math"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// A domain's dry run plans the tree on a copy of the cluster, once per tier of victims, then
// gives victims back one by one: milliseconds each, and a rack-required tree has a domain per
// rack (750 at 15,000 nodes). Before any run, resources alone bound what each domain can
// cost, two ways, each a necessary condition of any set of victims that frees the domain:
//   - in all: the members' requests must fit in the domain's free room, the room of pods
//     already leaving and the room of the victims;
//   - node by node: the nodes must offer a slot per member, a slot being room for the
//     smallest member (what each needs at least); a victim can give no more slots than its
//     nodes can gain with every candidate on them gone.
// A domain that cannot hold the tree with every candidate gone is never run, and the others
// run from the lowest bound up, until the cheapest found costs no more than the next bound:
// no domain left can beat it.

// share is one candidate victim as a domain's bound sees it: what taking it costs, the room
// its pods give in the domain, and the domain's nodes they are on.
type share struct {
	unit          *Unit
	priority      int32
	pods          int
	gang, lasting bool
	room          capacity.Resources
	nodes         []int
}

// hostRoom is one node of the domain: its free room with the pods leaving it gone, and the
// room each candidate victim's pods give on it.
type hostRoom struct {
	base  capacity.Resources
	takes []take
}

type take struct {
	share int
	room  capacity.Resources
}

// bounder bounds one domain.
type bounder struct {
	hosts   []hostRoom
	shares  []share
	need    capacity.Resources // the members' requests in all
	slot    capacity.Resources // the smallest member's
	members int64
	// all is the slots of each host with every candidate gone.
	all []int64
}

// lowerBound returns a cost no dry run of domain d can beat (every field at most the field
// of the cost it would find), and false if the domain cannot hold the tree's pending members
// even with every candidate victim gone.
func (run *decision) lowerBound(d Domain) (Cost, bool) {
	return run.bounderOf(d).bound()
}

// bounderOf gathers domain d's hosts and candidate victims.
func (run *decision) bounderOf(d Domain) *bounder {
	b := &bounder{need: run.need, slot: run.slot, members: int64(len(run.members))}
	byUnit := map[*Unit]int{}
	b.hosts = make([]hostRoom, 0, len(d.Nodes))
	for _, n := range d.Nodes {
		i, ok := run.index.of(n)
		if !ok {
			continue
		}
		held := run.nodes.on(i)
		h := hostRoom{base: capacity.FreeOn(run.infos[i]), takes: make([]take, 0, len(held.units))}
		for _, p := range held.leaving {
			h.base.Add(capacity.PodRequests(p))
		}
		for _, on := range held.units {
			s, seen := byUnit[on.unit]
			if !seen {
				s = len(b.shares)
				byUnit[on.unit] = s
				b.shares = append(b.shares, share{unit: on.unit, priority: on.unit.Priority(), pods: len(on.unit.Pods()), gang: on.unit.Gang, lasting: on.unit.Lasting})
			}
			b.shares[s].nodes = append(b.shares[s].nodes, len(b.hosts))
			b.shares[s].room.Add(on.room)
			h.takes = append(h.takes, take{share: s, room: on.room})
		}
		b.hosts = append(b.hosts, h)
	}
	return b
}

// gangWeight is what breaking a gang weighs against evicting pods when leanest chooses: more
// than any number of pods, as Cost orders them.
const gangWeight = 1e6

// leanest returns few units of allowed whose going gives a slot per member, chosen greedily:
// each time the unit that gives the most slots for what it costs (a gang more than any number
// of pods), the lowest priority among equals. Nil if no single unit adds a slot before every
// member has one.
func (b *bounder) leanest(allowed []*Unit) []*Unit {
	ok := sets.New[string]()
	for _, u := range allowed {
		ok.Insert(u.Key)
	}
	taken := make([]bool, len(b.shares))
	isTaken := func(s int) bool { return taken[s] }
	at := make([]int64, len(b.hosts))
	total := int64(0)
	for h := range b.hosts {
		at[h] = b.slots(h, isTaken)
		total += at[h]
	}
	var out []*Unit
	for total < b.members {
		best, bestScore := -1, 0.0
		for i, s := range b.shares {
			if taken[i] || !ok.Has(s.unit.Key) {
				continue
			}
			gain := int64(0)
			for _, h := range s.nodes {
				gain += b.slots(h, func(x int) bool { return taken[x] || x == i }) - at[h]
			}
			if gain <= 0 {
				continue
			}
			weight := float64(s.pods)
			if s.gang {
				weight += gangWeight
			}
			score := float64(gain) / weight
			if best < 0 || score > bestScore || (score == bestScore && s.priority < b.shares[best].priority) {
				best, bestScore = i, score
			}
		}
		if best < 0 {
			return nil
		}
		taken[best] = true
		for _, h := range b.shares[best].nodes {
			w := b.slots(h, isTaken)
			total += w - at[h]
			at[h] = w
		}
		out = append(out, b.shares[best].unit)
	}
	return out
}

func (b *bounder) bound() (Cost, bool) {
	b.all = make([]int64, len(b.hosts))
	room, slots := capacity.Resources{}, int64(0)
	for i, h := range b.hosts {
		room.Add(h.base)
		b.all[i] = b.slots(i, func(int) bool { return true })
		slots += b.all[i]
	}
	deficit := b.need.Clone()
	deficit.Sub(room)
	dims := shortOf(b.need, deficit)
	if slots < b.members || !covers(b.totalRoom(), deficit, dims) {
		return Cost{}, false
	}
	gangs := b.fewest(deficit, dims, func(s share) bool { return s.gang })
	return Cost{
		Priority: b.lowestCeiling(deficit, dims),
		Gangs:    gangs,
		Lasting:  b.fewest(deficit, dims, func(s share) bool { return s.lasting }),
		Pods:     max(fewestPods(b.shares, deficit, dims), b.fewestPodsBySlots(), b.smallestGangs(gangs)),
	}, true
}

// smallestGangs returns the pods of the n gangs with the fewest: any set of victims that
// breaks n gangs evicts at least as many (every pod of a gang goes).
func (b *bounder) smallestGangs(n int) int {
	var sizes []int
	for _, s := range b.shares {
		if s.gang {
			sizes = append(sizes, s.pods)
		}
	}
	sort.Ints(sizes)
	total := 0
	for i := 0; i < n && i < len(sizes); i++ {
		total += sizes[i]
	}
	return total
}

// totalRoom is the room every candidate victim gives in all.
func (b *bounder) totalRoom() capacity.Resources {
	out := capacity.Resources{}
	for _, s := range b.shares {
		out.Add(s.room)
	}
	return out
}

// slots returns how many members host i could take with the candidates taken (by share
// index) gone, at most: copies of the smallest member in its room.
func (b *bounder) slots(i int, taken func(share int) bool) int64 {
	r := b.hosts[i].base.Clone()
	for _, t := range b.hosts[i].takes {
		if taken(t.share) {
			r.Add(t.room)
		}
	}
	return r.Copies(b.slot)
}

// lowestCeiling returns the lowest priority p such that the candidates of priority p or below
// make up the deficit and give a slot per member (any set of victims that does either
// includes one of priority p or more).
func (b *bounder) lowestCeiling(deficit capacity.Resources, dims []dimension) int32 {
	if b.enough(func(int) bool { return false }, deficit, dims) {
		return 0 // no victim needed by resources
	}
	prios := make([]int32, 0, len(b.shares))
	for _, s := range b.shares {
		prios = append(prios, s.priority)
	}
	sort.Slice(prios, func(i, j int) bool { return prios[i] < prios[j] })
	for i, p := range prios {
		if i+1 < len(prios) && prios[i+1] == p {
			continue
		}
		if b.enough(func(s int) bool { return b.shares[s].priority <= p }, deficit, dims) {
			return p
		}
	}
	return math.MaxInt32 // not reached: the domain holds the tree with every candidate gone
}

// enough reports whether the taken candidates gone, the domain has room for the members in
// all and a slot for each.
func (b *bounder) enough(taken func(share int) bool, deficit capacity.Resources, dims []dimension) bool {
	room, slots := capacity.Resources{}, int64(0)
	for s := range b.shares {
		if taken(s) {
			room.Add(b.shares[s].room)
		}
	}
	for h := range b.hosts {
		slots += b.slots(h, taken)
	}
	return slots >= b.members && covers(room, deficit, dims)
}

// fewest returns a lower bound on how many candidates of a kind (counted) any set of victims
// that frees the domain takes, the larger of two: with every candidate of the other kinds
// taken, the fewest of the kind whose largest rooms make up what is left of the deficit in
// each short resource; and the fewest whose largest gains of slots give the slots still
// missing, a candidate's gain being at most what its hosts gain from the other kinds' room to
// every candidate's.
func (b *bounder) fewest(deficit capacity.Resources, dims []dimension, counted func(share) bool) int {
	left := deficit.Clone()
	var kind []share
	for _, s := range b.shares {
		if counted(s) {
			kind = append(kind, s)
		} else {
			left.Sub(s.room)
		}
	}
	most := 0
	for _, d := range dims {
		amounts := make([]int64, len(kind))
		for i, s := range kind {
			amounts[i] = d.of(s.room)
		}
		most = max(most, fewestToMake(d.of(left), amounts))
	}
	others := func(s int) bool { return !counted(b.shares[s]) }
	missing, gain := b.gains(others)
	var gains []int64
	for i, s := range b.shares {
		if counted(s) {
			gains = append(gains, gain[i])
		}
	}
	return max(most, fewestToMake(missing, gains))
}

// gains returns the slots still missing with the taken candidates gone, and for each
// candidate, the most slots its hosts can gain beyond that.
func (b *bounder) gains(taken func(int) bool) (int64, []int64) {
	missing := b.members
	delta := make([]int64, len(b.hosts))
	for h := range b.hosts {
		w := b.slots(h, taken)
		missing -= w
		delta[h] = b.all[h] - w
	}
	gain := make([]int64, len(b.shares))
	for i, s := range b.shares {
		for _, h := range s.nodes {
			gain[i] += delta[h]
		}
	}
	return missing, gain
}

// fewestToMake returns how many of the largest amounts make up want.
func fewestToMake(want int64, amounts []int64) int {
	if want <= 0 {
		return 0
	}
	sort.Slice(amounts, func(i, j int) bool { return amounts[i] > amounts[j] })
	n := 0
	for _, a := range amounts {
		if want <= 0 {
			break
		}
		want -= a
		n++
	}
	return n
}

// fewestPodsBySlots returns a lower bound on the pods any set of victims that frees the
// domain evicts: the fewest pods that give the missing slots if candidates could be taken in
// part, the most slots per pod first.
func (b *bounder) fewestPodsBySlots() int {
	missing, gain := b.gains(func(int) bool { return false })
	return fractionalCover(float64(missing), len(b.shares), func(i int) float64 { return float64(gain[i]) },
		func(i int) float64 { return float64(b.shares[i].pods) })
}

// dimension is one resource of Resources: CPU, memory, pods, or the extended resource name.
type dimension struct {
	kind dimensionKind
	name v1.ResourceName
}

type dimensionKind int8

const (
	cpuDimension dimensionKind = iota
	memoryDimension
	podsDimension
	scalarDimension
)

// of reads the dimension of r.
func (d dimension) of(r capacity.Resources) int64 {
	switch d.kind {
	case cpuDimension:
		return r.MilliCPU
	case memoryDimension:
		return r.Memory
	case podsDimension:
		return r.Pods
	}
	return r.Scalar[d.name]
}

// baseDimensions are the resources every Resources holds. Callers only read it; its capacity
// is its length, so an append makes a new list.
var baseDimensions = slices.Clip([]dimension{{kind: cpuDimension}, {kind: memoryDimension}, {kind: podsDimension}})

// dimensionsOf returns the resources r holds: CPU, memory, pods, and its extended resources.
func dimensionsOf(r capacity.Resources) []dimension {
	if len(r.Scalar) == 0 {
		return baseDimensions // read for every domain a decision bounds: no list made
	}
	all := slices.Clone(baseDimensions)
	for name := range r.Scalar {
		all = append(all, dimension{kind: scalarDimension, name: name})
	}
	return all
}

// shortOf returns the resources the tree needs of which deficit is positive.
func shortOf(need, deficit capacity.Resources) []dimension {
	var out []dimension
	for _, d := range dimensionsOf(need) {
		if d.of(deficit) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// covers reports whether room makes up the deficit in every short resource.
func covers(room, deficit capacity.Resources, dims []dimension) bool {
	for _, d := range dims {
		if d.of(room) < d.of(deficit) {
			return false
		}
	}
	return true
}

// fewestPods returns a lower bound on the pods any set of victims that makes up the deficit
// evicts: in each short resource, the fewest pods if victims could be taken in part.
func fewestPods(shares []share, deficit capacity.Resources, dims []dimension) int {
	most := 0
	for _, d := range dims {
		most = max(most, fractionalCover(float64(d.of(deficit)), len(shares), func(i int) float64 { return float64(d.of(shares[i].room)) },
			func(i int) float64 { return float64(shares[i].pods) }))
	}
	return most
}

// fractionalCover returns the least cost, rounded up, of items (amount, cost) that make up
// want if items could be taken in part: the most amount per cost first, which no choice of
// whole items beats.
func fractionalCover(want float64, n int, amount, cost func(int) float64) int {
	if want <= 0 {
		return 0
	}
	items := make([]item, 0, n)
	for i := range n {
		items = append(items, item{amount: amount(i), cost: cost(i)})
	}
	return coverInOrder(want, mostPerCost(items), item{})
}

// item is what fractionalCover reads of one candidate: the amount of a resource it gives, and
// what taking it costs.
type item struct{ amount, cost float64 }

// mostPerCost returns the items of positive amount, the most amount per cost first.
func mostPerCost(items []item) []item {
	out := items[:0]
	for _, it := range items {
		if it.amount > 0 {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(x, y int) bool { return out[x].amount*out[y].cost > out[y].amount*out[x].cost })
	return out
}

// coverInOrder returns fractionalCover's cost with the items in the order mostPerCost gives,
// or at most that where they are the first of more (tail: of at most tail.amount per
// tail.cost, tail.amount in all): what is left to make up, or all they give, costs at least
// that amount at that rate.
func coverInOrder(want float64, items []item, tail item) int {
	total := 0.0
	for _, it := range items {
		if want <= 0 {
			break
		}
		take := math.Min(1, want/it.amount)
		total += take * it.cost
		want -= take * it.amount
	}
	if want > 0 && tail.amount > 0 {
		total += min(want, tail.amount) * tail.cost
	}
	return int(math.Ceil(total - 1e-9))
}

// better reports whether a is a better domain than b for the mode.
func (m Mode) better(a, b Cost) bool {
	if m == Preempt {
		return a.Less(b)
	}
	return a.Sooner(b)
}

// needOf returns what a tree's pending members request in all, and what the smallest of them
// requests of each resource.
func needOf(members map[types.UID]*v1.Pod) (need, smallest capacity.Resources) {
	first := true
	for _, p := range members {
		r := capacity.PodRequests(p)
		need.Add(r)
		if first {
			smallest, first = r.Clone(), false
			continue
		}
		smallest.MilliCPU, smallest.Memory, smallest.Pods = min(smallest.MilliCPU, r.MilliCPU), min(smallest.Memory, r.Memory), min(smallest.Pods, r.Pods)
		for name, v := range smallest.Scalar {
			smallest.Scalar[name] = min(v, r.Scalar[name])
		}
	}
	return need, smallest
}
