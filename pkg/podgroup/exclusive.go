package podgroup

import (
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Exclusive is a group that takes a domain of a topology level to itself (a Required
// constraint with exclusive set: JobSet's exclusive-topology), with where its members are.
type Exclusive struct {
	Group, Root Key
	// Key is the node label of the level.
	Key string
	// Nodes are the nodes of members that are bound or reserved.
	Nodes []string
}

// ExclusiveKey returns the label key of a group's exclusive constraint, "" for none.
func ExclusiveKey(constraints []v1alpha1.TopologyConstraint) string {
	for _, c := range constraints {
		if c.Exclusive && c.Mode != v1alpha1.TopologyPreferred {
			return c.Key
		}
	}
	return ""
}

// Exclusives returns the exclusive groups of valid trees that have members bound or
// reserved: the domains they hold.
func (g *Gate) Exclusives() []Exclusive {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Exclusive
	for _, k := range m.index.Exclusive() {
		g := m.index.Get(k)
		key := ExclusiveKey(g.Topology())
		if key == "" {
			continue
		}
		root, ok := m.index.RootOf(k)
		if !ok {
			continue
		}
		e := Exclusive{Group: k, Root: root, Key: key}
		for _, mem := range m.members.InGroup(k) {
			switch a := m.permits.attempts.Of(mem.Pod.UID); {
			case mem.Bound():
				e.Nodes = append(e.Nodes, mem.Pod.Spec.NodeName)
			case a != nil:
				e.Nodes = append(e.Nodes, a.Node)
			}
		}
		if len(e.Nodes) > 0 {
			out = append(out, e)
		}
	}
	return out
}
