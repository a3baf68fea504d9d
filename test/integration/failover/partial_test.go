package failover

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// refuseBinds makes the apiserver refuse the bindings of the pods named, as an admission
// webhook or policy of a real cluster may (a ValidatingAdmissionPolicy on pods/binding), and
// waits until it does. It returns a func that lifts the refusal.
func refuseBinds(t *testing.T, env *testenv.Env, ns, name string, pods ...string) func() {
	t.Helper()
	ctx := context.Background()
	probe := "probe-" + name
	quoted := make([]string, 0, len(pods)+1)
	for _, p := range append(pods, probe) {
		quoted = append(quoted, fmt.Sprintf("%q", p))
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: fmt.Sprintf("!(object.metadata.name in [%s])", strings.Join(quoted, ", ")),
				Message:    "binding refused by policy " + name,
			}},
		},
	}
	if _, err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources:    &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}},
	}
	if _, err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod no scheduler takes (no scheduler by that name), bound by hand until the policy
	// refuses it.
	env.CreatePods(t, lt.GroupPod(ns, probe, "").SchedulerName("nobody").Req(lt.CPU("1")).Obj())
	testenv.Eventually(t, 30*time.Second, "the policy refusing bindings", func() (bool, string) {
		err := env.Client.CoreV1().Pods(ns).Bind(ctx, &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: probe},
			Target: v1.ObjectReference{Kind: "Node", Name: "none"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "refused by policy"), fmt.Sprintf("bind: %v", err)
	})
	return func() {
		if err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// A bind refused after the gang was allowed leaves it partially bound, and one rule decides
// what follows, whichever scheduler runs: the member is retried alone (a refusal that passes
// completes the gang), and a gang still short after partialBindTimeoutSeconds is released
// whole. The scheduler is killed (SIGKILL) while a gang is partially bound: the one started
// after it reads when the gang became partially bound from the group, keeps its running pods
// until that deadline, and releases them at it. Checked from the pods: which are bound, which
// the kubelets removed and when.
func TestPartialBindIsDecidedTheSameAcrossAKill(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "partial")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	kubelets := env.StartKubelets(t, ns)
	const timeout = 30 * time.Second
	opts := testenv.ProcessOptions{Args: testenv.GangArgs{"backoffSeconds": 1, "partialBindTimeoutSeconds": int(timeout.Seconds())}}
	first := env.StartProcess(t, "first", opts)

	// Refused once: the member is retried alone and the gang is whole.
	lift := refuseBinds(t, env, ns, "refuse-once", "once-2")
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("once").Gang(3).Obj())
	env.CreatePods(t, lt.Members(ns, "once", 3, lt.CPU("1"))...)
	env.WaitBound(t, ns, "once-0", "once-1")
	env.WaitCondition(t, "PodGroup", ns, "once", metav1.ConditionFalse, v1alpha1.ReasonPartiallyBound, "binding pod once-2 failed")
	lift()
	env.WaitBound(t, ns, "once-2")
	env.WaitCondition(t, "PodGroup", ns, "once", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	// Refused for good: partially bound since T.
	refuseBinds(t, env, ns, "refuse-always", "stuck-2")
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("stuck").Gang(3).Obj())
	env.CreatePods(t, lt.Members(ns, "stuck", 3, lt.CPU("1"))...)
	env.WaitBound(t, ns, "stuck-0", "stuck-1")
	c := env.WaitCondition(t, "PodGroup", ns, "stuck", metav1.ConditionFalse, v1alpha1.ReasonPartiallyBound, "binding pod stuck-2 failed")
	since := c.LastTransitionTime.Time
	deadline := since.Add(timeout)
	t.Logf("partially bound since %s: released at %s", since.Format(time.RFC3339), deadline.Format(time.RFC3339))

	first.Kill()
	env.StartProcess(t, "second", opts)

	// Well before the deadline the new scheduler keeps the running pods (it does not take the
	// gang for one a leader left half bound).
	time.Sleep(time.Until(since.Add(timeout / 2)))
	env.WaitBound(t, ns, "stuck-0", "stuck-1")
	for _, p := range kubelets.Removed() {
		t.Errorf("%s removed before the deadline", p.Name)
	}

	testenv.Eventually(t, timeout+time.Minute, "stuck-0 and stuck-1 evicted", func() (bool, string) {
		got := map[string]*v1.Pod{}
		for _, p := range kubelets.Removed() {
			got[p.Name] = p
		}
		return got["stuck-0"] != nil && got["stuck-1"] != nil, fmt.Sprintf("removed %d pods", len(got))
	})
	for _, p := range kubelets.Removed() {
		if p.Name != "stuck-0" && p.Name != "stuck-1" {
			t.Errorf("%s removed: only the partially bound gang is released", p.Name)
			continue
		}
		if p.DeletionTimestamp.Time.Before(deadline.Add(-time.Second)) {
			t.Errorf("%s deleted at %s, before the deadline %s", p.Name, p.DeletionTimestamp.Format(time.RFC3339), deadline.Format(time.RFC3339))
		}
		c := meta.FindStatusCondition(podConditions(p), string(v1.DisruptionTarget))
		if c == nil || c.Reason != podgroup.ReasonGangReleased {
			t.Errorf("%s has no DisruptionTarget condition of reason %s: %+v", p.Name, podgroup.ReasonGangReleased, c)
		}
	}
	// The group's event says why (its condition moves on at once: the gang is placed again).
	env.WaitEvent(t, ns, "stuck", podgroup.ReasonGangReleased, "partially bound for 30s")
}

// podConditions returns a pod's conditions as metav1 conditions, for meta's finders.
func podConditions(p *v1.Pod) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range p.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}
