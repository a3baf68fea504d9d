package podgroup

import (
	"sort"

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
