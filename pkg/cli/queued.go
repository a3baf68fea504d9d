package cli

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	"github.com/lockstep-sched/lockstep/pkg/kueueworkloads"
)

// A workload Kueue holds has no gang tree yet: Kueue keeps it suspended, and lockstep's
// workload controller makes its groups once it is admitted. get and explain say so, from
// its Kueue Workload: the LocalQueue, its position there (from Kueue's visibility API, where
// it is served) and why it is not admitted.

// kueuePendingWorkloads is the LocalQueue resource of Kueue's visibility API, whose
// pendingworkloads subresource lists a queue's pending Workloads with their positions.
var kueuePendingWorkloads = schema.GroupVersionResource{Group: "visibility.kueue.x-k8s.io", Version: "v1beta1", Resource: "localqueues"}

// queued says, for each ref that no tree holds and that names a workload Kueue holds, what
// Kueue says of it: "job/train is queued in Kueue: LocalQueue team-a, position 3; not
// admitted (Pending): couldn't assign flavors ...". Refs Kueue does not hold are left out;
// without Kueue, or without access to its Workloads, nothing is said.
func queued(ctx context.Context, dyn dynamic.Interface, ns string, refs []tree.Ref) map[tree.Ref]string {
	out := map[tree.Ref]string{}
	if dyn == nil || len(refs) == 0 {
		return out
	}
	list, err := dyn.Resource(kueueworkloads.GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return out // no Kueue, or not allowed to read its Workloads
	}
	for _, r := range refs {
		if r.Kind == "Pod" || r.Kind == "PodGroup" || r.Kind == "CompositePodGroup" || r.Kind == "Workload" {
			continue
		}
		for i := range list.Items {
			w := &list.Items[i]
			owner := metav1.GetControllerOf(w)
			if owner == nil || owner.Name != r.Name || (r.Kind != "" && owner.Kind != r.Kind) {
				continue
			}
			out[r] = fmt.Sprintf("%s %s/%s %s", owner.Kind, w.GetNamespace(), owner.Name, kueueSays(ctx, dyn, w))
			break
		}
	}
	return out
}

// kueueSays is what a Kueue Workload's status says of the workload.
func kueueSays(ctx context.Context, dyn dynamic.Interface, w *unstructured.Unstructured) string {
	queue, _, _ := unstructured.NestedString(w.Object, "spec", "queueName")
	var status struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok, _ := unstructured.NestedMap(w.Object, "status"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status)
	}
	is := func(typ string) *metav1.Condition {
		c := meta.FindStatusCondition(status.Conditions, typ)
		if c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
		return nil
	}
	switch {
	case is("Finished") != nil:
		return fmt.Sprintf("has finished in Kueue (Workload %s)", w.GetName())
	case is("Admitted") != nil:
		return fmt.Sprintf("is admitted by Kueue (Workload %s, LocalQueue %s) and has no gang tree yet: lockstep's workload controller makes it once the workload is resumed and its pods come", w.GetName(), queue)
	}
	parts := []string{fmt.Sprintf("is queued in Kueue: Workload %s, LocalQueue %s", w.GetName(), queue)}
	if pos, ok := position(ctx, dyn, w.GetNamespace(), queue, w.GetName()); ok {
		parts[0] += fmt.Sprintf(", position %d", pos)
	}
	if c := is("Evicted"); c != nil {
		parts = append(parts, fmt.Sprintf("evicted (%s): %s", c.Reason, c.Message))
	}
	if c := meta.FindStatusCondition(status.Conditions, "QuotaReserved"); c != nil && c.Status != metav1.ConditionTrue {
		parts = append(parts, fmt.Sprintf("not admitted (%s): %s", c.Reason, c.Message))
	} else if c == nil {
		parts = append(parts, "not admitted yet (Kueue has not tried it)")
	}
	parts = append(parts, "lockstep makes its gang tree once Kueue admits it")
	return strings.Join(parts, "; ")
}

// position is a pending Workload's position in its LocalQueue (0 is the head), as Kueue's
// visibility API reports it; false where that API is not served or does not list it.
func position(ctx context.Context, dyn dynamic.Interface, ns, queue, name string) (int64, bool) {
	if queue == "" {
		return 0, false
	}
	summary, err := dyn.Resource(kueuePendingWorkloads).Namespace(ns).Get(ctx, queue, metav1.GetOptions{}, "pendingworkloads")
	if err != nil {
		return 0, false
	}
	items, _, _ := unstructured.NestedSlice(summary.Object, "items")
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		if n, _, _ := unstructured.NestedString(m, "metadata", "name"); n != name {
			continue
		}
		if pos, ok, _ := unstructured.NestedInt64(m, "positionInLocalQueue"); ok {
			return pos, true
		}
	}
	return 0, false
}

// unheld returns the refs no tree in roots holds.
func unheld(roots []*tree.Group, refs []tree.Ref) []tree.Ref {
	var out []tree.Ref
	for _, r := range refs {
		if len(tree.Filter(roots, []tree.Ref{r})) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// sayQueued says what Kueue says of the refs it holds, in the order of refs, and returns the
// refs it said nothing of.
func (o *clusterOptions) sayQueued(ctx context.Context, ns string, refs []tree.Ref) (said []string, rest []tree.Ref) {
	var dyn dynamic.Interface
	if o.dynamicClient != nil && len(refs) > 0 {
		dyn, _ = o.dynamicClient()
	}
	held := queued(ctx, dyn, ns, refs)
	for _, r := range refs {
		if s, ok := held[r]; ok {
			said = append(said, s)
		} else {
			rest = append(rest, r)
		}
	}
	return said, rest
}
