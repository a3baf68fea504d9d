package gang

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// fastArgs keep the scenarios short: a failed gang retries after one second.
var fastArgs = testenv.GangArgs{"backoffSeconds": 1}

// names returns the names of pods.
func names(n int, group string) []string {
	out := make([]string, n)
	for i, p := range testenv.GangPods("", group, n, "1") {
		out[i] = p.Name
	}
	return out
}

// A gang of 4 on nodes with room for 3: none binds; add a node: all 4 bind.
func TestGangWaitsForRoomThenBindsTogether(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "a")
	env.CreateNodes(t, testenv.Node("n1", "2", nil), testenv.Node("n2", "1", nil))
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, testenv.Gang(ns, "train", 4, ""))
	env.CreatePods(t, testenv.GangPods(ns, "train", 4, "1")...)

	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "Insufficient cpu")
	env.WaitEvent(t, ns, "train", v1alpha1.ReasonUnschedulable, "cannot fit: ")
	env.AssertUnbound(t, ns, names(4, "train")...)

	env.CreateNodes(t, testenv.Node("n3", "1", nil))
	placed := env.WaitBound(t, ns, names(4, "train")...)
	perNode := map[string]int{}
	for _, n := range placed {
		perNode[n]++
	}
	if perNode["n1"] != 2 || perNode["n2"] != 1 || perNode["n3"] != 1 {
		t.Errorf("placement %v, want 2 pods on n1 and one on each of n2, n3", placed)
	}
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed")
	if _, err := env.Client.CoreV1().Nodes().Get(context.Background(), "n3", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
