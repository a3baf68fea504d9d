package gangpreemption

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// BenchmarkCheapest is one decision of a rack-required gang of 16 three-cpu members, in a
// cluster of 4-cpu nodes in racks of 20, each node holding a 3-cpu member of a running gang of
// 8 (one gang after the other, node by node) and a 1-cpu pod: the scheduler_perf shape
// *GangPreemptionRack, with a first-fit planner. Preempting, every gang is of lower priority;
// reserving, of the tree's own. The evaluator's cost per decision by nodes: what the bound
// spares (a dry run per rack) and what it does not (reading every node's pods once).
//
//	go test ./pkg/gangpreemption -run '^$' -bench Cheapest -benchmem
func BenchmarkCheapest(b *testing.B) {
	for _, nodes := range []int{5000, 15000} {
		var ns []*v1.Node
		var running []*v1.Pod
		var racks []Domain
		gangPriority := map[string]int32{}
		for i := range nodes {
			name := fmt.Sprintf("n%d", i)
			ns = append(ns, lt.MakeNode(name, "4").Obj())
			if i%20 == 0 {
				racks = append(racks, Domain{Name: fmt.Sprintf("rack %d", i/20)})
			}
			racks[len(racks)-1].Nodes = append(racks[len(racks)-1].Nodes, name)
			gang := fmt.Sprintf("g%d", i/8)
			gangPriority[gang] = 10
			running = append(running,
				lt.Member("ns", gang, i%8).Req(lt.CPU("3")).Priority(10).Node(name).Obj(),
				lt.GroupPod("ns", "filler-"+name, "").Req(lt.CPU("1")).Priority(0).Node(name).Obj())
		}
		infos := nodeInfos(ns, running)
		tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 16, Pending: lt.Members("ns", "hi", 16, lt.CPU("3"))}
		dry := &firstFit{tree: tree, domains: racks}
		e := New(noPlugins{}, &fakeTrees{pods: running, gangPriority: gangPriority}, nil, nil)
		for _, tc := range []struct {
			name     string
			mode     Mode
			priority int32
		}{{"preempting", Preempt, 100}, {"reserving", Reserve, 10}} {
			b.Run(fmt.Sprintf("%dNodes/%s", nodes, tc.name), func(b *testing.B) {
				p := podgroup.Preemptor{Root: tree.Key, Priority: tc.priority}
				for b.Loop() {
					if e.Cheapest(context.Background(), dry, tree, p, infos, tc.mode) == nil {
						b.Fatal("no choice")
					}
				}
			})
		}
	}
}
