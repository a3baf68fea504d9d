package gang

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Issue #19: the retries of a gang that does not fit write nothing to its pods. Every
// attempt fails for the same reason, so the members' PodScheduled condition says the same at
// every attempt (the scheduler skips the write), members are held out of the queue while the
// gang backs off, and no member waits at Permit with a nomination written. The pods'
// resourceVersions do not move while the gang is retried again and again.
func TestRetriesWriteNoPodStatus(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "writes")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	sched := env.StartScheduler(t, fastArgs)
	var fillers []string
	for i := range 6 {
		name := fmt.Sprintf("filler-%d", i)
		fillers = append(fillers, name)
		env.CreatePods(t, lt.GroupPod(ns, name, "").Req(lt.CPU("1")).Obj())
	}
	env.WaitBound(t, ns, fillers...)
	// Three pods of 5 cpu never fit on nodes of 4.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("big").Gang(3).Obj())
	env.CreatePods(t, lt.Members(ns, "big", 3, lt.CPU("5"))...)
	env.WaitCondition(t, "PodGroup", ns, "big", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	members := names(3, "big")
	testenv.Eventually(t, 30*time.Second, "every member told why it is pending", func() (bool, string) {
		for _, name := range members {
			if c := env.PodScheduled(t, ns, name); c == nil || c.Status != v1.ConditionFalse {
				return false, fmt.Sprintf("%s: %v", name, c)
			}
		}
		return true, ""
	})
	env.WaitIdle(t) // the attempt in flight ends
	versions := resourceVersions(t, env, ns, members)
	attempts := gangAttempts(t, sched)

	// Each deleted filler is news that retries the gang (backoffSeconds 1).
	for _, name := range fillers {
		if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
	}
	testenv.Eventually(t, 30*time.Second, "the gang retried", func() (bool, string) {
		n := gangAttempts(t, sched)
		return n >= attempts+3, fmt.Sprintf("%v failed attempts since, want 3", n-attempts)
	})
	t.Logf("%v failed attempts while the fillers were deleted", gangAttempts(t, sched)-attempts)
	for name, rv := range resourceVersions(t, env, ns, members) {
		if rv != versions[name] {
			t.Errorf("pod %s written during the retries: resourceVersion %s, was %s; PodScheduled %v", name, rv, versions[name], env.PodScheduled(t, ns, name))
		}
	}
}

func resourceVersions(t *testing.T, env *testenv.Env, ns string, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = p.ResourceVersion
	}
	return out
}

// gangAttempts is the scheduler's count of failed gang attempts (the in-process schedulers of
// a test binary share one registry: compare counts).
func gangAttempts(t *testing.T, s *testenv.Scheduler) float64 {
	t.Helper()
	v, _ := testenv.Sample(s.Metrics(t), `lockstep_gang_attempts_total\{result="unschedulable"\}`)
	return v
}

// Issue #58: a gang that fails the same way again and again writes nothing new, as kube's
// event correlator aggregates repeated events. Its first failures write the group's
// condition, its event, the members' PodScheduled and the scout's FailedScheduling event
// (the second of which the scheduler's event broadcaster turns into a series with a count);
// from then on, through the 50th failure, no pod, group or event of the namespace is
// written. Each relabel of a node is news that retries the gang at once (whatever its
// backoff), and the failure says the same each time, though nodes too small for a member are
// added and deleted meanwhile: the scheduler's message counts the nodes ("0/3 nodes are
// available: ..."), and a new count alone is nothing new.
func TestTheFiftiethIdenticalFailureWritesNothing(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "identical")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	sched := env.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 600})
	// Three pods of 3 cpu on two nodes of 4: two fit, never the third.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("big").Gang(3).Obj())
	env.CreatePods(t, lt.Members(ns, "big", 3, lt.CPU("3"))...)
	env.WaitCondition(t, "PodGroup", ns, "big", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	members := names(3, "big")

	start := gangAttempts(t, sched)
	// News retries the gang at once, but no sooner than a second after its last try (the
	// retry floor): a relabel, then the retry it prompts, until it failed n times since start.
	fail := func(n int) {
		t.Helper()
		for i := 0; gangAttempts(t, sched) < start+float64(n); i++ {
			before := gangAttempts(t, sched)
			switch small := fmt.Sprintf("small-%d-%d", n, i/10*10); {
			case n < 50:
			case i%10 == 3:
				env.CreateNodes(t, lt.MakeNode(small, "2").Obj())
			case i%10 == 7 && i%20 == 7:
				env.DeleteNode(t, small)
			}
			relabel(t, env, "n1", fmt.Sprintf("%d-%d", n, i))
			testenv.Eventually(t, 30*time.Second, "the gang retried after a relabel", func() (bool, string) {
				got := gangAttempts(t, sched)
				return got > before, fmt.Sprintf("%v failed attempts, want more than %v", got-start, before-start)
			})
		}
		env.WaitIdle(t)
	}
	fail(3)
	pods, group, evs := resourceVersions(t, env, ns, members), groupVersion(t, env, ns, "big"), eventVersions(t, env, ns)
	fail(50)
	t.Logf("%v failed attempts of the gang", gangAttempts(t, sched)-start)
	for name, rv := range resourceVersions(t, env, ns, members) {
		if rv != pods[name] {
			t.Errorf("pod %s written by a repeated failure: resourceVersion %s, was %s; PodScheduled %v", name, rv, pods[name], env.PodScheduled(t, ns, name))
		}
	}
	if rv := groupVersion(t, env, ns, "big"); rv != group {
		t.Errorf("PodGroup big written by a repeated failure: resourceVersion %s, was %s; condition %v", rv, group, env.GroupCondition(t, "PodGroup", ns, "big"))
	}
	now := eventVersions(t, env, ns)
	for name, ev := range now {
		if was, ok := evs[name]; !ok || was.ResourceVersion != ev.ResourceVersion {
			t.Errorf("event written by a repeated failure: %s %s on %s %s: %q", ev.Reason, ev.Type, ev.Regarding.Kind, ev.Regarding.Name, ev.Note)
		}
	}
	if len(now) != len(evs) {
		t.Errorf("%d events after 50 failures, %d after 3", len(now), len(evs))
	}
	// The scout's failures are one event with a count, not one event each.
	counted := false
	for _, ev := range now {
		if ev.Reason == "FailedScheduling" && ev.Series != nil && ev.Series.Count >= 2 {
			counted = true
		}
	}
	if !counted {
		t.Errorf("no FailedScheduling event counts the repeated failures: %v", now)
	}
}

// relabel sets a label of node to value: news for every waiting gang.
func relabel(t *testing.T, env *testenv.Env, node, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{"lockstep.test/round":%q}}}`, value)
	if _, err := env.Client.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func groupVersion(t *testing.T, env *testenv.Env, ns, name string) string {
	t.Helper()
	pg, err := env.Lockstep.SchedulingV1alpha1().PodGroups(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pg.ResourceVersion
}

// eventVersions returns the events of namespace ns by name.
func eventVersions(t *testing.T, env *testenv.Env, ns string) map[string]eventsv1.Event {
	t.Helper()
	list, err := env.Client.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]eventsv1.Event{}
	for _, ev := range list.Items {
		out[ev.Name] = ev
	}
	return out
}
