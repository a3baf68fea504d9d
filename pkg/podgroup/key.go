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

// API tells lockstep's groups (scheduling.lockstep.dev) from the native ones of the same
// kind and name (scheduling.k8s.io, served by clusters that enable the workload gates): both
// may exist in one namespace, and are different groups.
type API string

const (
	// APILockstep is lockstep's own kinds.
	APILockstep API = ""
	// APINative is the upstream scheduling.k8s.io kinds.
	APINative API = "scheduling.k8s.io"
)

// Key identifies a group.
type Key struct {
	Kind      Kind
	Namespace string
	Name      string
	API       API
}

// String renders "PodGroup ns/name", "PodGroup.scheduling.k8s.io ns/name" for a native
// group; "" for the zero key.
func (k Key) String() string {
	if k == (Key{}) {
		return ""
	}
	if k.API != APILockstep {
		return fmt.Sprintf("%s.%s %s/%s", k.Kind, k.API, k.Namespace, k.Name)
	}
	return fmt.Sprintf("%s %s/%s", k.Kind, k.Namespace, k.Name)
}

// Native reports whether the key is of a native scheduling.k8s.io group.
func (k Key) Native() bool { return k.API == APINative }

// As returns the key of the group of kind and name in k's namespace and API: a group names
// its parent, a pod its PodGroup, within its own API.
func (k Key) As(kind Kind, name string) Key {
	return Key{Kind: kind, Namespace: k.Namespace, Name: name, API: k.API}
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
	if k.Name != o.Name {
		return k.Name < o.Name
	}
	return k.API < o.API
}
