package topology

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// rackedNodes returns zones × 2 racks × hosts nodes of cpu cores, named z0-r0-h0.
func rackedNodes(zones, hosts int, cpu string) []*v1.Node {
	var out []*v1.Node
	for z := range zones {
		for r := range 2 {
			for h := range hosts {
				name := fmt.Sprintf("z%d-r%d-h%d", z, r, h)
				out = append(out, lt.InTopology(lt.MakeNode(name, cpu), fmt.Sprintf("z%d", z), fmt.Sprintf("z%d-b0", z), fmt.Sprintf("z%d-r%d", z, r)).Obj())
			}
		}
	}
	return out
}

// Seeded random clusters and JobSet-like trees of exclusive gangs, with other workloads'
// pods, DaemonSet pods and a rack another exclusive gang holds: whenever the planner places
// the tree, every exclusive gang is in one rack, no two share one, none shares a rack with a
// pod of another workload (DaemonSet pods aside) or with the held rack. EXCLUSIVE_SEED=n
// replays one seed.
func TestExclusivePlacementInvariants(t *testing.T) {
	seeds := 150
	first := int64(1)
	if s, err := strconv.ParseInt(os.Getenv("EXCLUSIVE_SEED"), 10, 64); err == nil {
		seeds, first = 1, s
	}
	placed := 0
	for seed := first; seed < first+int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		nodes := rackedNodes(2+rng.Intn(3), 1+rng.Intn(3), "4")
		gangs := 1 + rng.Intn(4)
		objs, pods := jobSetLike(gangs, 1+rng.Intn(3), strconv.Itoa(1+rng.Intn(2)))
		// Another tree's exclusive gang, one member bound: its rack is held.
		heldObjs, held := func() ([]runtime.Object, []*v1.Pod) {
			g := lt.MakePodGroup().Namespace("ns").Name("held").Gang(1).Topology(lt.Exclusive(rackKey)).Obj()
			p := lt.Members("ns", "held", 1, lt.CPU("1"))[0]
			p.Spec.NodeName = nodes[rng.Intn(len(nodes))].Name
			return []runtime.Object{g}, []*v1.Pod{p}
		}()
		objs = append(objs, heldObjs...)
		running := append([]*v1.Pod{}, held...)
		for i := range rng.Intn(4) {
			p := []*v1.Pod{lt.Member("ns", "", 100+i).Req(lt.CPU("1")).Obj()}[0]
			p.Spec.NodeName = nodes[rng.Intn(len(nodes))].Name
			if rng.Intn(2) == 0 {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: ptr.To(true)}}
			}
			running = append(running, p)
		}
		env := newTestEnv(t, objs, append(append([]*v1.Pod{}, pods...), running...), nodes)
		_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
		if !s.IsSuccess() {
			continue
		}
		placed++
		plan := env.plans.Get(podgroup.CompositePodGroupKey("ns", "js"))
		rackOfGang := map[string]string{}
		for _, p := range pods {
			pp, ok := plan.Pods[p.UID]
			if !ok {
				continue
			}
			g, r := p.Labels[v1alpha1.PodGroupLabel], rackOf(pp.Node)
			if prev, ok := rackOfGang[g]; ok && prev != r {
				t.Errorf("seed %d: gang %s in racks %s and %s", seed, g, prev, r)
			}
			rackOfGang[g] = r
		}
		owner := map[string]string{}
		for g, r := range rackOfGang {
			if o, ok := owner[r]; ok {
				t.Errorf("seed %d: gangs %s and %s share rack %s", seed, o, g, r)
			}
			owner[r] = g
		}
		for _, p := range running {
			if daemon(p) {
				continue
			}
			if g, ok := owner[rackOf(p.Spec.NodeName)]; ok {
				t.Errorf("seed %d: gang %s in rack %s where pod %s runs", seed, g, rackOf(p.Spec.NodeName), p.Name)
			}
		}
	}
	if seeds > 1 && placed < seeds/4 {
		t.Errorf("only %d of %d random trees were placed: the generator no longer exercises placement", placed, seeds)
	}
}
