package podgroup

import (
	v1 "k8s.io/api/core/v1"
)

// Every change the model takes (a group, a pod, a Job, a node, an attempt) marks the trees
// it touched; settleLocked brings them up to date before the lock is released: it
// re-validates the trees whose shape may have changed and releases reservations their
// change stranded (a group gone or invalid, another root), activates the gated members of
// PodGroups whose path just became ready by the pods that exist, marks scheduled the groups
// whose requirement bound pods meet (what a restarted scheduler finds), allows waiters
// whose tree is ready now (a minimum lowered), and queues status checks. Allowing may find
// members the scheduler's cache shows deleted; dropping them touches their tree again, so
// settling repeats until nothing is left to do (each round removes members, so it ends).
func (m *Model) settleLocked(eff *effects) {
	for len(eff.dirty) > 0 {
		dirty := eff.dirty
		eff.dirty = map[Key]bool{}
		seen := map[Key]bool{}
		for top, shape := range dirty {
			top = m.index.TopOf(top)
			if seen[top] {
				continue
			}
			seen[top] = true
			m.refreshTreeLocked(eff, top, shape || dirty[top])
		}
	}
}

func (m *Model) refreshTreeLocked(eff *effects, top Key, shape bool) {
	if shape {
		for _, k := range m.index.Revalidate(top, m.validatorsLocked()) {
			m.status.Enqueue(k)
			if p := m.index.Get(k).problem; p != "" {
				m.logger.V(2).Info("Group is invalid", "group", k, "why", p)
			}
		}
	}
	keys := m.index.Subtree(top)
	if len(keys) == 0 {
		keys = []Key{top} // a PodGroup that does not exist, with members waiting for it
	}
	if shape {
		m.permits.reconcileLocked(eff, keys)
	}

	snap := m.newSnapshot()
	for _, k := range keys {
		g := m.index.Get(k)
		if k.Kind == KindPodGroup {
			if ready := snap.knownReady().path(k); ready != m.knownReady[k] {
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
		// Counts moved: the group's life takes the transitions they allow (life.go).
		m.observeLocked(eff, k, snap)
		switch {
		case !g.Scheduled():
			m.status.EnqueueAfter(k, waitingGrace)
		case g.life.state == PartiallyBound:
			// Its Short condition counts the members bound: another lost, or one replaced
			// short of the minimum, moves no state, yet the condition says something new.
			m.status.Enqueue(k)
		}
	}
	if root, ok := m.index.RootOf(top); ok {
		m.permits.allowWaitersLocked(eff, root)
	}
}

// pendingOfLocked returns a PodGroup's members that are neither bound nor reserved.
func (m *Model) pendingOfLocked(k Key) []*v1.Pod {
	var out []*v1.Pod
	for _, mem := range m.members.InGroup(k) {
		if !mem.Bound() && !m.permits.holdsLocked(mem.Pod.UID) {
			out = append(out, mem.Pod)
		}
	}
	return out
}

// pendingLocked returns the tree's members that are neither bound nor reserved.
func (m *Model) pendingLocked(root Key) []*v1.Pod {
	var out []*v1.Pod
	for _, k := range m.index.PodGroupsOf(root) {
		out = append(out, m.pendingOfLocked(k)...)
	}
	return out
}
