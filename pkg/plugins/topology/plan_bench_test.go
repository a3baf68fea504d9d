package topology

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// BenchmarkPlanRackRequired is one plan of a rack-required gang of 4 one-cpu pods in a
// cluster of racks of 100 nodes of 4 cpu, as scheduler_perf's rack shape
// (65000Nodes_2250Gangs_9000Pods_Rack): every rack is ranked by its room, from the room
// cache when the rack did not change. A plan should cost the same at 15,000 and 65,000 nodes.
// NoRoom is the failed plan of a gang whose pods (5 cpu) fit on no node: its explanation
// counts each rack's room, as a waiting rack-required gang's every attempt does in a full
// cluster (scheduler_perf's LockstepReservingGangs).
//
//	go test ./pkg/plugins/topology -run '^$' -bench PlanRackRequired -benchmem
func BenchmarkPlanRackRequired(b *testing.B) {
	for _, nodes := range []int{15000, 65000} {
		var ns []*v1.Node
		for i := range nodes {
			rack := i / 100
			ns = append(ns, lt.InTopology(lt.MakeNode(fmt.Sprintf("r%d-h%d", rack, i%100), "4"),
				fmt.Sprintf("z%d", rack/25), fmt.Sprintf("b%d", rack/5), fmt.Sprintf("r%d", rack)).Obj())
		}
		groups := []runtime.Object{
			lt.MakePodGroup().Namespace("ns").Name("gang").Gang(4).Topology(lt.Required(rackKey)).Obj(),
			lt.MakePodGroup().Namespace("ns").Name("big").Gang(8).Topology(lt.Required(rackKey)).Obj(),
		}
		pods := lt.Members("ns", "gang", 4, lt.CPU("1"))
		big := lt.Members("ns", "big", 8, lt.CPU("5"))
		env := newTestEnvOpts(b, groups, append(pods, big...), ns, podgrouptest.Options{})
		tree, _ := env.Components.Model.Gate().Tree(pods[0])
		bigTree, _ := env.Components.Model.Gate().Tree(big[0])
		if tree == nil || bigTree == nil {
			b.Fatal("no tree for the gangs")
		}
		infos := env.NodeInfos(b)
		env.plugin.planTree(env.Ctx, tree, infos, nil) // the topology's first build
		b.Run(fmt.Sprintf("%dNodes", nodes), func(b *testing.B) {
			for b.Loop() {
				if plan, _ := env.plugin.planTree(env.Ctx, tree, infos, nil); plan == nil {
					b.Fatal("no plan for a gang in an empty cluster")
				}
			}
		})
		// A node added (or gone) since the last plan: the next plan reads the cluster anew,
		// as the plan of the first gang news retries for a new node does.
		added := framework.NewNodeInfo()
		added.SetNode(lt.MakeNode("added", "4").Obj())
		grown := append(slices.Clone(infos), added)
		b.Run(fmt.Sprintf("%dNodes_NodeAdded", nodes), func(b *testing.B) {
			i := 0
			for b.Loop() {
				cur := infos
				if i++; i%2 == 1 {
					cur = grown
				}
				if plan, _ := env.plugin.planTree(env.Ctx, tree, cur, nil); plan == nil {
					b.Fatal("no plan for a gang in an empty cluster")
				}
			}
		})
		b.Run(fmt.Sprintf("%dNodes_NoRoom", nodes), func(b *testing.B) {
			for b.Loop() {
				if plan, _ := env.plugin.planTree(env.Ctx, bigTree, infos, nil); plan != nil {
					b.Fatal("a plan for pods no node can hold")
				}
			}
		})
	}
}
