package raycluster

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
)

// The fields of ray.io/v1 RayClusters (KubeRay v1.4.0) the adapter reads. lockstep reads them
// through the dynamic client, so that it neither depends on KubeRay's module nor needs its
// CRD installed to start; unknown fields are ignored.

// GVK is the RayCluster kind, GVR its resource.
var (
	GVK = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	GVR = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
)

// Labels the KubeRay operator puts on every pod of a RayCluster (ray-operator
// controllers/ray/common/pod.go; a template cannot override them).
const (
	// LabelCluster names the pod's RayCluster.
	LabelCluster = "ray.io/cluster"
	// LabelNodeType is NodeTypeHead or NodeTypeWorker.
	LabelNodeType = "ray.io/node-type"
	// LabelGroup names a worker's worker group (groupName).
	LabelGroup     = "ray.io/group"
	NodeTypeHead   = "head"
	NodeTypeWorker = "worker"
)

type rayCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              rayClusterSpec `json:"spec,omitempty"`
}

type rayClusterSpec struct {
	Suspend          *bool             `json:"suspend,omitempty"`
	HeadGroupSpec    headGroupSpec     `json:"headGroupSpec"`
	WorkerGroupSpecs []workerGroupSpec `json:"workerGroupSpecs,omitempty"`
}

type headGroupSpec struct {
	Template v1.PodTemplateSpec `json:"template"`
}

type workerGroupSpec struct {
	GroupName   string             `json:"groupName"`
	Replicas    *int32             `json:"replicas,omitempty"`
	MinReplicas *int32             `json:"minReplicas,omitempty"`
	MaxReplicas *int32             `json:"maxReplicas,omitempty"`
	NumOfHosts  int32              `json:"numOfHosts,omitempty"`
	Suspend     *bool              `json:"suspend,omitempty"`
	Template    v1.PodTemplateSpec `json:"template"`
}

// decode reads a RayCluster from the dynamic client's object.
func decode(u *unstructured.Unstructured) (*rayCluster, error) {
	return jobframework.Decode[rayCluster](u)
}
