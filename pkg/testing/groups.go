package testing

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// PodGroupWrapper builds a PodGroup.
type PodGroupWrapper struct{ v1alpha1.PodGroup }

// MakePodGroup returns a basic PodGroup created at Epoch.
func MakePodGroup() *PodGroupWrapper {
	w := &PodGroupWrapper{}
	w.CreationTimestamp = metav1.NewTime(Epoch)
	w.Spec.SchedulingPolicy.Basic = &v1alpha1.BasicSchedulingPolicy{}
	return w
}

// Obj returns the PodGroup.
func (w *PodGroupWrapper) Obj() *v1alpha1.PodGroup { return &w.PodGroup }

// Name sets the name, and the UID to pg-<name> unless one is set.
func (w *PodGroupWrapper) Name(name string) *PodGroupWrapper {
	w.ObjectMeta.Name = name
	if w.ObjectMeta.UID == "" {
		w.ObjectMeta.UID = types.UID("pg-" + name)
	}
	return w
}

// Namespace sets the namespace.
func (w *PodGroupWrapper) Namespace(ns string) *PodGroupWrapper {
	w.ObjectMeta.Namespace = ns
	return w
}

// UID sets the UID.
func (w *PodGroupWrapper) UID(uid string) *PodGroupWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// Created sets the creation time.
func (w *PodGroupWrapper) Created(t time.Time) *PodGroupWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Generation sets the generation.
func (w *PodGroupWrapper) Generation(g int64) *PodGroupWrapper { w.ObjectMeta.Generation = g; return w }

// Gang sets the gang policy with minCount.
func (w *PodGroupWrapper) Gang(minCount int32) *PodGroupWrapper {
	w.Spec.SchedulingPolicy = v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}}
	return w
}

// Leaders lets leaders members of the gang bind before the others exist (gang.leaders).
func (w *PodGroupWrapper) Leaders(leaders int32) *PodGroupWrapper {
	w.Spec.SchedulingPolicy.Gang.Leaders = leaders
	return w
}

// Basic sets the basic policy.
func (w *PodGroupWrapper) Basic() *PodGroupWrapper {
	w.Spec.SchedulingPolicy = v1alpha1.PodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}
	return w
}

// Parent names the CompositePodGroup above; "" for a root.
func (w *PodGroupWrapper) Parent(name string) *PodGroupWrapper {
	w.Spec.ParentCompositePodGroupName = nil
	if name != "" {
		w.Spec.ParentCompositePodGroupName = ptr.To(name)
	}
	return w
}

// Topology adds topology constraints.
func (w *PodGroupWrapper) Topology(c ...v1alpha1.TopologyConstraint) *PodGroupWrapper {
	w.Spec.SchedulingConstraints = withTopology(w.Spec.SchedulingConstraints, c)
	return w
}

// PriorityClass sets priorityClassName.
func (w *PodGroupWrapper) PriorityClass(name string) *PodGroupWrapper {
	w.Spec.PriorityClassName = name
	return w
}

// DisruptedOneByOne sets disruptionMode single: preemptors may take its pods one by one.
func (w *PodGroupWrapper) DisruptedOneByOne() *PodGroupWrapper {
	w.Spec.DisruptionMode = &v1alpha1.DisruptionMode{Single: &v1alpha1.SingleDisruptionMode{}}
	return w
}

// DisruptedWhole sets disruptionMode all: preemptors take its pods together or not at all.
func (w *PodGroupWrapper) DisruptedWhole() *PodGroupWrapper {
	w.Spec.DisruptionMode = &v1alpha1.DisruptionMode{All: &v1alpha1.AllDisruptionMode{}}
	return w
}

// ScheduleTimeout sets scheduleTimeoutSeconds.
func (w *PodGroupWrapper) ScheduleTimeout(seconds int32) *PodGroupWrapper {
	w.Spec.ScheduleTimeoutSeconds = ptr.To(seconds)
	return w
}

// MinResources sets minResources.
func (w *PodGroupWrapper) MinResources(r map[v1.ResourceName]string) *PodGroupWrapper {
	w.Spec.MinResources = resourceList(r)
	return w
}

// Condition sets the PodGroupInitiallyScheduled condition, observing the current generation.
func (w *PodGroupWrapper) Condition(status metav1.ConditionStatus, reason string) *PodGroupWrapper {
	w.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: status, Reason: reason,
		ObservedGeneration: w.ObjectMeta.Generation}}
	return w
}

// CompositePodGroupWrapper builds a CompositePodGroup.
type CompositePodGroupWrapper struct{ v1alpha1.CompositePodGroup }

// MakeCompositePodGroup returns a basic CompositePodGroup created at Epoch.
func MakeCompositePodGroup() *CompositePodGroupWrapper {
	w := &CompositePodGroupWrapper{}
	w.CreationTimestamp = metav1.NewTime(Epoch)
	w.Spec.SchedulingPolicy.Basic = &v1alpha1.BasicSchedulingPolicy{}
	return w
}

// Obj returns the CompositePodGroup.
func (w *CompositePodGroupWrapper) Obj() *v1alpha1.CompositePodGroup { return &w.CompositePodGroup }

