package gangpreemption

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// TestANewShapeReadsOnlyWhatChanged: the first decision of a threshold keeps no inventory (a
// cluster whose trees have one shape sorts nothing for none); the second shape of it reads
// every rack and keeps their inventories; a decision of a shape not decided before then reads
// no pod of a rack that did not change since (it bounds the rack from the kept inventory),
// only the pods of the racks that changed and of the racks it dry runs; a decision of another
// threshold reads every rack. Each chooses what a new evaluator chooses.
func TestANewShapeReadsOnlyWhatChanged(t *testing.T) {
	var nodes []*v1.Node
	var running []*v1.Pod
	var racks []Domain
	for r := range 6 {
		rack := Domain{Name: fmt.Sprintf("rack %d", r)}
		for h := range 2 {
			name := fmt.Sprintf("r%d-n%d", r, h)
			nodes = append(nodes, lt.MakeNode(name, "4").Obj())
			rack.Nodes = append(rack.Nodes, name)
			// Rack 0's pods are the cheapest victims: its dry run is the only one.
			running = append(running, lt.GroupPod("ns", "pod-"+name, "").Req(lt.CPU("4")).Priority(int32(min(r, 1))).Node(name).Obj())
		}
		racks = append(racks, rack)
	}
	c := newCluster(nodes, running, nil)
	e := New(noPlugins{}, c.trees, nil, nil)
	for _, step := range []struct {
		what     string
		cpu      string
		priority int32
		change   *v1.Pod
		// read are the pods the decision reads: those of the racks it bounds from their
		// nodes, and of rack 0, which it dry runs; inventories the racks whose inventories
		// are kept for the threshold then.
		read, inventories int
	}{
		{what: "the first decision", cpu: "4", priority: 100, read: 12, inventories: 0},
		{what: "the same shape after a pod of rack 3 left and came back", cpu: "4", priority: 100, change: running[6], read: 4, inventories: 0},
		{what: "the second shape of its threshold", cpu: "1", priority: 100, read: 12, inventories: 6},
		{what: "a new shape of its threshold", cpu: "3", priority: 100, read: 2, inventories: 6},
		{what: "a new shape after a pod of rack 3 left and came back", cpu: "2", priority: 100, change: running[6], read: 4, inventories: 6},
		{what: "the shape of the first decision again", cpu: "4", priority: 100, read: 2, inventories: 6},
		{what: "another threshold", cpu: "4", priority: 50, read: 12, inventories: 0},
	} {
		if step.change != nil {
			c.returns(t, step.change)
		}
		tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 1, Pending: lt.Members("ns", "hi", 1, lt.CPU(step.cpu))}
		dry := &firstFit{tree: tree, domains: racks}
		p := podgroup.Preemptor{Root: tree.Key, Priority: step.priority}
		c.trees.asked = 0
		got := e.Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		if c.trees.asked != step.read {
			t.Errorf("%s read %d pods, want %d", step.what, c.trees.asked, step.read)
		}
		kept := 0
		if k := e.bounds.inventories[fmt.Sprint(step.priority)]; k != nil {
			kept = k.kept()
		}
		if kept != step.inventories {
			t.Errorf("%s: %d racks' inventories kept, want %d", step.what, kept, step.inventories)
		}
		want := New(noPlugins{}, c.trees, nil, nil).Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		if got == nil || want == nil || got.Domain.Name != "rack 0" || got.Cost != want.Cost {
			t.Errorf("%s chose %v, a new evaluator %v; want rack 0 at the same cost", step.what, got, want)
		}
	}
}

