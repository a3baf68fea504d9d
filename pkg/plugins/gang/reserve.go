package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Reserve counts the member as assumed, so that Permit sees how much of the tree is placed.
func (pl *Gang) Reserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	pl.groups.Assume(pod, nodeName)
	return nil
}

// Unreserve forgets the member's reservation. If the member was still waiting at Permit, its
// wait timed out: the rest of its tree's waiting members are rejected with it, so that a gang
// that cannot complete releases all of its reservations at once.
func (pl *Gang) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	pl.apply(pl.groups.Unreserve(pod, pl.backoff))
}

// apply rejects the waiting members of a failed tree and arranges its retry after backoff.
func (pl *Gang) apply(rej podgroup.Rejection) {
	for _, p := range rej.Reject {
		if wp := pl.waitingPod(p); wp != nil {
			wp.Reject(Name, rej.Message)
		}
	}
	if rej.Backoff {
		pl.retryAfter(rej.Root, pl.backoff)
	}
}

// waitingPod finds a pod waiting at Permit in the framework of its own profile.
func (pl *Gang) waitingPod(pod *v1.Pod) fwk.WaitingPod {
	h := pl.handle
	if pod.Spec.SchedulerName != h.ProfileName() {
		if h = pl.groups.Handle(pod); h == nil {
			return nil
		}
	}
	return h.GetWaitingPod(pod.UID)
}
