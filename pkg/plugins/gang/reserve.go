package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Reserve counts the member as holding a reservation, so that Permit sees how much of the
// tree is placed. The pod given is the scheduler's copy: the model never makes a member of
// it (membership comes from informer events only).
func (pl *Gang) Reserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if podgroup.Planning(state) {
		return nil // the planner holding a member's devices while it plans, not a reservation
	}
	pl.permits.Reserve(klog.FromContext(ctx), pod, nodeName)
	return nil
}

// Unreserve forgets the member's reservation. A waiting member the framework rejected stops
// counting (and its tree's other waiters are released if the tree can no longer be ready); a
// member allowed to bind whose bind failed leaves its gang partially bound, which the group's
// condition reports.
func (pl *Gang) Unreserve(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ string) {
	if podgroup.Planning(state) {
		return
	}
	pl.permits.Unreserve(klog.FromContext(ctx), pod)
}
