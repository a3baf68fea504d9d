package podgroup

import (
	"fmt"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// A PodGroup is ready when at least its minimum of pods count; a CompositePodGroup when at
// least its minimum of children are ready; a group that was initially scheduled (and whose
// minimum was not raised since) stays ready, so that its replacements need no gang. Which
// pods count depends on the question: pods that exist (may a member enter the queue?), pods
// placed (may the tree bind?), pods that may still be placed this round (can the tree still
// be ready?), pods bound (is the whole tree bound?).

// counter returns how many pods of a PodGroup count for a question.
type counter func(Key) int

// readiness evaluates the groups of an index against one counter, memoizing subtrees.
type readiness struct {
	ix    *Index
	count counter
	// sticky: initially scheduled groups are ready whatever the count.
	sticky bool
	memo   map[Key]bool
}

func (ix *Index) readiness(c counter, sticky bool) *readiness {
	return &readiness{ix: ix, count: c, sticky: sticky, memo: map[Key]bool{}}
}

// subtree reports whether the group's own requirement holds.
func (r *readiness) subtree(k Key) bool {
	if v, ok := r.memo[k]; ok {
		return v
	}
	r.memo[k] = false // guards against cycles; invalid groups are never ready
	g := r.ix.entries[k]
	ready := false
	if g.Exists() && g.problem == "" {
		switch {
		case r.sticky && g.Scheduled():
			ready = true
		case k.Kind == KindPodGroup:
			ready = r.count(k) >= g.Minimum()
		default:
			ready = r.readyChildren(k) >= g.Minimum()
		}
	}
	r.memo[k] = ready
	return ready
}

func (r *readiness) readyChildren(k Key) int {
	n := 0
	for c := range r.ix.entries[k].children {
		if r.subtree(c) {
			n++
		}
	}
	return n
}

// path reports whether the group and every ancestor up to the root are ready: whether a
// pod of the PodGroup may proceed.
func (r *readiness) path(k Key) bool {
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		if !r.subtree(k) {
			return false
		}
		pk, ok := r.ix.entries[k].ParentKey()
		if !ok {
			return true
		}
		k = pk
	}
	return false
}

// shortfall says, for a group whose path is not ready, what the first group on the path
// lacks, in numbers: "2 of 3 pods exist", "parent job: 1 of 2 child groups ready".
func (r *readiness) shortfall(k Key, what string) string {
	g := r.ix.entries[k]
	switch {
	case !g.Exists():
		return fmt.Sprintf("%s does not exist", k)
	case g.problem != "":
		return "invalid: " + g.problem
	case k.Kind == KindPodGroup && !r.subtree(k):
		return fmt.Sprintf("%d of %d pods %s", r.count(k), g.Minimum(), what)
	case k.Kind == KindCompositePodGroup && !r.subtree(k):
		return fmt.Sprintf("%d of %d child groups ready", r.readyChildren(k), g.Minimum())
	}
	if pk, ok := g.ParentKey(); ok {
		return fmt.Sprintf("parent %s: %s", pk.Name, r.shortfall(pk, what))
	}
	return ""
}
