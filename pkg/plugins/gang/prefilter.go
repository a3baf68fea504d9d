package gang

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// refusedKey marks in the cycle state that PreFilter refused the pod, so that PostFilter does
// not count the refusal as a placement failure of the gang.
const refusedKey fwk.StateKey = Name + "/refused"

type refused struct{}

func (refused) Clone() fwk.StateData { return refused{} }

// PreFilter refuses a member early when its tree cannot be ready any more (pods were
// deleted or the hierarchy changed since PreEnqueue) or when the tree is backing off after
// a failed attempt; in the latter case the tree is activated again when the backoff ends.
func (pl *Gang) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	v := pl.groups.Check(pod, true)
	switch v.Code {
	case podgroup.NotMember:
		return nil, fwk.NewStatus(fwk.Skip)
	case podgroup.Proceed:
		return nil, nil
	case podgroup.BackingOff:
		state.Write(refusedKey, refused{})
		if v.ScheduleRetry {
			pl.retryAfter(v.Root, v.Retry)
		}
		return nil, fwk.NewStatus(fwk.Unschedulable, v.Message)
	}
	state.Write(refusedKey, refused{})
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Message)
}

// PreFilterExtensions returns nil: the plugin has no Filter.
func (pl *Gang) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// retryAfter activates the pending members of root once its backoff ends, if a member was
// turned away during it.
func (pl *Gang) retryAfter(root podgroup.Key, d time.Duration) {
	time.AfterFunc(d, func() {
		pl.activate(pl.groups.TakeRetry(root))
	})
}

// activate moves pods to the active queue.
func (pl *Gang) activate(pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	byKey := make(map[string]*v1.Pod, len(pods))
	for _, p := range pods {
		byKey[p.Namespace+"/"+p.Name] = p
	}
	pl.handle.Activate(pl.logger, byKey)
}
