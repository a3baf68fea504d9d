package podgroup

import (
	"fmt"
	"slices"
	"time"
)

// A gang's life, as docs/semantics.md draws it ("A gang's life"): every PodGroup and
// CompositePodGroup the model knows is in one State, which changes only through Life.fire,
// along an edge of the table below. The table is the single source: the docs' table is
// checked against it (life_doc_test.go), the guards are the only place that judges a group
// by its counts, and what a transition writes on the object is the condition its new state
// computes (conditions.go).
//
// Each group has its own life: a composite's child gang added to a running tree is Pending
// while its siblings run. What concerns a disruption unit as a whole (a release, a
// preemption) is delivered to every group of the unit by one call (Model.fireUnitLocked).
// Plans, reservations and nominations stay with their owners: they ask the model, which
// tells them what a transition means for them (RoundObserver).

// State is where a group is in its life.
type State uint8

const (
	// Held: it cannot be tried yet: a group of its path is missing or invalid, too few of
	// its pods exist, or a member's scheduling gate holds its tree (Kueue placing it).
	Held State = iota
	// Pending: it may be tried and has no attempt in progress (backing off after a failed
	// one included).
	Pending
	// Waiting: its tree has an attempt in progress: members hold nodes and wait at Permit.
	Waiting
	// Allowed: its members were allowed to bind together; binds are in flight.
	Allowed
	// Running: every member it was allowed with is bound (PodGroupInitiallyScheduled True).
	// Replacements and retried members are placed one by one, inside its domain.
	Running
	// PartiallyBound: short of its minimum after it was allowed (a bind refused, a member
	// lost whose replacement does not bind), since a moment written on the object (Short
	// True). Its missing members are retried alone; still short after the short timeout
	// (partialBindTimeoutSeconds), its unit is released whole, unless it says
	// disruptionMode single.
	PartiallyBound
	// Released: lockstep evicts its unit's bound members (short too long, or half bound),
	// so that the pods its controller recreates are placed whole (DisruptionTarget True,
	// GangReleased).
	Released
	// Disrupted: a preemptor takes its unit whole (DisruptionTarget True,
	// PreemptionByScheduler); a gang again.
	Disrupted
	// Gone: its object was deleted; everything kept about it is freed.
	Gone
	numStates
)

