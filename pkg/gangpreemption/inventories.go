package gangpreemption

import (
	"fmt"
	"math"
	"sort"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// Inventories kept from one decision to the next. A shape's bounds are kept for the shape
// alone (bounds.go), so where gangs differ in size or requests, most decisions are the first
// of their shape, and each read every pod of every node to bound every domain: at 15,000
// nodes, 70 ms of a decision's 75. Yet what a domain's bound reads of its nodes, its hosts'
// free room and its candidate victims (bounder.hosts, bounder.shares), depends on the tree
// only through which pods it may take: those of priority below a threshold (the tree's
// priority preempting, the one above reserving), its own pods aside, which are on domains
// the decision bounds afresh anyway (decision.mine). So each domain's inventory is kept by
// threshold, with what it was read from (reading), and a decision of a new shape whose
// threshold has inventories bounds a domain from its inventory while it stands: the bound's
// arithmetic, no pod read. The inventory stands exactly while a bound read with it would
// (bounds.go), and the bound found from it is kept for the shape with the same reading.

// inventory is one domain's hosts and candidate victims, as bounderOf read them, without the
// victims' units (a bound reads only their numbers; the dry runs read units afresh), with what
// they were read from.
type inventory struct {
	hosts  []hostRoom
	shares []share
	reading
	// sorted is what floor reads, made at its first use (orders).
	sorted *orders
}

// inventoryOf keeps what b read, from r. b's victims lose their units: b is not used again.
func inventoryOf(b *bounder, r reading) inventory {
	for i := range b.shares {
		b.shares[i].unit = nil
	}
	return inventory{hosts: b.hosts, shares: b.shares, reading: r}
}

// bounder returns a bounder of the inventory for the decision's tree. The inventory's lists
// are shared: a bound only reads them.
func (inv inventory) bounder(run *decision) *bounder {
	return &bounder{hosts: inv.hosts, shares: inv.shares, need: run.need, slot: run.slot, members: int64(len(run.members))}
}

// threshold is what a domain's inventory reads of the tree: pods of priority below it may be
// taken (Mode.takes).
func (run *decision) threshold() string {
	t := int64(run.priority)
	if run.mode == Reserve {
		t++
	}
	return fmt.Sprint(t)
}

// A new shape's bound from an inventory still reads every host of the domain (the slots a
// member's smallest requests find on each), at 15,000 nodes 12 ms of such a decision's 15.
// Yet the search runs domains only from the lowest bound up until none left can beat the
// cheapest found, and in a full cluster it runs few. So a domain bounded from its inventory
// first gets a floor: bound's terms that read resources in all, not host by host, each read
// from lists the inventory sorted once (orders), a few steps per domain. Each term is at most
// bound's own (bound takes the larger of it and a term by slots), so the floor is a lower
// bound of the domain's bound, and of its cost. The search takes the domain of the lowest
// floor, bounds it fully if it has only a floor, and puts it back at its bound (Cheapest): a
// domain is run exactly when it would be were every domain bounded fully, and only the domains
// whose floor is below the cheapest found are.

// orders is an inventory's victims summed and sorted for floor.
type orders struct {
	// free is the hosts' free room in all; victims the candidates' room in all, and gangs
	// and lasting that of the gangs and of the pods that may never end.
	free, victims, gangs, lasting capacity.Resources
	// levels are the victims' priorities, lowest first, each with the room of the victims at
	// or below it.
	levels []level
	// smallestGangs[n] is the pods of the n gangs with the fewest.
	smallestGangs []int
	// byDimension is, for each resource a victim gives, the victims sorted for the terms.
	byDimension []dimensionOrder
}

type level struct {
	priority int32
	room     capacity.Resources
}

// dimensionOrder is the victims as one resource sorts them: the gangs' and the lasting pods'
// rooms, largest first, summed (most[0] is 0, most[n] the n largest), and the victims with
// room in it, the most room per pod first (mostPerCost).
type dimensionOrder struct {
	dim                 dimension
	mostGangs, mostLast []int64
	perPod              []int
}

// ordered returns the inventory's orders, made at the first call.
func (inv *inventory) ordered() *orders {
	if inv.sorted != nil {
		return inv.sorted
	}
	o := &orders{smallestGangs: []int{0}}
	for _, h := range inv.hosts {
		o.free.Add(h.base)
	}
	byPriority := map[int32]capacity.Resources{}
	var sizes []int
	for _, s := range inv.shares {
		o.victims.Add(s.room)
		if s.gang {
			o.gangs.Add(s.room)
			sizes = append(sizes, s.pods)
		}
		if s.lasting {
			o.lasting.Add(s.room)
		}
		r := byPriority[s.priority]
		r.Add(s.room)
		byPriority[s.priority] = r
	}
	for p, r := range byPriority {
		o.levels = append(o.levels, level{priority: p, room: r})
	}
	sort.Slice(o.levels, func(i, j int) bool { return o.levels[i].priority < o.levels[j].priority })
	for i := 1; i < len(o.levels); i++ {
		o.levels[i].room.Add(o.levels[i-1].room)
	}
	sort.Ints(sizes)
	for _, n := range sizes {
		o.smallestGangs = append(o.smallestGangs, o.smallestGangs[len(o.smallestGangs)-1]+n)
	}
	for _, d := range dimensionsOf(o.victims) {
		do := dimensionOrder{dim: d}
		var gangs, last []int64
		for _, s := range inv.shares {
			if s.gang {
				gangs = append(gangs, d.of(s.room))
			}
			if s.lasting {
				last = append(last, d.of(s.room))
			}
		}
		do.mostGangs, do.mostLast = largestSummed(gangs), largestSummed(last)
		do.perPod = mostPerCost(len(inv.shares), inv.amount(d), inv.podsOf)
		o.byDimension = append(o.byDimension, do)
	}
	inv.sorted = o
	return o
}

// largestSummed returns the sums of the largest amounts: [0] is 0, [n] the n largest.
func largestSummed(amounts []int64) []int64 {
	sort.Slice(amounts, func(i, j int) bool { return amounts[i] > amounts[j] })
	out := make([]int64, 1, len(amounts)+1)
	for _, a := range amounts {
		out = append(out, out[len(out)-1]+a)
	}
	return out
}

func (inv *inventory) amount(d dimension) func(int) float64 {
	return func(i int) float64 { return float64(d.of(inv.shares[i].room)) }
}

func (inv *inventory) podsOf(i int) float64 { return float64(inv.shares[i].pods) }

// floor returns a cost no dry run of the domain can beat for a tree whose pending members
// request need in all, at most its bound in every field (bounder.bound's terms by resources in
// all), and false where the domain cannot hold need even with every candidate gone (bound says
// so too).
func (inv *inventory) floor(need capacity.Resources) (Cost, bool) {
	o := inv.ordered()
	deficit := need.Clone()
	deficit.Sub(o.free)
	dims := shortOf(need, deficit)
	if !covers(o.victims, deficit, dims) {
		return Cost{}, false
	}
	if len(dims) == 0 {
		return Cost{}, true
	}
	gangs := o.fewest(deficit, dims, o.gangs, func(d dimensionOrder) []int64 { return d.mostGangs })
	pods := 0
	for _, d := range dims {
		if do := o.along(d); do != nil {
			pods = max(pods, coverInOrder(float64(d.of(deficit)), do.perPod, inv.amount(d), inv.podsOf))
		}
	}
	return Cost{
		Priority: o.lowestCeiling(deficit, dims),
		Gangs:    gangs,
		Lasting:  o.fewest(deficit, dims, o.lasting, func(d dimensionOrder) []int64 { return d.mostLast }),
		Pods:     max(pods, o.smallestGangs[min(gangs, len(o.smallestGangs)-1)]),
	}, true
}

// along returns the victims sorted by dimension d, nil where none gives any of it.
func (o *orders) along(d dimension) *dimensionOrder {
	for i := range o.byDimension {
		if o.byDimension[i].dim == d {
			return &o.byDimension[i]
		}
	}
	return nil
}

// lowestCeiling is bounder.lowestCeiling by resources in all: the lowest priority whose
// victims at or below it make up the deficit.
func (o *orders) lowestCeiling(deficit capacity.Resources, dims []dimension) int32 {
	for _, l := range o.levels {
		if covers(l.room, deficit, dims) {
			return l.priority
		}
	}
	return math.MaxInt32
}

// fewest is bounder.fewest's term by resources in all: with every victim of the other kinds
// taken, the fewest of the kind (whose room in all is kind; most gives their largest rooms
// summed) that make up what is left of the deficit in each short resource.
func (o *orders) fewest(deficit capacity.Resources, dims []dimension, kind capacity.Resources, most func(dimensionOrder) []int64) int {
	out := 0
	for _, d := range dims {
		left := d.of(deficit) - (d.of(o.victims) - d.of(kind))
		if left <= 0 {
			continue
		}
		do := o.along(d)
		if do == nil {
			continue
		}
		sums := most(*do)
		n := sort.Search(len(sums), func(n int) bool { return sums[n] >= left })
		out = max(out, min(n, len(sums)-1))
	}
	return out
}
