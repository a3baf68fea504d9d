package gang

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The scenarios here are the ordinary churn of a real cluster while a gang waits: a member
// deleted and replaced, a parent deleted and created again, minCount edited, a node removed,
// a bind refused. Members wait at Permit because a last member is held by a scheduling gate
// the test lifts; a long scheduleTimeoutSeconds keeps the model's deadline out of the way.

// waitingGang creates a gang PodGroup of minCount on a long timeout, n pods of 1 cpu that fit,
// and the gated ones named; it waits until the n pods wait at Permit (NominateWaiting).
func waitingGang(t *testing.T, env *testenv.Env, ns, name string, minCount int32, n int, gated ...string) {
	t.Helper()
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(name).Gang(minCount).ScheduleTimeout(300).Obj())
	env.CreatePods(t, lt.Members(ns, name, n, lt.CPU("1"))...)
	for _, g := range gated {
		env.CreatePods(t, testenv.Gated(lt.GroupPod(ns, g, name).Req(lt.CPU("1")).Obj()))
	}
	env.WaitWaiting(t, ns, names(n, name)...)
}

// Issue #10 item 1: a waiting member is deleted and a fitting replacement created while the
// last member cannot be placed. The deleted member stops counting: the gang does not bind
// short, and binds whole once its last member can be placed.
// Lockstep's kinds only: the gang waits at Permit for a gated member, which on lockstep's
// kinds holds only itself; in a native group a gated member holds the whole group
// (upstream's semantics), so no member would wait at Permit.
func TestDeletedWaiterAndReplacement(t *testing.T) {
	testDeletedWaiterAndReplacement(t, podgroup.APILockstep)
}

func testDeletedWaiterAndReplacement(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "dw")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	testenv.NominateWaiting(t)
	env.StartScheduler(t, fastArgs)

	waitingGang(t, env, ns, "g", 3, 2, "g-last")
	env.DeletePods(t, ns, "g-0")
	env.CreatePods(t, lt.GroupPod(ns, "g-new", "g").Req(lt.CPU("1")).Obj())
	live := []string{"g-1", "g-new", "g-last"}
	env.Settled(t, "no member of the short gang bound", func() (bool, string) {
		return env.BoundCount(t, ns, live...) == 0, fmt.Sprint(env.Placement(t, ns))
	})
	env.Ungate(t, ns, "g-last")
	env.WaitBound(t, ns, live...)
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed together")
}

// Issue #10 item 2: the CompositePodGroup of a waiting member is deleted, then created again,
// and pods are added: the waiter is released with a reason (no stale waiter, no crash), and the
// tree binds once it is whole again; another gang schedules meanwhile.
func TestCompositeRecreatedUnderAWaiter(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "cr")
	env.CreateNodes(t, lt.MakeNode("n1", "8").Obj())
	testenv.NominateWaiting(t)
	env.StartScheduler(t, fastArgs)

	env.CreateComposites(t, lt.MakeCompositePodGroup().Namespace(ns).Name("job").Gang(1).Obj())
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("s0").Gang(2).Parent("job").ScheduleTimeout(300).Obj())
	env.CreatePods(t, lt.Member(ns, "s0", 0).Req(lt.CPU("1")).Obj(), testenv.Gated(lt.GroupPod(ns, "s0-held", "s0").Req(lt.CPU("1")).Obj()))
	env.WaitWaiting(t, ns, "s0-0")

	if err := env.Lockstep.SchedulingV1alpha1().CompositePodGroups(ns).Delete(context.Background(), "job", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitCondition(t, "PodGroup", ns, "s0", metav1.ConditionFalse, v1alpha1.ReasonInvalid, `parent CompositePodGroup "job" not found`)
	env.CreateComposites(t, lt.MakeCompositePodGroup().Namespace(ns).Name("job").Gang(1).Obj())
	env.CreatePods(t, lt.Member(ns, "s0", 2).Req(lt.CPU("1")).Obj())
	env.WaitBound(t, ns, "s0-0", "s0-2")
	env.WaitCondition(t, "PodGroup", ns, "s0", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("other").Gang(2).Obj())
	env.CreatePods(t, lt.Members(ns, "other", 2, lt.CPU("1"))...)
	env.WaitBound(t, ns, names(2, "other")...)
}

// minCount lowered while members wait: they are allowed at once, not at their timeout.
// Lockstep's kinds only: the gang waits at Permit for a gated member, which on lockstep's
// kinds holds only itself; in a native group a gated member holds the whole group
// (upstream's semantics), so no member would wait at Permit.
func TestMinCountLoweredReleasesWaiters(t *testing.T) {
	testMinCountLoweredReleasesWaiters(t, podgroup.APILockstep)
}

func testMinCountLoweredReleasesWaiters(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "ml")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	testenv.NominateWaiting(t)
	env.StartScheduler(t, fastArgs)

	waitingGang(t, env, ns, "g", 3, 2, "g-held")
	start := time.Now()
	env.SetMinCount(t, ns, "g", 2)
	env.WaitBound(t, ns, names(2, "g")...)
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("waiters bound %s after minCount was lowered; want at once, not at the 300s timeout", waited)
	}
	env.AssertUnbound(t, ns, "g-held")
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 pods placed together")
}

// minCount raised before the gang is complete: no member binds until the new minimum is met.
// Lockstep's kinds only: the gang waits at Permit for a gated member, which on lockstep's
// kinds holds only itself; in a native group a gated member holds the whole group
// (upstream's semantics), so no member would wait at Permit.
func TestMinCountRaisedHoldsTheGang(t *testing.T) {
	testMinCountRaisedHoldsTheGang(t, podgroup.APILockstep)
}

