package podgroup

import (
	"fmt"
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

// String renders "PodGroup ns/name"; "" for the zero key.
func (k Key) String() string {
	if k == (Key{}) {
		return ""
	}
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

// Less orders keys by kind, namespace and name.
func (k Key) Less(o Key) bool {
	if k.Kind != o.Kind {
		return k.Kind < o.Kind
	}
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	return k.Name < o.Name
}
