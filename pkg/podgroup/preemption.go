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
	// Failed: the tree's last attempt failed and it backs off; preemption is decided once per
	// failed attempt.
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
	if m.permits.backoffLeftLocked(root) > 0 {
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

// Unit is a running gang as a preemption victim: every bound member of its tree goes, or
// none does.
type Unit struct {
	Root Key
	// Priority is the tree's: the root's priorityClassName, else its highest member's.
	Priority int32
	// Composite: the root is a CompositePodGroup.
	Composite bool
	// Object is the root group's API object (events about the gang go on it).
	Object runtime.Object
	// Pods are the tree's members that hold room on a node (bound or reserved) and are not
	// terminating; a reserved member carries the node it is reserved on.
	Pods []*v1.Pod
}

// UnitOf returns the gang a bound pod belongs to, false if the pod is not a member of a tree
// with the gang policy (such a pod is a victim on its own).
func (g *Gate) UnitOf(pod *v1.Pod) (Unit, bool) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	root, ok := m.rootOfLocked(pod)
	if !ok {
		return Unit{}, false
	}
	u := Unit{Root: root, Composite: root.Kind == KindCompositePodGroup, Object: m.index.Get(root).Object()}
	gang := false
	for _, k := range m.index.Subtree(root) {
		gang = gang || m.index.Get(k).IsGang()
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
	if !gang || len(u.Pods) == 0 {
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

// rootOfLocked returns the root of a member's tree, false if the pod is no member or its tree
// is not valid.
func (m *Model) rootOfLocked(pod *v1.Pod) (Key, bool) {
	mem := m.members.Of(pod.UID)
	if mem == nil {
		return Key{}, false
	}
	return m.index.RootOf(mem.Group)
}
