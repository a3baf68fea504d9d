package topology

import (
	"fmt"
	"math/rand"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// randomRunning fills the 8 nodes of labeledNodes("4") with pods of 1 or 2 cpu and random
// priorities (10, 100, 1000 — the preemptor's — or 5000); some pods form running gangs,
// whose members share a priority and may sit in different racks.
func randomRunning(r *rand.Rand) ([]*v1.Pod, []runtime.Object, map[string][]string) {
	priorities := []int32{10, 10, 100, 1000, 5000}
	gangPriority := map[string]int32{"g0": 10, "g1": 100, "g2": []int32{10, 5000}[r.Intn(2)]}
	var pods []*v1.Pod
	gangs := map[string][]string{}
	for _, n := range labeledNodes("4") {
		used := 0
		for i := 0; used < 4 && r.Float64() < 0.85; i++ {
			size := 1 + r.Intn(2)
			if used+size > 4 {
				break
			}
			used += size
			name := fmt.Sprintf("%s-p%d", n.Name, i)
			prio, gang := priorities[r.Intn(len(priorities))], ""
			if r.Float64() < 0.4 {
				gang = fmt.Sprintf("g%d", r.Intn(3))
				prio = gangPriority[gang]
				gangs[gang] = append(gangs[gang], name)
			}
			pods = append(pods, running(name, n.Name, fmt.Sprint(size), prio, gang))
		}
	}
	var groups []runtime.Object
	for g, members := range gangs {
		groups = append(groups, lt.MakePodGroup().Namespace("ns").Name(g).Gang(int32(len(members))).Obj())
	}
	return pods, groups, gangs
}

// Seeded random clusters: whatever victims are chosen, they are of lower priority, gangs go
// whole, the tree fits once they are gone, every victim was needed by the plan (giving any one
// back would overflow a planned node), and no preemption is refused while some rack could be
// freed.
func TestPreemptionInvariants(t *testing.T) {
	const preemptor = 1000
	for seed := int64(1); seed <= 60; seed++ {
		r := rand.New(rand.NewSource(seed))
		pods, groups, gangs := randomRunning(r)
		members, cpu := 1+r.Intn(4), []int64{1, 2, 4}[r.Intn(3)]
		t.Run(fmt.Sprintf("seed%d_%dx%dcpu", seed, members, cpu), func(t *testing.T) {
			c, why := choose(t, members, fmt.Sprint(cpu), groups, pods)
			byName := map[string]*v1.Pod{}
			free := map[string]int64{}
			for _, n := range labeledNodes("4") {
				free[n.Name] = 4
			}
			for _, p := range pods {
				byName[p.Name] = p
				free[p.Spec.NodeName] -= cpuOf(p)
			}
			if c == nil {
				// Refused: no rack may fit the gang even with every lower-priority pod gone.
				for _, rack := range []string{"z0-r0", "z0-r1", "z1-r0", "z1-r1"} {
					slots := int64(0)
					for _, h := range []string{"-h0", "-h1"} {
						room := int64(4)
						for _, p := range pods {
							if p.Spec.NodeName == rack+h && corev1helpers.PodPriority(p) >= preemptor {
								room -= cpuOf(p)
							}
						}
						slots += room / cpu
					}
					if slots >= int64(members) {
						t.Fatalf("no preemption (%s), but rack %s holds %d members once its lower-priority pods are gone", why, rack, slots)
					}
				}
				return
			}
			victims := map[string]bool{}
			for _, p := range c.Pods() {
				victims[p.Name] = true
				if corev1helpers.PodPriority(p) >= preemptor {
					t.Errorf("victim %s has priority %d, not below the preemptor's", p.Name, corev1helpers.PodPriority(p))
				}
				free[p.Spec.NodeName] += cpuOf(p)
			}
			for g, names := range gangs {
				n := 0
				for _, name := range names {
					if victims[name] {
						n++
					}
				}
				if n != 0 && n != len(names) {
					t.Errorf("gang %s: %d of its %d pods evicted, want all or none", g, n, len(names))
				}
			}
			planned := map[string]int64{}
			for _, pp := range planOf(c).Pods {
				planned[pp.Node] += cpu
			}
			if len(planOf(c).Pods) != members {
				t.Errorf("plan places %d of %d members", len(planOf(c).Pods), members)
			}
			for node, need := range planned {
				if need > free[node] {
					t.Errorf("node %s: %d cpu planned, %d free once the victims are gone", node, need, free[node])
				}
				if rackOf(node) != c.Domain.Name[len("rack "):] {
					t.Errorf("member planned on %s, outside %s", node, c.Domain.Name)
				}
			}
			for _, u := range c.Victims {
				needed := false
				back := map[string]int64{}
				for _, pi := range u.Pods() {
					back[pi.GetPod().Spec.NodeName] += cpuOf(pi.GetPod())
				}
				for node, k := range back {
					if need, ok := planned[node]; ok && need > free[node]-k {
						needed = true
					}
				}
				if !needed {
					t.Errorf("victim %s was not needed: giving it back (%v) overflows no planned node (planned %v, free %v)", u.Key, back, planned, free)
				}
			}
		})
	}
}

// cpuOf is a pod's cpu request in cores.
func cpuOf(p *v1.Pod) int64 { return capacity.PodRequests(p).MilliCPU / 1000 }
