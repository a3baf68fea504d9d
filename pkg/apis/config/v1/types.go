package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LockstepGangArgs configures the LockstepGang plugin.
type LockstepGangArgs struct {
	metav1.TypeMeta `json:",inline"`

	// permitTimeoutSeconds is how long a pod with a reserved node waits for the rest of its
	// gang before all reservations of the gang are released. Default 60. A PodGroup's
	// spec.scheduleTimeoutSeconds overrides it.
	// +optional
	PermitTimeoutSeconds *int64 `json:"permitTimeoutSeconds,omitempty"`
	// backoffSeconds is how long a gang is held back after a failed attempt. Default 10.
	// +optional
	BackoffSeconds *int64 `json:"backoffSeconds,omitempty"`
}
