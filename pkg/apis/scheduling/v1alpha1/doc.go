// Package v1alpha1 holds the scheduling.lockstep.dev/v1alpha1 API: Workload, PodGroup and
// CompositePodGroup. Field names and shapes mirror upstream scheduling.k8s.io/v1beta1
// (Workload, PodGroup) and v1alpha3 (CompositePodGroup), so that a manifest migrates to the
// native API by changing its apiVersion. Fields marked "(ext)" are lockstep's own.
//
// +k8s:deepcopy-gen=package
// +groupName=scheduling.lockstep.dev
// +kubebuilder:object:generate=false
package v1alpha1
