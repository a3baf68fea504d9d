package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PreFilter refuses a member early when its tree cannot be ready any more (pods were
// deleted or the hierarchy changed since PreEnqueue), when the tree is backing off after
// a failed attempt, or when its PodGroup's minResources exceed what the cluster has free; the model retries the tree when the backoff ends, or sooner when the
// cluster changes in a way that may let it fit.
func (pl *Gang) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if podgroup.Planning(state) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	logger := klog.FromContext(ctx)
	v := pl.groups.Check(logger, pod, len(nodes))
	switch v.Code {
	case podgroup.NotMember:
		return nil, fwk.NewStatus(fwk.Skip)
	case podgroup.Proceed:
		short, err := pl.minResourcesShort(pod, v.Group, v.MinResources)
		if err != nil {
			return nil, fwk.AsStatus(err)
		}
		if short == "" {
			return nil, nil
		}
		// Not held: PostFilter fails the gang with this message (its condition says it) and
		// backs it off until the cluster changes.
		logger.V(4).Info("Member refused", "pod", klog.KObj(pod), "group", v.Group, "root", v.Root, "reason", "MinResources", "why", short)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, short)
	case podgroup.BackingOff:
		podgroup.MarkRefused(state)
		return nil, fwk.NewStatus(fwk.Unschedulable, v.Message)
	}
	podgroup.MarkRefused(state)
	logger.V(4).Info("Member refused", "pod", klog.KObj(pod), "group", v.Group, "root", v.Root, "reason", v.Code, "why", v.Message)
	return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Message)
}

// PreFilterExtensions returns nil: the plugin has no Filter.
func (pl *Gang) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