func testMinCountRaisedHoldsTheGang(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "mr")
	env.CreateNodes(t, lt.MakeNode("n1", "8").Obj())
	testenv.NominateWaiting(t)
	env.StartScheduler(t, fastArgs)

	waitingGang(t, env, ns, "g", 3, 2, "g-held")
	env.SetMinCount(t, ns, "g", 4)
	env.Ungate(t, ns, "g-held")
	all := append(names(2, "g"), "g-held")
	env.Settled(t, "no member bound short of the raised minCount", func() (bool, string) {
		return env.BoundCount(t, ns, all...) == 0, fmt.Sprint(env.Placement(t, ns))
	})
	env.CreatePods(t, lt.GroupPod(ns, "g-4th", "g").Req(lt.CPU("1")).Obj())
	env.WaitBound(t, ns, append(all, "g-4th")...)
}

// A member replaced while its siblings wait: the replacement joins the attempt and the gang
// binds whole.
// Lockstep's kinds only: the gang waits at Permit for a gated member, which on lockstep's
// kinds holds only itself; in a native group a gated member holds the whole group
// (upstream's semantics), so no member would wait at Permit.
func TestMemberReplacedWhileSiblingsWait(t *testing.T) {
	testMemberReplacedWhileSiblingsWait(t, podgroup.APILockstep)
}

func testMemberReplacedWhileSiblingsWait(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "mw")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	testenv.NominateWaiting(t)
	env.StartScheduler(t, fastArgs)

	waitingGang(t, env, ns, "g", 3, 2, "g-old", "g-spare")
	env.DeletePods(t, ns, "g-old")
	env.Ungate(t, ns, "g-spare")
	env.WaitBound(t, ns, "g-0", "g-1", "g-spare")
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed together")
}

// A node deleted while a member waits there with a reservation: the member is placed again
// elsewhere; nothing binds to the deleted node and the gang binds whole.
func TestNodeDeletedWhileMembersWait(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "nd")
	env.CreateNodes(t, lt.MakeNode("n1", "2").Obj(), lt.MakeNode("n2", "2").Obj(), lt.MakeNode("n3", "2").Obj())
	testenv.NominateWaiting(t)
	env.StartScheduler(t, fastArgs)

	waitingGang(t, env, ns, "g", 3, 2, "g-held")
	nodes := env.WaitWaiting(t, ns, "g-0")
	gone := nodes["g-0"]
	env.DeleteNode(t, gone)
	env.Ungate(t, ns, "g-held")
	placed := env.WaitBound(t, ns, "g-0", "g-1", "g-held")
	for pod, node := range placed {
		if node == gone {
			t.Errorf("%s bound to deleted node %s", pod, node)
		}
	}
}

// A bind refused after the gang was allowed (an admission policy refuses one binding) leaves
// the gang partially bound: its condition, an event and a metric say so; the member is
// retried alone and binds once the policy is gone.
func TestPartialBindIsReported(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "pb")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	sched := env.StartScheduler(t, fastArgs)

	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: `object.metadata.name != "g-2"`, Message: "binding of g-2 refused by policy"}},
		},
	}
	if _, err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "refuse-binding",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy takes a moment to load: probe it with a pod no scheduler serves until a
	// binding of a pod named g-2 is refused.
	testenv.Eventually(t, 30*time.Second, "the binding policy in force", func() (bool, string) {
		probe := lt.GroupPod(ns, "g-2", "").Req(lt.CPU("1")).SchedulerName("nobody").Obj()
		env.CreatePods(t, probe)
		defer env.DeletePods(t, ns, "g-2")
		err := env.Client.CoreV1().Pods(ns).Bind(ctx, &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "g-2", Namespace: ns},
			Target: v1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "refused by policy"), fmt.Sprint(err)
	})
	testenv.Eventually(t, 30*time.Second, "the probe pod gone", func() (bool, string) {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, "g-2", metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("g").Gang(3).Obj())
	env.CreatePods(t, lt.Members(ns, "g", 3, lt.CPU("1"))...)
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionFalse, v1alpha1.ReasonPartiallyBound, "partially bound: 2 of 3 pods bound")
	env.WaitEvent(t, ns, "g", v1alpha1.ReasonPartiallyBound, "binding pod g-2 failed")
	env.WaitBound(t, ns, "g-0", "g-1")
	testenv.Eventually(t, 30*time.Second, "partial bind metric", func() (bool, string) {
		return regexp.MustCompile(`(?m)^lockstep_gang_partial_binds_total [1-9]`).MatchString(sched.Metrics(t)), "missing lockstep_gang_partial_binds_total"
	})

	if err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "refuse-binding", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	env.WaitBound(t, ns, "g-2")
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed together")
}

// When room appears for one of two gangs that failed for want of it, the one with the higher
// priority (its PodGroup's priorityClassName) gets it, though it was tried last.
func TestRoomGoesToTheHigherPriorityGang(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "prio")
	env.CreateNodes(t, lt.MakeNode("small", "500m").Obj())
	env.StartScheduler(t, nil) // backoffSeconds 10: news, not the backoff, retries them
	if _, err := env.Client.SchedulingV1().PriorityClasses().Create(context.Background(),
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "training-high"}, Value: 1000}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("low").Gang(4).Obj())
	env.CreatePods(t, lt.Members(ns, "low", 4, lt.CPU("1"))...)
	env.WaitCondition(t, "PodGroup", ns, "low", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("high").Gang(4).PriorityClass("training-high").Obj())
	env.CreatePods(t, lt.Members(ns, "high", 4, lt.CPU("1"))...)
	env.WaitCondition(t, "PodGroup", ns, "high", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")

	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj()) // room for one gang
	env.WaitBound(t, ns, names(4, "high")...)
	env.AssertUnbound(t, ns, names(4, "low")...)
}
