package podgroup

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Plan is where a placement planner decided the pending members of one tree go. The model
// keeps it so that every member of the tree reuses it, and so that capacity promised to it
// is not promised to another tree.
type Plan struct {
	Root Key
	// Pods maps each planned member to its node and what it requests there.
	Pods map[types.UID]PlannedPod
	// Domains are the nodes a group's members must stay on (the group's domain), for
	// members the plan did not place (created later, or beyond what fit).
	Domains map[Key]sets.Set[string]
	// Refused are groups the plan could not place (the tree is ready without them), with
	// the reason; their members are refused until the tree is planned again.
	Refused map[Key]string
	// Chosen names the domain each group was placed in, e.g. "rack r3", for logs and events.
	Chosen map[Key]string
	// Unplanned records that the tree is left to the scheduler's own scoring (its members
	// have preferences a plan would not honor), so that its members need not look again.
	Unplanned bool
	Created   time.Time
}

// PlannedPod is one member's place in a plan.
type PlannedPod struct {
	Node    string
	Request Resources
}

// GroupView is a read-only snapshot of one group of a tree, for planning.
type GroupView struct {
	Key      Key
	Gang     bool
	Min      int
	Topology []v1alpha1.TopologyConstraint
	Parent   *GroupView
	Children []*GroupView
	// Pending are the members of a PodGroup that are neither assumed nor bound.
	Pending []*v1.Pod
	// PlacedNodes are the nodes of members that are assumed or bound.
	PlacedNodes []string
}

// Summary describes a pod's tree without its members: cheap enough for every member's
// scheduling cycle, where Tree is for the one that plans.
type Summary struct {
	Root, Group Key
	// Topology: some group of the tree has topology constraints; Gang: some has the gang
	// policy.
	Topology, Gang bool
}

// Summary returns the summary of the tree a pod belongs to, or false while it has no valid
// root.
func (m *Manager) Summary(pod *v1.Pod) (Summary, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keyOfLocked(pod)
	if !ok {
		return Summary{}, false
	}
	root, ok := m.groups.rootOf(k)
	if !ok {
		return Summary{}, false
	}
	s := Summary{Root: root, Group: k}
	for _, key := range m.groups.subtree(root) {
		g := m.groups[key]
		s.Topology = s.Topology || len(g.topology()) > 0
		s.Gang = s.Gang || g.isGang()
	}
	return s, true
}

// Tree returns a snapshot of the tree a pod belongs to, or false while it has no valid root.
func (m *Manager) Tree(pod *v1.Pod) (*GroupView, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keyOfLocked(pod)
	if !ok {
		return nil, false
	}
	root, ok := m.groups.rootOf(k)
	if !ok {
		return nil, false
	}
	return m.viewLocked(root, nil), true
}

func (m *Manager) viewLocked(k Key, parent *GroupView) *GroupView {
	g := m.groups[k]
	v := &GroupView{Key: k, Gang: g.isGang(), Min: g.minimum(), Topology: g.topology(), Parent: parent}
	for _, c := range sortedKeys(g.children) {
		if cg := m.groups[c]; cg != nil && cg.exists() && cg.problem == "" {
			v.Children = append(v.Children, m.viewLocked(c, v))
		}
	}
	uids := make([]types.UID, 0, len(g.members))
	for uid := range g.members {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return g.members[uids[i]].pod.Name < g.members[uids[j]].pod.Name })
	for _, uid := range uids {
		mem := g.members[uid]
		switch {
		case mem.bound:
			v.PlacedNodes = append(v.PlacedNodes, mem.pod.Spec.NodeName)
		case mem.assumed:
			v.PlacedNodes = append(v.PlacedNodes, mem.node)
		default:
			v.Pending = append(v.Pending, mem.pod)
		}
	}
	return v
}

// Walk calls fn for v and every group below it, parents first.
func (v *GroupView) Walk(fn func(*GroupView)) {
	fn(v)
	for _, c := range v.Children {
		c.Walk(fn)
	}
}

// SetPlanTTL sets how long a plan promises capacity before it expires.
func (m *Manager) SetPlanTTL(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.planTTL = d
}

// Plan returns the live plan of root, or nil.
func (m *Manager) Plan(root Key) *Plan {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.livePlanLocked(root)
}

func (m *Manager) livePlanLocked(root Key) *Plan {
	p := m.plans[root]
	if p != nil && m.now().Sub(p.Created) > m.planTTL {
		delete(m.plans, root)
		return nil
	}
	return p
}

// StorePlan keeps a plan for its root, replacing any earlier one.
func (m *Manager) StorePlan(p *Plan) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plans[p.Root] = p
}

// DropPlan forgets the plan of root; the next member to be scheduled plans the tree again.
func (m *Manager) DropPlan(root Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.plans[root]
	delete(m.plans, root)
	return ok
}

// Promised returns, per node, the capacity live plans of other trees promised to members
// that are not assumed yet (assumed members are in the scheduler's snapshot already).
func (m *Manager) Promised(except Key) map[string]Resources {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Resources{}
	for root := range m.plans {
		if root == except {
			continue
		}
		p := m.livePlanLocked(root)
		if p == nil {
			continue
		}
		for uid, pp := range p.Pods {
			k, ok := m.podKeys[uid]
			if !ok {
				continue // deleted
			}
			if mem := m.groups[k].members[uid]; mem.assumed || mem.bound {
				continue
			}
			r := out[pp.Node]
			r.Add(pp.Request)
			out[pp.Node] = r
		}
	}
	return out
}
