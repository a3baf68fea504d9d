package podgroup

import (
	"cmp"
	"slices"
	"strings"

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

// logSlack is how many notes the log holds beyond twice the nodes remembered before it is
// compacted.
const logSlack = 1024

// regroupings number the model's changes that can change what it says of running pods, and
// remember, per node, the last change that touched a member running there. Their size is
// bounded by the nodes, whatever the number of changes (status writes of running gangs are
// changes too).
type regroupings struct {
	seq uint64
	at  map[string]uint64
	// log is the notes in the order of their changes (a node again at each change that
	// touched it), so that a reader reads the changes since its last read, not every node
	// remembered; rebuilt from at once it holds many more notes than at has nodes.
	log []regrouped
	// floor: changes up to it touched every node (a PriorityClass edited), or were forgotten.
	floor uint64
	// limit is maxRegroupedNodes, slack logSlack (tests lower them).
	limit, slack int
}

// regrouped is one note of the log: change seq touched a member on node.
type regrouped struct {
	seq  uint64
	node string
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
	m.regroupings.note(nodes)
}

// note numbers one change that touched members on nodes (none: no change).
func (r *regroupings) note(nodes sets.Set[string]) {
	if nodes.Len() == 0 {
		return
	}
	r.seq++
	if r.at == nil {
		r.at = map[string]uint64{}
	}
	for n := range nodes {
		r.at[n] = r.seq
		r.log = append(r.log, regrouped{seq: r.seq, node: n})
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
	slack := r.slack
	if slack == 0 {
		slack = logSlack
	}
	if len(r.log) > 2*len(r.at)+slack {
		r.compact()
	}
}

// compact rebuilds the log from the last change of each node remembered, in change order.
func (r *regroupings) compact() {
	r.log = r.log[:0]
	for n, s := range r.at {
		r.log = append(r.log, regrouped{seq: s, node: n})
	}
	slices.SortFunc(r.log, func(a, b regrouped) int {
		if a.seq != b.seq {
			return cmp.Compare(a.seq, b.seq)
		}
		return strings.Compare(a.node, b.node)
	})
}

// everywhere numbers a change that may touch every running pod.
func (r *regroupings) everywhere() {
	r.seq++
	r.floor = r.seq
	clear(r.at)
	r.log = r.log[:0]
}

// since returns the nodes touched by changes after since, sorted, all if that may be every
// node, and the last change's number.
func (r *regroupings) since(since uint64) (nodes []string, all bool, now uint64) {
	if since >= r.seq {
		return nil, false, r.seq
	}
	if since < r.floor {
		return nil, true, r.seq
	}
	// The log's notes after since; those at or below floor, forgotten from at and maybe not
	// yet from the log, are not read (since is at least floor).
	i, _ := slices.BinarySearchFunc(r.log, since+1, func(e regrouped, seq uint64) int { return cmp.Compare(e.seq, seq) })
	for _, e := range r.log[i:] {
		nodes = append(nodes, e.node)
	}
	slices.Sort(nodes)
	return slices.Compact(nodes), false, r.seq
}

// noteGroupNodes adds the nodes a group's members hold: those they are bound to, and those a
// reservation holds for them (the scheduler's NodeInfo counts a reserved pod as there).
func (m *Model) noteGroupNodes(k Key, into sets.Set[string]) {
	for _, mem := range m.members.byGroup[k] {
		if mem.Bound() {
			into.Insert(mem.Pod.Spec.NodeName)
		} else if a := m.permits.attempts.Of(mem.Pod.UID); a != nil && a.Node != "" {
			into.Insert(a.Node)
		}
	}
	for _, p := range m.foreign.byGroup[k] {
		if p.Spec.NodeName != "" {
			into.Insert(p.Spec.NodeName)
		}
	}
}

// noteAllLocked notes a change that may touch every running pod.
func (m *Model) noteAllLocked() { m.regroupings.everywhere() }

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
	return m.regroupings.since(since)
}
