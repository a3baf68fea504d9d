// Package podshape holds what scheduling decisions share about pods alike: the key of the
// shape Filter plugins see in a pod, and whether pods can refuse each other a node. The
// planner caches Filter verdicts per shape; preemption's dry runs keep one PreFilter state
// per shape.
package podshape

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
)

// Key is what Filter plugins look at in a pod: its namespace, resources, ports, node
// selection, tolerations, spread constraints, persistent volumes and resource claims, and its
// labels where they matter (withLabels: running pods' anti-affinity may match them, or the
// pod's own affinity and spread terms count pods like it). Per-pod names (hostname, service
// account token volumes, environment) are left out, so the pods of one template share a
// shape, and so do gangs of one template while no running pod has anti-affinity.
func Key(pod *v1.Pod, withLabels bool) string {
	labels := pod.Labels
	if !withLabels && pod.Spec.Affinity == nil && len(pod.Spec.TopologySpreadConstraints) == 0 {
		labels = nil
	}
	type container struct {
		Resources v1.ResourceRequirements `json:"r"`
		Ports     []v1.ContainerPort      `json:"p,omitempty"`
	}
	var volumes []v1.Volume
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil || vol.CSI != nil || vol.HostPath != nil {
			volumes = append(volumes, vol)
		}
	}
	containers := func(cs []v1.Container) []container {
		out := make([]container, len(cs))
		for i, c := range cs {
			out[i] = container{Resources: c.Resources, Ports: c.Ports}
		}
		return out
	}
	data, _ := json.Marshal(struct {
		NS          string                        `json:"ns"`
		Labels      map[string]string             `json:"l,omitempty"`
		Containers  []container                   `json:"c"`
		Init        []container                   `json:"i,omitempty"`
		Overhead    v1.ResourceList               `json:"o,omitempty"`
		Selector    map[string]string             `json:"s,omitempty"`
		Affinity    *v1.Affinity                  `json:"a,omitempty"`
		Tolerations []v1.Toleration               `json:"t,omitempty"`
		Spread      []v1.TopologySpreadConstraint `json:"sp,omitempty"`
		Volumes     []v1.Volume                   `json:"v,omitempty"`
		Claims      []v1.PodResourceClaim         `json:"rc,omitempty"`
		Host        bool                          `json:"h,omitempty"`
		OS          *v1.PodOS                     `json:"os,omitempty"`
		Runtime     *string                       `json:"rt,omitempty"`
		UID         string                        `json:"u,omitempty"`
	}{pod.Namespace, labels, containers(pod.Spec.Containers), containers(pod.Spec.InitContainers), pod.Spec.Overhead,
		pod.Spec.NodeSelector, pod.Spec.Affinity, pod.Spec.Tolerations, pod.Spec.TopologySpreadConstraints, volumes,
		pod.Spec.ResourceClaims, pod.Spec.HostNetwork, pod.Spec.OS, pod.Spec.RuntimeClassName, claimsUID(pod)})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// claimsUID makes pods with resource claims shapes of their own: each has its own claims.
func claimsUID(pod *v1.Pod) string {
	if len(pod.Spec.ResourceClaims) > 0 {
		return string(pod.UID)
	}
	return ""
}

// Interacts reports whether members of a tree can refuse each other a node: inter-pod
// affinity or anti-affinity, topology spread constraints, host ports. monotone is false when
// a member added can also make a node acceptable (affinity, spread), so that a refusal may not
// be remembered for the rest of the plan.
func Interacts(pods []*v1.Pod) (interacting, monotone bool) {
	monotone = true
	for _, p := range pods {
		if a := p.Spec.Affinity; a != nil {
			if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
				interacting = true
			}
			if a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
				interacting, monotone = true, false
			}
		}
		if len(p.Spec.TopologySpreadConstraints) > 0 {
			interacting, monotone = true, false
		}
		if len(p.Spec.ResourceClaims) > 0 {
			interacting = true // members' claims compete for the same devices
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					interacting = true
				}
			}
		}
	}
	return interacting, monotone
}
