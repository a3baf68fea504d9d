package gangpreemption

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// TestLowerBound: one rack of two 4-cpu nodes, bounded for trees of various sizes.
func TestLowerBound(t *testing.T) {
	nodes := []*v1.Node{lt.MakeNode("a0", "4").Obj(), lt.MakeNode("a1", "4").Obj()}
	rack := Domain{Name: "rack a", Nodes: []string{"a0", "a1"}}
	tests := []struct {
		name    string
		running []*v1.Pod
		members int // of 2 cpu each
		want    Cost
		wantOK  bool
	}{
		{
			name:    "room enough without victims",
			running: []*v1.Pod{lt.GroupPod("ns", "p", "").Req(lt.CPU("2")).Priority(1).Node("a0").Obj()},
			members: 3, wantOK: true,
		},
		{
			name: "cannot hold the tree with every victim gone",
			running: []*v1.Pod{
				lt.GroupPod("ns", "low", "").Req(lt.CPU("2")).Priority(1).Node("a0").Obj(),
				lt.GroupPod("ns", "high", "").Req(lt.CPU("4")).Priority(5000).Node("a1").Obj(),
			},
			members: 3,
		},
		{
			name: "the lowest priority whose pods and below make up the deficit",
			running: []*v1.Pod{
				lt.GroupPod("ns", "p1", "").Req(lt.CPU("1")).Priority(1).Node("a0").Obj(),
				lt.GroupPod("ns", "p5", "").Req(lt.CPU("3")).Priority(5).Node("a0").Obj(),
				lt.GroupPod("ns", "p7", "").Req(lt.CPU("4")).Priority(7).Node("a1").Obj(),
			},
			members: 2, wantOK: true, want: Cost{Priority: 5, Pods: 1},
		},
		{
			name: "a gang counts its pods outside the domain, and only its room inside",
			running: []*v1.Pod{
				lt.Member("ns", "g", 0).Req(lt.CPU("4")).Priority(1).Node("a0").Obj(),
				lt.Member("ns", "g", 1).Req(lt.CPU("4")).Priority(1).Node("b0").Obj(),
				lt.GroupPod("ns", "p", "").Req(lt.CPU("2")).Priority(1).Node("a1").Obj(),
			},
			members: 3, wantOK: true, want: Cost{Priority: 1, Gangs: 1, Pods: 2},
		},
		{
			name: "fewest gangs: the largest first",
			running: []*v1.Pod{
				lt.Member("ns", "big", 0).Req(lt.CPU("4")).Priority(1).Node("a0").Obj(),
				lt.Member("ns", "small", 0).Req(lt.CPU("2")).Priority(1).Node("a1").Obj(),
				lt.Member("ns", "tiny", 0).Req(lt.CPU("1")).Priority(1).Node("a1").Obj(),
			},
			members: 2, wantOK: true, want: Cost{Priority: 1, Gangs: 1, Pods: 1},
		},
		{
			name: "node by node: pods beside the gangs give room in all but no slot for a member",
			running: []*v1.Pod{
				lt.Member("ns", "g", 0).Req(lt.CPU("3")).Priority(1).Node("a0").Obj(),
				lt.GroupPod("ns", "f0", "").Req(lt.CPU("1")).Priority(0).Node("a0").Obj(),
				lt.Member("ns", "big", 0).Req(lt.CPU("3")).Priority(1).Node("a1").Obj(),
				lt.GroupPod("ns", "f1", "").Req(lt.CPU("1")).Priority(0).Node("a1").Obj(),
			},
			members: 1, wantOK: true, want: Cost{Priority: 1, Gangs: 1, Pods: 1},
		},
		{
			name: "a gang broken evicts all its pods: at least the smallest gangs' pods",
			running: []*v1.Pod{
				lt.Member("ns", "g", 0).Req(lt.CPU("3")).Priority(1).Node("a0").Obj(),
				lt.Member("ns", "g", 1).Priority(1).Node("b0").Obj(),
				lt.Member("ns", "g", 2).Priority(1).Node("b0").Obj(),
				lt.Member("ns", "g", 3).Priority(1).Node("b0").Obj(),
				lt.GroupPod("ns", "f0", "").Req(lt.CPU("1")).Priority(0).Node("a0").Obj(),
				lt.Member("ns", "big", 0).Req(lt.CPU("3")).Priority(1).Node("a1").Obj(),
				lt.Member("ns", "big", 1).Priority(1).Node("b0").Obj(),
				lt.Member("ns", "big", 2).Priority(1).Node("b0").Obj(),
				lt.Member("ns", "big", 3).Priority(1).Node("b0").Obj(),
				lt.Member("ns", "big", 4).Priority(1).Node("b0").Obj(),
				lt.GroupPod("ns", "f1", "").Req(lt.CPU("1")).Priority(0).Node("a1").Obj(),
			},
			members: 1, wantOK: true, want: Cost{Priority: 1, Gangs: 1, Pods: 4},
		},
		{
			name: "node by node: no node can give a slot",
			running: []*v1.Pod{
				lt.GroupPod("ns", "low0", "").Req(lt.CPU("1")).Priority(1).Node("a0").Obj(),
				lt.GroupPod("ns", "high0", "").Req(lt.CPU("3")).Priority(5000).Node("a0").Obj(),
				lt.GroupPod("ns", "low1", "").Req(lt.CPU("1")).Priority(1).Node("a1").Obj(),
				lt.GroupPod("ns", "high1", "").Req(lt.CPU("3")).Priority(5000).Node("a1").Obj(),
			},
			members: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			infos := nodeInfos(append(nodes, lt.MakeNode("b0", "4").Obj()), tc.running)
			trees := &fakeTrees{pods: tc.running, gangPriority: map[string]int32{"g": 1, "big": 1, "small": 1, "tiny": 1}}
			tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: tc.members, Pending: lt.Members("ns", "hi", tc.members, lt.CPU("2"))}
			e := New(noPlugins{}, trees, nil, nil)
			run := e.newDecision(&firstFit{tree: tree, domains: []Domain{rack}}, tree, podgroup.Preemptor{Root: tree.Key, Priority: 1000}, infos, Preempt, newScratch(len(infos)))
			if run == nil {
				t.Fatal("no decision")
			}
			got, ok := run.lowerBound(rack)
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("lowerBound = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestBoundsHoldAndPruningChoosesAsEveryDomain, over seeded random clusters of racks holding
// gangs and pods of several priorities (some of lasting controllers): no domain's bound is
// above what its dry run finds, in any field; a domain the bound rules out has no dry run
// that succeeds; and Cheapest, which stops at the bound, finds a domain as cheap as the
// cheapest of dry runs in every domain, preempting and reserving.
func TestBoundsHoldAndPruningChoosesAsEveryDomain(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var nodes []*v1.Node
		var domains []Domain
		free := map[string]int64{}
		for r := range 3 + rng.Intn(3) {
			d := Domain{Name: fmt.Sprintf("rack %d", r)}
			for h := range 2 + rng.Intn(3) {
				name := fmt.Sprintf("r%d-n%d", r, h)
				cpu := int64(4 + rng.Intn(5))
				nodes = append(nodes, lt.MakeNode(name, fmt.Sprint(cpu)).Obj())
				free[name] = cpu
				d.Nodes = append(d.Nodes, name)
			}
			domains = append(domains, d)
		}
		// place puts a pod of cpu on a random node with room, "" if none was found.
		place := func(cpu int64) string {
			for range 10 {
				n := nodes[rng.Intn(len(nodes))].Name
				if free[n] >= cpu {
					free[n] -= cpu
					return n
				}
			}
			return ""
		}
		prios := []int32{0, 1, 5, 10, 2000}
		var running []*v1.Pod
		gangPriority := map[string]int32{}
		for g := range rng.Intn(6) {
			name := fmt.Sprintf("g%d", g)
			gangPriority[name] = prios[1+rng.Intn(3)]
			for m := range 1 + rng.Intn(4) {
				cpu := int64(1 + rng.Intn(3))
				if n := place(cpu); n != "" {
					running = append(running, lt.Member("ns", name, m).Req(lt.CPU(fmt.Sprint(cpu))).Priority(gangPriority[name]).Node(n).Obj())
				}
			}
		}
		for i := range rng.Intn(12) {
			cpu := int64(1 + rng.Intn(3))
			n := place(cpu)
			if n == "" {
				continue
			}
			p := lt.GroupPod("ns", fmt.Sprintf("p%d", i), "").Req(lt.CPU(fmt.Sprint(cpu))).Priority(prios[rng.Intn(len(prios))]).Node(n)
			if rng.Intn(3) == 0 {
				p = lt.ControlledBy(p, "apps/v1", "ReplicaSet", "rs", "rs-uid")
			}
			running = append(running, p.Obj())
		}
		infos := nodeInfos(nodes, running)
		tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true}
		for m := range 1 + rng.Intn(6) {
			tree.Pending = append(tree.Pending, lt.Member("ns", "hi", m).Req(lt.CPU(fmt.Sprint(1+rng.Intn(3)))).Obj())
		}
		tree.Min = len(tree.Pending)
		dry := &firstFit{tree: tree, domains: domains}
		e := New(noPlugins{}, &fakeTrees{pods: running, gangPriority: gangPriority}, nil, nil)
		for _, mode := range []Mode{Preempt, Reserve} {
			p := podgroup.Preemptor{Root: tree.Key, Priority: 100}
			if mode == Reserve {
				p.Priority = 5
			}
			what := fmt.Sprintf("seed %d, mode %d", seed, mode)
			run := e.newDecision(dry, tree, p, infos, mode, newScratch(len(infos)))
			if run == nil {
				if c := e.Cheapest(context.Background(), dry, tree, p, infos, mode); c != nil {
					t.Errorf("%s: nothing may be taken, yet Cheapest chose %s", what, c.Domain.Name)
				}
				continue
			}
			var cheapest *Choice
			for _, d := range domains {
				floor, ok := run.lowerBound(d)
				c := e.free(context.Background(), run, d)
				if c == nil {
					continue
				}
				if !ok {
					t.Errorf("%s, %s: bound rules it out, yet its dry run frees it at %+v", what, d.Name, c.Cost)
					continue
				}
				if floor.Priority > c.Cost.Priority || floor.Gangs > c.Cost.Gangs || floor.Pods > c.Cost.Pods ||
					floor.Lasting > c.Cost.Lasting || floor.PDB > c.Cost.PDB {
					t.Errorf("%s, %s: bound %+v above the dry run's cost %+v", what, d.Name, floor, c.Cost)
				}
				if cheapest == nil || mode.better(c.Cost, cheapest.Cost) {
					cheapest = c
				}
			}
			got := e.Cheapest(context.Background(), dry, tree, p, infos, mode)
			switch {
			case (got == nil) != (cheapest == nil):
				t.Errorf("%s: Cheapest chose %v, every domain's dry runs %v", what, got, cheapest)
			case got != nil && (mode.better(got.Cost, cheapest.Cost) || mode.better(cheapest.Cost, got.Cost)):
				t.Errorf("%s: Cheapest chose %s at %+v, the cheapest of every domain is %s at %+v", what, got.Domain.Name, got.Cost, cheapest.Domain.Name, cheapest.Cost)
			}
		}
	}
}

// TestCheapestRunsOnWhileABoundMayBeatIt: rack a has room for a 3-cpu and a 1-cpu member by
// resources (2 cpu free on each of its nodes, a slot of 1 cpu for each member), so its bound
// is zero and it runs first, but the 3-cpu member fits there only if a pod of priority 1 goes; rack b's bound (a pod of priority 0) is
// below that, so it runs too and is chosen. Rack c, full of pods above the tree's priority,
// is never run.
func TestCheapestRunsOnWhileABoundMayBeatIt(t *testing.T) {
	nodes := []*v1.Node{lt.MakeNode("a0", "4").Obj(), lt.MakeNode("a1", "4").Obj(), lt.MakeNode("b0", "4").Obj(), lt.MakeNode("c0", "4").Obj()}
	running := []*v1.Pod{
		lt.GroupPod("ns", "a0-pod", "").Req(lt.CPU("2")).Priority(1).Node("a0").Obj(),
		lt.GroupPod("ns", "a1-pod", "").Req(lt.CPU("2")).Priority(1).Node("a1").Obj(),
		lt.GroupPod("ns", "b0-pod", "").Req(lt.CPU("4")).Priority(0).Node("b0").Obj(),
		lt.GroupPod("ns", "c0-pod", "").Req(lt.CPU("4")).Priority(500).Node("c0").Obj(),
	}
	infos := nodeInfos(nodes, running)
	tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 2, Pending: []*v1.Pod{
		lt.Member("ns", "hi", 0).Req(lt.CPU("3")).Obj(), lt.Member("ns", "hi", 1).Req(lt.CPU("1")).Obj()}}
	racks := []Domain{{Name: "rack c", Nodes: []string{"c0"}}, {Name: "rack a", Nodes: []string{"a0", "a1"}}, {Name: "rack b", Nodes: []string{"b0"}}}
	dry := &firstFit{tree: tree, domains: racks}
	e := New(noPlugins{}, &fakeTrees{pods: running}, nil, nil)
	p := podgroup.Preemptor{Root: tree.Key, Priority: 100}

	run := e.newDecision(dry, tree, p, infos, Preempt, newScratch(len(infos)))
	for _, tc := range []struct {
		rack  Domain
		floor Cost
		ok    bool
	}{{racks[0], Cost{}, false}, {racks[1], Cost{}, true}, {racks[2], Cost{Priority: 0, Pods: 1}, true}} {
		if floor, ok := run.lowerBound(tc.rack); floor != tc.floor || ok != tc.ok {
			t.Errorf("%s: bound %+v, %v; want %+v, %v", tc.rack.Name, floor, ok, tc.floor, tc.ok)
		}
	}
	c := e.Cheapest(context.Background(), dry, tree, p, infos, Preempt)
	if c == nil || c.Domain.Name != "rack b" || PodNames(c.Pods()) != "ns/b0-pod" {
		t.Fatalf("chose %v, want rack b evicting ns/b0-pod", c)
	}
}