// Name sets the name, and the UID to cpg-<name> unless one is set.
func (w *CompositePodGroupWrapper) Name(name string) *CompositePodGroupWrapper {
	w.ObjectMeta.Name = name
	if w.ObjectMeta.UID == "" {
		w.ObjectMeta.UID = types.UID("cpg-" + name)
	}
	return w
}

// Namespace sets the namespace.
func (w *CompositePodGroupWrapper) Namespace(ns string) *CompositePodGroupWrapper {
	w.ObjectMeta.Namespace = ns
	return w
}

// UID sets the UID.
func (w *CompositePodGroupWrapper) UID(uid string) *CompositePodGroupWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// Created sets the creation time.
func (w *CompositePodGroupWrapper) Created(t time.Time) *CompositePodGroupWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Generation sets the generation.
func (w *CompositePodGroupWrapper) Generation(g int64) *CompositePodGroupWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// Gang sets the gang policy with minGroupCount.
func (w *CompositePodGroupWrapper) Gang(minGroupCount int32) *CompositePodGroupWrapper {
	w.Spec.SchedulingPolicy = v1alpha1.CompositePodGroupSchedulingPolicy{
		Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: minGroupCount}}
	return w
}

// Basic sets the basic policy.
func (w *CompositePodGroupWrapper) Basic() *CompositePodGroupWrapper {
	w.Spec.SchedulingPolicy = v1alpha1.CompositePodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}
	return w
}

// Parent names the CompositePodGroup above; "" for a root.
func (w *CompositePodGroupWrapper) Parent(name string) *CompositePodGroupWrapper {
	w.Spec.ParentCompositePodGroupName = nil
	if name != "" {
		w.Spec.ParentCompositePodGroupName = ptr.To(name)
	}
	return w
}

// Topology adds topology constraints.
func (w *CompositePodGroupWrapper) Topology(c ...v1alpha1.TopologyConstraint) *CompositePodGroupWrapper {
	w.Spec.SchedulingConstraints = withTopology(w.Spec.SchedulingConstraints, c)
	return w
}

// PriorityClass sets priorityClassName.
func (w *CompositePodGroupWrapper) PriorityClass(name string) *CompositePodGroupWrapper {
	w.Spec.PriorityClassName = name
	return w
}

// DisruptedOneByOne sets disruptionMode single: its children follow their own modes.
func (w *CompositePodGroupWrapper) DisruptedOneByOne() *CompositePodGroupWrapper {
	w.Spec.DisruptionMode = &v1alpha1.DisruptionMode{Single: &v1alpha1.SingleDisruptionMode{}}
	return w
}

// DisruptedWhole sets disruptionMode all: its whole subtree is one unit to preemptors.
func (w *CompositePodGroupWrapper) DisruptedWhole() *CompositePodGroupWrapper {
	w.Spec.DisruptionMode = &v1alpha1.DisruptionMode{All: &v1alpha1.AllDisruptionMode{}}
	return w
}

// Condition sets the PodGroupInitiallyScheduled condition, observing the current generation.
func (w *CompositePodGroupWrapper) Condition(status metav1.ConditionStatus, reason string) *CompositePodGroupWrapper {
	w.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: status, Reason: reason,
		ObservedGeneration: w.ObjectMeta.Generation}}
	return w
}

// Required is a Required constraint at a level.
func Required(key string) v1alpha1.TopologyConstraint {
	return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired}
}

// Preferred is a Preferred constraint at a level.
func Preferred(key string) v1alpha1.TopologyConstraint {
	return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyPreferred}
}

// Slices is a Required constraint that cuts the group into slices of size, each in one
// domain of the level.
func Slices(key string, size int32) v1alpha1.TopologyConstraint {
	return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired, SliceSize: ptr.To(size)}
}

// Exclusive is a Required constraint that takes a domain of the level to the group alone.
func Exclusive(key string) v1alpha1.TopologyConstraint {
	return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired, Exclusive: true}
}

func withTopology(s *v1alpha1.SchedulingConstraints, c []v1alpha1.TopologyConstraint) *v1alpha1.SchedulingConstraints {
	if s == nil {
		s = &v1alpha1.SchedulingConstraints{}
	}
	s.Topology = append(s.Topology, c...)
	return s
}

// Owner sets the PodGroup's controller.
func (w *PodGroupWrapper) Owner(apiVersion, kind, name, uid string) *PodGroupWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	return w
}

// WorkloadRef names the Workload and its PodGroupTemplate the PodGroup was made from.
func (w *PodGroupWrapper) WorkloadRef(workload, template string) *PodGroupWrapper {
	w.Spec.WorkloadRef = &v1alpha1.WorkloadReference{WorkloadName: workload, TemplateName: template}
	return w
}

// Conditions sets the status conditions as given.
func (w *PodGroupWrapper) Conditions(c ...metav1.Condition) *PodGroupWrapper {
	w.Status.Conditions = c
	return w
}

// Owner sets the CompositePodGroup's controller.
func (w *CompositePodGroupWrapper) Owner(apiVersion, kind, name, uid string) *CompositePodGroupWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	return w
}

// Conditions sets the status conditions as given.
func (w *CompositePodGroupWrapper) Conditions(c ...metav1.Condition) *CompositePodGroupWrapper {
	w.Status.Conditions = c
	return w
}