// TestFloorIsAtMostTheBound: over seeded random domains (hosts with free room, victims of
// several priorities, gangs, pods that may never end, on one to three hosts each, CPU, memory
// and GPUs; half of them with more victims than an inventory's lists keep) and trees, an inventory's floor is at most the domain's bound in every field, and
// says the domain cannot hold the tree only where the bound says so: the search may take a
// domain's floor for its bound.
func TestFloorIsAtMostTheBound(t *testing.T) {
	equal, below, infeasible := 0, 0, 0
	for seed := int64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		room := func(scale int64) capacity.Resources {
			r := capacity.Resources{MilliCPU: scale * rng.Int63n(5) * 500, Memory: scale * rng.Int63n(5) << 30, Pods: rng.Int63n(2)}
			if rng.Intn(2) == 0 {
				r.Scalar = map[v1.ResourceName]int64{"nvidia.com/gpu": rng.Int63n(3)}
			}
			return r
		}
		b := &bounder{}
		// Half the domains hold more victims than an inventory's lists keep.
		hosts, shares, members := 1+rng.Intn(6), rng.Intn(9), 1+rng.Int63n(6)
		if seed%2 == 1 {
			hosts, shares, members = 1+rng.Intn(12), rng.Intn(3*keptPerList), 1+rng.Int63n(3*keptPerList)
		}
		for range hosts {
			b.hosts = append(b.hosts, hostRoom{base: room(1)})
		}
		for s := range shares {
			sh := share{priority: []int32{0, 1, 5, 10}[rng.Intn(4)], pods: 1 + rng.Intn(8), gang: rng.Intn(2) == 0, lasting: rng.Intn(3) == 0}
			for _, h := range rng.Perm(len(b.hosts))[:1+rng.Intn(min(3, len(b.hosts)))] {
				r := room(1)
				sh.room.Add(r)
				sh.nodes = append(sh.nodes, h)
				b.hosts[h].takes = append(b.hosts[h].takes, take{share: s, room: r})
			}
			b.shares = append(b.shares, sh)
		}
		b.members = members
		b.slot = room(1)
		b.slot.Pods = 1
		for range b.members {
			b.need.Add(b.slot)
		}
		b.need.Add(room(1))
		bound, boundOK := b.bound()
		inv := inventoryOf(b, reading{})
		floor, floorOK := inv.floor(b.need)
		switch {
		case boundOK && !floorOK:
			t.Errorf("seed %d: the floor says the domain cannot hold the tree, the bound %+v says it can", seed, bound)
		case !floorOK:
			infeasible++
		case boundOK && (floor.Priority > bound.Priority || floor.Gangs > bound.Gangs || floor.Pods > bound.Pods ||
			floor.Lasting > bound.Lasting || floor.PDB > bound.PDB):
			t.Errorf("seed %d: floor %+v is above the bound %+v", seed, floor, bound)
		case boundOK && floor == bound:
			equal++
		case boundOK:
			below++
		}
	}
	t.Logf("floors: %d the bound, %d below it, %d infeasible", equal, below, infeasible)
	if equal == 0 || below == 0 || infeasible == 0 {
		t.Error("the random domains do not cover floors equal to, below and without a bound")
	}
}

// TestShortenedListsCountNoMore: an inventory's lists keep keptPerList entries; what they
// answer of the whole list (the fewest largest amounts that make up a want, the pods of the n
// smallest gangs, a fractional cover) is at most the answer read from every entry, and the
// same where the list is no longer than what is kept.
func TestShortenedListsCountNoMore(t *testing.T) {
	for seed := int64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := rng.Intn(3 * keptPerList)
		amounts, counts, items := make([]int64, n), make([]int, n), make([]item, n)
		for i := range n {
			amounts[i], counts[i] = rng.Int63n(10), 1+rng.Intn(8)
			items[i] = item{amount: float64(amounts[i]), cost: float64(counts[i])}
		}
		want := rng.Int63n(10 * int64(n+1))
		full := fewestToMake(want, slices.Clone(amounts))
		if got := largestOf(slices.Clone(amounts)).fewestToMake(want); got > full || (n <= keptPerList && got != full) {
			t.Errorf("seed %d: %d largest of %d make up %d, kept list says %d", seed, full, n, want, got)
		}
		sorted := slices.Sorted(slices.Values(counts))
		for g := range n + 2 {
			sum := 0
			for _, c := range sorted[:min(g, n)] {
				sum += c
			}
			if got := smallestOf(slices.Clone(counts)).atLeast(g); got > sum || (g <= keptPerList && got != sum) {
				t.Errorf("seed %d: the %d smallest of %d sum to %d, kept list says %d", seed, g, n, sum, got)
			}
		}
		order := mostPerCost(slices.Clone(items))
		whole := coverInOrder(float64(want), order, item{})
		kept, tail := order, item{}
		if len(order) > keptPerList {
			kept, tail.cost = order[:keptPerList], order[keptPerList-1].cost/order[keptPerList-1].amount
			for _, it := range order[keptPerList:] {
				tail.amount += it.amount
			}
		}
		if got := coverInOrder(float64(want), kept, tail); got > whole || (len(order) <= keptPerList && got != whole) {
			t.Errorf("seed %d: cover of %d costs %d, from the kept items %d", seed, want, whole, got)
		}
	}
}