var stateNames = [...]string{"Held", "Pending", "Waiting", "Allowed", "Running", "PartiallyBound", "Released", "Disrupted", "Gone"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// placed reports whether a group in the state was allowed as a gang and has not been
// disrupted since: its members are placed one by one (unless its minimum was raised since,
// Life.Scheduled).
func (s State) placed() bool { return s == Allowed || s == Running || s == PartiallyBound }

// runs reports whether its pods run as placed: whole, or short.
func (s State) runs() bool { return s == Running || s == PartiallyBound }

// Event is what moves a group's life: something the scheduler did, something observed in
// the cluster when the model settles a change (the counts the guards read), a timer, or the
// group's object read back.
type Event uint8

const (
	// PodsReady (observed): its path exists and is valid, enough pods exist, none gated.
	PodsReady Event = iota
	// PodsMissing (observed): not PodsReady.
	PodsMissing
	// AttemptStarted (observed): its tree has an attempt in progress.
	AttemptStarted
	// AttemptEnded (observed): its tree has no attempt in progress.
	AttemptEnded
	// TreeAllowed: Permit allowed its members to bind together (its path is ready counting
	// placed members).
	TreeAllowed
	// BindFailed: a member it was allowed with failed to bind.
	BindFailed
	// BindsDone (observed): no bind of its allowed members is in flight.
	BindsDone
	// Whole (observed): its minimum is bound (or ran) again.
	Whole
	// MemberLost (observed): a bound member is gone and fewer than its minimum are bound.
	MemberLost
	// Emptied (observed): no member is bound, ran or binding (the pods a release or a
	// preemption evicted are gone).
	Emptied
	// FoundBound (observed): its minimum is bound though no attempt of this scheduler allowed
	// it (what a restarted scheduler finds, pods bound by hand, a raised minimum met).
	FoundBound
	// ShortTimeout: the short timeout passed since it became short (the leader's timer).
	ShortTimeout
	// UnitReleased: another group of its disruption unit was released.
	UnitReleased
	// HalfBoundTimeout: its tree is half bound and its last attempt failed a backoff ago
	// (the leader's timer).
	HalfBoundTimeout
	// Preempted: a preemptor takes its disruption unit whole.
	Preempted
	// Restored: its object was read back (a restart, a new leader, a late event).
	Restored
	// Deleted: its object was deleted.
	Deleted
	numEvents
)

var eventNames = [...]string{"PodsReady", "PodsMissing", "AttemptStarted", "AttemptEnded", "TreeAllowed", "BindFailed",
	"BindsDone", "Whole", "MemberLost", "Emptied", "FoundBound", "ShortTimeout", "UnitReleased", "HalfBoundTimeout",
	"Preempted", "Restored", "Deleted"}

func (e Event) String() string {
	if e < numEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("Event(%d)", e)
}

// observed are the events the model looks for whenever it settles a change, in this order.
var observed = []Event{AttemptEnded, PodsMissing, PodsReady, AttemptStarted, BindsDone, Whole, MemberLost, Emptied, FoundBound}

// Facts are what the guards of a group's transitions read, computed by the model from its
// parts (Model.factsLocked) at the moment of the event: never kept.
type Facts struct {
	Now time.Time
	// Ready: every group of its path exists and is valid, enough pods exist for its path to
	// be ready, and no member's gate holds its tree.
	Ready bool
	// Attempt: its tree has an attempt in progress.
	Attempt bool
	// Minimum is its minimum now (minCount, minGroupCount; 1 for basic groups); FullMinimum
	// its minimum once placed (a PodGroup whose leaders bind first asks for its leaders
	// alone until then).
	Minimum, FullMinimum int
	// Generation is its spec's generation (what a condition written now observed).
	Generation int64
	// Bound counts what meets its minimum among what runs: a PodGroup's live bound members
	// and those that ran; a CompositePodGroup's children ready by them.
	Bound int
	// BoundPath: its path is ready counting what runs (the groups above it too).
	BoundPath bool
	// AnyBound: a member of its subtree is bound or ran. InFlight counts the binds of its
	// subtree's allowed members not seen yet.
	AnyBound bool
	InFlight int
	// Gang: it has the gang policy; only a gang is ever short.
	Gang bool
	// Synced: the model has seen every group and pod that existed when it started: what it
	// misses before is not lost (a restarted scheduler reads its pods after its groups).
	Synced bool
	// Unit: its disruption unit may be disrupted whole (disruptionMode all on its path).
	Unit bool
	// Timeout is the short timeout (partialBindTimeoutSeconds).
	Timeout time.Duration
	// HalfBound: its tree has members bound though it never ran, its last attempt failed
	// and no attempt or preemption of it is under way (HalfBoundTimeout).
	HalfBound bool
	// Object is what its object says, for Restored.
	Object Written
}

// Written is what a group's object says of its life, read back by Restored: each fact and
// the moment its condition says it began (its lastTransitionTime).
type Written struct {
	// Ran: PodGroupInitiallyScheduled is True, at any generation (terminal).
	Ran bool
	// Running: PodGroupInitiallyScheduled is True at the current generation and
	// DisruptionTarget is not True; RunningAt is when it was last placed whole (that True's,
	// or a later DisruptionTarget False's, lastTransitionTime).
	Running   bool
	RunningAt time.Time
	// Short: Short is True at the current generation, since ShortSince; Lost: its reason is
	// MemberLost (it lost a member while it ran, not a bind of its attempt).
	Short      bool
	ShortSince time.Time
	Lost       bool
	// Disrupted: DisruptionTarget is True, since DisruptedAt.
	Disrupted   bool
	DisruptedAt time.Time
}

// Life is one group's state and the facts of its state that outlive an event.
type Life struct {
	state State
	// since is when it entered its state; for PartiallyBound, when it became short: the fact
	// written on the object (Short's lastTransitionTime) and restored from it.
	since time.Time
	// decided is when the model last decided its run (entered Allowed, Running, Released,
	// Disrupted, or Pending from one of them), or the moment of the fact a Restored took: an
	// object saying something older is stale and moves nothing.
	decided time.Time
	// min is the minimum it was allowed (or found bound) with: a gang placed runs with it,
	// and a minimum raised since asks for a gang again without making it short.
	min int
	// ran: it was Running once since its object was created (PodGroupInitiallyScheduled
	// True, which is terminal).
	ran bool
	// placedGen is the generation of the spec it was last placed whole under: its True's
	// observedGeneration, however late it is written (a minimum raised since is not met by
	// what runs, and a new leader must not read it so).
	placedGen int64
	// lost: PartiallyBound because it lost a member while it ran (Short's reason
	// MemberLost), not because binds of its attempt failed: a gang placed again after a
	// disruption ran before, yet its failed binds are a failed attempt.
	lost bool
	// last is the last transition taken (for the invariants' check that nothing else moves a
	// life).
	last *Transition
}

// State is the group's state.
func (l *Life) State() State { return l.state }

// Since is when it entered its state (for PartiallyBound: when it became short).
func (l *Life) Since() time.Time { return l.since }

// Ran reports whether it was Running once since its object was created.
func (l *Life) Ran() bool { return l.ran }

// Scheduled reports whether its members are placed one by one: it was allowed as a gang, is
// not disrupted since, and its minimum was not raised since.
func (l *Life) Scheduled(minimum int) bool { return l.state.placed() && minimum <= l.min }

// Placed reports whether it was allowed as a gang and not disrupted since, whatever its
// minimum now.
func (l *Life) Placed() bool { return l.state.placed() }

// runMin is the minimum it runs with: the one it was allowed with, or a lower one now.
func (l *Life) runMin(minimum int) int {
	if l.min > 0 && l.min < minimum {
		return l.min
	}
	return minimum
}

// whole reports whether what runs meets the minimum it runs with.
func (l *Life) whole(f Facts) bool { return f.Bound >= l.runMin(f.Minimum) }

// due is when it is released if it stays short (PartiallyBound).
func (l *Life) due(timeout time.Duration) time.Time { return l.since.Add(timeout) }

// shortDecided reports whether its short timeout was decided already (a gang that says
// disruptionMode single keeps running short).
func (l *Life) shortDecided(timeout time.Duration) bool {
	return l.state == PartiallyBound && !l.decided.Before(l.due(timeout))
}

// Transition is an edge of the life table.
type Transition struct {
	From  State
	Event Event
	// Guard says when the edge is taken, in words (the docs' column); When decides it.
	Guard string
	When  func(l *Life, f Facts) bool
	To    State
	// Writes is what the new state writes on the group's object (the docs' column).
	Writes string
	// V is the verbosity of the transition's log line.
	V int
}

func always(*Life, Facts) bool { return true }

// newer reports whether an object's fact of moment t is newer than what the machine last
// decided (anything is, before it decided anything): what it wrote itself before it decided
// again, read back late, is not.
func newer(l *Life, t time.Time) bool { return l.decided.IsZero() || t.After(l.decided) }

// Lifecycle is the table of a group's life: from, event, guard, to, what is written, how
// loud. Rows of one (from, event) are tried in order; the first whose guard holds is taken.
// docs/semantics.md holds the same table (life_doc_test.go compares them).
var Lifecycle = table(
	row(of(Held), PodsReady, "its path exists and is valid, enough pods exist, none gated", ready, Pending, "", 4),
	row(of(Pending), PodsMissing, "a group of its path missing or invalid, too few pods, or a member gated", notReady, Held,
		"`PodGroupInitiallyScheduled` False: what it waits for", 4),
	row(of(Pending, Released, Disrupted), AttemptStarted, "a member of its tree holds a node", attempt, Waiting, "", 4),
	row(of(Waiting), AttemptEnded, "its tree's attempt failed, timed out or was abandoned", noAttempt, Pending,
		"`PodGroupInitiallyScheduled` False: why it failed (Unschedulable, Preempting, Reserving)", 4),

	row(of(Pending, Waiting, Released, Disrupted), TreeAllowed, "its path is ready counting placed members", always, Allowed, "nothing until its binds are done", 2),
	row(of(Running), TreeAllowed, "its raised minimum is met counting placed members", always, Allowed, "", 2),
	row(of(Allowed), BindsDone, "its minimum is bound", func(l *Life, f Facts) bool { return f.InFlight == 0 && l.whole(f) }, Running,
		"`PodGroupInitiallyScheduled` True; `DisruptionTarget` False and `Short` False over a True", 2),
	row(of(Allowed), BindsDone, "some of it bound, short of its minimum", func(l *Life, f Facts) bool { return f.InFlight == 0 && f.AnyBound }, PartiallyBound,
		"`Short` True, since now; `PodGroupInitiallyScheduled` False `PartiallyBound`", 2),
	row(of(Allowed), BindsDone, "none of it bound: a failed attempt, it backs off", emptied, Pending, "`PodGroupInitiallyScheduled` False: the binds failed", 2),
	row(of(Allowed), BindFailed, "some of it bound or binding", func(l *Life, f Facts) bool { return f.AnyBound || f.InFlight > 0 }, PartiallyBound,
		"`Short` True, since now (other binds still in flight); `PodGroupInitiallyScheduled` False `PartiallyBound`", 2),
	row(of(Allowed), BindFailed, "none of it bound or binding: a failed attempt, it backs off", always, Pending,
		"`PodGroupInitiallyScheduled` False: the binds failed", 2),
	row(of(PartiallyBound), BindFailed, "short by its attempt's binds (not a lost member), none of it bound or binding: a failed attempt, it backs off",
		func(l *Life, f Facts) bool { return !l.lost && emptied(l, f) }, Pending, "`PodGroupInitiallyScheduled` False: the binds failed; `Short` False", 2),

	row(of(PartiallyBound), Whole, "its minimum is bound again", func(l *Life, f Facts) bool { return l.whole(f) }, Running,
		"`Short` False; `PodGroupInitiallyScheduled` True", 2),
	row(of(Running), MemberLost, "a gang, short of its minimum (once the model has seen every pod)",
		func(l *Life, f Facts) bool { return f.Gang && f.Synced && !l.whole(f) }, PartiallyBound, "`Short` True (`MemberLost`), since now", 2),
	row(of(Released, Disrupted), Emptied, "none of it bound, ran or binding: its evicted pods are gone", emptied, Pending, "", 4),
	row(of(PartiallyBound), Emptied, "short by its attempt's binds (not a lost member), none of it bound, ran or binding (once the model has seen every pod): its bound pods are gone",
		func(l *Life, f Facts) bool { return !l.lost && f.Synced && emptied(l, f) }, Pending,
		"`PodGroupInitiallyScheduled` False: its bound pods are gone, it is placed whole again; `Short` False", 2),
	row(of(Held, Pending, Waiting), FoundBound, "its path is ready by bound pods, no attempt of this scheduler placed it", foundBound, Running,
		"`PodGroupInitiallyScheduled` True", 2),
	row(of(Running), FoundBound, "its raised minimum is bound", func(l *Life, f Facts) bool { return f.Minimum > l.min && foundBound(l, f) }, Running, "", 4),

	row(of(PartiallyBound), ShortTimeout, "still short; its unit may be disrupted whole (`disruptionMode` all)",
		func(l *Life, f Facts) bool { return f.Unit && !f.Now.Before(l.due(f.Timeout)) }, Released,
		"`DisruptionTarget` True `GangReleased`; its unit's bound pods evicted", 2),
	row(of(PartiallyBound), ShortTimeout, "still short; `disruptionMode` single: it keeps running short",
		func(l *Life, f Facts) bool { return !f.Unit && !f.Now.Before(l.due(f.Timeout)) }, PartiallyBound, "`Short` True: running short", 2),
	row(anyBut(Released, Gone), UnitReleased, "another group of its disruption unit was released", always, Released, "`DisruptionTarget` True `GangReleased`", 4),
	row(of(Pending), HalfBoundTimeout, "members bound though it never ran, its last attempt failed, no attempt or preemption under way",
		func(l *Life, f Facts) bool { return f.HalfBound }, Released, "`DisruptionTarget` True `GangReleased`; its tree's bound pods evicted", 2),
	row(anyBut(Gone), Preempted, "a preemptor takes its unit", always, Disrupted, "`DisruptionTarget` True `PreemptionByScheduler`", 2),

	row(of(Held, Pending, Waiting, Running), Restored, "it says it is short, since after the last decision", restoredShort, PartiallyBound, "", 2),
	row(of(PartiallyBound), Restored, "it says it is short since another moment after the last decision",
		func(l *Life, f Facts) bool { return restoredShort(l, f) && !f.Object.ShortSince.Equal(l.since) }, PartiallyBound, "", 4),
	row(of(Held, Pending, Waiting), Restored, "it says it was placed whole after the last decision", restoredRunning, Running, "", 2),
	row(of(Allowed, Running, PartiallyBound), Restored, "it says it is disrupted, since after the last decision", restoredDisrupted, Disrupted, "", 2),
	row(anyBut(Gone), Deleted, "its object was deleted", always, Gone, "", 4),
)

// row is the rows of the table from each of the states from.
func row(from []State, ev Event, guard string, when func(*Life, Facts) bool, to State, writes string, v int) []Transition {
	out := make([]Transition, 0, len(from))
	for _, s := range from {
		out = append(out, Transition{From: s, Event: ev, Guard: guard, When: when, To: to, Writes: writes, V: v})
	}
	return out
}

func table(rows ...[]Transition) []Transition {
	var out []Transition
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

func of(states ...State) []State { return states }

// anyBut is every state but those named.
func anyBut(except ...State) []State {
	var out []State
	for s := State(0); s < numStates; s++ {
		if !slices.Contains(except, s) {
			out = append(out, s)
		}
	}
	return out
}

func ready(_ *Life, f Facts) bool     { return f.Ready }
func notReady(_ *Life, f Facts) bool  { return !f.Ready }
func attempt(_ *Life, f Facts) bool   { return f.Attempt }
func noAttempt(_ *Life, f Facts) bool { return !f.Attempt }
func emptied(_ *Life, f Facts) bool   { return !f.AnyBound && f.InFlight == 0 }

func foundBound(l *Life, f Facts) bool { return f.Bound >= f.Minimum && f.BoundPath }

func restoredShort(l *Life, f Facts) bool {
	return f.Object.Short && !f.Object.Disrupted && newer(l, f.Object.ShortSince)
}

func restoredRunning(l *Life, f Facts) bool {
	return f.Object.Running && !f.Object.Short && newer(l, f.Object.RunningAt)
}

func restoredDisrupted(l *Life, f Facts) bool {
	return f.Object.Disrupted && newer(l, f.Object.DisruptedAt)
}

// edges indexes Lifecycle by (from, event).
var edges = func() [numStates][numEvents][]*Transition {
	var out [numStates][numEvents][]*Transition
	for i := range Lifecycle {
		t := &Lifecycle[i]
		out[t.From][t.Event] = append(out[t.From][t.Event], t)
	}
	return out
}()

// fire moves the life by event ev given the facts: it takes the first edge from its state
// for ev whose guard holds, and returns it (nil: no edge, nothing changed). It is the only
// function that changes a Life.
func (l *Life) fire(ev Event, f Facts) *Transition {
	if ev == Restored {
		// The terminal True is a fact of the object, whatever the state: the conditions say it.
		l.ran = l.ran || f.Object.Ran
	}
	for _, t := range edges[l.state][ev] {
		if !t.When(l, f) {
			continue
		}
		l.enter(t, f)
		return t
	}
	return nil
}

// enter applies transition t: the state, and the facts of the new state. Moments are kept
// to the second, as the objects they are written on keep them (metav1.Time): what a new
// leader reads back is exactly what the old one decided by.
func (l *Life) enter(t *Transition, f Facts) {
	from := l.state
	now := f.Now.Truncate(time.Second)
	l.state, l.last = t.To, t
	if t.To != from {
		l.since = now
	}
	switch t.To {
	case Allowed:
		l.min, l.decided = f.Minimum, now
	case Running:
		switch {
		case t.Event == Restored:
			l.min, l.decided, l.since = f.FullMinimum, f.Object.RunningAt, f.Object.RunningAt
		case t.Event == FoundBound:
			l.min, l.decided = f.Minimum, now
		default:
			l.decided = now
		}
		// Placed with all of its minimum (not only the leaders that bind first): its True is
		// written, and is terminal.
		if f.Minimum <= l.min {
			l.ran, l.placedGen = true, f.Generation
		}
	case PartiallyBound:
		switch {
		case t.Event == MemberLost:
			l.lost = true
		case from == Allowed:
			l.lost = false // its attempt's binds
		}
		if t.Event == ShortTimeout {
			l.decided = now // it keeps running short: decided
		}
		if t.Event == Restored {
			l.since, l.decided, l.lost = f.Object.ShortSince, f.Object.ShortSince, f.Object.Lost
			if !from.placed() {
				l.min = f.FullMinimum
			}
		}
	case Released, Disrupted:
		l.min, l.decided = 0, now
		if t.Event == Restored {
			l.decided, l.since = f.Object.DisruptedAt, f.Object.DisruptedAt
		}
	case Pending:
		if from != Held && from != Waiting {
			l.min, l.decided = 0, now
		}
	case Gone:
		*l = Life{state: Gone, last: t}
	}
}
