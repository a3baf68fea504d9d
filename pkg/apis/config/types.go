package config

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LockstepGangArgs configures the LockstepGang plugin.
type LockstepGangArgs struct {
	metav1.TypeMeta

	// PermitTimeoutSeconds is how long a pod with a reserved node waits at Permit for the rest
	// of its gang before all reservations of the gang are released. A PodGroup's
	// spec.scheduleTimeoutSeconds overrides it.
	PermitTimeoutSeconds int64
	// BackoffSeconds is how long a gang is held back after an attempt failed, so that its
	// members do not take reservations again at every cluster event.
	BackoffSeconds int64
}