// TestAStraddledDomainIsBoundedFromItsKeptRooms: where every running gang has a member in
// every rack, freeing a rack's nodes breaks more gangs than the rack's rooms in all say, so
// each rack's floor is below its bound, and the search bounds every rack before it can stop.
// The second shape of a threshold reads every rack and keeps their rooms with their
// inventories; a decision of a shape not decided before then reads no pod of a rack that did
// not change (it bounds every rack from its kept rooms), only those of the rack it dry runs
// and of a rack that changed; and each chooses what a new evaluator chooses. Rooms are kept
// for no more hosts than maxRoomHosts: the other racks are read.
func TestAStraddledDomainIsBoundedFromItsKeptRooms(t *testing.T) {
	var nodes []*v1.Node
	var running []*v1.Pod
	var racks []Domain
	gangPriority := map[string]int32{"g0": 10, "g1": 10, "g2": 10, "g3": 10}
	for r := range 3 {
		rack := Domain{Name: fmt.Sprintf("rack %d", r)}
		for h := range 4 {
			name := fmt.Sprintf("r%d-n%d", r, h)
			nodes = append(nodes, lt.MakeNode(name, "4").Obj())
			rack.Nodes = append(rack.Nodes, name)
			// Gang g<h> has its member of rack r on node h: a 3-cpu slot on a node takes
			// that gang, so three slots take three gangs, where the rack's rooms in all
			// say two gangs and the fillers.
			running = append(running,
				lt.Member("ns", fmt.Sprintf("g%d", h), r).Req(lt.CPU("3")).Priority(10).Node(name).Obj(),
				lt.GroupPod("ns", "filler-"+name, "").Req(lt.CPU("1")).Priority(0).Node(name).Obj())
		}
		racks = append(racks, rack)
	}
	c := newCluster(nodes, running, gangPriority)
	e := New(noPlugins{}, c.trees, nil, nil)
	for _, step := range []struct {
		what   string
		memory string
		change *v1.Pod
		// read are the pods the decision reads: those of the racks it bounds from their
		// nodes, and of rack 0, which it dry runs.
		read int
		// rooms are the racks whose rooms are kept for the threshold then; roomHosts, where
		// set, the hosts they may cover (a new evaluator from the first such step).
		rooms, roomHosts int
	}{
		{what: "the first decision", memory: "1Mi", read: 24, rooms: 0},
		{what: "the second shape of its threshold", memory: "2Mi", read: 24, rooms: 3},
		{what: "a new shape of its threshold", memory: "3Mi", read: 8, rooms: 3},
		// Every node of rack 2 holds a member of a gang of racks 0 and 1: all three are
		// read again.
		{what: "a new shape after a filler of rack 2 left and came back", memory: "4Mi", change: running[17], read: 24, rooms: 3},
		{what: "a new shape after that", memory: "5Mi", read: 8, rooms: 3},
		// A new evaluator that keeps rooms for 8 hosts at most: racks 0 and 1 keep theirs,
		// rack 2 is bounded from its nodes.
		{what: "the first decision, rooms for two racks", memory: "1Mi", roomHosts: 8, read: 24, rooms: 0},
		{what: "the second shape, rooms for two racks", memory: "2Mi", roomHosts: 8, read: 24, rooms: 2},
		{what: "a new shape, rooms for two racks", memory: "3Mi", roomHosts: 8, read: 16, rooms: 2},
	} {
		if step.change != nil {
			c.returns(t, step.change)
		}
		c.version(racks)
		if step.roomHosts != 0 && e.bounds.maxRoomHosts != step.roomHosts {
			e = New(noPlugins{}, c.trees, nil, nil)
			e.bounds.maxRoomHosts = step.roomHosts
		}
		req := map[v1.ResourceName]string{v1.ResourceCPU: "3", v1.ResourceMemory: step.memory}
		tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 3, Pending: lt.Members("ns", "hi", 3, req)}
		dry := &firstFit{tree: tree, domains: racks}
		p := podgroup.Preemptor{Root: tree.Key, Priority: 100}
		c.trees.asked = 0
		got := e.Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		if c.trees.asked != step.read {
			t.Errorf("%s read %d pods, want %d", step.what, c.trees.asked, step.read)
		}
		rooms := 0
		if k := e.bounds.inventories["100"]; k != nil {
			rooms, _ = roomsKept(k)
		}
		if rooms != step.rooms {
			t.Errorf("%s: %d racks' rooms kept, want %d", step.what, rooms, step.rooms)
		}
		want := New(noPlugins{}, c.trees, nil, nil).Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		if got == nil || want == nil || got.Domain.Name != want.Domain.Name || got.Cost != want.Cost || got.Cost.Gangs != 3 {
			t.Errorf("%s chose %v, a new evaluator %v; want the same, breaking three gangs", step.what, got, want)
		}
	}
}
