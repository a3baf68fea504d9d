package preemption

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

var nodes = []string{"z0-b0-r0-h0", "z0-b0-r0-h1", "z0-b0-r1-h0", "z0-b0-r1-h1"}

// Issue #18 item 2: low-priority pods whose required anti-affinity repels the gang's pods
// sit on every node, each node with the cpu to spare. The high-priority gang preempts the
// blockers of one rack, and no other pod, and binds there.
func TestPreemptionFreesRoomHeldByAntiAffinity(t *testing.T) {
	testenv.ForEachAPI(t, testPreemptionFreesRoomHeldByAntiAffinity)
}

func testPreemptionFreesRoomHeldByAntiAffinity(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "anti-affinity")
	for _, n := range nodes {
		blocker := lt.GroupPod(ns, "block-"+n, "").Req(lt.CPU("1")).Node(n).Label("app", "blocker").
			PodAntiAffinityExists("app", lt.HostKey, st.PodAntiAffinityWithRequiredReq)
		env.CreatePods(t, lt.InPriorityClass(blocker, low).Obj())
	}
	members := labelledGang(t, env, ns, "train", 2, "3", high)
	placed := env.WaitBound(t, ns, members...)
	rack := testenv.Domain(placed[members[0]], lt.RackKey)
	removed := kubelets.Removed()
	if len(removed) != 2 {
		t.Errorf("evicted %v, want the 2 blockers of one rack", podNames(removed))
	}
	for _, p := range removed {
		if testenv.Domain(p.Spec.NodeName, lt.RackKey) != rack {
			t.Errorf("evicted %s outside the gang's rack %s", p.Name, rack)
		}
	}
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
}

// The same for topology spread: the gang spreads over hosts counting app=train pods, every
// node but one runs a low-priority app=train pod, and the last is full with a high-priority
// pod: the skew refuses every node until the two counted pods of a rack are evicted.
func TestPreemptionFreesRoomHeldBySpread(t *testing.T) {
	testenv.ForEachAPI(t, testPreemptionFreesRoomHeldBySpread)
}

func testPreemptionFreesRoomHeldBySpread(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "spread")
	for _, n := range nodes[:3] {
		env.CreatePods(t, lt.InPriorityClass(lt.GroupPod(ns, "low-"+n, "").Req(lt.CPU("1")).Node(n).Label("app", "train"), low).Obj())
	}
	env.CreatePods(t, lt.InPriorityClass(lt.GroupPod(ns, "full", "").Req(lt.CPU("4")).Node(nodes[3]), high).Obj())
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(2).Topology(lt.Required(lt.RackKey)).PriorityClass(high).Obj())
	var members []string
	for i := 0; i < 2; i++ {
		p := lt.Member(ns, "train", i).Req(lt.CPU("1")).Label("app", "train").
			SpreadConstraint(1, lt.HostKey, v1.DoNotSchedule, st.MakeLabelSelector().Exists("app").Obj(), nil, nil, nil, nil)
		env.CreatePods(t, lt.InPriorityClass(p, high).Obj())
		members = append(members, fmt.Sprintf("train-%d", i))
	}
	placed := env.WaitBound(t, ns, members...)
	rack := testenv.Domain(placed[members[0]], lt.RackKey)
	if rack != "z0-b0-r0" {
		t.Errorf("gang in rack %s, want z0-b0-r0, the only one whose nodes can hold it", rack)
	}
	if removed := kubelets.Removed(); len(removed) != 2 {
		t.Errorf("evicted %v, want the 2 counted pods of rack z0-b0-r0", podNames(removed))
	}
}

// labelledGang creates a rack-required gang of n pods of cpu of class, labelled app=<name>.
func labelledGang(t *testing.T, env *testenv.Env, ns, name string, n int, cpu, class string) []string {
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(name).Gang(int32(n)).Topology(lt.Required(lt.RackKey)).PriorityClass(class).Obj())
	var names []string
	for i := 0; i < n; i++ {
		p := lt.InPriorityClass(lt.Member(ns, name, i).Req(lt.CPU(cpu)).Label("app", name), class).Obj()
		env.CreatePods(t, p)
		names = append(names, p.Name)
	}
	return names
}

// A pod in no gang preempts for itself through the DefaultPreemption LockstepTopology runs:
// the gang's two members waiting at Permit on node a (its third, gated, is planned on b) are
// its victims, rejected in memory (not deleted) through the group model, and the gang, short
// of them, binds nobody.
func TestPlainPodPreemptsAWaitingMember(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "waiting-victim")
	env.CreateNodes(t, lt.MakeNode("a", "4").Obj(), lt.MakeNode("b", "2").Obj())
	env.CreatePriorityClass(t, low, 10, false)
	env.CreatePriorityClass(t, high, 1000, false)
	testenv.NominateWaiting(t) // WaitWaiting
	env.StartScheduler(t, deployed)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("g").Gang(3).PriorityClass(low).Obj())
	for i := 0; i < 3; i++ {
		p := lt.InPriorityClass(lt.Member(ns, "g", i).Req(lt.CPU("2")), low).Obj()
		if i == 2 {
			p = testenv.Gated(p) // the gang waits for it
		}
		env.CreatePods(t, p)
	}
	env.WaitWaiting(t, ns, "g-0", "g-1")
	env.CreatePods(t, lt.InPriorityClass(lt.GroupPod(ns, "urgent", "").Req(lt.CPU("4")), high).Obj())
	env.WaitBound(t, ns, "urgent")
	env.Ungate(t, ns, "g-2")
	env.Settled(t, "the gang binds nobody short of a member", func() (bool, string) {
		n := env.BoundCount(t, ns, "g-0", "g-1", "g-2")
		return n == 0, fmt.Sprintf("%d of 3 bound", n)
	})
	for _, name := range []string{"g-0", "g-1"} {
		if _, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("member %s: %v; a waiting victim is rejected in memory, not deleted", name, err)
		}
	}
}
