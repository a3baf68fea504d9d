package gangpreemption

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// BenchmarkCheapest is one decision of a rack-required gang of 16 three-cpu members, in a
// cluster of 4-cpu nodes in racks of 20, each node holding a 3-cpu member of a running gang of
// 8 (one gang after the other, node by node) and a 1-cpu pod: the scheduler_perf shape
// *GangPreemptionRack, with a first-fit planner. Preempting, every gang is of lower priority;
// reserving, of the tree's own. The evaluator's cost per decision by nodes: what the bound
// spares (a dry run per rack), what reading every node's pods costs the first decision of a
// shape, and what the next costs, with the other racks' bounds kept (bounds.go). Racks carry
// versions, as the topology plugin's do.
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
				racks = append(racks, Domain{Name: fmt.Sprintf("rack %d", i/20), Version: uint64(i/20 + 1)})
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
		for _, tc := range []struct {
			name     string
			mode     Mode
			priority int32
		}{{"preempting", Preempt, 100}, {"reserving", Reserve, 10}} {
			// first: the first decision of a shape, every rack bounded; next: the decision
			// after one, one node changed since (bounds.go keeps the other racks' bounds).
			for _, next := range []bool{false, true} {
				name := fmt.Sprintf("%dNodes/%s/first", nodes, tc.name)
				if next {
					name = fmt.Sprintf("%dNodes/%s/next", nodes, tc.name)
				}
				b.Run(name, func(b *testing.B) {
					p := podgroup.Preemptor{Root: tree.Key, Priority: tc.priority}
					e := New(noPlugins{}, &fakeTrees{pods: running, gangPriority: gangPriority}, nil, nil)
					changed, version := 0, uint64(len(racks))
					for b.Loop() {
						if next {
							// A pod leaves a node and comes back: the node's NodeInfo has a
							// new generation, its rack a new version (as the topology
							// plugin's racks have).
							ni, pod := infos[changed%len(infos)], running[2*(changed%len(infos))+1]
							version++
							racks[(changed%len(infos))/20].Version = version
							if err := ni.RemovePod(klog.Background(), pod); err != nil {
								b.Fatal(err)
							}
							pi, _ := framework.NewPodInfo(pod)
							ni.AddPodInfo(pi)
							changed += 97
						} else {
							e = New(noPlugins{}, &fakeTrees{pods: running, gangPriority: gangPriority}, nil, nil)
						}
						if e.Cheapest(context.Background(), dry, tree, p, infos, tc.mode) == nil {
							b.Fatal("no choice")
						}
					}
				})
			}
		}
	}
}
