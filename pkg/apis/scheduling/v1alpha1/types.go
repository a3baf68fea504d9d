package v1alpha1

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known labels, condition types and reasons.
const (
	// PodGroupLabel on a pod names the PodGroup (in the pod's namespace) the pod belongs to.
	PodGroupLabel = GroupName + "/pod-group"

	// PodGroupInitiallyScheduled is the condition type the scheduler writes on PodGroups and
	// CompositePodGroups. As upstream, once True it is terminal and never reverts to False.
	PodGroupInitiallyScheduled = "PodGroupInitiallyScheduled"

	// ReasonScheduled: the group's scheduling requirement was met and its pods were allowed to bind.
	ReasonScheduled = "Scheduled"
	// ReasonUnschedulable: the group waits for pods, cannot fit, or timed out; the message says which.
	ReasonUnschedulable = "Unschedulable"
	// ReasonInvalid: the group can never be scheduled as written (cycle, missing parent, tree too
	// deep, unknown topology key...); the message says what to change.
	ReasonInvalid = "Invalid"
	// ReasonPartiallyBound: the gang was allowed to bind but a bind failed (e.g. a webhook
	// refused it); the message says how many pods are bound. The failed pods are retried
	// one by one.
	ReasonPartiallyBound = "PartiallyBound"
	// ReasonPreempting: the gang could not be placed, so lower-priority pods are being evicted
	// from the domain it will take; the message names the domain and how many pods and gangs
	// it evicts.
	ReasonPreempting = "Preempting"
	// ReasonPreempted is the event on the root group of a running gang that gang preemption
	// evicted: it names the preempting gang, its priority and the domain it takes.
	ReasonPreempted = "Preempted"
	// ReasonReserving: the gang has waited longer than its reserveAfterSeconds and could run
	// once lower- or equal-priority pods end: a domain is held for it (no pod of equal or
	// lower priority is placed there unless the gang still fits with it); the message names
	// the domain, since when, and how much of it is free.
	ReasonReserving = "Reserving"

	// DisruptionTarget is the condition type, as upstream's, that says a group's pods are
	// being (or were) evicted by a disruption: True with reason PreemptionByScheduler from the
	// moment gang preemption chooses the gang as a victim (the message names the preempting
	// gang, its priority and the domain it takes); False with reason Rescheduled once the
	// group is placed whole again. While it is True the group is a gang again: its recreated
	// pods wait for each other, even though PodGroupInitiallyScheduled stays True.
	DisruptionTarget = "DisruptionTarget"
	// ReasonPreemptionByScheduler: gang preemption evicts the group's pods (upstream's reason).
	ReasonPreemptionByScheduler = "PreemptionByScheduler"
	// ReasonRescheduled: a preempted group was placed whole again.
	ReasonRescheduled = "Rescheduled"

	// Short is the condition type that says a gang runs short of its minimum after it was
	// allowed to bind: True from the moment it became short (its lastTransitionTime, which a
	// restarted or new leader reads back), with reason PartiallyBound (a bind was refused
	// after the gang was allowed) or MemberLost (a member of the running gang was lost and its
	// replacement is not bound). Still short partialBindTimeoutSeconds later, the gang is
	// released whole (DisruptionTarget True, GangReleased) unless it says disruptionMode
	// single. False once it is whole again (reason Whole) or no longer runs (NotRunning):
	// written only over a True, so that a gang never short carries none.
	Short = "Short"
	// ReasonMemberLost: a member of the running gang was lost (deleted, its node gone) and
	// fewer than its minimum are bound.
	ReasonMemberLost = "MemberLost"
	// ReasonWhole: the gang's minimum is bound again.
	ReasonWhole = "Whole"
	// ReasonNotRunning: the gang no longer runs short: it was released or preempted whole, or
	// none of its pods is left.
	ReasonNotRunning = "NotRunning"

	// MadeForKindLabel and MadeForNameLabel on a Workload, PodGroup or CompositePodGroup that
	// lockstep's workload controller made name the kind and name of the object it was made
	// for (a Job, a JobSet, a TrainJob...): kubectl get lockstep -l
	// scheduling.lockstep.dev/made-for-name=NAME finds a workload's groups.
	MadeForKindLabel = GroupName + "/made-for-kind"
	MadeForNameLabel = GroupName + "/made-for-name"

	// JobGangAnnotation on a batch/v1 Job opts it in ("true") or out ("false") of a gang,
	// overriding the rule (parallelism > 1, Indexed, completions == parallelism).
	JobGangAnnotation = GroupName + "/gang"
	// JobMinCountAnnotation on a Job sets its gang's minCount (default: parallelism).
	JobMinCountAnnotation = GroupName + "/min-count"
	// JobTopologyRequiredAnnotation on a Job names a topology label key all its pods must
	// share (e.g. topology.kubernetes.io/rack).
	JobTopologyRequiredAnnotation = GroupName + "/topology-required"
	// JobTopologyPreferredAnnotation on a Job names a topology label key its pods should share.
	JobTopologyPreferredAnnotation = GroupName + "/topology-preferred"
	// JobScheduleTimeoutAnnotation on a Job sets its gang's scheduleTimeoutSeconds: how long
	// its pods that have a node reserved wait for the rest before every reservation is
	// released (default: LockstepGang's permitTimeoutSeconds). Read when the group is made.
	JobScheduleTimeoutAnnotation = GroupName + "/schedule-timeout-seconds"
	// FollowersTimeoutAnnotation on a LeaderWorkerSet whose leader binds first (LeaderReady,
	// exclusive-topology) sets its replicas' gang.followersTimeoutSeconds: how long the room
	// planned for the workers is held once the leader bound (default 600; a leader that loads
	// a large model may need longer).
	FollowersTimeoutAnnotation = GroupName + "/followers-timeout-seconds"

	// MaxTreeDepth is the maximum number of levels in a group tree, counting the PodGroup
	// leaves (upstream WorkloadMaxTreeDepth).
	MaxTreeDepth = 4
	// MaxTemplates is the maximum number of templates per Workload level (upstream).
	MaxTemplates = 8
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=lspg;lspgs,categories=lockstep
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Gang",type=integer,JSONPath=`.spec.schedulingPolicy.gang.minCount`,description="a gang's minCount; <none> for a basic group"
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentCompositePodGroupName`,priority=1
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="PodGroupInitiallyScheduled")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="PodGroupInitiallyScheduled")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="PodGroupInitiallyScheduled")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodGroup is a set of pods scheduled together. Pods join it with the label
// scheduling.lockstep.dev/pod-group: <name> in the same namespace.
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec defines the desired state of the PodGroup.
	Spec PodGroupSpec `json:"spec"`

	// status is the observed state of the PodGroup, written by the scheduler.
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// PodGroupSpec defines the desired state of a PodGroup.
//
// +kubebuilder:validation:XValidation:rule="has(self.parentCompositePodGroupName) == has(oldSelf.parentCompositePodGroupName)",message="parentCompositePodGroupName is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.workloadRef) == has(oldSelf.workloadRef)",message="workloadRef is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.schedulingConstraints) == has(oldSelf.schedulingConstraints)",message="schedulingConstraints is immutable"
type PodGroupSpec struct {
	// parentCompositePodGroupName names the CompositePodGroup (same namespace) this group is
	// a child of. Unset for the root of a tree. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="parentCompositePodGroupName is immutable"
	ParentCompositePodGroupName *string `json:"parentCompositePodGroupName,omitempty"`

	// workloadRef references the Workload template this group was created from. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadRef is immutable"
	WorkloadRef *WorkloadReference `json:"workloadRef,omitempty"`

	// schedulingPolicy: basic (plain scheduling) or gang (all-or-nothing, minCount).
	SchedulingPolicy PodGroupSchedulingPolicy `json:"schedulingPolicy"`

	// schedulingConstraints (topology) for the group's pods. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="schedulingConstraints is immutable"
	SchedulingConstraints *SchedulingConstraints `json:"schedulingConstraints,omitempty"`

	// priorityClassName of the group: the priority of its tree in lockstep's queue (on the
	// root group; otherwise its pods' priority is used).
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// scheduleTimeoutSeconds (ext) bounds how long pods of the group that already have a node
	// reserved wait for the rest of their gang before every reservation is released. Overrides
	// the plugin's permitTimeoutSeconds.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`

	// minResources (ext, scheduler-plugins' PodGroup): the resources the whole gang needs;
	// while the cluster's free allocatable is below it the gang's pods are not attempted.
	// +optional
	MinResources v1.ResourceList `json:"minResources,omitempty"`

	// reserveAfterSeconds (ext, on the root of a tree): once the gang has failed to fit for
	// this long, and could fit if running pods of lower or equal priority ended, a domain is
	// held for it (a reservation) so that smaller work stops taking the room it waits for.
	// Overrides the plugin's reserveAfterSeconds; 0: never reserve for this gang.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReserveAfterSeconds *int32 `json:"reserveAfterSeconds,omitempty"`

	// disruptionMode (upstream's): how the group's running pods may be disrupted by a
	// preemptor. all: only together — a preemptor that needs one of them evicts every running
	// pod of the group (and of its subtree) or none; single: one by one. Unset: all for a
	// gang, single for a basic group (a distributed job cannot run short of a rank). On a
	// tree, the highest group of a pod's path whose mode is all makes its subtree one unit.
	// Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="disruptionMode is immutable"
	DisruptionMode *DisruptionMode `json:"disruptionMode,omitempty"`
}

