package topology

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister returns the events that may give a refused tree a domain: a node added,
// relabeled or grown, or a pod leaving a node.
func (pl *Topology) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}
