package podgroup

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// The model's side of a group's life (life.go): it computes the facts a transition's guard
// reads from its parts, fires the event, and does what entering the new state asks of them.
// Events come from four places: the scheduler's calls (Permits: TreeAllowed, BindFailed),
// what settling a change observes (observeLocked: counts moved), timers (ShortTimeout,
// HalfBoundTimeout) and other components (Preempted, the group's object read back or
// deleted).

// fireLocked moves group k's life by ev, if an edge of the table allows it, and returns the
// transition taken (nil: none). why says what happened, for the log.
func (m *Model) fireLocked(eff *effects, k Key, ev Event, why string) *Transition {
	g := m.index.Get(k)
	if g == nil || (!g.Exists() && ev != Deleted) {
		return nil
	}
	snap := m.newSnapshot()
	return m.fireWithLocked(eff, k, g, ev, why, snap)
}

func (m *Model) fireWithLocked(eff *effects, k Key, g *Group, ev Event, why string, snap *snapshot) *Transition {
	if len(edges[g.life.state][ev]) == 0 {
		return nil // no edge from its state: nothing to judge
	}
	return m.takeLocked(eff, k, g, ev, m.factsLocked(k, g, ev, snap), why, snap)
}

// takeLocked fires ev on group k's life with facts f, and does what the transition taken asks.
func (m *Model) takeLocked(eff *effects, k Key, g *Group, ev Event, f Facts, why string, snap *snapshot) *Transition {
	from := g.life.state
	t := g.life.fire(ev, f)
	if t == nil {
		return nil
	}
	snap.stale()
	m.enteredLocked(eff, k, g, from, t, why)
	return t
}

// observeLocked fires the events settling a change may have brought about for group k (the
// counts its guards read moved), until its life rests. Its facts are computed once per step.
func (m *Model) observeLocked(eff *effects, k Key, snap *snapshot) {
	g := m.index.Get(k)
	if !g.Exists() {
		return
	}
	for range numStates { // each step moves the life; a handful at most
		var f Facts
		var t *Transition
		known := false
		for _, ev := range observed {
			if len(edges[g.life.state][ev]) == 0 {
				continue
			}
			if !known {
				f, known = m.factsLocked(k, g, ev, snap), true
			}
			if ev == FoundBound && !g.Scheduled() && foundBound(&g.life, f) && m.foundBoundDroppedLocked(eff, k) {
				// Bound members the scheduler's cache shows deleted were dropped.
				snap.stale()
				f = m.factsLocked(k, g, ev, snap)
			}
			if t = m.takeLocked(eff, k, g, ev, f, "", snap); t != nil {
				break
			}
		}
		if t == nil {
			return
		}
	}
}

// foundBoundDroppedLocked checks, before a group is found bound, that the bound members it
// counts still exist: the model hears of a deletion after the scheduler's cache does.
func (m *Model) foundBoundDroppedLocked(eff *effects, k Key) bool {
	root, ok := m.index.RootOf(k)
	return ok && m.permits.dropDeletedLocked(eff, root, nil)
}

// fireUnitLocked fires ev on every group of the subtree of top (a disruption unit, or a
// tree), top first.
func (m *Model) fireUnitLocked(eff *effects, top Key, ev Event, why string) {
	snap := m.newSnapshot()
	for _, k := range m.index.Subtree(top) {
		if g := m.index.Get(k); g.Exists() {
			m.fireWithLocked(eff, k, g, ev, why, snap)
		}
	}
}

// enteredLocked does what entering t.To asks of the model's parts.
func (m *Model) enteredLocked(eff *effects, k Key, g *Group, from State, t *Transition, why string) {
	root, hasRoot := m.index.RootOf(k)
	if why == "" {
		why = t.Guard
	}
	if logger := eff.logger.V(t.V); logger.Enabled() {
		logger.Info("Group state changed", "group", k, "root", root, "from", from, "event", t.Event, "to", t.To, "why", why)
	}
	if !from.placed() && (t.To == Allowed || (t.To == Running && t.Event != Whole)) {
		// Placed as a gang: what its failed attempts said is over.
		m.permits.scheduledLocked(k)
	}
	if t.To == Running && from != Running {
		m.permits.runsAgainLocked(k)
	}
	if from == PartiallyBound && t.To != PartiallyBound && hasRoot {
		m.permits.armPartialLocked(root) // its release is no longer due
	}
	switch t.To {
	case Running:
		if hasRoot {
			m.permits.observeBoundLocked(root)
		}
	case PartiallyBound:
		if hasRoot {
			m.permits.armPartialLocked(root)
		}
	case Pending:
		if from == Waiting || from == Held {
			return // its attempt's own outcome says why
		}
		if from == PartiallyBound && t.Event == Emptied {
			// It never ran whole, and nothing of it runs now: a gang again.
			m.permits.attempts.Outcome(k).Failure = "the pods it bound are gone (deleted, or their node lost) before it ran whole: it is placed whole again"
		}
	case Gone:
		return
	}
	if t.To != from || t.Writes != "" {
		m.status.Enqueue(k)
	}
}

