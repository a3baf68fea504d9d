package podgroup

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Kind tells PodGroups and CompositePodGroups apart; they may share a name.
type Kind string

const (
	// KindPodGroup is a PodGroup: a leaf that holds pods.
	KindPodGroup Kind = "PodGroup"
	// KindCompositePodGroup is a CompositePodGroup: an inner node that holds groups.
	KindCompositePodGroup Kind = "CompositePodGroup"
)

// Key identifies a group.
type Key struct {
	Kind      Kind
	Namespace string
	Name      string
}

// String renders "PodGroup ns/name".
func (k Key) String() string {
	return fmt.Sprintf("%s %s/%s", k.Kind, k.Namespace, k.Name)
}

// PodGroupKey returns the key of a PodGroup.
func PodGroupKey(namespace, name string) Key {
	return Key{Kind: KindPodGroup, Namespace: namespace, Name: name}
}

// CompositePodGroupKey returns the key of a CompositePodGroup.
func CompositePodGroupKey(namespace, name string) Key {
	return Key{Kind: KindCompositePodGroup, Namespace: namespace, Name: name}
}

// GroupNameOf returns the PodGroup a pod names through its label, if any.
func GroupNameOf(pod *v1.Pod) (string, bool) {
	name, ok := pod.Labels[v1alpha1.PodGroupLabel]
	return name, ok && name != ""
}

// labelKeyOf returns the key of the PodGroup a pod names through its label.
func labelKeyOf(pod *v1.Pod) (Key, bool) {
	name, ok := GroupNameOf(pod)
	if !ok {
		return Key{}, false
	}
	return PodGroupKey(pod.Namespace, name), true
}
