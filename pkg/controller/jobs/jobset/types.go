package jobset

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
)

// The fields of jobset.x-k8s.io/v1alpha2 (JobSet v0.12.0) the adapter reads. lockstep reads
// JobSets through the dynamic client, so that it neither depends on JobSet's module nor needs
// its CRD installed to start; unknown fields are ignored.

// GVK is the JobSet kind, GVR its resource.
var (
	GVK = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	GVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
)

// Labels the JobSet controller puts on child Jobs and their pods.
const (
	LabelJobSetName     = "jobset.sigs.k8s.io/jobset-name"
	LabelJobSetUID      = "jobset.sigs.k8s.io/jobset-uid"
	LabelReplicatedJob  = "jobset.sigs.k8s.io/replicatedjob-name"
	LabelJobIndex       = "jobset.sigs.k8s.io/job-index"
	LabelRestartAttempt = "jobset.sigs.k8s.io/restart-attempt"
	// AnnotationExclusiveTopology asks for one child Job per domain of the named node label.
	AnnotationExclusiveTopology = "alpha.jobset.sigs.k8s.io/exclusive-topology"
)

// Startup orders and dependency statuses.
const (
	InOrder          = "InOrder"
	DependencyReady  = "Ready"
	DependencyFinish = "Complete"
)

type jobSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              jobSetSpec   `json:"spec,omitempty"`
	Status            jobSetStatus `json:"status,omitempty"`
}

type jobSetSpec struct {
	ReplicatedJobs []replicatedJob `json:"replicatedJobs,omitempty"`
	StartupPolicy  *startupPolicy  `json:"startupPolicy,omitempty"`
	Suspend        *bool           `json:"suspend,omitempty"`
}

type startupPolicy struct {
	StartupPolicyOrder string `json:"startupPolicyOrder,omitempty"`
}

type replicatedJob struct {
	Name      string                  `json:"name"`
	Replicas  int32                   `json:"replicas,omitempty"`
	DependsOn []dependsOn             `json:"dependsOn,omitempty"`
	Template  batchv1.JobTemplateSpec `json:"template"`
}

type dependsOn struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

type jobSetStatus struct {
	Restarts      int32              `json:"restarts,omitempty"`
	TerminalState string             `json:"terminalState,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

// decode reads a JobSet from the dynamic client's object.
func decode(u *unstructured.Unstructured) (*jobSet, error) { return jobframework.Decode[jobSet](u) }