// TestDryRunTakesTheFewestGangs: a rack of four 4-cpu nodes, each with a 3-cpu member of a
// running gang beside a 1-cpu pod; gang a has two members in the rack, b and c one each. Two
// 3-cpu members need two nodes freed. With every unit gone, the plan takes the rack's first
// nodes, b's and c's (two gangs broken); planned again without only a (leanest), the tree
// fits breaking one gang, and that is the choice.
func TestDryRunTakesTheFewestGangs(t *testing.T) {
	var nodes []*v1.Node
	for _, n := range []string{"n0", "n1", "n2", "n3"} {
		nodes = append(nodes, lt.MakeNode(n, "4").Obj())
	}
	running := []*v1.Pod{
		lt.Member("ns", "a", 0).Req(lt.CPU("3")).Priority(1).Node("n0").Obj(),
		lt.Member("ns", "a", 1).Req(lt.CPU("3")).Priority(1).Node("n1").Obj(),
		lt.Member("ns", "b", 0).Req(lt.CPU("3")).Priority(1).Node("n2").Obj(),
		lt.Member("ns", "c", 0).Req(lt.CPU("3")).Priority(1).Node("n3").Obj(),
	}
	for _, n := range nodes {
		running = append(running, lt.GroupPod("ns", "filler-"+n.Name, "").Req(lt.CPU("1")).Priority(0).Node(n.Name).Obj())
	}
	infos := nodeInfos(nodes, running)
	trees := &fakeTrees{pods: running, gangPriority: map[string]int32{"a": 1, "b": 1, "c": 1}}
	tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 2, Pending: lt.Members("ns", "hi", 2, lt.CPU("3"))}
	rack := Domain{Name: "rack", Nodes: []string{"n2", "n3", "n0", "n1"}}
	e := New(noPlugins{}, trees, nil, nil)
	c := e.Cheapest(context.Background(), &firstFit{tree: tree, domains: []Domain{rack}}, tree, podgroup.Preemptor{Root: tree.Key, Priority: 100}, infos, Preempt)
	if c == nil {
		t.Fatal("no choice")
	}
	if got, want := PodNames(c.Pods()), "ns/a-0, ns/a-1"; got != want || c.Cost != (Cost{Priority: 1, Gangs: 1, Pods: 2}) {
		t.Errorf("evicting %s at %+v, want %s at one gang, two pods", got, c.Cost, want)
	}
}
