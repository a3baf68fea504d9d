package podgroup

import (
	"iter"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Members is the one record of which pods belong to which PodGroup, keyed by pod UID. It is
// fed by informer events only: the copy of a pod the scheduler works on (assumed, with a
// node) never adds a member or brings a deleted one back. Pods that are terminating or
// terminated are not members. It is not safe for concurrent use; the Model serializes
// access.
type Members struct {
	byUID   map[types.UID]*Member
	byGroup map[Key]map[types.UID]*Member
	bound   map[Key]int
	// ran counts members that completed (a Job's succeeded pods): they are gone from the
	// scheduler's pod informer, but they ran. succeeded are the members seen succeeding
	// (pods of any controller, or none): a PodGroup's members that ran are the more of the
	// two.
	ran       map[Key]int
	succeeded map[Key]sets.Set[types.UID]
	// gated counts members whose scheduling gates hold their tree (holdsTree), kueueGated
	// those of them Kueue has not placed yet (filing.KueueGated).
	gated, kueueGated map[Key]int
	// unbound holds, for each PodGroup with members without a node, the earliest creation of
	// those members and how many were created then: the metrics read the pending gangs at
	// every scrape, and 80,000 waiting members read one by one cost a tenth of a second or
	// more, with the model locked.
	unbound map[Key]earliest
}

// earliest is the earliest creation time among a group's members without a node, and how
// many of them were created then (creation times are to the second: many share one).
type earliest struct {
	at time.Time
	n  int
}

// Member is one pod of a PodGroup, as the informer last showed it.
type Member struct {
	Pod   *v1.Pod
	Group Key
}

// Bound reports whether the member has a node.
func (m *Member) Bound() bool { return m.Pod.Spec.NodeName != "" }

// NewMembers returns an empty record.
func NewMembers() *Members {
	return &Members{
		byUID:      map[types.UID]*Member{},
		byGroup:    map[Key]map[types.UID]*Member{},
		bound:      map[Key]int{},
		ran:        map[Key]int{},
		succeeded:  map[Key]sets.Set[types.UID]{},
		gated:      map[Key]int{},
		kueueGated: map[Key]int{},
		unbound:    map[Key]earliest{},
	}
}

// Of returns the member with a UID, nil if the pod is not one.
func (ms *Members) Of(uid types.UID) *Member { return ms.byUID[uid] }

// Put records pod as a member of k (moving it if it belonged to another group) and returns
// its previous record, nil if it was not a member.
func (ms *Members) Put(pod *v1.Pod, k Key) *Member {
	prev := ms.byUID[pod.UID]
	if prev != nil {
		ms.remove(prev)
		prev = &Member{Pod: prev.Pod, Group: prev.Group}
	}
	m := &Member{Pod: pod, Group: k}
	ms.byUID[pod.UID] = m
	g := ms.byGroup[k]
	if g == nil {
		g = map[types.UID]*Member{}
		ms.byGroup[k] = g
	}
	g[pod.UID] = m
	if m.Bound() {
		ms.bound[k]++
	} else {
		ms.noteUnbound(k, pod.CreationTimestamp.Time)
	}
	if holdsTree(pod, k) {
		ms.gated[k]++
	}
	if filing.KueueGated(pod) {
		ms.kueueGated[k]++
	}
	return prev
}

// Remove forgets a member and returns its last record, nil if the pod was not one.
func (ms *Members) Remove(uid types.UID) *Member {
	m := ms.byUID[uid]
	if m == nil {
		return nil
	}
	ms.remove(m)
	return m
}

func (ms *Members) remove(m *Member) {
	delete(ms.byUID, m.Pod.UID)
	if g := ms.byGroup[m.Group]; g != nil {
		delete(g, m.Pod.UID)
		if len(g) == 0 {
			delete(ms.byGroup, m.Group)
		}
	}
	if m.Bound() {
		if ms.bound[m.Group]--; ms.bound[m.Group] == 0 {
			delete(ms.bound, m.Group)
		}
	} else {
		ms.forgetUnbound(m.Group, m.Pod.CreationTimestamp.Time)
	}
	if holdsTree(m.Pod, m.Group) {
		if ms.gated[m.Group]--; ms.gated[m.Group] <= 0 {
			delete(ms.gated, m.Group)
		}
	}
	if filing.KueueGated(m.Pod) {
		if ms.kueueGated[m.Group]--; ms.kueueGated[m.Group] <= 0 {
			delete(ms.kueueGated, m.Group)
		}
	}
}

// InGroup returns the members of a PodGroup, ordered by pod name.
func (ms *Members) InGroup(k Key) []*Member {
	out := make([]*Member, 0, len(ms.byGroup[k]))
	for _, m := range ms.byGroup[k] {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.Name < out[j].Pod.Name })
	return out
}

