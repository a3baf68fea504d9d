package podgroup

import (
	"fmt"
	"strings"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// groups is the model's index; the methods here are pure functions of it, so they are unit
// tested without informers.
type groups map[Key]*group

// hierarchyProblem returns why the group's chain of parents is invalid, or "" if it is valid.
// It walks up from k: a parent that does not exist, a parent that is a PodGroup, a cycle or
// a chain deeper than v1alpha1.MaxTreeDepth make every group below them invalid.
func (gs groups) hierarchyProblem(k Key) string {
	path := []Key{k}
	cur := gs[k]
	for cur != nil {
		pk, ok := cur.parentKey()
		if !ok {
			break
		}
		for i, seen := range path {
			if seen == pk {
				return "cycle: " + joinNames(append(path[i:], pk))
			}
		}
		path = append(path, pk)
		parent := gs[pk]
		if parent == nil || !parent.exists() {
			if pg := gs[PodGroupKey(pk.Namespace, pk.Name)]; pg != nil && pg.exists() {
				return fmt.Sprintf("parent %q is a PodGroup; parentCompositePodGroupName must name a CompositePodGroup", pk.Name)
			}
			return fmt.Sprintf("parent CompositePodGroup %q not found", pk.Name)
		}
		if len(path) > v1alpha1.MaxTreeDepth {
			return fmt.Sprintf("tree too deep: %s has more than %d levels", joinNames(reverse(path)), v1alpha1.MaxTreeDepth)
		}
		cur = parent
	}
	return ""
}

// rootOf returns the root of k's tree; ok is false while the hierarchy is invalid.
func (gs groups) rootOf(k Key) (Key, bool) {
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		g := gs[k]
		if g == nil || !g.exists() || g.problem != "" {
			return Key{}, false
		}
		pk, ok := g.parentKey()
		if !ok {
			return k, true
		}
		k = pk
	}
	return Key{}, false
}

// topOf returns the highest group reachable from k by following parents, stopping at a root,
// a missing parent or a repetition. Refreshing the subtree of topOf(k) covers every group
// whose validity or readiness a change at k can affect.
func (gs groups) topOf(k Key) Key {
	seen := map[Key]bool{k: true}
	for {
		g := gs[k]
		if g == nil {
			return k
		}
		pk, ok := g.parentKey()
		if !ok || seen[pk] || gs[pk] == nil {
			return k
		}
		seen[pk] = true
		k = pk
	}
}

// subtree returns k and every group below it, parents before children.
func (gs groups) subtree(k Key) []Key {
	var out []Key
	seen := map[Key]bool{}
	var walk func(Key)
	walk = func(k Key) {
		if seen[k] || gs[k] == nil {
			return
		}
		seen[k] = true
		out = append(out, k)
		for _, c := range sortedKeys(gs[k].children) {
			walk(c)
		}
	}
	walk(k)
	return out
}

// counter picks which pods count for a readiness question.
type counter func(*group) int

var (
	countKnown     counter = (*group).known
	countScheduled counter = (*group).scheduledN
	countPossible  counter = (*group).possible
	countBound     counter = (*group).boundN
)

// readiness evaluates groups of one tree against one counter, memoizing subtree results.
type readiness struct {
	gs    groups
	count counter
	memo  map[Key]bool
}

func (gs groups) readiness(c counter) *readiness {
	return &readiness{gs: gs, count: c, memo: map[Key]bool{}}
}

// subtree reports whether the group's own requirement holds: count ≥ minCount for a
// PodGroup, ready children ≥ minGroupCount for a CompositePodGroup.
func (r *readiness) subtree(k Key) bool {
	if v, ok := r.memo[k]; ok {
		return v
	}
	r.memo[k] = false // guards against cycles; invalid groups are never ready
	g := r.gs[k]
	ready := false
	if g != nil && g.exists() && g.problem == "" {
		switch k.Kind {
		case KindPodGroup:
			ready = r.count(g) >= g.minimum()
		case KindCompositePodGroup:
			ready = r.readyChildren(g) >= g.minimum()
		}
	}
	r.memo[k] = ready
	return ready
}

func (r *readiness) readyChildren(g *group) int {
	n := 0
	for c := range g.children {
		if r.subtree(c) {
			n++
		}
	}
	return n
}

// path reports whether the group and every ancestor up to the root are ready: the rule
// for whether a pod of a PodGroup may proceed.
func (r *readiness) path(k Key) bool {
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		if !r.subtree(k) {
			return false
		}
		pk, ok := r.gs[k].parentKey()
		if !ok {
			return true
		}
		k = pk
	}
	return false
}

// shortfall describes, for a group that is not ready, what it lacks, in numbers.
func (r *readiness) shortfall(k Key, what string) string {
	g := r.gs[k]
	switch {
	case g == nil || !g.exists():
		return fmt.Sprintf("%s does not exist", k)
	case g.problem != "":
		return "invalid: " + g.problem
	case k.Kind == KindPodGroup && !r.subtree(k):
		return fmt.Sprintf("%d of %d pods %s", r.count(g), g.minimum(), what)
	case k.Kind == KindCompositePodGroup && !r.subtree(k):
		return fmt.Sprintf("%d of %d child groups ready", r.readyChildren(g), g.minimum())
	}
	if pk, ok := g.parentKey(); ok {
		return fmt.Sprintf("parent %s: %s", pk.Name, r.shortfall(pk, what))
	}
	return ""
}

func joinNames(keys []Key) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return strings.Join(names, " → ")
}

func reverse(keys []Key) []Key {
	out := make([]Key, len(keys))
	for i, k := range keys {
		out[len(keys)-1-i] = k
	}
	return out
}
