package preemption

import (
	"context"
	"fmt"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The manifests' configuration, as deployed (backoffSeconds 10): a gang that preempted must
// be retried by its victims' deletions, not by its backoff.
var deployed = testenv.GangArgs{}

const (
	low, high = "low", "high"
)

// setUp starts a cluster of two racks of two 4-cpu nodes (z0-b0-r0, z0-b0-r1), the
// PriorityClasses low (10), high (1000) and high-never (1000, preemptionPolicy Never), the
// scheduler and the kubelets' stand-in.
func setUp(t *testing.T, api podgroup.API, name string) (*testenv.Env, string, *testenv.Kubelets) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, name)
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 2, "4")...)
	env.CreatePriorityClass(t, low, 10, false)
	env.CreatePriorityClass(t, high, 1000, false)
	env.CreatePriorityClass(t, "high-never", 1000, true)
	env.StartScheduler(t, deployed)
	return env, ns, env.StartKubelets(t, ns)
}

// fillers fills a node with 4 pods of 1 cpu of class low.
func fillers(ns, node string) []*v1.Pod {
	var out []*v1.Pod
	for i := 0; i < 4; i++ {
		out = append(out, lt.InPriorityClass(lt.GroupPod(ns, fmt.Sprintf("%s-%d", node, i), "").Req(lt.CPU("1")).Node(node), low).Obj())
	}
	return out
}

// fillCluster fills every node with low-priority pods: 16 pods of 1 cpu.
func fillCluster(t *testing.T, env *testenv.Env, ns string) {
	var fill []*v1.Pod
	for _, n := range []string{"z0-b0-r0-h0", "z0-b0-r0-h1", "z0-b0-r1-h0", "z0-b0-r1-h1"} {
		fill = append(fill, fillers(ns, n)...)
	}
	env.CreatePods(t, fill...)
}

// gang creates a rack-required gang of n pods of cpu of class.
func gang(t *testing.T, env *testenv.Env, ns, name string, n int, cpu, class string) []string {
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(name).Gang(int32(n)).Topology(lt.Required(lt.RackKey)).PriorityClass(class).Obj())
	var names []string
	for i := 0; i < n; i++ {
		p := lt.InPriorityClass(lt.Member(ns, name, i).Req(lt.CPU(cpu)), class).Obj()
		env.CreatePods(t, p)
		names = append(names, p.Name)
	}
	return names
}

func podNames(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// A high-priority rack-required gang on two racks full of low-priority pods: exactly one
// rack's pods are evicted (each with the DisruptionTarget condition and an event naming the
// gang), and the gang binds there.
func TestGangPreemptsOneRack(t *testing.T) { testenv.ForEachAPI(t, testGangPreemptsOneRack) }

func testGangPreemptsOneRack(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "one-rack")
	fillCluster(t, env, ns)

	members := gang(t, env, ns, "train", 4, "2", high)
	placed := env.WaitBound(t, ns, members...)
	rack := testenv.Domain(placed[members[0]], lt.RackKey)
	for _, m := range members {
		if r := testenv.Domain(placed[m], lt.RackKey); r != rack {
			t.Errorf("member %s in rack %s, want all in %s", m, r, rack)
		}
	}
	removed := kubelets.Removed()
	if len(removed) != 8 {
		t.Errorf("evicted %d pods %v, want the 8 of one rack", len(removed), podNames(removed))
	}
	for _, p := range removed {
		if r := testenv.Domain(p.Spec.NodeName, lt.RackKey); r != rack {
			t.Errorf("evicted %s in rack %s, outside the gang's rack %s", p.Name, r, rack)
		}
		if !hasDisruptionTarget(p) {
			t.Errorf("victim %s was deleted without the DisruptionTarget condition: %+v", p.Name, p.Status.Conditions)
		}
	}
	env.WaitEvent(t, ns, removed[0].Name, "Preempted", "gang "+env.GroupRef("PodGroup", ns, "train"))
	env.WaitEvent(t, ns, "train", v1alpha1.ReasonPreempting, "taking rack "+rack+": evicting 8 pods")
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	left, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(left.Items); got != 8+4 {
		t.Errorf("%d pods left, want the other rack's 8 and the gang's 4", got)
	}
}

// A low-priority gang running across both racks is evicted whole, its members in the other
// rack included, when the rack a high-priority gang takes holds some of its members. It is
// told (an event and DisruptionTarget on its group) and is a gang again: the pods its
// controller recreates bind only when all of them fit, although its PodGroupInitiallyScheduled
// condition stays True.
func TestVictimGangIsEvictedWhole(t *testing.T) { testenv.ForEachAPI(t, testVictimGangIsEvictedWhole) }