// DisruptionMode is a union (upstream's scheduling.k8s.io DisruptionMode): exactly one of
// single or all.
//
// +kubebuilder:validation:XValidation:rule="has(self.single) != has(self.all)",message="exactly one of single or all must be set"
type DisruptionMode struct {
	// single: the group's pods may be disrupted one by one.
	// +optional
	Single *SingleDisruptionMode `json:"single,omitempty"`
	// all: the group's pods may only be disrupted together.
	// +optional
	All *AllDisruptionMode `json:"all,omitempty"`
}

// SingleDisruptionMode lets a group's pods be disrupted independently.
type SingleDisruptionMode struct{}

// AllDisruptionMode lets a group's pods be disrupted only together.
type AllDisruptionMode struct{}

// PodGroupSchedulingPolicy is a union: exactly one of basic or gang. The variant is
// immutable; gang.minCount may change.
//
// +kubebuilder:validation:XValidation:rule="has(self.basic) != has(self.gang)",message="exactly one of basic or gang must be set"
// +kubebuilder:validation:XValidation:rule="has(self.gang) == has(oldSelf.gang)",message="the policy variant (basic or gang) is immutable"
type PodGroupSchedulingPolicy struct {
	// basic: the pods are scheduled one by one, as without a group.
	// +optional
	Basic *BasicSchedulingPolicy `json:"basic,omitempty"`

	// gang: no pod binds until minCount pods of the group can bind together.
	// +optional
	Gang *GangSchedulingPolicy `json:"gang,omitempty"`
}

