package gang

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
