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
// spares (a dry run per rack), what reading every node's pods costs the first decision of an
// evaluator (first), what a decision of a shape not decided lately costs in one that decided
// others of the tree's priority (shape: a cluster whose gangs differ in size), and what the
// next decision of a shape costs, with the other racks' bounds kept (bounds.go). Racks carry
// versions, as the topology plugin's do. Scattered: each running gang has one member in each
// of 8 racks (as per-pod scoring spreads them), so freeing 16 nodes of a rack breaks 16 gangs,
// where a rack's resources in all say fewer: a new shape's floors are below every rack's bound,
// and each rack is bounded in full before the search can stop (inventories.go).
//
//	go test ./pkg/gangpreemption -run '^$' -bench Cheapest -benchmem
func BenchmarkCheapest(b *testing.B) {
	for _, cluster := range []struct {
		nodes     int
		scattered bool
	}{{5000, false}, {15000, false}, {15000, true}} {
		nodes, layout := cluster.nodes, ""
		if cluster.scattered {
			layout = "Scattered"
		}
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
			gang, member := fmt.Sprintf("g%d", i/8), i%8
			if cluster.scattered {
				// Node p of rack r holds member r%8 of gang p of the racks' block of 8.
				rack, p := i/20, i%20
				gang, member = fmt.Sprintf("g%d", rack/8*20+p), rack%8
			}
			gangPriority[gang] = 10
			running = append(running,
				lt.Member("ns", gang, member).Req(lt.CPU("3")).Priority(10).Node(name).Obj(),
				lt.GroupPod("ns", "filler-"+name, "").Req(lt.CPU("1")).Priority(0).Node(name).Obj())
		}
		infos := nodeInfos(ns, running)
		tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 16, Pending: lt.Members("ns", "hi", 16, lt.CPU("3"))}
		dry := &firstFit{tree: tree, domains: racks}
		// shapes are trees of the same members asking 1 to 20 MiB more each: more shapes
		// than the evaluator keeps bounds for (maxShapes), so each is decided anew.
		var shapes []*firstFit
		for mi := 1; mi <= maxShapes+4; mi++ {
			req := map[v1.ResourceName]string{v1.ResourceCPU: "3", v1.ResourceMemory: fmt.Sprintf("%dMi", mi)}
			shape := &podgroup.GroupView{Key: tree.Key, Gang: true, Min: 16, Pending: lt.Members("ns", "hi", 16, req)}
			shapes = append(shapes, &firstFit{tree: shape, domains: racks})
		}
		for _, tc := range []struct {
			name     string
			mode     Mode
			priority int32
		}{{"preempting", Preempt, 100}, {"reserving", Reserve, 10}} {
			// first: the first decision of an evaluator, every rack bounded; shape: a
			// decision of a shape not decided lately; next: the decision after one of the
			// same shape, one node changed since (bounds.go keeps the other racks' bounds).
			for _, kind := range []string{"first", "shape", "next"} {
				b.Run(fmt.Sprintf("%dNodes%s/%s/%s", nodes, layout, tc.name, kind), func(b *testing.B) {
					p := podgroup.Preemptor{Root: tree.Key, Priority: tc.priority}
					e := New(noPlugins{}, &fakeTrees{pods: running, gangPriority: gangPriority}, nil, nil)
					changed, version, decided := 0, uint64(len(racks)), 0
					for b.Loop() {
						dry := dry
						switch kind {
						case "next":
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
						case "shape":
							dry = shapes[decided%len(shapes)]
							decided++
						default:
							e = New(noPlugins{}, &fakeTrees{pods: running, gangPriority: gangPriority}, nil, nil)
						}
						if e.Cheapest(context.Background(), dry, dry.tree, p, infos, tc.mode) == nil {
							b.Fatal("no choice")
						}
					}
				})
			}
		}
	}
}