// BasicSchedulingPolicy selects standard per-pod scheduling.
type BasicSchedulingPolicy struct{}

// GangSchedulingPolicy selects all-or-nothing scheduling.
// +kubebuilder:validation:XValidation:rule="!has(self.leaders) || self.leaders < self.minCount",message="leaders must be below minCount"
type GangSchedulingPolicy struct {
	// minCount is the number of pods that must be placed together. Mutable.
	// +kubebuilder:validation:Minimum=1
	MinCount int32 `json:"minCount"`

	// leaders (ext), below minCount: how many members bind before the others exist, because
	// the group's workload makes the others only once the leaders run (a LeaderWorkerSet
	// replica with startupPolicy LeaderReady, or LWS's exclusive-topology). Until the group is
	// first scheduled, the whole gang is planned — the members not made yet in the shape the
	// workload will make them — the leaders bind, and the room planned for the others is held
	// for them (no pod of equal or lower priority may take it) until they are placed or
	// followersTimeoutSeconds passes; they then bind together. 0 (default): all minCount
	// bind together.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Leaders int32 `json:"leaders,omitempty"`

	// followersTimeoutSeconds (ext), with leaders: how long the room planned for the other
	// members is held after the leaders bound (default 600: long enough for a leader to load
	// a model and report ready).
	// +optional
	// +kubebuilder:validation:Minimum=1
	FollowersTimeoutSeconds *int32 `json:"followersTimeoutSeconds,omitempty"`
}

