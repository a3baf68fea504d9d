package podgroup

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// refreshLocked re-evaluates every group a change can affect: the subtrees of tops. It
// re-validates them; releases reservations whose tree changed under them (a group gone or
// invalid, another root); activates the gated members of PodGroups whose path just became
// ready by the pods that exist; marks scheduled the groups whose requirement bound pods meet
// (what a restarted scheduler finds); allows waiters whose tree is ready now (a minimum
// lowered); and queues status checks.
func (m *Model) refreshLocked(eff *effects, tops ...Key) {
	m.refresh(eff, false, tops)
}

// refreshShapeLocked is refreshLocked after a change of groups: trees may have changed
// shape, and reservations are reconciled with them.
func (m *Model) refreshShapeLocked(eff *effects, tops ...Key) {
	m.refresh(eff, true, tops)
}

func (m *Model) refresh(eff *effects, shape bool, tops []Key) {
	seen := sets.New[Key]()
	for _, top := range tops {
		top = m.index.TopOf(top)
		if seen.Has(top) {
			continue
		}
		seen.Insert(top)
		m.refreshTreeLocked(eff, top, shape)
	}
}

func (m *Model) refreshTreeLocked(eff *effects, top Key, shape bool) {
	for _, k := range m.index.Revalidate(top, m.validatorsLocked()) {
		m.status.Enqueue(k)
		if p := m.index.Get(k).problem; p != "" {
			m.logger.V(2).Info("Group is invalid", "group", k, "why", p)
		}
	}
	keys := m.index.Subtree(top)
	if len(keys) == 0 {
		keys = []Key{top} // a PodGroup that does not exist, with members waiting for it
	}
	if shape {
		m.reconcileAttemptsLocked(eff, keys)
	}

	known := m.index.readiness(m.members.Known, true)
	bound := m.index.readiness(m.members.BoundOrRan, false)
	for _, k := range keys {
		g := m.index.Get(k)
		if k.Kind == KindPodGroup {
			if ready := known.path(k); ready != m.knownReady[k] {
				if ready {
					m.knownReady[k] = true
					eff.activate = append(eff.activate, m.pendingOfLocked(k)...)
				} else {
					delete(m.knownReady, k)
				}
			}
		}
		if !g.Exists() {
			continue
		}
		if !g.Scheduled() && bound.path(k) {
			// Bound pods the scheduler's cache shows deleted do not count.
			if root, ok := m.index.RootOf(k); ok && m.dropDeletedLocked(eff, root, nil) {
				bound = m.index.readiness(m.members.BoundOrRan, false)
			}
			if bound.path(k) && m.index.MarkScheduled(k) {
				m.attempts.Outcome(k).Failure = ""
				m.status.Enqueue(k)
				continue
			}
		}
		if !g.Scheduled() {
			m.status.EnqueueAfter(k, waitingGrace)
		}
	}
	if root, ok := m.index.RootOf(top); ok {
		if r := m.attempts.Round(root); r != nil && len(r.waiting) > 0 {
			m.allowReadyLocked(eff, m.logger, root, nil)
		}
	}
}

// reconcileAttemptsLocked releases the reservations of members whose tree is not the one they
// reserved in any more: their group or an ancestor was deleted, became invalid, or joined
// another tree. A waiting member is rejected; a member already allowed to bind keeps its
// bind and moves to its new tree.
func (m *Model) reconcileAttemptsLocked(eff *effects, keys []Key) {
	oldRoots := sets.New[Key]()
	for _, k := range keys {
		if k.Kind != KindPodGroup {
			continue
		}
		root, valid := m.index.RootOf(k)
		for _, mem := range m.members.InGroup(k) {
			a := m.attempts.Of(mem.Pod.UID)
			if a == nil || (valid && a.Root == root) {
				continue
			}
			if a.State == Allowed && valid {
				a.Root = root // done with its attempt: counted as placed until its bind is seen
				continue
			}
			m.attempts.Remove(mem.Pod.UID)
			oldRoots.Insert(a.Root)
			if a.State == Waiting {
				why := fmt.Sprintf("the tree of PodGroup %s changed: %s", k.Name,
					m.index.readiness(m.members.Known, true).shortfall(k, "exist"))
				eff.rejectPod(a.Pod, why)
				m.logger.V(4).Info("Waiting member released: its tree changed", "pod", a.Pod.Name, "group", k, "root", a.Root, "why", why)
			}
		}
	}
	for root := range oldRoots {
		if m.attempts.Ended(root) {
			eff.ended = append(eff.ended, root)
		}
		m.releaseHopelessLocked(eff, m.logger, root, "a group left the tree")
	}
}

// pendingOfLocked returns a PodGroup's members that are neither bound nor reserved.
func (m *Model) pendingOfLocked(k Key) []*v1.Pod {
	var out []*v1.Pod
	for _, mem := range m.members.InGroup(k) {
		if !mem.Bound() && m.attempts.Of(mem.Pod.UID) == nil {
			out = append(out, mem.Pod)
		}
	}
	return out
}
