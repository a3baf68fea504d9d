package podgroup

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
)

// What the model says of a running pod (its tree, its disruption unit, the unit's priority)
// can change while its node does not: a group created, edited or deleted while its members
// run, a PriorityClass edited. Gang preemption keeps what it read of each domain from one
// decision to the next while the domain's nodes do not change (gangpreemption's kept bounds);
// the regroupings tell it where the model's word changed, so that it reads those domains
// afresh at its next decision rather than trusting a bound for a fixed lifetime.

// maxRegroupedNodes is how many nodes the regroupings remember: beyond, the older half is
// forgotten, and a reader that had not seen it is told that every node may have changed.
const maxRegroupedNodes = 100_000

// regroupings number the model's changes that can change what it says of running pods, and
// remember, per node, the last change that touched a member running there. Their size is
// bounded by the nodes, whatever the number of changes (status writes of running gangs are
// changes too).
type regroupings struct {
	seq uint64
	at  map[string]uint64
	// floor: changes up to it touched every node (a PriorityClass edited), or were forgotten.
	floor uint64
	// limit is maxRegroupedNodes (tests lower it).
	limit int
}

// noteTreesLocked notes one change of the trees under tops: the nodes their members run on.
// A top not in the index (a group deleted) counts its own members, still filed under it.
func (m *Model) noteTreesLocked(tops ...Key) {
	nodes := sets.New[string]()
	for i, top := range tops {
		if slices.Contains(tops[:i], top) {
			continue
		}
		m.noteGroupNodes(top, nodes)
		for _, k := range m.index.Subtree(top) {
			if k != top {
				m.noteGroupNodes(k, nodes)
			}
		}
	}
	if nodes.Len() == 0 {
		return
	}
	r := &m.regroupings
	r.seq++
	if r.at == nil {
		r.at = map[string]uint64{}
	}
	for n := range nodes {
		r.at[n] = r.seq
	}
	limit := r.limit
	if limit == 0 {
		limit = maxRegroupedNodes
	}
	if len(r.at) > limit {
		seqs := make([]uint64, 0, len(r.at))
		for _, s := range r.at {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		r.floor = max(r.floor, seqs[len(seqs)/2])
		for n, s := range r.at {
			if s <= r.floor {
				delete(r.at, n)
			}
		}
	}
}

func (m *Model) noteGroupNodes(k Key, into sets.Set[string]) {
	for _, mem := range m.members.byGroup[k] {
		if mem.Bound() {
			into.Insert(mem.Pod.Spec.NodeName)
		}
	}
}

// noteAllLocked notes a change that may touch every running pod.
func (m *Model) noteAllLocked() {
	r := &m.regroupings
	r.seq++
	r.floor = r.seq
	clear(r.at)
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
	if since < r.floor {
		return nil, true, r.seq
	}
	for n, s := range r.at {
		if s > since {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	return nodes, false, r.seq
}
