package failover

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

var args = testenv.GangArgs{"backoffSeconds": 1}

func names(n int, group string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", group, i)
	}
	return out
}

// startedJobController reports whether a process logged the start of the workload controller.
func startedJobController(p *testenv.Process) bool {
	for _, line := range strings.Split(p.Log(), "\n") {
		if strings.Contains(line, `"Starting"`) && strings.Contains(line, `controller="lockstep-workload-controller"`) {
			return true
		}
	}
	return false
}

// leaderOf waits until exactly one of the replicas leads and returns it and the other.
func leaderOf(t *testing.T, a, b *testenv.Process) (leader, standby *testenv.Process) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, "one replica leading", func() (bool, string) {
		la, lb := a.Leading(), b.Leading()
		switch {
		case la && !lb:
			leader, standby = a, b
		case lb && !la:
			leader, standby = b, a
		default:
			return false, fmt.Sprintf("%s leading %v, %s leading %v", a.Name, la, b.Name, lb)
		}
		return true, ""
	})
	return leader, standby
}

// Two replicas with leader election: the leader schedules and writes status; the standby
// writes nothing. The leader killed with SIGKILL while a gang waits at Permit: the standby
// takes over, finds the gang's members pending again (their reservations died with the
// leader) and binds the gang whole. The Job controller runs on the leader only, and a
// replica whose lease is taken away exits.
func TestReplicasFailover(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "failover")
	env.CreateNodes(t, lt.MakeNode("n1", "8").Obj(), lt.MakeNode("n2", "8").Obj())
	env.StartKubeControllers(t)
	opts := testenv.ProcessOptions{Args: args, LeaderElect: true, Verbosity: 4, FeatureGates: testenv.NominatedWaiting} // WaitWaiting
	a := env.StartProcess(t, "replica-a", opts)
	b := env.StartProcess(t, "replica-b", opts)
	leader, standby := leaderOf(t, a, b)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("first").Gang(3).Obj())
	env.CreatePods(t, lt.Members(ns, "first", 3, lt.CPU("1"))...)
	env.WaitBound(t, ns, names(3, "first")...)
	env.WaitCondition(t, "PodGroup", ns, "first", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed together")
	testenv.Eventually(t, 30*time.Second, "the leader's status write counted", func() (bool, string) {
		v, ok := leader.Metric(`lockstep_group_status_writes_total\{reason="Scheduled"\}`)
		return ok && v >= 1, fmt.Sprint(v)
	})
	if v, ok := standby.Metric(`lockstep_group_status_writes_total\{reason="[A-Za-z]+"\}`); ok && v > 0 {
		t.Errorf("the standby wrote %v group statuses", v)
	}

	// The Job controller runs on the leader: a Job gets its PodGroup.
	job := lt.MakeJob().Namespace(ns).Name("train").Indexed(2).Req(lt.CPU("1")).Obj()
	if _, err := env.Client.BatchV1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the Job's PodGroup", func() (bool, string) {
		list, err := env.Lockstep.SchedulingV1alpha1().PodGroups(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 2, fmt.Sprint(err)
	})
	if !startedJobController(leader) {
		t.Error("the leader did not start the Job controller")
	}
	if startedJobController(standby) {
		t.Error("the standby started the Job controller")
	}

	// A gang waits at Permit on the leader (its last member is gated); kill -9 the leader.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("mid").Gang(3).ScheduleTimeout(300).Obj())
	env.CreatePods(t, lt.Members(ns, "mid", 2, lt.CPU("1"))...)
	env.CreatePods(t, testenv.Gated(lt.Member(ns, "mid", 2).Req(lt.CPU("1")).Obj()))
	env.WaitWaiting(t, ns, "mid-0", "mid-1")
	leader.Kill()

	testenv.Eventually(t, 60*time.Second, "the standby leading", func() (bool, string) {
		return standby.Leading(), "not yet"
	})
	env.AssertUnbound(t, ns, names(3, "mid")...)
	env.Ungate(t, ns, "mid-2")
	env.WaitBound(t, ns, names(3, "mid")...)
	env.WaitCondition(t, "PodGroup", ns, "mid", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed together")

	// The lease taken away: the replica that held it exits (as kube-scheduler does), instead
	// of running on as a leader that is not one.
	ctx := context.Background()
	testenv.Eventually(t, 30*time.Second, "the lease taken", func() (bool, string) {
		lease, err := env.Client.CoordinationV1().Leases("lockstep-system").Get(ctx, "lockstep-scheduler", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		lease.Spec.HolderIdentity = ptr.To("someone-else")
		lease.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = env.Client.CoordinationV1().Leases("lockstep-system").Update(ctx, lease, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	testenv.Eventually(t, 30*time.Second, "the replica that lost its lease exits", func() (bool, string) {
		exited, err := standby.Exited()
		return exited && err != nil, fmt.Sprint(exited, err)
	})
	for _, p := range []*testenv.Process{a, b} {
		if strings.Contains(p.Log(), "panic") {
			t.Errorf("%s panicked:\n%s", p.Name, p.Tail(60))
		}
	}
}