// snapshot is what the guards of one settling read of a tree's readiness, built once and
// again after a transition (a group's state decides whether it counts as ready).
type snapshot struct {
	m            *Model
	known, bound *readiness
	// gated counts, per root, the members whose gates hold its tree.
	gated map[Key]int
}

func (m *Model) newSnapshot() *snapshot { return &snapshot{m: m} }

func (s *snapshot) stale() { s.known, s.bound = nil, nil }

// gatedOf counts the members of root's tree whose gates hold it (a transition changes no
// gate: kept while the snapshot lives).
func (s *snapshot) gatedOf(root Key) int {
	if n, ok := s.gated[root]; ok {
		return n
	}
	if s.gated == nil {
		s.gated = map[Key]int{}
	}
	n := s.m.gatedLocked(root)
	s.gated[root] = n
	return n
}

func (s *snapshot) knownReady() *readiness {
	if s.known == nil {
		s.known = s.m.index.readiness(s.m.members.Known, true)
	}
	return s.known
}

func (s *snapshot) boundReady() *readiness {
	if s.bound == nil {
		s.bound = s.m.index.readiness(s.m.members.BoundOrRan, false)
	}
	return s.bound
}

// factsLocked computes what the guards of group k's transitions for ev read.
func (m *Model) factsLocked(k Key, g *Group, ev Event, snap *snapshot) Facts {
	f := Facts{Now: m.clock.Now()}
	switch ev {
	case Deleted, Preempted, UnitReleased:
		return f // their guards read nothing
	}
	f.Minimum = g.Minimum()
	f.FullMinimum = f.Minimum + g.Followers()
	f.Generation = g.Generation()
	switch ev {
	case TreeAllowed:
		return f
	case Restored:
		f.Object = writtenOf(g)
		return f
	}
	f.Gang, f.Synced, f.Timeout = g.IsGang(), m.synced(), m.partialBindTimeoutLocked()
	_, f.Unit = m.index.UnitOf(k)
	root, valid := m.index.RootOf(k)
	if k.Kind == KindPodGroup {
		f.Bound = m.members.BoundOrRan(k)
		f.AnyBound = f.Bound > 0
		f.InFlight = m.permits.attempts.InFlight(k)
	} else {
		f.Bound = snap.boundReady().readyChildren(k)
		for _, pk := range m.index.PodGroupsOf(k) {
			f.AnyBound = f.AnyBound || m.members.BoundOrRan(pk) > 0
			f.InFlight += m.permits.attempts.InFlight(pk)
		}
	}
	switch {
	case valid && root == k && k.Kind == KindPodGroup:
		// A gang of one PodGroup (most are): its path is itself, counted without a walk.
		f.BoundPath = f.Bound >= f.Minimum
		f.Attempt = !m.permits.attempts.Ended(root)
		f.Ready = g.problem == "" && (g.Scheduled() || m.members.Known(k) >= f.Minimum) && m.gatedLocked(root) == 0
	case valid:
		f.BoundPath = snap.boundReady().path(k)
		f.Attempt = !m.permits.attempts.Ended(root)
		f.Ready = g.problem == "" && snap.knownReady().path(k) && snap.gatedOf(root) == 0
	}
	if ev == HalfBoundTimeout {
		f.HalfBound = valid && root == k && m.halfBoundLocked(root) && !f.Attempt && !m.permits.preemptingLocked(root)
	}
	return f
}

// writtenOf reads what a group's object says of its life (Restored).
func writtenOf(g *Group) Written {
	var w Written
	conds := g.conditions()
	gen := g.Generation()
	disrupted := meta.FindStatusCondition(conds, v1alpha1.DisruptionTarget)
	if disrupted != nil && disrupted.Status == metav1.ConditionTrue {
		w.Disrupted, w.DisruptedAt = true, disrupted.LastTransitionTime.Time
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled); c != nil && c.Status == metav1.ConditionTrue {
		w.Ran = true
		if c.ObservedGeneration == gen && !w.Disrupted {
			w.Running, w.RunningAt = true, c.LastTransitionTime.Time
			if disrupted != nil && disrupted.LastTransitionTime.After(w.RunningAt) {
				w.RunningAt = disrupted.LastTransitionTime.Time // placed whole again (Rescheduled)
			}
		}
	}
	switch c := meta.FindStatusCondition(conds, v1alpha1.Short); {
	case c != nil:
		if c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen {
			w.Short, w.ShortSince, w.Lost = true, c.LastTransitionTime.Time, c.Reason == v1alpha1.ReasonMemberLost
		}
	default:
		// Written by a lockstep before Short: a partial bind on PodGroupInitiallyScheduled.
		if c := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled); c != nil && c.Status == metav1.ConditionFalse &&
			c.Reason == v1alpha1.ReasonPartiallyBound && c.ObservedGeneration == gen {
			w.Short, w.ShortSince = true, c.LastTransitionTime.Time
		}
	}
	return w
}
