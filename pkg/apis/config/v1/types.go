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
	// jobGroupTimeoutSeconds is how long pods of a Job that gets a gang wait for the Job's
	// PodGroup; after that they are scheduled without gang semantics. Default 120.
	// +optional
	JobGroupTimeoutSeconds *int64 `json:"jobGroupTimeoutSeconds,omitempty"`
	// reserveAfterSeconds is how long a gang fails to fit before a domain is held for it (a
	// reservation), if it could fit once running pods of lower or equal priority end. A
	// root group's spec.reserveAfterSeconds overrides it. Default 300; 0 turns reservations
	// off.
	// +optional
	ReserveAfterSeconds *int64 `json:"reserveAfterSeconds,omitempty"`
	// reservationTimeoutSeconds bounds how long a gang holds one reservation; then the gang
	// waits its turn again. Default 1800.
	// +optional
	ReservationTimeoutSeconds *int64 `json:"reservationTimeoutSeconds,omitempty"`
	// partialBindTimeoutSeconds bounds how long a gang stays partially bound (a member it was
	// allowed with failed to bind) while the member is retried alone; then the gang is
	// released whole, unless it says disruptionMode single (it keeps running short).
	// Default 300.
	// +optional
	PartialBindTimeoutSeconds *int64 `json:"partialBindTimeoutSeconds,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LockstepTopologyArgs configures the LockstepTopology plugin.
type LockstepTopologyArgs struct {
	metav1.TypeMeta `json:",inline"`

	// levels are the node label keys of the topology levels, broadest first. Default:
	// topology.kubernetes.io/zone, topology.kubernetes.io/block, topology.kubernetes.io/rack,
	// kubernetes.io/hostname.
	// +optional
	// +listType=atomic
	Levels []string `json:"levels,omitempty"`
	// planTTLSeconds is how long a placement plan keeps capacity promised to a tree whose
	// members have not all been placed. Default 60.
	// +optional
	PlanTTLSeconds *int64 `json:"planTTLSeconds,omitempty"`
	// planTimeLimitMilliseconds bounds the time of one plan: within it every candidate domain
	// of every level is considered (best fit first, backtracking to the parent's next
	// domain). Default 200.
	// +optional
	PlanTimeLimitMilliseconds *int32 `json:"planTimeLimitMilliseconds,omitempty"`
	// planUnconstrainedGangs plans gangs without topology constraints too: each member is
	// packed onto a node chosen once per gang (the fullest of a sample of nodes with room)
	// instead of being filtered and scored against the whole cluster. Gangs whose pods carry
	// inter-pod affinities, topology spread constraints or preferred node affinity are
	// always scored by the scheduler. Default true.
	// +optional
	PlanUnconstrainedGangs *bool `json:"planUnconstrainedGangs,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LockstepBindArgs configures the LockstepBind plugin, which binds pods through a client of
// its own so that binds never queue behind the scheduler's status writes.
type LockstepBindArgs struct {
	metav1.TypeMeta `json:",inline"`

	// maxBindsInFlight is the most bind requests the profile has outstanding at once. Below
	// it, how many go out at once adapts to what the apiserver sustains: a window that starts
	// at 32, grows while binds succeed promptly and shrinks when the apiserver refuses
	// (429), fails or slows them; binds beyond it wait their turn in the order they came.
	// Default 1024.
	// +optional
	MaxBindsInFlight *int32 `json:"maxBindsInFlight,omitempty"`
	// qps is the bind client's rate limit, in requests per second. Default 0: the
	// scheduler's clientConnection.qps.
	// +optional
	QPS *int32 `json:"qps,omitempty"`
	// burst is the bind client's burst. Default 0: the scheduler's clientConnection.burst.
	// +optional
	Burst *int32 `json:"burst,omitempty"`
}
