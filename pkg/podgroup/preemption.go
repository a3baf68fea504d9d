package podgroup

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// Preemptor is what preemption needs to know of a tree that cannot be placed: its priority
// (the root's priorityClassName, else its member's), whether it may preempt at all, and the
// root object that events name.
type Preemptor struct {
	Root     Key
	Priority int32
	// Never: the root's PriorityClass or the member says preemptionPolicy: Never.
	Never  bool
	Object runtime.Object
	// Failed: the tree's last attempt failed and it backs off (preemption is decided once per
	// failed attempt), or the member's own subtree cannot be ready while the rest of the
	// tree can (a child gang a composite's minimum does not need, or one added to a running
	// tree): that subtree preempts for itself, inside the tree's domains.
	Failed bool
	// WaitingSince is when the tree started failing to fit (zero while it does not);
	// ReserveAfter how long it may before a domain is held for it (0: never), and
	// ReservationTimeout how long one reservation lasts.
	WaitingSince                     time.Time
	ReserveAfter, ReservationTimeout time.Duration
}

// Preemptor describes the tree of a member for preemption, false while the pod has no valid
// tree.
func (g *Gate) Preemptor(pod *v1.Pod) (Preemptor, bool) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	root, ok := m.rootOfLocked(pod)
	if !ok {
		return Preemptor{}, false
	}
	grp := m.index.Get(root)
	p := Preemptor{Root: root, Priority: m.priorityLocked(pod, root), Object: grp.Object()}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		p.Never = true
	}
	if name := grp.PriorityClassName(); name != "" && m.priorityLister != nil {
		if pc, err := m.priorityLister.Get(name); err == nil && pc.PreemptionPolicy != nil && *pc.PreemptionPolicy == v1.PreemptNever {
			p.Never = true
		}
	}
	if m.permits.backoffLeftLocked(root) > 0 || m.permits.subtreeFailedLocked(pod.UID, root) {
		p.Failed = true
	}
	if r := m.permits.attempts.Round(root); r != nil {
		p.WaitingSince, p.ReserveAfter, p.ReservationTimeout = r.waitingSince, r.reserveAfter, r.reservationTimeout
		if d, ok := grp.ReserveAfter(); ok {
			p.ReserveAfter = d
		}
	}
	return p, true
}

// Unit is a running gang as a preemption victim: every running member of its disruption
// unit (the subtree of the highest group of its path whose mode is all) goes, or none does.
type Unit struct {
	// Root is the top of the unit: its tree's root, or the group below it whose subtree is
	// the unit when the groups above it may be disrupted one child at a time.
	Root Key
	// Priority is the tree's: the root's priorityClassName, else its highest member's.
	Priority int32
	// Composite: the unit's top is a CompositePodGroup.
	Composite bool
	// Object is the unit's top group's API object (events about the gang go on it).
	Object runtime.Object
	// Pods are the unit's members that hold room on a node (bound or reserved) and are not
	// terminating; a reserved member carries the node it is reserved on.
	Pods []*v1.Pod
}

// UnitOf returns the running gang a bound pod belongs to, false if the pod is a victim on
// its own (no group of its path has disruption mode all, explicitly or as a gang).
func (g *Gate) UnitOf(pod *v1.Pod) (Unit, bool) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	group, ok := m.runningGroupLocked(pod)
	if !ok {
		return Unit{}, false
	}
	top, ok := m.index.UnitOf(group)
	if !ok {
		return Unit{}, false
	}
	root, _ := m.index.RootOf(group)
	u := Unit{Root: top, Composite: top.Kind == KindCompositePodGroup, Object: m.index.Get(top).Object()}
	for _, k := range m.index.Subtree(top) {
		for _, p := range m.foreign.byGroup[k] {
			if p.Spec.NodeName != "" {
				u.Pods = append(u.Pods, p) // another scheduler's members run with the gang
			}
		}
		for _, mm := range m.members.InGroup(k) {
			switch a := m.permits.attempts.Of(mm.Pod.UID); {
			case mm.Pod.DeletionTimestamp != nil:
			case mm.Bound():
				u.Pods = append(u.Pods, mm.Pod)
			case a != nil && a.Node != "":
				// Reserved (waiting for its gang, or binding): it holds room on its node.
				p := mm.Pod.DeepCopy()
				p.Spec.NodeName = a.Node
				u.Pods = append(u.Pods, p)
			}
		}
	}
	if len(u.Pods) == 0 {
		return Unit{}, false
	}
	u.Priority = m.priorityLocked(u.Pods[0], root)
	if g := m.index.Get(root); g.PriorityClassName() == "" {
		for _, p := range u.Pods {
			u.Priority = max(u.Priority, corev1helpers.PodPriority(p))
		}
	}
	return u, true
}

// MayFree reports whether a preemption's dry run for a tree of priority of can free anything:
// some pod bound to a node and not finished has a priority below of (at or below, orEqual:
// a reservation waits for pods of its own priority too), or is terminating, or some gang
// member holds a reservation (the scheduler has it assumed, not bound: it may be a victim,
// or the preemptor's own, being released). False means no victim exists on any node, and
// the dry run need not look at them: in a cluster full of pods a waiting gang may not take,
// its every try would otherwise read every pod of every node. The scheduler's assumed pods
// that are no gang members are not counted: one placed moments ago is a victim at the next
// try, once the informers see it bound.
func (g *Gate) MayFree(of int32, orEqual bool) bool {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.room.anyBelow(of, orEqual) || m.permits.attempts.anyReserved()
}

// rootOfLocked returns the root of a member's tree, false if the pod is no member or its tree
// is not valid.
func (m *Model) rootOfLocked(pod *v1.Pod) (Key, bool) {
	mem := m.members.Of(pod.UID)
	if mem == nil {
		return Key{}, false
	}
	return m.index.RootOf(mem.Group)
}