// noteUnbound counts a member of k without a node, created at t.
func (ms *Members) noteUnbound(k Key, t time.Time) {
	e, ok := ms.unbound[k]
	switch {
	case !ok || t.Before(e.at):
		e = earliest{at: t, n: 1}
	case t.Equal(e.at):
		e.n++
	default:
		return
	}
	ms.unbound[k] = e
}

// forgetUnbound stops counting a member of k without a node, created at t, once it is no
// longer in byGroup: the earliest is looked for again among the others when the last member
// created at it goes.
func (ms *Members) forgetUnbound(k Key, t time.Time) {
	e, ok := ms.unbound[k]
	if !ok || !t.Equal(e.at) {
		return
	}
	if e.n--; e.n > 0 {
		ms.unbound[k] = e
		return
	}
	delete(ms.unbound, k)
	for _, m := range ms.byGroup[k] {
		if !m.Bound() {
			ms.noteUnbound(k, m.Pod.CreationTimestamp.Time)
		}
	}
}

// Unbound yields each PodGroup that has members without a node, and when the earliest of
// those was created.
func (ms *Members) Unbound() iter.Seq2[Key, time.Time] {
	return func(yield func(Key, time.Time) bool) {
		for k, e := range ms.unbound {
			if !yield(k, e.at) {
				return
			}
		}
	}
}

// UnboundIn yields the members of PodGroup k that have no node.
func (ms *Members) UnboundIn(k Key) iter.Seq[*Member] {
	return func(yield func(*Member) bool) {
		for _, m := range ms.byGroup[k] {
			if !m.Bound() && !yield(m) {
				return
			}
		}
	}
}

// Known counts a PodGroup's pods that exist or ran.
func (ms *Members) Known(k Key) int { return len(ms.byGroup[k]) + ms.Ran(k) }

// BoundOrRan counts a PodGroup's pods that have a node or completed.
func (ms *Members) BoundOrRan(k Key) int { return ms.bound[k] + ms.Ran(k) }

// Ran counts a PodGroup's pods that completed: its Job's succeeded pods, or those seen
// succeeding, whichever are more.
func (ms *Members) Ran(k Key) int { return max(ms.ran[k], ms.succeeded[k].Len()) }

// Succeeded records that a pod of PodGroup k, bound, succeeded: it ran.
func (ms *Members) Succeeded(k Key, uid types.UID) {
	s := ms.succeeded[k]
	if s == nil {
		s = sets.New[types.UID]()
		ms.succeeded[k] = s
	}
	s.Insert(uid)
}

// ForgetGroup drops what was recorded of the pods of a PodGroup that is gone.
func (ms *Members) ForgetGroup(k Key) { delete(ms.succeeded, k) }

// Pending counts a PodGroup's members without a node.
func (ms *Members) Pending(k Key) int { return len(ms.byGroup[k]) - ms.bound[k] }

// Gated counts a PodGroup's members whose scheduling gates hold their tree.
func (ms *Members) Gated(k Key) int { return ms.gated[k] }

// holdsTree reports whether a member's scheduling gates hold its whole tree: Kueue's
// topology gate does on any group (Kueue pins a pod before it lifts the gate); any gate does
// on a native group, as upstream's gated member holds its group. On lockstep's kinds another
// gate holds only its pod: the others are placed and wait for it at Permit.
func holdsTree(pod *v1.Pod, k Key) bool {
	return filing.KueueGated(pod) || (k.Native() && filing.Gated(pod))
}

// KueueGated counts a PodGroup's members that Kueue has not placed yet.
func (ms *Members) KueueGated(k Key) int { return ms.kueueGated[k] }

// SetRan records how many of a PodGroup's pods completed.
func (ms *Members) SetRan(k Key, n int) {
	if n <= 0 {
		delete(ms.ran, k)
		return
	}
	ms.ran[k] = n
}

// Groups returns the PodGroups that have members.
func (ms *Members) Groups() []Key {
	out := make([]Key, 0, len(ms.byGroup))
	for k := range ms.byGroup {
		out = append(out, k)
	}
	return out
}
