package podgroup

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// GroupView is a read-only snapshot of one group of a tree, for placement planning.
type GroupView struct {
	Key      Key
	Gang     bool
	Min      int
	Topology []v1alpha1.TopologyConstraint
	// Scheduled: the group was initially scheduled; its new members are replacements.
	Scheduled bool
	Parent    *GroupView
	Children  []*GroupView
	// Pending are the members of a PodGroup that are neither bound nor reserved, and, for a
	// PodGroup whose leaders bind first, its followers that do not exist yet (IsFollower):
	// pods shaped as its workload will make them, planned with the leaders, never members.
	Pending []*v1.Pod
	// PlacedNodes are the nodes of members that are bound or reserved.
	PlacedNodes []string
	// Priority is the tree's priority (on the root of a Tree view): its root's
	// priorityClassName, else its pod's. WaitingSince is when the tree started failing to fit,
	// zero while it does not.
	Priority     int32
	WaitingSince time.Time
	// FollowersTimeout, for a PodGroup with followers among Pending, is how long their room
	// is held once its leaders bound.
	FollowersTimeout time.Duration
}

// Walk calls fn for v and every group below it, parents first.
func (v *GroupView) Walk(fn func(*GroupView)) {
	fn(v)
	for _, c := range v.Children {
		c.Walk(fn)
	}
}

// Find returns the group of the tree with key k, nil if there is none.
func (v *GroupView) Find(k Key) *GroupView {
	var out *GroupView
	v.Walk(func(g *GroupView) {
		if g.Key == k {
			out = g
		}
	})
	return out
}

// Summary describes a pod's tree without its members: cheap enough for every member's
// scheduling cycle, where Tree is for the one that plans.
type Summary struct {
	Root, Group Key
	// Topology: some group of the tree has topology constraints; Gang: some has the gang
	// policy.
	Topology, Gang bool
	// Scheduled: the pod's group was initially scheduled; the pod is a replacement.
	Scheduled bool
	// Unit is the top of the pod's disruption unit (Index.UnitOf), zero when a preemptor
	// may take the pod alone.
	Unit Key
}

// Summary returns the summary of the tree a pod belongs to, or false while it has no valid
// root.
func (g *Gate) Summary(pod *v1.Pod) (Summary, bool) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	group, ok := m.runningGroupLocked(pod)
	if !ok {
		return Summary{}, false
	}
	root, ok := m.index.RootOf(group)
	if !ok {
		return Summary{}, false
	}
	s := Summary{Root: root, Group: group, Scheduled: m.index.Get(group).Scheduled()}
	s.Unit, _ = m.index.UnitOf(group)
	m.index.visit(root, func(g *Group) bool {
		s.Topology = s.Topology || len(g.Topology()) > 0
		s.Gang = s.Gang || g.IsGang()
		return !s.Topology || !s.Gang
	})
	return s, true
}

// Tree returns a snapshot of the tree a pod belongs to, or false while it has no valid root.
func (g *Gate) Tree(pod *v1.Pod) (*GroupView, bool) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.members.Of(pod.UID)
	if mem == nil {
		return nil, false
	}
	root, ok := m.index.RootOf(mem.Group)
	if !ok {
		return nil, false
	}
	v := m.viewLocked(root, nil)
	v.Priority = m.priorityLocked(pod, root)
	if r := m.permits.attempts.Round(root); r != nil {
		v.WaitingSince = r.waitingSince
	}
	return v, true
}

func (m *Model) viewLocked(k Key, parent *GroupView) *GroupView {
	g := m.index.Get(k)
	v := &GroupView{Key: k, Gang: g.IsGang(), Min: g.Minimum(), Topology: g.Topology(), Scheduled: g.Scheduled(), Parent: parent}
	for _, c := range m.index.Children(k) {
		v.Children = append(v.Children, m.viewLocked(c, v))
	}
	var leader *v1.Pod
	for _, mem := range m.members.InGroup(k) {
		leader = mem.Pod
		switch a := m.permits.attempts.Of(mem.Pod.UID); {
		case mem.Bound():
			v.PlacedNodes = append(v.PlacedNodes, mem.Pod.Spec.NodeName)
		case a != nil:
			v.PlacedNodes = append(v.PlacedNodes, a.Node)
		default:
			v.Pending = append(v.Pending, mem.Pod)
		}
	}
	if n := g.Followers(); n > 0 && leader != nil {
		v.Min += n
		v.Pending = append(v.Pending, m.followersLocked(k, leader, n)...)
		v.FollowersTimeout = g.FollowersTimeout()
	}
	return v
}

// followerUIDPrefix starts the UID of every follower (IsFollower): no pod's UID does.
const followerUIDPrefix = "lockstep-follower:"

// IsFollower reports whether a pod of a view is a follower planned before it exists, not a
// member: it is never scheduled, nominated or bound.
func IsFollower(p *v1.Pod) bool { return IsFollowerUID(p.UID) }

// IsFollowerUID is IsFollower by UID.
func IsFollowerUID(uid types.UID) bool { return strings.HasPrefix(string(uid), followerUIDPrefix) }

// followersLocked returns n followers of PodGroup k, shaped as its workload will make them
// (filing.FollowerShapes), else as its leader.
func (m *Model) followersLocked(k Key, leader *v1.Pod, n int) []*v1.Pod {
	var shape *v1.Pod
	if f, ok := m.book.Workloads().(filing.FollowerShapes); ok {
		shape = f.FollowerOf(leader)
	}
	if shape == nil {
		shape = leader
	}
	out := make([]*v1.Pod, n)
	for i := range out {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: k.Namespace, Name: fmt.Sprintf("%s-follower-%d", k.Name, i),
			UID:    types.UID(fmt.Sprintf("%s%s/%s/%d", followerUIDPrefix, k.Namespace, k.Name, i)),
			Labels: shape.Labels, Annotations: shape.Annotations,
		}, Spec: *shape.Spec.DeepCopy()}
		p.Spec.NodeName = ""
		out[i] = p
	}
	return out
}

// Pending reports whether a pod is a member that is neither bound nor reserved: capacity a
// plan promised it is still promised.
func (g *Gate) Pending(uid types.UID) bool {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.members.Of(uid)
	return mem != nil && !mem.Bound() && m.permits.attempts.Of(uid) == nil
}
