package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Reserve tells the topologies that the pod's node changed: the scheduler assumed the pod
// there, and the next cycle's snapshot has it before any informer event does (NodeChanges).
func (pl *Topology) Reserve(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeName string) *fwk.Status {
	pl.changes.Note(nodeName)
	return nil
}

// Unreserve tells the topologies that the pod's node changed again: the scheduler forgets
// the pod there.
func (pl *Topology) Unreserve(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeName string) {
	pl.changes.Note(nodeName)
}
