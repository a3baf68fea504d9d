package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// EventsToRegister returns the events that may give a refused tree a domain: a node added,
// relabeled or grown, or a pod leaving a node; and a pod of its own tree created, which may
// be the replacement that lets an emptied gang be placed whole (prefilter.go, unanchored).
func (pl *Topology) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable | fwk.UpdateNodeTaint}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add}, QueueingHintFn: pl.isSchedulableAfterTreePodAdded},
	}, nil
}

// isSchedulableAfterPodDeleted queues a member when a pod leaves a node, unless its tree
// failed for want of room and that node cannot take any of its pending members even then
// (podgroup.Gate.RoomHelps): the queue asks about every waiting pod at every deletion.
func (pl *Topology) isSchedulableAfterPodDeleted(_ klog.Logger, pod *v1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	if left, ok := oldObj.(*v1.Pod); ok && !pl.trees.RoomHelps(pod, left) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// isSchedulableAfterTreePodAdded queues a member when a pod of a group of its own tree is
// created.
func (pl *Topology) isSchedulableAfterTreePodAdded(_ klog.Logger, pod *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*v1.Pod)
	if !ok || added.Namespace != pod.Namespace {
		return fwk.QueueSkip, nil
	}
	k, ok := pl.trees.GroupOf(added)
	if !ok {
		return fwk.QueueSkip, nil
	}
	tree, ok := pl.trees.Tree(pod)
	if !ok {
		return fwk.QueueSkip, nil
	}
	hint := fwk.QueueSkip
	tree.Walk(func(g *podgroup.GroupView) {
		if g.Key == k {
			hint = fwk.Queue
		}
	})
	return hint, nil
}
