package topology

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// BenchmarkReservationRecheck is what a reservation costs per attempt in a full cluster of
// nodes nodes (racks of 20 nodes of 4 cpu, each node running a 4-cpu pod of the gangs'
// priority): recheck, the starving gang's next failed attempt (its reservation checked
// against the snapshot and described, reservations.go); beside, a plan of another gang of the
// same priority, which must do without what the reservation holds (heldFrom). Neither
// should grow with the cluster: they read the reserved rack, not every node.
//
//	go test ./pkg/plugins/topology -run '^$' -bench ReservationRecheck -benchmem
func BenchmarkReservationRecheck(b *testing.B) {
	for _, nodes := range []int{5000, 15000} {
		var ns []*v1.Node
		var pods []*v1.Pod
		for i := range nodes {
			rack := i / 20
			name := fmt.Sprintf("r%d-h%d", rack, i%20)
			ns = append(ns, lt.InTopology(lt.MakeNode(name, "4"), "z0", "z0-b0", fmt.Sprintf("r%d", rack)).Obj())
			pods = append(pods, running("p-"+name, name, "4", 0, ""))
		}
		var groups []runtime.Object
		for _, g := range []string{"starving", "other"} {
			groups = append(groups, lt.MakePodGroup().Namespace("ns").Name(g).Gang(16).Topology(lt.Required(rackKey)).Obj())
			pods = append(pods, lt.Members("ns", g, 16, lt.CPU("4"))...)
		}
		env := newTestEnvOpts(b, groups, pods, ns, podgrouptest.Options{})
		gate := env.Components.Model.Gate()
		starvingTree, _ := gate.Tree(pods[nodes])
		otherTree, _ := gate.Tree(pods[nodes+16])
		if starvingTree == nil || otherTree == nil {
			b.Fatal("no trees for the gangs")
		}
		infos := env.NodeInfos(b)
		p := starving("starving", time.Now().Add(-time.Hour))
		if msg := env.plugin.reserve(env.Ctx, starvingTree, p, infos); msg == "" {
			b.Fatal("nothing reserved for the starving gang")
		}
		b.Run(fmt.Sprintf("%dNodes/recheck", nodes), func(b *testing.B) {
			for b.Loop() {
				if msg := env.plugin.reserve(env.Ctx, starvingTree, p, infos); msg == "" {
					b.Fatal("the reservation is gone")
				}
			}
		})
		b.Run(fmt.Sprintf("%dNodes/beside", nodes), func(b *testing.B) {
			for b.Loop() {
				if plan, _ := env.plugin.planTree(env.Ctx, otherTree, infos, nil); plan != nil {
					b.Fatal("a gang planned in a full cluster")
				}
			}
		})
		if env.plans.reservations.Get(podgroup.PodGroupKey("ns", "starving")) == nil {
			b.Fatal("the reservation did not last the benchmark")
		}
	}
}