// WorkloadReference points at the Workload template a group was stamped from.
type WorkloadReference struct {
	// workloadName is the name of the Workload in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	WorkloadName string `json:"workloadName"`
	// templateName is the name of the template within the Workload.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TemplateName string `json:"templateName"`
}

// SchedulingConstraints holds placement constraints for a group.
type SchedulingConstraints struct {
	// topology constraints: at most one Required and one Preferred key for the whole group,
	// and at most one slice constraint (a Required key with sliceSize).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:XValidation:rule="self.filter(t, (!has(t.mode) || t.mode == 'Required') && !has(t.sliceSize)).size() <= 1",message="at most one Required topology key"
	// +kubebuilder:validation:XValidation:rule="self.filter(t, has(t.mode) && t.mode == 'Preferred').size() <= 1",message="at most one Preferred topology key"
	// +kubebuilder:validation:XValidation:rule="self.filter(t, has(t.sliceSize)).size() <= 1",message="at most one topology key with sliceSize"
	Topology []TopologyConstraint `json:"topology,omitempty"`
}

// TopologyMode says whether a topology constraint must hold or is a packing preference.
// +kubebuilder:validation:Enum=Required;Preferred
type TopologyMode string

const (
	// TopologyRequired: all pods of the group in one domain of the key (upstream semantics).
	TopologyRequired TopologyMode = "Required"
	// TopologyPreferred (ext): pack into one domain of the key if the group fits, else the
	// next broader level.
	TopologyPreferred TopologyMode = "Preferred"
)

// TopologyConstraint names a node label whose value identifies a topology domain.
// +kubebuilder:validation:XValidation:rule="!has(self.exclusive) || !self.exclusive || !has(self.mode) || self.mode == 'Required'",message="exclusive needs mode Required"
// +kubebuilder:validation:XValidation:rule="!has(self.sliceSize) || !has(self.mode) || self.mode == 'Required'",message="sliceSize needs mode Required"
// +kubebuilder:validation:XValidation:rule="!has(self.sliceSize) || !has(self.exclusive) || !self.exclusive",message="sliceSize and exclusive cannot be combined"
type TopologyConstraint struct {
	// key is a node label key, e.g. topology.kubernetes.io/rack.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self.split('/')[self.split('/').size() - 1].size() <= 63",message="the name part of a label key must be at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="self.split('/').size() == 1 || self.split('/')[0].size() <= 253",message="the prefix of a label key must be at most 253 characters"
	Key string `json:"key"`

	// mode (ext): Required (default) or Preferred.
	// +optional
	// +kubebuilder:default=Required
	Mode TopologyMode `json:"mode,omitempty"`

	// exclusive (ext), with mode Required: the group takes one domain of this level to
	// itself. The planner places it only in a domain where no pod of another group or
	// workload runs (DaemonSet pods aside), and places no other pod of a lockstep profile in
	// that domain while the group has members there (JobSet's exclusive-topology).
	// +optional
	Exclusive bool `json:"exclusive,omitempty"`

	// sliceSize (ext, Kueue's podset-slice-size), with mode Required: the group's pods are
	// placed in slices of sliceSize pods, each slice inside one domain of key, several slices
	// per domain allowed; when the group's size or minimum is not a multiple of sliceSize, one
	// slice is short. Unlike a Required key alone, it keeps parts of a gang close (e.g. the 4
	// pods of each replica on one host) without the whole gang in one domain. key must be the
	// group's Required level or finer (the scheduler marks the group Invalid otherwise).
	// PodGroups only.
	// +optional
	// +kubebuilder:validation:Minimum=1
	SliceSize *int32 `json:"sliceSize,omitempty"`
}

