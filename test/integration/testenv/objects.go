package testenv

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// Namespace creates a namespace for the test.
func (e *Env) Namespace(t *testing.T, name string) string {
	t.Helper()
	_, err := e.Client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// CreateNodes creates nodes.
func (e *Env) CreateNodes(t *testing.T, nodes ...*v1.Node) {
	t.Helper()
	for _, n := range nodes {
		if err := e.createNode(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
}

// CreatePods creates pods.
func (e *Env) CreatePods(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := e.createPod(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
}

// CreatePodGroups creates PodGroups, in the test's GroupAPI: lockstep's, or the native
// v1beta1 PodGroups that say the same (podgroup.ToNativePodGroup).
func (e *Env) CreatePodGroups(t *testing.T, pgs ...*v1alpha1.PodGroup) {
	t.Helper()
	for _, pg := range pgs {
		if err := e.createPodGroup(context.Background(), pg); err != nil {
			t.Fatal(err)
		}
	}
}

// bulkWorkers is how many creations CreateInBulk keeps in flight.
const bulkWorkers = 16

// CreateInBulk creates nodes, then PodGroups, then pods, each kind bulkWorkers requests at a
// time and in no order within it, for tests that build a cluster of thousands: one request at
// a time, 10,000 gangs of 8 were still being created half an hour in beside the scheduler
// trying them. A test that needs objects of a kind in order creates them one by one.
func (e *Env) CreateInBulk(t *testing.T, nodes []*v1.Node, pgs []*v1alpha1.PodGroup, pods []*v1.Pod) {
	t.Helper()
	bulk(t, nodes, e.createNode)
	bulk(t, pgs, e.createPodGroup)
	bulk(t, pods, e.createPod)
}

// bulk runs create on every object, bulkWorkers at a time, and fails the test with the first
// error once they have all returned.
func bulk[T any](t *testing.T, objs []T, create func(context.Context, T) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var first error
	workqueue.ParallelizeUntil(ctx, bulkWorkers, len(objs), func(i int) {
		if err := create(ctx, objs[i]); err != nil {
			once.Do(func() { first = err; cancel() })
		}
	})
	if first != nil {
		t.Fatal(first)
	}
}

func (e *Env) createNode(ctx context.Context, n *v1.Node) error {
	_, err := e.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	return err
}

func (e *Env) createPod(ctx context.Context, p *v1.Pod) error {
	p = e.inGroupAPI(p)
	_, err := e.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	return err
}

func (e *Env) createPodGroup(ctx context.Context, pg *v1alpha1.PodGroup) error {
	if e.GroupAPI == podgroup.APINative {
		native := podgroup.ToNativePodGroup(pg)
		if native.Spec.ParentCompositePodGroupName != nil && native.Spec.WorkloadRef == nil {
			// Required of a native PodGroup with a parent.
			native.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: "workload", TemplateName: pg.Name}
		}
		_, err := e.Client.SchedulingV1beta1().PodGroups(pg.Namespace).Create(ctx, native, metav1.CreateOptions{})
		return err
	}
	_, err := e.Lockstep.SchedulingV1alpha1().PodGroups(pg.Namespace).Create(ctx, pg, metav1.CreateOptions{})
	return err
}

// CreateComposites creates CompositePodGroups, in the test's GroupAPI (native: v1alpha3,
// and a workloadRef, which the native kind requires, if the group has none).
func (e *Env) CreateComposites(t *testing.T, cpgs ...*v1alpha1.CompositePodGroup) {
	t.Helper()
	ctx := context.Background()
	for _, c := range cpgs {
		var err error
		if e.GroupAPI == podgroup.APINative {
			native := podgroup.ToNativeCompositePodGroup(c)
			if native.Spec.WorkloadRef == nil {
				native.Spec.WorkloadRef = &schedulingv1alpha3.WorkloadReference{WorkloadName: c.Name, TemplateName: c.Name}
			}
			_, err = e.Client.SchedulingV1alpha3().CompositePodGroups(c.Namespace).Create(ctx, native, metav1.CreateOptions{})
		} else {
			_, err = e.Lockstep.SchedulingV1alpha1().CompositePodGroups(c.Namespace).Create(ctx, c, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// GroupRef is how lockstep's messages name a group of the test's GroupAPI: "PodGroup ns/name",
// "PodGroup.scheduling.k8s.io ns/name" for a native one.
func (e *Env) GroupRef(kind, ns, name string) string {
	return podgroup.Key{Kind: podgroup.Kind(kind), Namespace: ns, Name: name, API: e.GroupAPI}.String()
}

// inGroupAPI returns a pod as the test's GroupAPI makes members: lockstep's label naming its
// PodGroup, or (native) the pod's spec.schedulingGroup naming it, without the label.
func (e *Env) inGroupAPI(p *v1.Pod) *v1.Pod {
	name, ok := p.Labels[v1alpha1.PodGroupLabel]
	if e.GroupAPI != podgroup.APINative || !ok {
		return p
	}
	p = p.DeepCopy()
	delete(p.Labels, v1alpha1.PodGroupLabel)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
	return p
}

// Placement maps pod name to node name ("" while unbound) for every pod of ns.
func (e *Env) Placement(t *testing.T, ns string) map[string]string {
	t.Helper()
	list, err := e.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

// OnLatest runs change, a read, edit and write of one object, again on the latest
// version while the write conflicts: controllers and the scheduler write the objects a
// test edits (a Job's or a PodGroup's status, a pod's conditions), as they would under
// kubectl edit.
func OnLatest(t testing.TB, change func() error) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, change); err != nil {
		t.Fatal(err)
	}
}

// Eventually polls cond until it holds or the timeout passes, then fails the test with what
// it last saw. Scenarios wait on observable outcomes (bindings, conditions), never on sleeps.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
	}
}

// WaitBound waits until every named pod of ns is bound, and returns the placement.
func (e *Env) WaitBound(t *testing.T, ns string, names ...string) map[string]string {
	t.Helper()
	return e.WaitBoundWithin(t, 60*time.Second, ns, names...)
}

// WaitBoundWithin is WaitBound for a wait a test bounds itself.
func (e *Env) WaitBoundWithin(t *testing.T, d time.Duration, ns string, names ...string) map[string]string {
	t.Helper()
	var placed map[string]string
	Eventually(t, d, fmt.Sprintf("pods %v bound", names), func() (bool, string) {
		placed = e.Placement(t, ns)
		for _, n := range names {
			if placed[n] == "" {
				return false, fmt.Sprint(placed)
			}
		}
		return true, ""
	})
	return placed
}

// AssertUnbound fails if any named pod of ns is bound.
func (e *Env) AssertUnbound(t *testing.T, ns string, names ...string) {
	t.Helper()
	placed := e.Placement(t, ns)
	for _, n := range names {
		if placed[n] != "" {
			t.Fatalf("pod %s/%s is bound to %s, want unbound; placement: %v", ns, n, placed[n], placed)
		}
	}
}

// PodScheduled returns a pod's PodScheduled condition, nil if it has none.
func (e *Env) PodScheduled(t *testing.T, ns, name string) *v1.PodCondition {
	t.Helper()
	p, err := e.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, c := podutil.GetPodCondition(&p.Status, v1.PodScheduled)
	return c
}

// WaitUnschedulable waits until a pod's PodScheduled condition is False with a message that
// contains substr, and fails if the pod binds meanwhile.
func (e *Env) WaitUnschedulable(t *testing.T, ns, name, substr string) {
	t.Helper()
	Eventually(t, 30*time.Second, fmt.Sprintf("pod %s unschedulable: %q", name, substr), func() (bool, string) {
		if node := e.Placement(t, ns)[name]; node != "" {
			t.Fatalf("pod %s/%s bound to %s, want it unschedulable: %s", ns, name, node, substr)
		}
		c := e.PodScheduled(t, ns, name)
		return c != nil && c.Status == v1.ConditionFalse && strings.Contains(c.Message, substr), fmt.Sprint(c)
	})
}

// GroupCondition returns the PodGroupInitiallyScheduled condition of a PodGroup or
// CompositePodGroup (kind "PodGroup" or "CompositePodGroup").
func (e *Env) GroupCondition(t *testing.T, kind, ns, name string) *metav1.Condition {
	t.Helper()
	return e.GroupConditionOfType(t, kind, ns, name, v1alpha1.PodGroupInitiallyScheduled)
}

// GroupConditionOfType returns the group's condition of type condType, nil if it has none.
func (e *Env) GroupConditionOfType(t *testing.T, kind, ns, name, condType string) *metav1.Condition {
	t.Helper()
	ctx := context.Background()
	var conds []metav1.Condition
	switch {
	case e.GroupAPI == podgroup.APINative && kind == "PodGroup":
		pg, err := e.Client.SchedulingV1beta1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds = pg.Status.Conditions
	case e.GroupAPI == podgroup.APINative && kind == "CompositePodGroup":
		cpg, err := e.Client.SchedulingV1alpha3().CompositePodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds = cpg.Status.Conditions
	case kind == "PodGroup":
		pg, err := e.Lockstep.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds = pg.Status.Conditions
	case kind == "CompositePodGroup":
		cpg, err := e.Lockstep.SchedulingV1alpha1().CompositePodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds = cpg.Status.Conditions
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	return meta.FindStatusCondition(conds, condType)
}

// WaitCondition waits until the group carries the condition with this status and reason,
// and a message containing substr; it returns the condition.
func (e *Env) WaitCondition(t *testing.T, kind, ns, name string, status metav1.ConditionStatus, reason, substr string) *metav1.Condition {
	t.Helper()
	return e.WaitConditionOfType(t, kind, ns, name, v1alpha1.PodGroupInitiallyScheduled, status, reason, substr)
}

// WaitConditionOfType is WaitCondition for the condition of type condType.
func (e *Env) WaitConditionOfType(t *testing.T, kind, ns, name, condType string, status metav1.ConditionStatus, reason, substr string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	Eventually(t, 60*time.Second, fmt.Sprintf("%s %s/%s condition %s %s/%s %q", kind, ns, name, condType, status, reason, substr), func() (bool, string) {
		got = e.GroupConditionOfType(t, kind, ns, name, condType)
		if got == nil {
			return false, "no condition"
		}
		ok := got.Status == status && got.Reason == reason && containsStr(got.Message, substr)
		return ok, fmt.Sprintf("%s/%s %q", got.Status, got.Reason, got.Message)
	})
	return got
}

// WaitEvent waits for an event regarding the named object whose note contains substr.
func (e *Env) WaitEvent(t *testing.T, ns, name, reason, substr string) {
	t.Helper()
	Eventually(t, 60*time.Second, fmt.Sprintf("event %s on %s/%s containing %q", reason, ns, name, substr), func() (bool, string) {
		list, err := e.Client.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.Regarding.Name != name {
				continue
			}
			seen = append(seen, ev.Reason+": "+ev.Note)
			if ev.Reason == reason && containsStr(ev.Note, substr) {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
}

// WaitEventOn waits for an event regarding obj itself (its kind, name and UID, as kubectl
// describe finds events) with reason and a note containing substr.
func (e *Env) WaitEventOn(t *testing.T, obj metav1.Object, kind, reason, substr string) {
	t.Helper()
	Eventually(t, 60*time.Second, fmt.Sprintf("event %s on %s %s/%s containing %q", reason, kind, obj.GetNamespace(), obj.GetName(), substr), func() (bool, string) {
		list, err := e.Client.EventsV1().Events(obj.GetNamespace()).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.Regarding.Kind != kind || ev.Regarding.Name != obj.GetName() || ev.Regarding.UID != obj.GetUID() {
				continue
			}
			seen = append(seen, ev.Reason+": "+ev.Note)
			if ev.Reason == reason && containsStr(ev.Note, substr) {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
}

func containsStr(s, sub string) bool {
	return strings.Contains(s, sub)
}

// NodeDomain returns a node's domain at a topology level as the API's node object says (its
// label level), "" when it has none: an oracle that does not trust node names.
func (e *Env) NodeDomain(t *testing.T, node, level string) string {
	t.Helper()
	n, err := e.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Labels[level]
}

// Domain returns the zone, block or rack of a node named by lt.TopologyNodes.
func Domain(node, level string) string {
	parts := strings.Split(node, "-")
	switch level {
	case lt.ZoneKey:
		return parts[0]
	case lt.BlockKey:
		return strings.Join(parts[:2], "-")
	case lt.RackKey:
		return strings.Join(parts[:3], "-")
	}
	return node
}

// Gated holds a pod back with a scheduling gate nobody but the test lifts (Ungate).
func Gated(p *v1.Pod) *v1.Pod {
	p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "lockstep.test/hold"}}
	return p
}

// Ungate lifts the scheduling gates of a pod.
func (e *Env) Ungate(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	OnLatest(t, func() error {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.SchedulingGates = nil
		_, err = e.Client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

// DeletePods deletes pods at once (no grace period).
func (e *Env) DeletePods(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := e.Client.CoreV1().Pods(ns).Delete(context.Background(), n, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
}

// DeleteNode deletes a node.
func (e *Env) DeleteNode(t *testing.T, name string) {
	t.Helper()
	if err := e.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// SetMinCount changes a gang PodGroup's minCount.
func (e *Env) SetMinCount(t *testing.T, ns, name string, minCount int32) {
	t.Helper()
	ctx := context.Background()
	OnLatest(t, func() error {
		if e.GroupAPI == podgroup.APINative {
			pg, err := e.Client.SchedulingV1beta1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pg.Spec.SchedulingPolicy.Gang.MinCount = minCount // mutable, as lockstep's
			_, err = e.Client.SchedulingV1beta1().PodGroups(ns).Update(ctx, pg, metav1.UpdateOptions{})
			return err
		}
		pg, err := e.Lockstep.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pg.Spec.SchedulingPolicy.Gang.MinCount = minCount
		_, err = e.Lockstep.SchedulingV1alpha1().PodGroups(ns).Update(ctx, pg, metav1.UpdateOptions{})
		return err
	})
}

// WaitWaiting waits until every named pod waits at Permit for its gang: it holds a node
// (the scheduler writes it as nominatedNodeName before the wait, under NominatedWaiting:
// lockstep's binary does not by default) and is not bound. It returns the node of each.
func (e *Env) WaitWaiting(t *testing.T, ns string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	Eventually(t, 60*time.Second, fmt.Sprintf("pods %v waiting at Permit", names), func() (bool, string) {
		for _, n := range names {
			p, err := e.Client.CoreV1().Pods(ns).Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if p.Spec.NodeName != "" || p.Status.NominatedNodeName == "" {
				return false, fmt.Sprintf("%s: node %q, nominated %q", n, p.Spec.NodeName, p.Status.NominatedNodeName)
			}
			out[n] = p.Status.NominatedNodeName
		}
		return true, ""
	})
	return out
}

// BoundCount returns how many of the named pods of ns are bound.
func (e *Env) BoundCount(t *testing.T, ns string, names ...string) int {
	t.Helper()
	placed := e.Placement(t, ns)
	n := 0
	for _, name := range names {
		if placed[name] != "" {
			n++
		}
	}
	return n
}
