package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// PostFilter drops the plan of a member that failed on its planned node (a taint, an
// affinity, a port the planner does not model): the next attempt plans the tree again
// instead of sending the member back to the same node. It never makes a pod schedulable.
func (pl *Topology) PostFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	sum, ok := pl.groups.Summary(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if plan := pl.groups.Plan(sum.Root); plan != nil {
		if _, planned := plan.Pods[pod.UID]; planned && pl.groups.DropPlan(sum.Root) {
			metrics.replans.WithLabelValues("filter").Inc()
		}
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}
