package gang

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterCapacityChange},
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

// isSchedulableAfterCapacityChange queues a member that failed for want of room, not one
// still held for missing pods or an invalid tree.
func (pl *Gang) isSchedulableAfterCapacityChange(_ klog.Logger, pod *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	switch pl.groups.Peek(pod).Code {
	case podgroup.Proceed, podgroup.NotMember:
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// isSchedulableAfterGroupChange queues a member when a group of its tree is created, or its
// minCount / minGroupCount is lowered.
func (pl *Gang) isSchedulableAfterGroupChange(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	k, newMin, ok := groupOf(newObj)
	if !ok {
		return fwk.Queue, nil
	}
	if k.Namespace != pod.Namespace || !pl.groups.Related(pod, k) {
		return fwk.QueueSkip, nil
	}
	if oldObj == nil {
		return fwk.Queue, nil
	}
	if _, oldMin, ok := groupOf(oldObj); ok && newMin < oldMin {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

// groupOf reads the key and minimum (minCount or minGroupCount; 1 for basic) of a group
// object, typed or unstructured.
func groupOf(obj any) (podgroup.Key, int32, bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		var typed runtime.Object
		switch u.GetKind() {
		case "PodGroup":
			typed = &v1alpha1.PodGroup{}
		case "CompositePodGroup":
			typed = &v1alpha1.CompositePodGroup{}
		default:
			return podgroup.Key{}, 0, false
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return podgroup.Key{}, 0, false
		}
		obj = typed
	}
	switch g := obj.(type) {
	case *v1alpha1.PodGroup:
		min := int32(1)
		if g.Spec.SchedulingPolicy.Gang != nil {
			min = g.Spec.SchedulingPolicy.Gang.MinCount
		}
		return podgroup.PodGroupKey(g.Namespace, g.Name), min, true
	case *v1alpha1.CompositePodGroup:
		min := int32(1)
		if g.Spec.SchedulingPolicy.Gang != nil {
			min = g.Spec.SchedulingPolicy.Gang.MinGroupCount
		}
		return podgroup.CompositePodGroupKey(g.Namespace, g.Name), min, true
	}
	return podgroup.Key{}, 0, false
}