func testVictimGangIsEvictedWhole(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "whole")
	// Disrupted whole: lockstep's default for a gang, said as the native kinds need it
	// (theirs is one by one).
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("batch").Gang(4).PriorityClass(low).DisruptedWhole().Obj())
	for i, node := range []string{"z0-b0-r0-h0", "z0-b0-r0-h0", "z0-b0-r1-h0", "z0-b0-r1-h0"} {
		env.CreatePods(t, lt.InPriorityClass(lt.Member(ns, "batch", i).Req(lt.CPU("2")).Node(node), low).Obj())
	}
	env.CreatePods(t, append(fillers(ns, "z0-b0-r0-h1"), fillers(ns, "z0-b0-r1-h1")...)...)

	members := gang(t, env, ns, "train", 4, "2", high)
	placed := env.WaitBound(t, ns, members...)
	rack := testenv.Domain(placed[members[0]], lt.RackKey)
	want := []string{"batch-0", "batch-1", "batch-2", "batch-3", rack + "-h1-0", rack + "-h1-1", rack + "-h1-2", rack + "-h1-3"}
	sort.Strings(want)
	if got := podNames(kubelets.Removed()); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("evicted %v, want %v: the gang batch whole and the fillers of rack %s", got, want, rack)
	}
	// The victim gang is told, on its group, who preempted it and for which domain.
	env.WaitEvent(t, ns, "batch", v1alpha1.ReasonPreempted, "evicting its 4 running pods: preempted by gang "+env.GroupRef("PodGroup", ns, "train")+" (priority ")
	env.WaitEvent(t, ns, "batch", v1alpha1.ReasonPreempted, "which takes rack "+rack)
	env.WaitConditionOfType(t, "PodGroup", ns, "batch", v1alpha1.DisruptionTarget, metav1.ConditionTrue, v1alpha1.ReasonPreemptionByScheduler,
		"evicting its 4 running pods: preempted by gang "+env.GroupRef("PodGroup", ns, "train")+" (priority 1000), which takes rack "+rack)

	// Its Job recreates the 4 pods: only 2 fit (the other rack's first node), so none binds.
	var again []string
	for i := 4; i < 8; i++ {
		p := lt.InPriorityClass(lt.Member(ns, "batch", i).Req(lt.CPU("2")), low).Obj()
		env.CreatePods(t, p)
		again = append(again, p.Name)
	}
	env.Settled(t, "no recreated member bound", func() (bool, string) {
		placed := env.Placement(t, ns)
		var bound []string
		for _, n := range again {
			if placed[n] != "" {
				bound = append(bound, n+" on "+placed[n])
			}
		}
		return len(bound) == 0, fmt.Sprint(bound)
	})
	env.WaitConditionOfType(t, "PodGroup", ns, "batch", v1alpha1.DisruptionTarget, metav1.ConditionTrue, v1alpha1.ReasonPreemptionByScheduler, "; now cannot fit")
	if c := env.GroupCondition(t, "PodGroup", ns, "batch"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("PodGroupInitiallyScheduled is %+v, want True (terminal)", c)
	}
	// Room for all 4 once the other rack's second node is emptied: they bind together.
	other := "z0-b0-r0"
	if rack == other {
		other = "z0-b0-r1"
	}
	env.DeletePods(t, ns, fillerNames(other+"-h1")...)
	env.WaitBound(t, ns, again...)
	env.WaitConditionOfType(t, "PodGroup", ns, "batch", v1alpha1.DisruptionTarget, metav1.ConditionFalse, v1alpha1.ReasonRescheduled, "")
}

// A gang whose PriorityClass says preemptionPolicy: Never evicts nothing, and neither does
// per-member preemption on its behalf.
func TestPreemptionPolicyNeverEvictsNothing(t *testing.T) {
	testenv.ForEachAPI(t, testPreemptionPolicyNeverEvictsNothing)
}

func testPreemptionPolicyNeverEvictsNothing(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "never")
	fillCluster(t, env, ns)
	members := gang(t, env, ns, "polite", 4, "2", "high-never")
	env.WaitCondition(t, "PodGroup", ns, "polite", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "")
	env.Settled(t, "no pod evicted", func() (bool, string) {
		r := kubelets.Removed()
		return len(r) == 0, fmt.Sprint(podNames(r))
	})
	env.AssertUnbound(t, ns, members...)
}

// A gang that cannot fit even on an empty cluster (12 × 2 cpu in a rack of 8 cpu) evicts
// nothing: not as a gang, and not member by member (each member alone would fit if a node
// were emptied, which is what per-member preemption would do).
func TestImpossibleGangEvictsNothing(t *testing.T) {
	testenv.ForEachAPI(t, testImpossibleGangEvictsNothing)
}

func testImpossibleGangEvictsNothing(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "impossible")
	fillCluster(t, env, ns)
	members := gang(t, env, ns, "huge", 12, "2", high)
	env.WaitCondition(t, "PodGroup", ns, "huge", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "no rack has room for 12 pods")
	env.Settled(t, "no pod evicted", func() (bool, string) {
		r := kubelets.Removed()
		return len(r) == 0, fmt.Sprint(podNames(r))
	})
	env.AssertUnbound(t, ns, members...)
}

// fillerNames names the 4 fillers of a node.
func fillerNames(node string) []string {
	var out []string
	for _, p := range fillers("", node) {
		out = append(out, p.Name)
	}
	return out
}

func hasDisruptionTarget(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}
