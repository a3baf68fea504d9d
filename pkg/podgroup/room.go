package podgroup

import (
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// nodeRoom is what each node has free as the model's informers last saw it: its allocatable
// minus the requests of the pods bound there that have not finished. It tells whether news
// of room on a node (a pod gone or finished there, the node added or grown) can help a gang
// that failed for want of room: only if the node can now take one of its members. A waiting
// gang is then tried again on news that can help it, not on every pod that leaves the
// cluster: a thousand waiting gangs are not planned again for each small pod of a churn.
//
// It ignores reservations, nominations and the scheduler's assumed pods, which only make it
// say yes more often; a node it does not know is news for every gang.
//
// It also counts the pods holding room by priority, and those terminating: whether a
// preemption's dry run can free anything at all (MayFree) is then known without looking at
// every pod of every node.
type nodeRoom struct {
	alloc map[string]capacity.Resources
	used  map[string]capacity.Resources
	// priorities counts the pods holding room and not terminating, by priority; leaving
	// those terminating.
	priorities map[int32]int
	leaving    int
}

func newNodeRoom() *nodeRoom {
	return &nodeRoom{alloc: map[string]capacity.Resources{}, used: map[string]capacity.Resources{}, priorities: map[int32]int{}}
}

// setNode records a node's allocatable.
func (n *nodeRoom) setNode(node *v1.Node) { n.alloc[node.Name] = capacity.Allocatable(node) }

// nodes is the number of nodes it knows.
func (n *nodeRoom) nodes() int { return len(n.alloc) }

// deleteNode forgets a node.
func (n *nodeRoom) deleteNode(name string) { delete(n.alloc, name) }

// pod records that a pod changed from old to cur (nil for none): what it holds on its node.
func (n *nodeRoom) pod(old, cur *v1.Pod) {
	if holdsRoom(old) {
		n.count(old, -1)
		u := n.used[old.Spec.NodeName]
		u.Sub(capacity.PodRequests(old))
		if u.Pods <= 0 {
			delete(n.used, old.Spec.NodeName)
		} else {
			n.used[old.Spec.NodeName] = u
		}
	}
	if holdsRoom(cur) {
		n.count(cur, 1)
		u := n.used[cur.Spec.NodeName].Clone()
		u.Add(capacity.PodRequests(cur))
		n.used[cur.Spec.NodeName] = u
	}
}

// count adds d to the count of pods like p (holding room).
func (n *nodeRoom) count(p *v1.Pod, d int) {
	if p.DeletionTimestamp != nil {
		n.leaving += d
		return
	}
	prio := corev1helpers.PodPriority(p)
	if n.priorities[prio] += d; n.priorities[prio] <= 0 {
		delete(n.priorities, prio)
	}
}

// anyBelow reports whether a pod holding room is terminating, or has a priority below of (at
// or below, orEqual).
func (n *nodeRoom) anyBelow(of int32, orEqual bool) bool {
	if n.leaving > 0 {
		return true
	}
	for prio := range n.priorities {
		if prio < of || (orEqual && prio == of) {
			return true
		}
	}
	return false
}

// free returns what node has free, false for a node it does not know.
func (n *nodeRoom) free(node string) (capacity.Resources, bool) {
	a, ok := n.alloc[node]
	if !ok {
		return capacity.Resources{}, false
	}
	f := a.Clone()
	f.Sub(n.used[node])
	return f, true
}

// helpsWith reports whether node can take a member needing need once freed is added to what
// the node has free: freed is what a pod that left requested, which the model may not have
// counted yet (a queueing hint can run before the model's informer sees the pod go). Counted
// twice if it has: a yes too many, never a no. It allocates nothing: a hint asks it for every
// waiting pod at every deletion.
func (n *nodeRoom) helpsWith(node string, freed, need capacity.Resources) bool {
	a, ok := n.alloc[node]
	if !ok {
		return true
	}
	u := n.used[node]
	if need.MilliCPU > a.MilliCPU-u.MilliCPU+freed.MilliCPU || need.Memory > a.Memory-u.Memory+freed.Memory ||
		need.Pods > a.Pods-u.Pods+freed.Pods {
		return false
	}
	for name, v := range need.Scalar {
		if v > a.Scalar[name]-u.Scalar[name]+freed.Scalar[name] {
			return false
		}
	}
	return true
}

// roomOnly reports whether, of what a pod leaving a node changes, only the room it frees can
// let pods fit: none has inter-pod affinity or anti-affinity, a topology spread constraint, a
// host port, a volume of a claim (whose access mode or attach limit a pod leaving may free) or
// a resource claim. For such pods a node that cannot take the smallest of them is no news,
// wherever the pod left; for others, any pod leaving may be.
func roomOnly(pods []*v1.Pod) bool {
	for _, p := range pods {
		if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
			return false
		}
		if len(p.Spec.TopologySpreadConstraints) > 0 || len(p.Spec.ResourceClaims) > 0 {
			return false
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
				return false
			}
		}
		for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range cs {
				for _, port := range c.Ports {
					if port.HostPort > 0 {
						return false
					}
				}
			}
		}
	}
	return true
}

// freesMoreThanRoomLocked reports whether a pod leaving can let pods fit where the room it
// frees alone would not: its required anti-affinity kept pods off every node of its topology
// domain, not only its own; or its group, or one above, held a domain to itself (exclusive).
func (m *Model) freesMoreThanRoomLocked(left *v1.Pod) bool {
	if a := left.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		return true
	}
	if m.index.exclusive.Len() == 0 {
		return false
	}
	k, ok := m.groupOfLocked(left)
	return ok && m.index.exclusiveAbove(k)
}

// holdsRoom reports whether a pod holds room on a node: bound and not finished.
func holdsRoom(p *v1.Pod) bool {
	return p != nil && p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// smallestNeed is, resource by resource, the least any of pods requests: a node that cannot
// fit it fits none of them.
func smallestNeed(pods []*v1.Pod) capacity.Resources {
	var out capacity.Resources
	for i, p := range pods {
		r := capacity.PodRequests(p)
		if i == 0 {
			out = r.Clone()
			continue
		}
		out.MilliCPU, out.Memory, out.Pods = min(out.MilliCPU, r.MilliCPU), min(out.Memory, r.Memory), min(out.Pods, r.Pods)
		for name, v := range out.Scalar {
			out.Scalar[name] = min(v, r.Scalar[name])
		}
	}
	return out
}
