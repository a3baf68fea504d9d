// Package capacity is node capacity as the scheduler's NodeResourcesFit counts it: what a pod
// requests, what a node has free, and the arithmetic the planner, preemption and reservations
// share.
package capacity

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
)

// Resources is the amount of node capacity a pod needs or a node has free, in the units the
// scheduler's NodeResourcesFit uses: milli-CPU, bytes of memory, pod slots and extended
// resources (e.g. nvidia.com/gpu).
type Resources struct {
	MilliCPU int64
	Memory   int64
	Pods     int64
	Scalar   map[v1.ResourceName]int64
}

// PodRequests returns what a pod needs on a node, counting init containers and overhead as
// the scheduler does.
func PodRequests(pod *v1.Pod) Resources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	r := Resources{Pods: 1}
	for name, q := range reqs {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case v1.ResourceMemory:
			r.Memory = q.Value()
		case v1.ResourcePods, v1.ResourceEphemeralStorage:
		default:
			if r.Scalar == nil {
				r.Scalar = map[v1.ResourceName]int64{}
			}
			r.Scalar[name] = q.Value()
		}
	}
	return r
}

// OfPodInfo returns what a pod of the scheduler's snapshot needs on a node: the requests the
// PodInfo computed once for NodeResourcesFit (PodRequests would compute them again on every
// call, which at one call per pod per domain was most of a preemption's bound).
func OfPodInfo(pi fwk.PodInfo) Resources {
	res := pi.CalculateResource().Resource
	r := Resources{MilliCPU: res.GetMilliCPU(), Memory: res.GetMemory(), Pods: 1}
	for name, v := range res.GetScalarResources() {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] = v
	}
	return r
}

// FreeOn returns a node's allocatable minus what its pods (bound and assumed) request.
func FreeOn(n fwk.NodeInfo) Resources {
	a, u := n.GetAllocatable(), n.GetRequested()
	r := Resources{
		MilliCPU: a.GetMilliCPU() - u.GetMilliCPU(),
		Memory:   a.GetMemory() - u.GetMemory(),
		Pods:     int64(a.GetAllowedPodNumber() - len(n.GetPods())),
	}
	for name, v := range a.GetScalarResources() {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] = v - u.GetScalarResources()[name]
	}
	return r
}

// Fits reports whether need fits into r.
func (r Resources) Fits(need Resources) bool {
	if need.MilliCPU > r.MilliCPU || need.Memory > r.Memory || need.Pods > r.Pods {
		return false
	}
	for name, v := range need.Scalar {
		if v > r.Scalar[name] {
			return false
		}
	}
	return true
}

// Add adds o to r in place.
func (r *Resources) Add(o Resources) { r.addScaled(o, 1) }

// Sub subtracts o from r in place.
func (r *Resources) Sub(o Resources) { r.addScaled(o, -1) }

func (r *Resources) addScaled(o Resources, k int64) {
	r.MilliCPU += k * o.MilliCPU
	r.Memory += k * o.Memory
	r.Pods += k * o.Pods
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[name] += k * v
	}
}

// Least returns, of each resource, the smaller amount of r and o (an extended resource only
// one of them has: none). Each of them covers it: a node without room for it has room for
// neither.
func (r Resources) Least(o Resources) Resources {
	out := Resources{MilliCPU: min(r.MilliCPU, o.MilliCPU), Memory: min(r.Memory, o.Memory), Pods: min(r.Pods, o.Pods)}
	for name, v := range r.Scalar {
		if w, ok := o.Scalar[name]; ok {
			if out.Scalar == nil {
				out.Scalar = map[v1.ResourceName]int64{}
			}
			out.Scalar[name] = min(v, w)
		}
	}
	return out
}

// IsZero reports whether r holds nothing of any resource.
func (r Resources) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 || r.Pods != 0 {
		return false
	}
	for _, v := range r.Scalar {
		if v != 0 {
			return false
		}
	}
	return true
}

// Clone returns a copy that shares nothing with r.
func (r Resources) Clone() Resources {
	c := r
	if r.Scalar != nil {
		c.Scalar = make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return c
}

// Copies returns how many copies of need fit into r (need must not be zero).
func (r Resources) Copies(need Resources) int64 {
	best := int64(-1)
	take := func(have, want int64) {
		if want <= 0 {
			return
		}
		if n := have / want; best < 0 || n < best {
			best = n
		}
	}
	take(r.MilliCPU, need.MilliCPU)
	take(r.Memory, need.Memory)
	take(r.Pods, need.Pods)
	for name, v := range need.Scalar {
		take(r.Scalar[name], v)
	}
	if best < 0 {
		return 0
	}
	return best
}

// AtLeastZero returns r with negative amounts raised to zero.
func (r Resources) AtLeastZero() Resources {
	out := r.Clone()
	out.MilliCPU, out.Memory, out.Pods = max(out.MilliCPU, 0), max(out.Memory, 0), max(out.Pods, 0)
	for k, v := range out.Scalar {
		out.Scalar[k] = max(v, 0)
	}
	return out
}

// Allocatable returns what a node offers pods, in the units of Resources.
func Allocatable(node *v1.Node) Resources {
	r := Resources{}
	for name, q := range node.Status.Allocatable {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case v1.ResourceMemory:
			r.Memory = q.Value()
		case v1.ResourcePods:
			r.Pods = q.Value()
		case v1.ResourceEphemeralStorage:
		default:
			if r.Scalar == nil {
				r.Scalar = map[v1.ResourceName]int64{}
			}
			r.Scalar[name] = q.Value()
		}
	}
	return r
}
