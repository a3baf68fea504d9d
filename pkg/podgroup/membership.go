package podgroup

import (
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Membership comes from the scheduler's pod informer only, one record per pod UID: the
// scheduler's own copy of a pod (assumed on a node) never adds a member or brings a deleted
// one back, and a pod deleted, terminating or finished stops counting at once.

// filePodLocked puts a pod in the group the filing rules give it, or out of every group.
func (m *Model) filePodLocked(eff *effects, pod *v1.Pod) {
	k, member := m.fileLocked(pod)
	if terminated(pod) {
		if member && pod.Status.Phase == v1.PodSucceeded && pod.Spec.NodeName != "" {
			// It ran: it counts for its gang, as a Job's succeeded pods do, and its gang is
			// not short for it.
			m.members.Succeeded(k, pod.UID)
		}
		member = false
	}
	prev := m.members.Of(pod.UID)
	if !member {
		if prev != nil {
			m.removeMemberLocked(eff, pod.UID, fmt.Sprintf("pod %s left PodGroup %s", pod.Name, prev.Group.Name))
		}
		m.releaseHeldLocked(eff, pod, prev != nil) // no longer lockstep's: PreEnqueue lets it go
		return
	}
	moved := prev != nil && prev.Group != k
	if moved {
		m.removeMemberLocked(eff, pod.UID, fmt.Sprintf("pod %s moved to PodGroup %s", pod.Name, k.Name))
		prev = nil
	}
	wasBound := prev != nil && prev.Bound()
	wasGated := prev != nil && holdsTree(prev.Pod, prev.Group)
	m.members.Put(pod, k)
	m.releaseHeldLocked(eff, pod, moved)
	switch {
	case prev == nil:
		// A new member may complete its tree (activations in settle), and is news for a tree
		// held back after a failed attempt.
		eff.touch(m.index.TopOf(k))
		if root, ok := m.index.RootOf(k); ok {
			m.permits.pokeLocked(root, fmt.Sprintf("pod %s joined PodGroup %s", pod.Name, k.Name))
		}
	case wasGated && !holdsTree(pod, k):
		// A member lost the gates that held its tree (Kueue placed it, its controller
		// released it): once no member of the tree is held so, its members are tried.
		if root, ok := m.index.RootOf(k); ok && m.gatedLocked(root) == 0 {
			eff.activate = append(eff.activate, m.pendingLocked(root)...)
			m.permits.pokeLocked(root, fmt.Sprintf("pod %s lost its scheduling gates", pod.Name))
		}
	case pod.Spec.NodeName == "" && placementChanged(prev.Pod, pod):
		// A waiting member's node selector or affinity changed (Kueue pins pods to the
		// domain it chose): news that retries its tree at once.
		if root, ok := m.index.RootOf(k); ok {
			m.permits.pokeLocked(root, fmt.Sprintf("the node selector or affinity of pod %s changed", pod.Name))
		}
	case !wasBound && pod.Spec.NodeName != "":
		m.permits.boundLocked(pod, k)
		// The conditions of the groups above wait for the binds of the members they allowed.
		if path, ok := m.index.Path(k); ok {
			for _, pk := range path {
				m.status.Enqueue(pk)
			}
		} else {
			m.status.Enqueue(k)
		}
		eff.touch(m.index.TopOf(k))
	}
}

// placementChanged reports whether the constraints on where a pod may go changed.
func placementChanged(old, cur *v1.Pod) bool {
	return !reflect.DeepEqual(old.Spec.NodeSelector, cur.Spec.NodeSelector) ||
		!reflect.DeepEqual(old.Spec.Affinity, cur.Spec.Affinity) ||
		!reflect.DeepEqual(old.Spec.Tolerations, cur.Spec.Tolerations)
}

// gatedLocked counts the members of root's tree whose gates hold it (holdsTree);
// kueueGatedLocked those of them Kueue has not placed yet.
func (m *Model) gatedLocked(root Key) int {
	n := 0
	m.index.visit(root, func(g *Group) bool {
		if g.key.Kind == KindPodGroup {
			n += m.members.Gated(g.key)
		}
		return true
	})
	return n
}

// gatedMessageLocked says why root's tree is held for its gated members, "" if it is not.
func (m *Model) gatedMessageLocked(root Key) string {
	n := m.gatedLocked(root)
	switch {
	case n == 0:
		return ""
	case m.kueueGatedLocked(root) == n:
		return fmt.Sprintf("waiting for Kueue to place %d pods of gang %s (scheduling gate %s)", n, root.Name, filing.KueueTopologySchedulingGate)
	}
	return fmt.Sprintf("waiting for %d pods of %s to lose their scheduling gates", n, root.Name)
}

func (m *Model) kueueGatedLocked(root Key) int {
	n := 0
	m.index.visit(root, func(g *Group) bool {
		if g.key.Kind == KindPodGroup {
			n += m.members.KueueGated(g.key)
		}
		return true
	})
	return n
}

// terminated reports whether a pod no longer counts: it finished or is being deleted.
func terminated(pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// removeMemberLocked forgets a member: it stops counting at once. Permits releases its
// reservation, if it held one, and the waiters of its tree if the tree can no longer be
// ready with the pods that exist; its tree is refreshed when the change settles.
func (m *Model) removeMemberLocked(eff *effects, uid types.UID, why string) {
	mem := m.members.Remove(uid)
	if mem == nil {
		return
	}
	root, hasRoot := m.index.RootOf(mem.Group)
	m.permits.memberGoneLocked(eff, uid, root, hasRoot, why)
	eff.touch(m.index.TopOf(mem.Group))
}

// releaseHeldLocked activates a pod PreEnqueue held until the model had seen it (or its
// change), now that it has; and a pending pod that left its group (left): its old gang's
// verdict may hold it in the queue (its scout first), and no news of that gang is its.
func (m *Model) releaseHeldLocked(eff *effects, pod *v1.Pod, left bool) {
	held, ok := m.held[pod.UID]
	if ok && m.synced() {
		delete(m.held, pod.UID)
		eff.activate = append(eff.activate, held)
		return
	}
	if left && pod.Spec.NodeName == "" {
		eff.activate = append(eff.activate, pod)
	}
}
