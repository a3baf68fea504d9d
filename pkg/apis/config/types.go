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
	// JobGroupTimeoutSeconds is how long pods of a Job that gets a gang wait for the Job's
	// PodGroup to appear; after that they are scheduled without gang semantics, so that a
	// missing or failing Job controller never blocks a Job forever.
	JobGroupTimeoutSeconds int64
	// ReserveAfterSeconds is how long a gang fails to fit before a domain is held for it
	// (a reservation), if it could fit once running pods of lower or equal priority end.
	// A root group's spec.reserveAfterSeconds overrides it. 0 turns reservations off.
	ReserveAfterSeconds int64
	// ReservationTimeoutSeconds bounds how long a gang holds one reservation: then it is
	// released and the gang waits its turn again, so that a domain whose pods never end is
	// not held idle forever.
	ReservationTimeoutSeconds int64
	// PartialBindTimeoutSeconds bounds how long a gang stays partially bound (a member it
	// was allowed with failed to bind: a webhook refused it, its node went away) while the
	// member is retried alone. Then a gang whose disruption unit is all is released whole
	// (its bound members evicted, so that it is placed whole again); a gang that says
	// disruptionMode single keeps running short.
	PartialBindTimeoutSeconds int64
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LockstepTopologyArgs configures the LockstepTopology plugin.
type LockstepTopologyArgs struct {
	metav1.TypeMeta

	// Levels are the node label keys of the topology levels, broadest first. A group's
	// topology keys must be among them.
	Levels []string
	// PlanTTLSeconds is how long a placement plan keeps capacity promised to a tree whose
	// members have not all been placed, before another tree may use it.
	PlanTTLSeconds int64
	// PlanTimeLimitMilliseconds bounds the time of one plan: within it every candidate
	// domain of every level is considered (best fit first, backtracking to the parent's next
	// domain); a tree not placed by then is refused, saying so.
	PlanTimeLimitMilliseconds int32
	// PlanUnconstrainedGangs plans gangs without topology constraints too: their members are
	// packed onto nodes chosen once per gang instead of scored one by one.
	PlanUnconstrainedGangs bool
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// LockstepBindArgs configures the LockstepBind plugin.
type LockstepBindArgs struct {
	metav1.TypeMeta

	// MaxBindsInFlight is the most bind requests the profile has outstanding at once (the
	// ceiling of its adaptive window); more
	// wait their turn in the order they came, so that a released gang of a thousand pods
	// does not send a thousand requests to the apiserver at the same moment.
	MaxBindsInFlight int32
	// QPS and Burst are the rate limit of the bind client, which no other request of the
	// scheduler shares. 0 takes the scheduler's clientConnection value.
	QPS   int32
	Burst int32
}
