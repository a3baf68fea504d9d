package gangpreemption

import (
	"sync"

	fwk "k8s.io/kube-scheduler/framework"
)

// scratch is what a decision needs as long as the snapshot's list of nodes: what each node
// holds (classifier) and the simulation's copy of the list. Made afresh, at 15,000 nodes
// they were 350 KB of every decision, two fifths of what it allocated, whatever few racks it
// read; decisions run one after the other, so each reuses the last one's. A decision that
// finds the scratch taken (none does in the scheduler: decisions run in PostFilter, on the
// scheduling goroutine) makes its own.
type scratch struct {
	mu sync.Mutex
	// byNode is what each node holds, by place in the snapshot's list, nil where the
	// decision did not read it; read lists the places it read, which are all it clears.
	byNode []*nodeUnits
	read   []int
	// sim is the simulation's list: the snapshot's, with the nodes a dry run changed copied.
	sim []fwk.NodeInfo
	// bounded are the domains that may hold the tree, with their bounds (Evaluator.Cheapest).
	bounded []boundedDomain
}

// boundedDomain is a domain that may hold the tree by resources, at place at among the
// decision's domains, with the lowest cost it could be freed at: its bound, or where onlyFloor,
// a floor of its bound (inventory.floor).
type boundedDomain struct {
	at        int
	floor     Cost
	onlyFloor bool
}

// take returns a scratch for a decision on nodes nodes, cleared, and the func that gives it
// back once the decision is done.
func (s *scratch) take(nodes int) (*scratch, func()) {
	if !s.mu.TryLock() {
		return newScratch(nodes), func() {}
	}
	s.size(nodes)
	return s, s.giveBack
}

// newScratch returns a scratch of its own for one decision on nodes nodes.
func newScratch(nodes int) *scratch {
	s := &scratch{}
	s.size(nodes)
	return s
}

// size makes the node-long lists nodes long.
func (s *scratch) size(nodes int) {
	if cap(s.byNode) < nodes {
		s.byNode = make([]*nodeUnits, nodes)
	}
	s.byNode = s.byNode[:nodes]
	s.sim = s.sim[:0]
	s.bounded = s.bounded[:0]
}

// giveBack clears what the decision left, so that it keeps none of the snapshot's nodes or
// pods alive, and frees the scratch for the next decision.
func (s *scratch) giveBack() {
	for _, i := range s.read {
		s.byNode[i] = nil
	}
	s.read = s.read[:0]
	clear(s.sim)
	s.sim = s.sim[:0]
	s.mu.Unlock()
}
