package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// PostFilter drops the plan of a member that failed on its planned node (a taint, an
// affinity, a port the planner does not model): the next attempt plans the tree again
// instead of sending the member back to the same node. It never makes a pod schedulable.
func (pl *Topology) PostFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	sum, ok := pl.trees.Summary(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if plan := pl.plans.Get(sum.Root); plan != nil {
		if pp, planned := plan.Pods[pod.UID]; planned && pl.plans.Drop(sum.Root) {
			metrics.replans.WithLabelValues("filter").Inc()
			klog.FromContext(ctx).V(4).Info("Member failed on its planned node; the tree is planned again", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "node", pp.Node)
		}
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}
