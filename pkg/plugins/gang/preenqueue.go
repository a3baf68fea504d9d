package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PreEnqueue holds a member out of the scheduling queue until its PodGroup and every
// ancestor exist, the hierarchy is valid, and enough pods exist for its path to the root to
// be ready (or its group was initially scheduled: replacements go one by one). Held pods come
// back through the queueing hints and, since the model and the queue watch through different
// handlers, through the model activating them when their tree becomes ready. A pod whose
// PodGroup does not exist gets an event from the model, once. A member that waits its turn
// (its gang's scout tries the gang for it, or the gang backs off) is held by LockstepScout
// where the profile runs it, which no cluster event asks about (pkg/plugins/scout).
func (pl *Gang) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	logger := klog.FromContext(ctx)
	v := pl.groups.Admit(logger, pod)
	switch {
	case v.Code == podgroup.NotMember:
		return nil
	case v.Code == podgroup.Proceed:
		logger.V(5).Info("Member may be scheduled", "pod", klog.KObj(pod), "group", v.Group, "root", v.Root)
		return nil
	case v.Code.AwaitsTurn() && pl.groups.TurnsHeld(pl.handle.ProfileName()):
		logger.V(5).Info("Member waits its turn: held by LockstepScout", "pod", klog.KObj(pod), "group", v.Group, "root", v.Root, "reason", v.Code)
		return nil
	}
	logger.V(4).Info("Member held", "pod", klog.KObj(pod), "group", v.Group, "root", v.Root, "reason", v.Code, "why", v.Message)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Message)
}
