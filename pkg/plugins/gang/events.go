package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Custom resources are named <resource>.<version>.<group> in cluster events; the scheduler
// watches them with its dynamic informer and hands the hints unstructured objects.
const (
	podGroupsResource          fwk.EventResource = "podgroups.v1alpha1." + v1alpha1.GroupName
	compositePodGroupsResource fwk.EventResource = "compositepodgroups.v1alpha1." + v1alpha1.GroupName
)

// EventsToRegister returns the events that may make a member rejected by this plugin
// schedulable: a pod of its tree created, a group of its tree created or its minimum
// lowered, or capacity appearing (a node added or grown, a pod leaving a node).
//
// Not a pod bound (AssignedPod/Add): the queue would ask the hint for every member it holds
// at every bind, a million questions while a 1000-pod gang binds next to two waiting ones,
// and a bind never makes a member schedulable (the bound pod was counted when it was
// created). A pod created bound (a restarted scheduler's) is counted by the model, which
// activates the members of a tree its pods make ready.
func (pl *Gang) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.UnscheduledPod, ActionType: fwk.Add}, QueueingHintFn: pl.isSchedulableAfterPodAdded},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterPodDeleted},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint}, QueueingHintFn: pl.isSchedulableAfterCapacityChange},
		{Event: fwk.ClusterEvent{Resource: podGroupsResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: pl.isSchedulableAfterGroupChange},
		{Event: fwk.ClusterEvent{Resource: compositePodGroupsResource, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: pl.isSchedulableAfterGroupChange},
	}, nil
}

// isSchedulableAfterPodAdded queues a member when a pod of its own tree appears: it may be
// the one that completes the gang.
func (pl *Gang) isSchedulableAfterPodAdded(_ klog.Logger, pod *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	added, ok := newObj.(*v1.Pod)
	if !ok {
		return fwk.Queue, nil
	}
	k, ok := pl.groups.GroupOf(added)
	if !ok || added.Namespace != pod.Namespace || !pl.groups.Related(pod, k) {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// isSchedulableAfterPodDeleted queues a member that failed for want of room when a pod leaves
// a node that can then take a pending member of its tree (podgroup.Gate.RoomHelps), and not
// one still held. The queue asks it about every waiting pod at every deletion: a small pod
// leaving a full node retries none of a thousand waiting gangs.
func (pl *Gang) isSchedulableAfterPodDeleted(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if left, ok := oldObj.(*v1.Pod); ok && !pl.groups.RoomHelps(pod, left) {
		return fwk.QueueSkip, nil
	}
	return pl.isSchedulableAfterCapacityChange(logger, pod, oldObj, newObj)
}

// isSchedulableAfterCapacityChange queues a member that failed for want of room, not one
// still held for missing pods or an invalid tree.
func (pl *Gang) isSchedulableAfterCapacityChange(_ klog.Logger, pod *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	if pl.groups.Queueable(pod) {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterGroupChange queues a member when a group of its tree is created, or its
// minCount / minGroupCount is lowered.
func (pl *Gang) isSchedulableAfterGroupChange(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	cur, ok := groupOf(newObj)
	if !ok {
		return fwk.Queue, nil
	}
	old, hadOld := groupOf(oldObj)
	if hadOld && old.generation > 0 && old.generation == cur.generation {
		// Its status or metadata changed, not its spec (lockstep's own condition writes, for
		// the most part): nothing a pending member waits for. Asked for every pending pod at
		// every such write, this answer must be cheap.
		return fwk.QueueSkip, nil
	}
	if cur.key.Namespace != pod.Namespace || !pl.groups.Related(pod, cur.key) {
		return fwk.QueueSkip, nil
	}
	if oldObj == nil {
		return fwk.Queue, nil
	}
	if hadOld && cur.min < old.min {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// groupFacts is what a queueing hint reads of a group object.
type groupFacts struct {
	key podgroup.Key
	// min is minCount or minGroupCount; 1 for basic.
	min        int32
	generation int64
}

// groupOf reads a group object, typed or unstructured (the framework's dynamic informer). An
// unstructured object is read field by field, never converted: a hint runs for every pending
// pod at every change of any group.
func groupOf(obj any) (groupFacts, bool) {
	switch g := obj.(type) {
	case *unstructured.Unstructured:
		var key podgroup.Key
		field := "minCount"
		switch g.GetKind() {
		case "PodGroup":
			key = podgroup.PodGroupKey(g.GetNamespace(), g.GetName())
		case "CompositePodGroup":
			key, field = podgroup.CompositePodGroupKey(g.GetNamespace(), g.GetName()), "minGroupCount"
		default:
			return groupFacts{}, false
		}
		min := int64(1)
		if v, found, err := unstructured.NestedInt64(g.Object, "spec", "schedulingPolicy", "gang", field); err == nil && found {
			min = v
		}
		return groupFacts{key: key, min: int32(min), generation: g.GetGeneration()}, true
	case *v1alpha1.PodGroup:
		min := int32(1)
		if g.Spec.SchedulingPolicy.Gang != nil {
			min = g.Spec.SchedulingPolicy.Gang.MinCount
		}
		return groupFacts{key: podgroup.PodGroupKey(g.Namespace, g.Name), min: min, generation: g.Generation}, true
	case *v1alpha1.CompositePodGroup:
		min := int32(1)
		if g.Spec.SchedulingPolicy.Gang != nil {
			min = g.Spec.SchedulingPolicy.Gang.MinGroupCount
		}
		return groupFacts{key: podgroup.CompositePodGroupKey(g.Namespace, g.Name), min: min, generation: g.Generation}, true
	}
	return groupFacts{}, false
}