// PodGroupStatus is written by the scheduler.
type PodGroupStatus struct {
	// conditions: PodGroupInitiallyScheduled with reason Scheduled, Unschedulable or Invalid
	// and a message saying what the group waits for; DisruptionTarget once gang preemption
	// evicted the group's pods.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// PodGroupList is a list of PodGroups.
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=lscpg;lscpgs,categories=lockstep
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Gang",type=integer,JSONPath=`.spec.schedulingPolicy.gang.minGroupCount`,description="a gang's minGroupCount; <none> for a basic group"
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parentCompositePodGroupName`,priority=1
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="PodGroupInitiallyScheduled")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="PodGroupInitiallyScheduled")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="PodGroupInitiallyScheduled")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// CompositePodGroup nests groups: its children are the PodGroups and CompositePodGroups
// whose parentCompositePodGroupName names it.
type CompositePodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec defines the desired state of the CompositePodGroup.
	Spec CompositePodGroupSpec `json:"spec"`

	// status is the observed state, written by the scheduler.
	// +optional
	Status CompositePodGroupStatus `json:"status,omitempty"`
}

// CompositePodGroupSpec defines the desired state of a CompositePodGroup.
//
// +kubebuilder:validation:XValidation:rule="has(self.parentCompositePodGroupName) == has(oldSelf.parentCompositePodGroupName)",message="parentCompositePodGroupName is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.workloadRef) == has(oldSelf.workloadRef)",message="workloadRef is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.schedulingConstraints) == has(oldSelf.schedulingConstraints)",message="schedulingConstraints is immutable"
type CompositePodGroupSpec struct {
	// parentCompositePodGroupName names the parent CompositePodGroup (same namespace).
	// Unset for the root of a tree. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="parentCompositePodGroupName is immutable"
	ParentCompositePodGroupName *string `json:"parentCompositePodGroupName,omitempty"`

	// workloadRef references the Workload template this group was created from. Immutable.
	// Optional here (required upstream) so that trees can be written by hand.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadRef is immutable"
	WorkloadRef *WorkloadReference `json:"workloadRef,omitempty"`

	// schedulingPolicy: basic (each child on its own) or gang (minGroupCount children ready
	// together).
	SchedulingPolicy CompositePodGroupSchedulingPolicy `json:"schedulingPolicy"`

	// schedulingConstraints (topology) for the whole subtree, without sliceSize. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="schedulingConstraints is immutable"
	// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology.all(t, !has(t.sliceSize))",message="sliceSize applies to PodGroups only"
	SchedulingConstraints *SchedulingConstraints `json:"schedulingConstraints,omitempty"`

	// priorityClassName of the group: the priority of its tree in lockstep's queue (on the root
	// group; otherwise its pods' priority is used).
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// reserveAfterSeconds (ext, on the root): as on a PodGroup, for the whole tree.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ReserveAfterSeconds *int32 `json:"reserveAfterSeconds,omitempty"`

	// disruptionMode (upstream's): all makes the whole subtree one unit to preemptors (every
	// running pod of it is evicted, or none); single leaves its children to their own modes.
	// Unset: all for a gang, single for a basic group. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="disruptionMode is immutable"
	DisruptionMode *DisruptionMode `json:"disruptionMode,omitempty"`
}

// CompositePodGroupSchedulingPolicy is a union: exactly one of basic or gang. The variant
// is immutable; gang.minGroupCount may change.
//
// +kubebuilder:validation:XValidation:rule="has(self.basic) != has(self.gang)",message="exactly one of basic or gang must be set"
// +kubebuilder:validation:XValidation:rule="has(self.gang) == has(oldSelf.gang)",message="the policy variant (basic or gang) is immutable"
type CompositePodGroupSchedulingPolicy struct {
	// basic: the group is ready when one child is ready.
	// +optional
	Basic *BasicSchedulingPolicy `json:"basic,omitempty"`

	// gang: the group is ready when minGroupCount children are ready together.
	// +optional
	Gang *GangCompositePodGroupSchedulingPolicy `json:"gang,omitempty"`
}

// GangCompositePodGroupSchedulingPolicy requires several children to be ready together.
type GangCompositePodGroupSchedulingPolicy struct {
	// minGroupCount is the number of children that must be ready together.
	// +kubebuilder:validation:Minimum=1
	MinGroupCount int32 `json:"minGroupCount"`
}

// CompositePodGroupStatus is written by the scheduler.
type CompositePodGroupStatus struct {
	// conditions: PodGroupInitiallyScheduled and DisruptionTarget, as on PodGroups.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// CompositePodGroupList is a list of CompositePodGroups.
type CompositePodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CompositePodGroup `json:"items"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=lswl,categories=lockstep
// +kubebuilder:printcolumn:name="Controller",type=string,JSONPath=`.spec.controllerRef.name`
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.controllerRef.kind`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Workload holds the templates a controller stamps PodGroups and CompositePodGroups from.
// The scheduler reads the groups, not the Workload.
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec defines the templates of the Workload.
	Spec WorkloadSpec `json:"spec"`
}

// WorkloadSpec defines the templates of a Workload.
//
// +kubebuilder:validation:XValidation:rule="has(self.podGroupTemplates) != has(self.compositePodGroupTemplates)",message="exactly one of podGroupTemplates or compositePodGroupTemplates must be set"
type WorkloadSpec struct {
	// controllerRef points at the object that owns this Workload (e.g. a Job). Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="controllerRef is immutable"
	ControllerRef *TypedLocalObjectReference `json:"controllerRef,omitempty"`

	// podGroupTemplates for a flat workload.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	PodGroupTemplates []PodGroupTemplate `json:"podGroupTemplates,omitempty"`

	// compositePodGroupTemplates for a nested workload (at most 4 levels in all).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	CompositePodGroupTemplates []CompositePodGroupTemplate `json:"compositePodGroupTemplates,omitempty"`
}

// TypedLocalObjectReference references an object in the same namespace.
type TypedLocalObjectReference struct {
	// apiGroup of the referenced object; empty for the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// kind of the referenced object.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// name of the referenced object.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PodGroupTemplate is what a PodGroup is stamped from.
type PodGroupTemplate struct {
	// name of the template, unique within its level. A DNS label.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// schedulingPolicy copied into the PodGroup.
	SchedulingPolicy PodGroupSchedulingPolicy `json:"schedulingPolicy"`
	// schedulingConstraints copied into the PodGroup.
	// +optional
	SchedulingConstraints *SchedulingConstraints `json:"schedulingConstraints,omitempty"`
	// priorityClassName copied into the PodGroup.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// scheduleTimeoutSeconds (ext) copied into the PodGroup.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// CompositePodGroupTemplate is what a CompositePodGroup is stamped from.
type CompositePodGroupTemplate struct {
	// name of the template, unique within its level. A DNS label.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// schedulingPolicy copied into the CompositePodGroup.
	SchedulingPolicy CompositePodGroupSchedulingPolicy `json:"schedulingPolicy"`
	// schedulingConstraints copied into the CompositePodGroup.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.topology) || self.topology.all(t, !has(t.sliceSize))",message="sliceSize applies to PodGroups only"
	SchedulingConstraints *SchedulingConstraints `json:"schedulingConstraints,omitempty"`
	// priorityClassName copied into the CompositePodGroup.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// podGroupTemplates of the children that are PodGroups.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	PodGroupTemplates []PodGroupTemplate `json:"podGroupTemplates,omitempty"`
	// compositePodGroupTemplates of the children that are CompositePodGroups. An OpenAPI
	// schema cannot be recursive, so nested levels are checked by whoever stamps them.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	CompositePodGroupTemplates []CompositePodGroupTemplate `json:"compositePodGroupTemplates,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true

// WorkloadList is a list of Workloads.
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workload `json:"items"`
}
