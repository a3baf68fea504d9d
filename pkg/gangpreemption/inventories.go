package gangpreemption

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// Inventories kept from one decision to the next. A shape's bounds are kept for the shape
// alone (bounds.go), so where gangs differ in size or requests, most decisions are the first
// of their shape, and each read every pod of every node to bound every domain: at 15,000
// nodes, nearly all of such a decision's 70–80 ms. Yet the search runs domains only from the
// lowest bound up until none left can beat the cheapest found, and in a full cluster it runs
// few; and what a domain's nodes hold depends on the tree only through which pods it may take:
// those of priority below a threshold (the tree's priority preempting, the one above
// reserving), its own pods aside, which are on domains the decision bounds afresh anyway
// (decision.mine).
//
// So once a second shape of a threshold comes, a domain bounded from its nodes has its
// inventory kept for the threshold: its free room and candidate victims summed, and sorted per
// resource, at most keptPerList entries a list (its size grows with the domain, not with the
// pods there), with what they were read from (reading), which stands exactly while a bound
// read with them would (bounds.go). A decision of a new shape whose threshold has inventories
// gives each domain whose inventory stands a floor from it: bound's terms that read resources
// in all, not host by host, a few steps each (inventory.floor). Each term is at most bound's
// own (bound takes the larger of it and a term by slots; entries beyond the kept count as the
// last kept), so a floor is at most the domain's bound, and its cost. The search takes the
// domain of the lowest floor, bounds it from its nodes if it has only a floor (refine), and
// puts it back at its bound (Cheapest): a domain is run exactly when it would be were every
// domain bounded from its nodes, and only the domains whose floor is below the cheapest found
// are read. Where running gangs straddle domains, a domain's floor is below its bound (freeing
// its nodes breaks more gangs than its rooms in all say), and each such domain must be
// bounded before the search can stop: its inventory keeps what its bound was read from
// (rooms), and refine bounds it from them, reading no pod.

// inventory is one domain's free room and candidate victims summed and sorted for floor, with
// what they were read from.
type inventory struct {
	// free is the hosts' free room in all; victims the candidates' room in all, and gangs
	// and lasting that of the gangs and of the pods that may never end.
	free, victims, gangs, lasting capacity.Resources
	// levels are the victims' priorities, lowest first, each with the room of the victims at
	// or below it.
	levels []level
	// smallestGangs are the gangs' pod counts, fewest first.
	smallestGangs smallest
	// byDimension is, for each resource a victim gives, the victims sorted for the terms.
	byDimension []dimensionOrder
	// rooms is what the domain's bound was read from, kept where the floor fell below the
	// bound (roomsOf): refine bounds the domain from it, not from its nodes.
	rooms *rooms
	reading
}

// rooms is what a domain's bound reads of its nodes, the tree aside: its hosts' free rooms,
// and what each candidate victim gives on them. Where running gangs straddle domains (as
// per-pod scoring spreads them), freeing a domain's nodes breaks more gangs than its rooms in
// all say, so every domain's floor is below its bound, and a decision of a new shape would
// read every domain's nodes again to bound them: at 15,000 nodes in racks of 20, 150 ms. From
// its rooms, bound gives the same bound, as long as the reading stands, without reading a pod.
// Kept only where the floor fell short: they grow with the domain's pods, where the sorted
// lists do not.
type rooms struct {
	hosts  []hostRoom
	shares []share
}

// roomsOf keeps what b read, without the units (the search never dry runs from kept rooms).
func roomsOf(b *bounder) *rooms {
	r := &rooms{hosts: b.hosts, shares: make([]share, len(b.shares))}
	for i, s := range b.shares {
		s.unit = nil
		r.shares[i] = s
	}
	return r
}

// roomsKept returns how many domains of k keep rooms, and how many hosts those cover.
func roomsKept(k *keptBy[inventory]) (domains, hosts int) {
	for i, has := range k.has {
		if has && k.vals[i].rooms != nil {
			domains++
			hosts += len(k.vals[i].rooms.hosts)
		}
	}
	return domains, hosts
}

