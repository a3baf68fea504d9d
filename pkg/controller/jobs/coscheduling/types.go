package coscheduling

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// The fields of scheduling.x-k8s.io/v1alpha1 PodGroups (scheduler-plugins) the adapter reads
// and writes. lockstep reads them through the dynamic client, so that it neither depends on
// scheduler-plugins' module nor needs its CRD installed; unknown fields are kept.

// GVK is the scheduler-plugins PodGroup kind, GVR its resource.
var (
	GVK = schema.GroupVersionKind{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"}
	GVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
)

// Label on a pod names its PodGroup (same namespace).
const Label = filing.SchedulerPluginsPodGroupLabel

// Phases of a PodGroup, as scheduler-plugins' controller sets them.
const (
	PhasePending    = "Pending"
	PhaseScheduling = "Scheduling"
	PhaseRunning    = "Running"
	PhaseFinished   = "Finished"
	PhaseFailed     = "Failed"
)

type podGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              podGroupSpec   `json:"spec,omitempty"`
	Status            podGroupStatus `json:"status,omitempty"`
}

type podGroupSpec struct {
	MinMember              int32           `json:"minMember,omitempty"`
	MinResources           v1.ResourceList `json:"minResources,omitempty"`
	ScheduleTimeoutSeconds *int32          `json:"scheduleTimeoutSeconds,omitempty"`
}

type podGroupStatus struct {
	Phase             string      `json:"phase,omitempty"`
	OccupiedBy        string      `json:"occupiedBy,omitempty"`
	Running           int32       `json:"running,omitempty"`
	Succeeded         int32       `json:"succeeded,omitempty"`
	Failed            int32       `json:"failed,omitempty"`
	ScheduleStartTime metav1.Time `json:"scheduleStartTime,omitempty"`
}

// decode reads a PodGroup from the dynamic client's object.
func decode(u *unstructured.Unstructured) (*podGroup, error) { return jobframework.Decode[podGroup](u) }
