package podgroup

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// A member's binding cycle writes the node it is about to wait on as its nominatedNodeName
// (kube-scheduler's NominatedNodeNameForExpectation, off in lockstep's binary but any
// deployment may turn it on). When the wait ends without a bind, the scheduler's failure
// handler means to clear it, but it clears it only if its informer's copy of the pod already
// shows it: a rejection that follows the write by less than the informer's lag (a gang that
// fails a moment after its first member waits) leaves the nomination in the API. The
// scheduler's nominator then reads it back from the pod and holds the node for the pod,
// against every pod of its priority or lower, until the pod goes through a cycle again: for a
// member held out of the queue while its gang backs off, as long as the gang waits. Upstream's
// own PodGroup test (anti-affinity across the cycle) then never schedules: the gang's other
// member is refused the node for the nomination of a member that is nowhere.
//
// The same happens, gate or not, to a nomination preemption wrote: a member nominated by one
// cycle whose next cycle fails, and clears its nomination, before the informer shows the
// first cycle's write leaves that write to land afterwards (NominationDropped).
//
// waitsLeft is the model's record of those nominations no cycle wants: a member's node when
// its reservation ended without a bind (Unreserve), or when a failed cycle cleared a
// nomination its informer's copy did not show yet (NominationDropped). A nomination of that
// node that reaches the model before the member's next scheduling cycle is the stray one, and
// the model clears it (Teller). The record is dropped at the member's next cycle (that cycle's
// failure handler clears what its informer shows, and a nomination it writes, by preemption,
// is the cycle's own), when the pod is bound, when the nomination is seen cleared, and when
// the pod is deleted.
type waitsLeft map[types.UID]string

// strayLocked records node as a nomination of member uid that no cycle wants (its wait
// there ended, or a failed cycle cleared it unseen).
func (m *Model) strayLocked(uid types.UID, node string) {
	if node != "" && m.members.Of(uid) != nil {
		m.waitsLeft[uid] = node
	}
}

// nominationLocked looks at an update of pod: a nomination left by its ended wait is
// cleared (eff.unnominate); the record is dropped once it can no longer be one.
func (m *Model) nominationLocked(eff *effects, old, pod *v1.Pod) {
	node, ok := m.waitsLeft[pod.UID]
	if !ok {
		return
	}
	switch nnn := pod.Status.NominatedNodeName; {
	case pod.Spec.NodeName != "" || terminated(pod):
		delete(m.waitsLeft, pod.UID)
	case nnn == "" && old != nil && old.Status.NominatedNodeName != "":
		delete(m.waitsLeft, pod.UID) // cleared, by the failure handler or by us
	case nnn == node && m.permits.attempts.Of(pod.UID) == nil:
		delete(m.waitsLeft, pod.UID)
		eff.unnominate = append(eff.unnominate, pod)
		eff.logger.V(4).Info("Nomination left by an ended wait cleared", "pod", klog.KObj(pod), "node", node)
	}
}
