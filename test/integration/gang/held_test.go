package gang

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Issue #58: the pods of a waiting gang cost nothing at a cluster event. The scheduling queue
// asks the queueing hints of the plugin that rejected a pod about every pod it holds at every
// event that plugin registered; LockstepScout, which holds the members waiting for their
// gang's scout or backoff, registers none, and the scout whose try failed is held so too
// once its gang backs off (only the model retries a gang). A gang of 8 that cannot fit, and 3
// pods deleted from its nodes: the queue asks lockstep's hints about none of its pods (3
// times before the failed scout was held, 24 before LockstepScout); a plain pod too big for
// any node, asked by NodeResourcesFit at every deletion, shows the queue's counts were read
// after the deletions.
func TestHeldMembersAreNotAskedAboutEvents(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "held")
	var small []string
	for i := range 4 {
		node := fmt.Sprintf("n%d", i)
		env.CreateNodes(t, lt.MakeNode(node, "4").Obj())
		env.CreatePods(t, lt.GroupPod(ns, "large-"+node, "").Req(lt.CPU("3")).Node(node).Obj())
		if i < 3 {
			env.CreatePods(t, lt.GroupPod(ns, "small-"+node, "").Req(lt.CPU("10m")).Node(node).Obj())
			small = append(small, "small-"+node)
		}
	}
	sched := env.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 600})
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("waiting").Gang(8).Obj())
	env.CreatePods(t, lt.Members(ns, "waiting", 8, lt.CPU("2"))...)
	env.CreatePods(t, lt.GroupPod(ns, "too-big", "").Req(lt.CPU("5")).Obj())
	env.WaitCondition(t, "PodGroup", ns, "waiting", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "")
	testenv.Eventually(t, 30*time.Second, "every member and the big pod told why they are pending", func() (bool, string) {
		for _, name := range append(names(8, "waiting"), "too-big") {
			if c := env.PodScheduled(t, ns, name); c == nil || c.Status != v1.ConditionFalse {
				return false, fmt.Sprintf("%s: %v", name, c)
			}
		}
		return true, ""
	})
	env.WaitIdle(t)
	lockstep := func() float64 {
		return hintCalls(t, sched, `LockstepGang|LockstepScout|LockstepTopology`)
	}
	control := func() float64 { return hintCalls(t, sched, `NodeResourcesFit`) }
	askedBefore, controlBefore := lockstep(), control()

	env.DeletePods(t, ns, small...)
	testenv.Eventually(t, 30*time.Second, "the queue asked about the big pod at each deletion", func() (bool, string) {
		got := control() - controlBefore
		return got >= float64(len(small)), fmt.Sprintf("NodeResourcesFit asked %v times", got)
	})
	env.WaitIdle(t)
	asked := lockstep() - askedBefore
	t.Logf("%d deletions: lockstep's hints asked %v times, NodeResourcesFit's %v", len(small), asked, control()-controlBefore)
	if asked != 0 {
		t.Errorf("lockstep's queueing hints were asked %v times at %d pod deletions, want 0: the waiting gang's pods were asked", asked, len(small))
	}
	env.AssertUnbound(t, ns, names(8, "waiting")...)
}

// hintCalls sums the scheduler's counts of queueing hints run for a pod deletion by the
// plugins plugins matches (a regexp), whatever their answer.
func hintCalls(t *testing.T, s *testenv.Scheduler, plugins string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^scheduler_queueing_hint_execution_duration_seconds_count\{event="AssignedPodDelete",hint="[A-Za-z]+",plugin="(?:` + plugins + `)"\} ([0-9.e+]+)$`)
	sum := 0.0
	for _, m := range re.FindAllStringSubmatch(s.Metrics(t), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}

// Members held for their gang's scout are let in by lockstep alone, no event waking them: a
// gang whose minimum is lowered to one is no gang, and its members go at once, not at the
// queue's flush five minutes later, nor at the end of a ten-minute backoff.
func TestMembersHeldForTheScoutGoWhenTheMinimumIsOne(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "lowered")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	env.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 600})
	// Three pods of 3 cpu on two nodes of 4: two fit, never the third.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("g").Gang(3).Obj())
	env.CreatePods(t, lt.Members(ns, "g", 3, lt.CPU("3"))...)
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	env.WaitIdle(t)
	env.SetMinCount(t, ns, "g", 1)
	testenv.Eventually(t, 30*time.Second, "two of the three pods bound (the nodes' room)", func() (bool, string) {
		n := env.BoundCount(t, ns, names(3, "g")...)
		return n == 2, fmt.Sprintf("%d bound", n)
	})
}
