package testing

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// MakePod returns a pod of lockstep's profile, created at Epoch.
func MakePod() *st.PodWrapper {
	return st.MakePod().SchedulerName(SchedulerName).CreationTimestamp(metav1.NewTime(Epoch))
}

// Member returns pod <group>-<i> of lockstep's profile in namespace, named into PodGroup
// group by its label (its UID is its name).
func Member(namespace, group string, i int) *st.PodWrapper {
	name := fmt.Sprintf("%s-%d", group, i)
	return MakePod().Namespace(namespace).Name(name).UID(name).Label(v1alpha1.PodGroupLabel, group)
}

// GroupPod returns pod name of lockstep's profile in namespace, named into PodGroup group by
// its label ("" for no group).
func GroupPod(namespace, name, group string) *st.PodWrapper {
	p := MakePod().Namespace(namespace).Name(name).UID(name)
	if group != "" {
		p = p.Label(v1alpha1.PodGroupLabel, group)
	}
	return p
}

// Members returns n members of group, <group>-0 to <group>-(n-1), with req's requests.
func Members(namespace, group string, n int, req map[v1.ResourceName]string) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = Member(namespace, group, i).Req(req).Obj()
	}
	return out
}

// CPU is a request of cores, for st.PodWrapper.Req and st.NodeWrapper.Capacity.
func CPU(cores string) map[v1.ResourceName]string {
	return map[v1.ResourceName]string{v1.ResourceCPU: cores}
}

// ControlledBy sets a pod's controller (its only owner reference), as the controller that
// created it would.
func ControlledBy(p *st.PodWrapper, apiVersion, kind, name, uid string) *st.PodWrapper {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	return p
}

// InPriorityClass sets a pod's priorityClassName (the apiserver resolves its priority and
// preemption policy from the class; st.PodWrapper.Priority sets the priority alone).
func InPriorityClass(p *st.PodWrapper, class string) *st.PodWrapper {
	p.Spec.PriorityClassName = class
	return p
}
