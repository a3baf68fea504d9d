package topology

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// shortTimeout is the test's partialBindTimeoutSeconds: how long a gang may run short of its
// minimum before it is released whole (300 as shipped).
const shortTimeout = 20

// A running rack-Required gang that loses a node (its pods deleted, as the pod garbage
// collector does, and recreated by its controller) gets its replacements in its own rack when
// there is room there, and is whole again; when there is none, it runs short, and
// partialBindTimeoutSeconds after it became short it is released whole — its bound members
// evicted — and placed whole again in another rack.
func TestRunningGangThatLosesANode(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "lost")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 3, "8")...) // 2 racks of 3 hosts of 8 cpu
	// The gang's controller: a member deleted or evicted is made again, under a new name.
	var mu sync.Mutex
	next, replaced := 4, map[string]bool{}
	env.FollowPods(t, ns, func(p *v1.Pod, deleted bool) {
		if p.Labels[v1alpha1.PodGroupLabel] != "train" || !(deleted || p.DeletionTimestamp != nil) {
			return
		}
		mu.Lock()
		if replaced[p.Name] {
			mu.Unlock()
			return
		}
		replaced[p.Name] = true
		i := next
		next++
		mu.Unlock()
		go env.CreatePods(t, lt.Member(ns, "train", i).Req(lt.CPU("3")).Obj())
	})
	env.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 1, "partialBindTimeoutSeconds": shortTimeout})
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(4).Topology(lt.Required(lt.RackKey)).Obj())
	env.CreatePods(t, lt.Members(ns, "train", 4, lt.CPU("3"))...)
	placed := env.WaitBound(t, ns, names(4, "train")...)
	rack := assertOneDomain(t, placed, names(4, "train"), lt.RackKey)
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	// A node of the gang is lost; its rack has a host with room for its two members.
	lost := placed["train-0"]
	env.DeleteNode(t, lost)
	env.DeletePods(t, ns, onNode(placed, lost)...)
	again := env.WaitBound(t, ns, "train-4", "train-5")
	if got := assertOneDomain(t, again, []string{"train-4", "train-5"}, lt.RackKey); got != rack {
		t.Fatalf("the replacements bound in rack %s, want the gang's rack %s", got, rack)
	}
	env.WaitConditionOfType(t, "PodGroup", ns, "train", v1alpha1.Short, metav1.ConditionFalse, v1alpha1.ReasonWhole, "")

	// Another node of the gang is lost; its rack has no room left for its members.
	placed = env.Placement(t, ns)
	lost = again["train-4"]
	gone := onNode(placed, lost)
	var kept []string
	for p, n := range placed {
		if n != "" && n != lost {
			kept = append(kept, p)
		}
	}
	env.DeleteNode(t, lost)
	env.DeletePods(t, ns, gone...)
	short := env.WaitConditionOfType(t, "PodGroup", ns, "train", v1alpha1.Short, metav1.ConditionTrue, v1alpha1.ReasonMemberLost,
		fmt.Sprintf("running short: %d of 4 pods bound", len(kept)))
	env.WaitEvent(t, ns, "train", v1alpha1.ReasonMemberLost, "a member was lost")
	now := env.Placement(t, ns)
	for _, p := range kept {
		if now[p] != placed[p] {
			t.Fatalf("pod %s left node %s while its gang runs short (now %q)", p, placed[p], now[p])
		}
	}
	// Released whole a short timeout after it became short: its members left are evicted, and
	// it is placed whole again, in the other rack.
	env.WaitEvent(t, ns, "train", podgroup.ReasonGangReleased, "a member was lost and its replacement was not placed")
	if d := time.Since(short.LastTransitionTime.Time); d < (shortTimeout-1)*time.Second {
		t.Errorf("released %s after it became short, want the short timeout (%ds)", d.Round(time.Second), shortTimeout)
	}
	var whole []string
	testenv.Eventually(t, 30*time.Second, "the controller making the evicted members again", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		whole = nil
		for i := 6; i < next; i++ { // the lost node's replacements, then the evicted members'
			whole = append(whole, fmt.Sprintf("train-%d", i))
		}
		return len(whole) == 4, fmt.Sprintf("made %v", whole)
	})
	placed = env.WaitBound(t, ns, whole...)
	if got := assertOneDomain(t, placed, whole, lt.RackKey); got == rack {
		t.Errorf("placed whole again in rack %s, which has no room for it", got)
	}
}

// onNode returns the pods placed on node.
func onNode(placed map[string]string, node string) []string {
	var out []string
	for p, n := range placed {
		if n == node {
			out = append(out, p)
		}
	}
	return out
}
