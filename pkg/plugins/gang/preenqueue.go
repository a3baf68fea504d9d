package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PreEnqueue holds a member out of the scheduling queue until its PodGroup and every
// ancestor exist, the hierarchy is valid, and enough pods exist for its path to the root to
// be ready. Held pods come back through the queueing hints and, since the model and the
// queue watch through different informers, through the model activating them when their
// tree becomes ready.
func (pl *Gang) PreEnqueue(_ context.Context, pod *v1.Pod) *fwk.Status {
	v := pl.groups.Check(pod, false)
	switch v.Code {
	case podgroup.NotMember, podgroup.Proceed:
		return nil
	case podgroup.MissingGroup:
		// No group object to carry a condition: tell the pod, once.
		if pl.groups.FirstNotice(pod.UID) {
			pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, "PodGroupNotFound", "Scheduling", "%s", v.Message)
		}
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Message)
}
