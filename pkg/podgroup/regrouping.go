package podgroup

import (
	"k8s.io/apimachinery/pkg/util/sets"
)

// What the model says of a running pod (its tree, its disruption unit, the unit's priority)
// can change while its node does not: a group created, edited or deleted while its members
// run, a PriorityClass edited. Gang preemption keeps what it read of each domain from one
// decision to the next while the domain's nodes do not change (gangpreemption's kept bounds);
// the regrouping log tells it where the model's word changed, so that it reads those domains
// afresh at its next decision rather than trusting a bound for a lifetime.

// maxRegroupings is how many changes the log keeps: a reader further behind is told that
// everything may have changed.
const maxRegroupings = 256

// regroupings is the log of the model's changes that can change what it says of running
// pods: each entry the nodes of the members that held room when it was noted.
type regroupings struct {
	// seq numbers the changes; entries holds the last ones, entries[i] being change
	// first+i+1.
	seq, first uint64
	entries    [][]string
	// all is the last change that may have touched every pod (a PriorityClass edited).
	all uint64
}

// noteTreeLocked logs a change of the tree under top: the nodes its members run on.
func (m *Model) noteTreeLocked(top Key) {
	nodes := sets.New[string]()
	m.noteGroupNodes(top, nodes) // a group not in the index (deleted): its members stay filed under it
	for _, k := range m.index.Subtree(top) {
		m.noteGroupNodes(k, nodes)
	}
	if nodes.Len() == 0 {
		return
	}
	r := &m.regroupings
	r.seq++
	r.entries = append(r.entries, sets.List(nodes))
	if len(r.entries) > maxRegroupings {
		drop := len(r.entries) - maxRegroupings/2
		r.entries = append([][]string(nil), r.entries[drop:]...)
		r.first += uint64(drop)
	}
}

func (m *Model) noteGroupNodes(k Key, into sets.Set[string]) {
	for _, mem := range m.members.byGroup[k] {
		if mem.Bound() {
			into.Insert(mem.Pod.Spec.NodeName)
		}
	}
}

// noteAllLocked logs a change that may touch every running pod.
func (m *Model) noteAllLocked() {
	r := &m.regroupings
	r.seq++
	r.all = r.seq
	r.entries, r.first = nil, r.seq
}

// OnPriorityClass notes that a PriorityClass was created, edited or deleted.
func (m *Model) OnPriorityClass() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteAllLocked()
}

// Regrouped returns the nodes whose pods the model may say something else of since change
// since (0: since the start), all if that may be every node, and the last change's number,
// to ask from next time.
func (g *Gate) Regrouped(since uint64) (nodes []string, all bool, now uint64) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &m.regroupings
	if since >= r.seq {
		return nil, false, r.seq
	}
	if since < r.all || since < r.first {
		return nil, true, r.seq
	}
	seen := sets.New[string]()
	for _, e := range r.entries[since-r.first:] {
		seen.Insert(e...)
	}
	return sets.List(seen), false, r.seq
}