// bounder returns a bounder of the tree run decides over the kept rooms. bound only reads
// them.
func (r *rooms) bounder(run *decision) *bounder {
	return &bounder{need: run.need, slot: run.slot, members: int64(len(run.members)), hosts: r.hosts, shares: r.shares}
}

type level struct {
	priority int32
	room     capacity.Resources
}

// dimensionOrder is the victims as one resource sorts them: the gangs' and the lasting pods'
// rooms, largest first, and the victims' rooms and pods, the most room per pod first
// (mostPerCost), the first keptPerList of each; perPodTail is what the victims beyond those
// give in all (amount), and the pods per room of the last kept (cost), which none beyond has
// less of.
type dimensionOrder struct {
	dim                 dimension
	mostGangs, mostLast largest
	perPod              []item
	perPodTail          item
}

// keptPerList is how many victims each of an inventory's sorted lists keeps: a floor reads
// about as many as it takes victims to free the domain, and beyond them it counts each as
// the last kept (no victim beyond gives more), which is still a lower bound. So an
// inventory's size is bounded by its domain, not by the pods running there.
const keptPerList = 16

// largest is amounts (rooms), largest first: sums[n-1] is the n largest summed, for the first
// keptPerList of count.
type largest struct {
	sums  []int64
	count int
}

// largestOf sorts amounts and sums the largest.
func largestOf(amounts []int64) largest {
	slices.SortFunc(amounts, func(a, b int64) int { return cmp.Compare(b, a) })
	l := largest{count: len(amounts), sums: make([]int64, 0, min(len(amounts), keptPerList))}
	sum := int64(0)
	for _, a := range amounts[:min(len(amounts), keptPerList)] {
		sum += a
		l.sums = append(l.sums, sum)
	}
	return l
}

// fewestToMake returns at most fewestToMake(want, amounts): the fewest of the largest that
// make up want (all of them where they do not), those beyond the kept counted as large as the
// last kept.
func (l largest) fewestToMake(want int64) int {
	if want <= 0 || l.count == 0 {
		return 0
	}
	if n, _ := slices.BinarySearch(l.sums, want); n < len(l.sums) {
		return n + 1
	}
	k := len(l.sums)
	last := l.sums[k-1]
	if k > 1 {
		last -= l.sums[k-2]
	}
	if k == l.count || last <= 0 {
		return l.count
	}
	more := (want - l.sums[k-1] + last - 1) / last
	return int(min(int64(k)+more, int64(l.count)))
}

// smallest is counts, fewest first: sums[n] is the n fewest summed, for the first keptPerList
// of count.
type smallest struct {
	sums  []int
	count int
}

func smallestOf(counts []int) smallest {
	slices.Sort(counts)
	s := smallest{count: len(counts), sums: make([]int, 1, min(len(counts), keptPerList)+1)}
	for _, n := range counts[:min(len(counts), keptPerList)] {
		s.sums = append(s.sums, s.sums[len(s.sums)-1]+n)
	}
	return s
}

// atLeast returns at most the sum of the n fewest: those beyond the kept counted as few as
// the last kept.
func (s smallest) atLeast(n int) int {
	n = min(n, s.count)
	k := len(s.sums) - 1
	if n <= k {
		return s.sums[n]
	}
	return s.sums[k] + (n-k)*(s.sums[k]-s.sums[k-1])
}

