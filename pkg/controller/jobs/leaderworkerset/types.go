package leaderworkerset

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
)

// The fields of leaderworkerset.x-k8s.io/v1 LeaderWorkerSets (LWS v0.7.0) the adapter reads.
// lockstep reads them through the dynamic client, so that it neither depends on LWS's module
// nor needs its CRD installed to start; unknown fields are ignored.

// GVK is the LeaderWorkerSet kind, GVR its resource.
var (
	GVK = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}
	GVR = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
)

// Labels and annotations LWS puts on its pods (api/leaderworkerset/v1; the pod webhook adds
// the indexes and keys).
const (
	// LabelName names the pod's LeaderWorkerSet.
	LabelName = "leaderworkerset.sigs.k8s.io/name"
	// LabelGroupIndex is the pod's replica group; LabelWorkerIndex its place in it (0: the
	// leader).
	LabelGroupIndex  = "leaderworkerset.sigs.k8s.io/group-index"
	LabelWorkerIndex = "leaderworkerset.sigs.k8s.io/worker-index"
	// LabelRevision is the template revision the pod was made from.
	LabelRevision = "leaderworkerset.sigs.k8s.io/template-revision-hash"
	// LabelSubGroupIndex is the pod's subgroup (subGroupPolicy), absent on a leader the
	// policy leaves out.
	LabelSubGroupIndex = "leaderworkerset.sigs.k8s.io/subgroup-index"
	// AnnotationLeaderName on a worker names its leader pod.
	AnnotationLeaderName = "leaderworkerset.sigs.k8s.io/leader-name"
	// AnnotationExclusiveTopology on a LeaderWorkerSet asks for one replica group per domain
	// of the named node label; AnnotationSubGroupExclusiveTopology for one subgroup per
	// domain.
	AnnotationExclusiveTopology         = "leaderworkerset.sigs.k8s.io/exclusive-topology"
	AnnotationSubGroupExclusiveTopology = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
)

// Startup policies and subgroup policy types.
const (
	LeaderCreated  = "LeaderCreated"
	LeaderReady    = "LeaderReady"
	LeaderExcluded = "LeaderExcluded"
)

type leaderWorkerSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              leaderWorkerSetSpec `json:"spec,omitempty"`
}

type leaderWorkerSetSpec struct {
	Replicas             *int32               `json:"replicas,omitempty"`
	LeaderWorkerTemplate leaderWorkerTemplate `json:"leaderWorkerTemplate"`
	StartupPolicy        string               `json:"startupPolicy,omitempty"`
}

type leaderWorkerTemplate struct {
	LeaderTemplate *v1.PodTemplateSpec `json:"leaderTemplate,omitempty"`
	WorkerTemplate v1.PodTemplateSpec  `json:"workerTemplate"`
	Size           *int32              `json:"size,omitempty"`
	SubGroupPolicy *subGroupPolicy     `json:"subGroupPolicy,omitempty"`
}

type subGroupPolicy struct {
	Type         string `json:"subGroupPolicyType,omitempty"`
	SubGroupSize *int32 `json:"subGroupSize,omitempty"`
}

// decode reads a LeaderWorkerSet from the dynamic client's object.
func decode(u *unstructured.Unstructured) (*leaderWorkerSet, error) {
	return jobframework.Decode[leaderWorkerSet](u)
}
