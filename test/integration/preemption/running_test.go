package preemption

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// top is the class of the pods no preemptor of these tests may take.
const top = "top"

// wait bounds what these tests wait for: evictions through the apiserver and the kubelets'
// stand-in, and binds after them.
const wait = time.Minute

// running is a pod of cpu and class already bound to node, in PodGroup group if not "".
func running(ns, name, group, node, cpu, class string) *v1.Pod {
	return lt.InPriorityClass(lt.GroupPod(ns, name, group).Req(lt.CPU(cpu)).Node(node), class).Obj()
}

// A plain high-priority pod next to a running gang: it takes a pod that breaks no gang where
// one of the same priority will do; when only gang members can make room it takes the whole
// gang — every member, on every node — never one member, and the gang says it was disrupted.
// Checked from the pods the kubelets removed, not from lockstep's conditions.
func TestPlainPodTakesRunningGangsWhole(t *testing.T) {
	testenv.ForEachAPI(t, testPlainPodTakesRunningGangsWhole)
}

func testPlainPodTakesRunningGangsWhole(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "plain-vs-gang")
	env.CreatePriorityClass(t, top, 2000, false)
	const (
		h0, h1, r1h0, r1h1 = "z0-b0-r0-h0", "z0-b0-r0-h1", "z0-b0-r1-h0", "z0-b0-r1-h1"
	)
	// Disrupted whole: lockstep's default for a gang, said as the native kinds need it.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(2).DisruptedWhole().Obj())
	env.CreatePods(t,
		running(ns, "train-0", "train", h0, "2", low), running(ns, "plain-a", "", h0, "2", low),
		running(ns, "train-1", "train", h1, "2", low), running(ns, "busy-h1", "", h1, "2", top),
		running(ns, "busy-r1h0", "", r1h0, "4", top), running(ns, "busy-r1h1", "", r1h1, "4", top))
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	// Room for 2 cpu: plain-a and train-0 (same node, same priority) would each do; so would
	// train-1 on h1. The pod in no gang goes.
	env.CreatePods(t, lt.InPriorityClass(lt.GroupPod(ns, "urgent-1", "").Req(lt.CPU("2")), high).Obj())
	env.WaitBound(t, ns, "urgent-1")
	if got := podNames(kubelets.Removed()); fmt.Sprint(got) != "[plain-a]" {
		t.Fatalf("evicted %v, want [plain-a]: a pod that breaks no gang", got)
	}

	// Room for 2 cpu again: only train-0 or train-1 can give it. The gang goes whole.
	env.CreatePods(t, lt.InPriorityClass(lt.GroupPod(ns, "urgent-2", "").Req(lt.CPU("2")), high).Obj())
	env.WaitBound(t, ns, "urgent-2")
	testenv.Eventually(t, wait, "the gang evicted whole", func() (bool, string) {
		got := podNames(kubelets.Removed())
		return fmt.Sprint(got) == "[plain-a train-0 train-1]", fmt.Sprintf("evicted %v", got)
	})
	for _, p := range kubelets.Removed() {
		if p.Name == "plain-a" {
			continue
		}
		if c := podCondition(p, v1.DisruptionTarget); c == nil || c.Reason != v1.PodReasonPreemptionByScheduler {
			t.Errorf("evicted gang member %s has no DisruptionTarget condition from the scheduler: %+v", p.Name, c)
		}
	}
	env.WaitConditionOfType(t, "PodGroup", ns, "train", v1alpha1.DisruptionTarget, metav1.ConditionTrue, v1alpha1.ReasonPreemptionByScheduler, "urgent-2")
	env.WaitEvent(t, ns, "train", v1alpha1.ReasonPreempted, "urgent-2")
}

// A running rack-required gang that lost a member gets it back behind lower-priority pods:
// the replacement preempts for itself, as upstream would for the pod alone, inside its gang's
// rack, never outside it and never its own gang.
func TestReplacementPreemptsInItsDomain(t *testing.T) {
	testenv.ForEachAPI(t, testReplacementPreemptsInItsDomain)
}

func testReplacementPreemptsInItsDomain(t *testing.T, api podgroup.API) {
	env, ns, kubelets := setUp(t, api, "replacement")
	const (
		h0, h1, r1h0, r1h1 = "z0-b0-r0-h0", "z0-b0-r0-h1", "z0-b0-r1-h0", "z0-b0-r1-h1"
	)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(3).Topology(lt.Required(lt.RackKey)).PriorityClass(high).Obj())
	env.CreatePods(t,
		running(ns, "train-0", "train", h0, "2", high), running(ns, "train-1", "train", h0, "2", high),
		running(ns, "train-2", "train", h1, "2", high), running(ns, "filler-h1", "", h1, "2", low))
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	// The other rack is full of pods of the lowest priority: cheaper victims, outside the
	// gang's rack.
	env.CreatePods(t, running(ns, "cheap-r1h0", "", r1h0, "4", low), running(ns, "cheap-r1h1", "", r1h1, "4", low))

	// train-2 is lost; a low-priority pod takes its room before the replacement comes.
	env.DeletePods(t, ns, "train-2") // at once: no kubelet sees it go
	testenv.Eventually(t, wait, "train-2 gone", func() (bool, string) {
		_, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "train-2", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
	env.CreatePods(t, running(ns, "squatter", "", h1, "2", low))
	env.CreatePods(t, lt.InPriorityClass(lt.Member(ns, "train", 3).Req(lt.CPU("2")), high).Obj())

	placed := env.WaitBound(t, ns, "train-3")
	if placed["train-3"] != h1 {
		t.Errorf("replacement bound on %s, want %s in its gang's rack", placed["train-3"], h1)
	}
	// train-2 is the test's own deletion: the kubelet stand-in may see it go (grace 0 races
	// its watch), and it is no eviction.
	var got []string
	for _, name := range podNames(kubelets.Removed()) {
		if name != "train-2" {
			got = append(got, name)
		}
	}
	if len(got) != 1 || (got[0] != "filler-h1" && got[0] != "squatter") {
		t.Errorf("evicted %v, want one low-priority pod of h1", got)
	}
	for _, name := range []string{"train-0", "train-1", "cheap-r1h0", "cheap-r1h1"} {
		for _, p := range kubelets.Removed() {
			if p.Name == name {
				t.Errorf("%s evicted: a replacement takes lower-priority pods of its gang's domain only", name)
			}
		}
	}
}

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