// inventoryOf sums and sorts what b read, from r.
func inventoryOf(b *bounder, r reading) inventory {
	inv := inventory{reading: r}
	for _, h := range b.hosts {
		inv.free.Add(h.base)
	}
	var sizes []int
	for _, s := range b.shares {
		inv.victims.Add(s.room)
		if s.gang {
			inv.gangs.Add(s.room)
			sizes = append(sizes, s.pods)
		}
		if s.lasting {
			inv.lasting.Add(s.room)
		}
		at := slices.IndexFunc(inv.levels, func(l level) bool { return l.priority == s.priority })
		if at < 0 {
			at = len(inv.levels)
			inv.levels = append(inv.levels, level{priority: s.priority})
		}
		inv.levels[at].room.Add(s.room)
	}
	slices.SortFunc(inv.levels, func(a, b level) int { return cmp.Compare(a.priority, b.priority) })
	for i := 1; i < len(inv.levels); i++ {
		inv.levels[i].room.Add(inv.levels[i-1].room)
	}
	inv.smallestGangs = smallestOf(sizes)
	var amounts []int64 // what largestOf sorts, reused
	for _, d := range dimensionsOf(inv.victims) {
		if d.of(inv.victims) <= 0 {
			continue // no victim gives any: floor never reads it
		}
		do := dimensionOrder{dim: d}
		amounts = amounts[:0]
		for _, s := range b.shares {
			if s.gang {
				amounts = append(amounts, d.of(s.room))
			}
		}
		do.mostGangs = largestOf(amounts)
		amounts = amounts[:0]
		for _, s := range b.shares {
			if s.lasting {
				amounts = append(amounts, d.of(s.room))
			}
		}
		do.mostLast = largestOf(amounts)
		items := make([]item, 0, len(b.shares))
		for _, s := range b.shares {
			items = append(items, item{amount: float64(d.of(s.room)), cost: float64(s.pods)})
		}
		items = mostPerCost(items)
		if len(items) > keptPerList {
			last := items[keptPerList-1]
			do.perPodTail.cost = last.cost / last.amount
			for _, it := range items[keptPerList:] {
				do.perPodTail.amount += it.amount
			}
			items = items[:keptPerList]
		}
		do.perPod = slices.Clone(items)
		inv.byDimension = append(inv.byDimension, do)
	}
	return inv
}

// floor returns a cost no dry run of the domain can beat for a tree whose pending members
// request need in all, at most its bound in every field (bounder.bound's terms by resources in
// all), and false where the domain cannot hold need even with every candidate gone (bound says
// so too).
func (inv *inventory) floor(need capacity.Resources) (Cost, bool) {
	deficit := need.Clone()
	deficit.Sub(inv.free)
	dims := shortOf(need, deficit)
	if !covers(inv.victims, deficit, dims) {
		return Cost{}, false
	}
	if len(dims) == 0 {
		return Cost{}, true
	}
	gangs := inv.fewest(deficit, dims, inv.gangs, func(d *dimensionOrder) largest { return d.mostGangs })
	pods := 0
	for _, d := range dims {
		if do := inv.along(d); do != nil {
			pods = max(pods, coverInOrder(float64(d.of(deficit)), do.perPod, do.perPodTail))
		}
	}
	return Cost{
		Priority: inv.lowestCeiling(deficit, dims),
		Gangs:    gangs,
		Lasting:  inv.fewest(deficit, dims, inv.lasting, func(d *dimensionOrder) largest { return d.mostLast }),
		Pods:     max(pods, inv.smallestGangs.atLeast(gangs)),
	}, true
}

// along returns the victims sorted by dimension d, nil where none gives any of it.
func (inv *inventory) along(d dimension) *dimensionOrder {
	for i := range inv.byDimension {
		if inv.byDimension[i].dim == d {
			return &inv.byDimension[i]
		}
	}
	return nil
}

// lowestCeiling is bounder.lowestCeiling by resources in all: the lowest priority whose
// victims at or below it make up the deficit.
func (inv *inventory) lowestCeiling(deficit capacity.Resources, dims []dimension) int32 {
	for _, l := range inv.levels {
		if covers(l.room, deficit, dims) {
			return l.priority
		}
	}
	return math.MaxInt32
}

// fewest is bounder.fewest's term by resources in all, or less: with every victim of the other
// kinds taken, the fewest of the kind (whose room in all is kind; most gives their largest
// rooms) that make up what is left of the deficit in each short resource.
func (inv *inventory) fewest(deficit capacity.Resources, dims []dimension, kind capacity.Resources, most func(*dimensionOrder) largest) int {
	out := 0
	for _, d := range dims {
		if do := inv.along(d); do != nil {
			out = max(out, most(do).fewestToMake(d.of(deficit)-(d.of(inv.victims)-d.of(kind))))
		}
	}
	return out
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
