package gang

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// A pod leaving a node is news for a waiting gang only where it can help it, and then never
// lost. The queue's hints skip the gangs a deletion's node cannot take a member of; the
// group model retries them where it can. With a backoff of ten minutes, only news can bind a
// gang within the test: each gang below waits for a pod whose leaving helps it — by the room
// it frees on a full node, by lifting its anti-affinity from a zone's empty node, by giving up
// a rack its group held to itself — while a small pod leaving the same full node first helps
// none (the gang stays unbound, and is tried again by the larger pod leaving after it).
func TestPodLeavingIsNewsWhereItCanHelp(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "leaving")
	env.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 600})
	// prebound returns a pod of no group already bound to node (no scheduler places it).
	prebound := func(name, node, cpu string) *st.PodWrapper {
		return lt.GroupPod(ns, name, "").Req(lt.CPU(cpu)).Node(node)
	}
	gangOf2 := func(g string, label ...string) {
		env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(g).Gang(2).Obj())
		for i := range 2 {
			m := lt.Member(ns, g, i).Req(lt.CPU("2"))
			if len(label) > 0 {
				m = m.Label(label[0], "yes")
			}
			env.CreatePods(t, m.Obj())
		}
		env.WaitCondition(t, "PodGroup", ns, g, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "")
	}

	// Room: a full node; a small pod leaves it (no news), then the large one (news).
	env.CreateNodes(t, lt.InTopology(lt.MakeNode("full", "4"), "z1", "z1-b0", "z1-b0-r0").Obj())
	env.CreatePods(t, prebound("large", "full", "3").Obj(), prebound("small", "full", "10m").Obj())
	gangOf2("room")
	env.DeletePods(t, ns, "small")
	env.AssertUnbound(t, ns, names(2, "room")...)
	env.DeletePods(t, ns, "large")
	env.WaitBound(t, ns, names(2, "room")...)

	// Anti-affinity: a zone's empty node is closed to the gang by a small pod's required
	// anti-affinity on a full node of the zone; the small pod leaves.
	env.CreateNodes(t,
		lt.InTopology(lt.MakeNode("z2-full", "4"), "z2", "z2-b0", "z2-b0-r0").Obj(),
		lt.InTopology(lt.MakeNode("z2-empty", "4"), "z2", "z2-b0", "z2-b0-r1").Obj())
	env.CreatePods(t, prebound("z2-large", "z2-full", "3").Obj(),
		prebound("aloof", "z2-full", "10m").PodAntiAffinityExists("repelled", lt.ZoneKey, st.PodAntiAffinityWithRequiredReq).Obj())
	gangOf2("repelled", "repelled")
	env.DeletePods(t, ns, "aloof")
	placed := env.WaitBound(t, ns, names(2, "repelled")...)
	for _, n := range names(2, "repelled") {
		if placed[n] != "z2-empty" {
			t.Errorf("%s bound to %s, want z2-empty: %v", n, placed[n], placed)
		}
	}

	// Exclusive: a rack's empty node is closed to the gang while a group holds the rack to
	// itself; the group's one pod, on a full node of the rack, leaves.
	env.CreateNodes(t,
		lt.InTopology(lt.MakeNode("z3-full", "4"), "z3", "z3-b0", "z3-b0-r0").Obj(),
		lt.InTopology(lt.MakeNode("z3-empty", "4"), "z3", "z3-b0", "z3-b0-r0").Obj())
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("holder").Gang(1).
		Topology(v1alpha1.TopologyConstraint{Key: lt.RackKey, Mode: v1alpha1.TopologyRequired, Exclusive: true}).Obj())
	env.CreatePods(t, prebound("z3-large", "z3-full", "3").Obj(),
		lt.Member(ns, "holder", 0).Req(lt.CPU("10m")).Node("z3-full").Obj())
	env.WaitCondition(t, "PodGroup", ns, "holder", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	gangOf2("outsider")
	env.DeletePods(t, ns, "holder-0")
	placed = env.WaitBound(t, ns, names(2, "outsider")...)
	for _, n := range names(2, "outsider") {
		if placed[n] != "z3-empty" {
			t.Errorf("%s bound to %s, want z3-empty: %v", n, placed[n], placed)
		}
	}
}
