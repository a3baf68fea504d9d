package topology

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PostFilter handles a member that failed on its planned node (the cluster changed since the
// plan, or a filter the plan could not foresee): the plan is dropped and the node recorded as
// refused, so that the tree is planned again without it, never the same refused plan twice.
// It never makes a pod schedulable.
func (pl *Topology) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if podgroup.Held(state) {
		// The gang refused the member before Filter ran: no node refused anything.
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	sum, ok := pl.trees.Summary(pod)
	if !ok {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if plan := pl.plans.Get(sum.Root); plan != nil {
		if pp, planned := plan.Pods[pod.UID]; planned && pl.plans.Drop(sum.Root) {
			why := "refused by Filter"
			if s := statuses.Get(pp.Node); s != nil && !s.IsSuccess() && len(s.Reasons()) > 0 {
				why = strings.Join(s.Reasons(), ", ")
			}
			pl.plans.Refuse(sum.Root, pp.Node, why, pl.planTTL)
			metrics.replans.WithLabelValues("filter").Inc()
			klog.FromContext(ctx).V(4).Info("Member refused on its planned node; the tree is planned again without it", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "node", pp.Node, "why", why)
		}
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}
