package gang

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PostFilter runs when a member fits on no node. If its tree can no longer be ready without
// it (and the other members that failed in this attempt), the model rejects every waiting
// member of the tree, releasing their reservations, and backs the tree off; a subtree that
// can no longer be ready releases its own. The pod stays unschedulable, so other PostFilter
// plugins (preemption) still run.
func (pl *Gang) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if podgroup.Refused(state) {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	msg := pl.permits.Fail(klog.FromContext(ctx), pod, pl.describe(statuses), pl.policy)
	if msg == "" {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, msg)
}

// explicitStatuses is the scheduler's NodeToStatus: the nodes with a status of their own, and
// one status for the others.
type explicitStatuses interface {
	Len() int
	AbsentNodesStatus() *fwk.Status
	ForEachExplicitNode(fn func(nodeName string, status *fwk.Status))
}

// describe summarizes why the pod fit nowhere, like the scheduler's FitError, every reason
// given, the deciding first (podgroup.DecidingFirst): "0/3 nodes are available: 3
// Insufficient cpu".
func (pl *Gang) describe(statuses fwk.NodeToStatusReader) string {
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return "no node fits"
	}
	counts := map[string]int{}
	count := func(s *fwk.Status, n int) {
		if s == nil || s.IsSuccess() {
			return
		}
		for _, r := range s.Reasons() {
			counts[r] += n
		}
	}
	if m, ok := statuses.(explicitStatuses); ok {
		// The nodes the cycle gave a status of their own, then the others at once: a pod
		// refused at PreFilter (a gang whose plan found no room) has no node of its own, and
		// reading every node's status cost a waiting gang's try as much as its plan.
		m.ForEachExplicitNode(func(_ string, s *fwk.Status) { count(s, 1) })
		count(m.AbsentNodesStatus(), len(nodes)-m.Len())
	} else {
		for _, n := range nodes {
			count(statuses.Get(n.Node().Name), 1)
		}
	}
	reasons := podgroup.DecidingFirst(counts)
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	return fmt.Sprintf("0/%d nodes are available: %s", len(nodes), strings.Join(reasons, ", "))
}
