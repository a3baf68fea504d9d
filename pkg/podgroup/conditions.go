package podgroup

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// What a group's object says is a function of its state (life.go): the state's facts are
// written when it is entered, and what a restarted or new leader reads back (Restored) is
// exactly what these functions wrote:
//   - PodGroupInitiallyScheduled: True once Running (terminal, as upstream); False with what
//     it waits for, why its attempts fail (Unschedulable, Invalid, Preempting, Reserving), or
//     that it is partially bound; nothing while its binds are in flight (Allowed).
//   - Short: True while PartiallyBound, since the moment it became short (the fact that
//     decides its release); False over a True once whole again or no longer running.
//   - DisruptionTarget: True while Released or Disrupted, and after, until it runs again
//     (what it waits for now; its next attempt's binds in flight included); False over a
//     True once it runs again.
// Messages describe the state without counts that change pod by pod, so that a condition is
// written once per transition; the event note adds the counts at the time of the write.

// Desired are the conditions a group should carry (nil: nothing to say of that type).
type Desired struct {
	// UID is the object the model judged: nothing is written on a group deleted and created
	// again that the model has not seen yet. Generation is the generation of the spec it
	// judged (observedGeneration).
	UID        types.UID
	Generation int64
	Initial    *Condition
	Disruption *Condition
	Short      *Condition
}

// Conditions is where a StatusWriter learns what a group's conditions should be.
type Conditions interface {
	// Conditions returns the conditions group k should carry, false when it does not exist.
	Conditions(k Key) (Desired, bool)
}

// Conditions computes the conditions group k should carry from its state, false when it
// does not exist.
func (g *Gate) Conditions(k Key) (Desired, bool) {
	m := g.m
	m.mu.Lock()
	defer m.mu.Unlock()
	grp := m.index.Get(k)
	if !grp.Exists() {
		return Desired{}, false
	}
	d := Desired{UID: grp.UID(), Generation: grp.Generation()}
	if k.Native() && !m.schedulesLocked(k) {
		// A native group whose pods another scheduler places (kube-scheduler with the
		// workload gates on): lockstep judges and writes only what it schedules — but for
		// the DisruptionTarget of one of its preemptions, as upstream's preemption says it.
		if out := m.permits.attempts.OutcomeOf(k); out.Preempted != "" {
			d.Disruption = &Condition{UID: grp.UID(), Generation: grp.Generation(), Status: metav1.ConditionTrue,
				Reason: reasonOf(out), Message: out.Preempted, Since: out.PreemptedSince}
		}
		return d, true
	}
	stamp := func(c Condition, ok bool) *Condition {
		if !ok {
			return nil
		}
		c.UID = grp.UID()
		if c.Generation == 0 {
			c.Generation = grp.Generation()
		}
		return &c
	}
	d.Initial = stamp(m.initialLocked(k, grp))
	d.Disruption = stamp(m.disruptionLocked(k, grp))
	d.Short = stamp(m.shortLocked(k, grp))
	return d, true
}

// Condition is the PodGroupInitiallyScheduled condition group k should carry, false for
// none.
func (g *Gate) Condition(k Key) (Condition, bool) {
	return g.one(k, func(d Desired) *Condition { return d.Initial })
}

// Disruption is the DisruptionTarget condition group k should carry, false for none.
func (g *Gate) Disruption(k Key) (Condition, bool) {
	return g.one(k, func(d Desired) *Condition { return d.Disruption })
}

// Short is the Short condition group k should carry, false for none.
func (g *Gate) Short(k Key) (Condition, bool) {
	return g.one(k, func(d Desired) *Condition { return d.Short })
}

func (g *Gate) one(k Key, pick func(Desired) *Condition) (Condition, bool) {
	d, ok := g.Conditions(k)
	if !ok || pick(d) == nil {
		return Condition{}, false
	}
	return *pick(d), true
}

// initialLocked is the PodGroupInitiallyScheduled condition of group k's state.
func (m *Model) initialLocked(k Key, g *Group) (Condition, bool) {
	l := &g.life
	switch {
	case l.state == Running && (g.Scheduled() || l.ran):
		var msg string
		if k.Kind == KindPodGroup {
			msg = fmt.Sprintf("%d pods placed together (minCount %d)", m.members.BoundOrRan(k), l.runMin(g.Minimum()))
		} else {
			msg = fmt.Sprintf("%d child groups placed together (minGroupCount %d)", m.index.readiness(m.members.BoundOrRan, false).readyChildren(k), l.runMin(g.Minimum()))
		}
		return Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonScheduled, Message: msg, Note: msg, Since: l.since, Generation: l.placedGen}, true
	case l.state == Allowed:
		return Condition{}, false // True once the binds are done: a failed bind is reported instead
	case l.state == PartiallyBound && !l.ran:
		// Written only while it never ran whole (True is terminal); Short says it in any case.
		p := m.shortMessageLocked(k, g)
		return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPartiallyBound, Message: p, Note: p, Since: l.since}, true
	case l.ran:
		// Placed whole, then short, released or preempted (perhaps before its True was
		// written): the condition is terminal, so it says what happened first; Short or
		// DisruptionTarget says what it waits for now.
		out := m.permits.attempts.OutcomeOf(k)
		what := "preempted"
		switch {
		case l.state == Released || out.DisruptedBy == ReasonGangReleased:
			what = "released"
		case l.state == PartiallyBound && out.Preempted == "":
			what = "short" // its Short says of what
		}
		msg := fmt.Sprintf("pods placed together (minCount %d), then %s", g.Minimum(), what)
		if k.Kind == KindCompositePodGroup {
			msg = fmt.Sprintf("child groups placed together (minGroupCount %d), then %s", g.Minimum(), what)
		}
		return Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonScheduled, Message: msg, Note: msg, Generation: l.placedGen}, true
	}
	return m.waitingLocked(k, g)
}

// waitingLocked is the condition of a group that is not placed: what it waits for, or why
// its last attempt failed.
func (m *Model) waitingLocked(k Key, g *Group) (Condition, bool) {
	out := m.permits.attempts.OutcomeOf(k)
	if g.problem != "" {
		msg := "invalid: " + g.problem
		return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalid, Message: msg, Note: msg}, true
	}
	known := m.index.readiness(m.members.Known, true)
	if !known.path(k) {
		c := Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable}
		switch {
		case k.Kind == KindPodGroup && !known.subtree(k):
			c.Message = fmt.Sprintf("waiting for pods: minCount is %d", g.Minimum())
			c.Note = fmt.Sprintf("waiting for pods: %d of %d pods exist", m.members.Known(k), g.Minimum())
			if g.life.Placed() && g.Leaders() > 0 {
				// Its leaders bound; their workload makes the rest now, into room held for them.
				c.Message = fmt.Sprintf("leaders placed, room held for the others; waiting for pods: minCount is %d", g.Minimum())
				c.Note = fmt.Sprintf("leaders placed, room held for the others; waiting for pods: %d of %d pods exist", m.members.Known(k), g.Minimum())
			}
			if out.Released != "" {
				// Its evicted members are missing: say why.
				c.Message += "; " + out.Released
				c.Note += "; " + out.Released
			}
		case k.Kind == KindCompositePodGroup && !known.subtree(k):
			c.Message = fmt.Sprintf("waiting for child groups: %s", known.shortfall(k, "exist"))
			c.Note = c.Message
		default:
			pk, _ := g.ParentKey()
			c.Message = fmt.Sprintf("waiting for the rest of the tree: %s: %s", pk.Name, known.shortfall(pk, "exist"))
			c.Note = c.Message
		}
		return c, true
	}
	if root, ok := m.index.RootOf(k); ok {
		if msg := m.gatedMessageLocked(root); msg != "" {
			return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable, Message: msg, Note: msg}, true
		}
	}
	if out.Preempting != "" {
		// No Note: the preemption's own event (with the victims' count) is recorded when it
		// happens, even if the condition turns Scheduled before it is written.
		return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPreempting, Message: out.Preempting}, true
	}
	if out.Reserving != "" {
		// No Note: the reservation's own event is recorded when it starts; its message counts
		// what is free, which changes as pods end.
		return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonReserving, Message: out.Reserving, Details: true}, true
	}
	if out.Failure != "" {
		return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable, Message: out.Failure, Note: out.Failure, Details: true}, true
	}
	return Condition{}, false
}

// disruptionLocked is the DisruptionTarget condition of group k's state: True while it is
// Released or Disrupted, and after, until it runs again (the message names who
// disrupted it, then what it waits for now, since its PodGroupInitiallyScheduled stays
// True); False once it runs again (written only over a True).
func (m *Model) disruptionLocked(k Key, g *Group) (Condition, bool) {
	l := &g.life
	out := m.permits.attempts.OutcomeOf(k)
	switch {
	case out.Preempted != "" && !l.state.runs():
		// Allowed too: a True written with the terminal PodGroupInitiallyScheduled (however
		// late) is what tells a reader, a new leader among them, that it does not run.
		c := Condition{Status: metav1.ConditionTrue, Reason: reasonOf(out), Message: out.Preempted, Since: out.PreemptedSince}
		if now, ok := m.waitingLocked(k, g); ok && now.Status == metav1.ConditionFalse {
			c.Message += "; now " + now.Message
			c.Details = now.Details
		}
		return c, true
	case l.state == Running:
		return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRescheduled, Message: "placed whole again after its preemption", Since: l.since}, true
	case l.state == PartiallyBound:
		// Placed again, short: no longer a gang waiting to be placed (a restarted leader reads
		// its Short).
		return Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRescheduled, Message: "placed again after its preemption, short", Since: l.since}, true
	}
	return Condition{}, false
}

// shortLocked is the Short condition of group k's state: True while PartiallyBound, since
// it became short; False once whole again or no longer running (written only over a True).
// Its events are told where PodGroupInitiallyScheduled cannot carry them: for a gang that
// ran whole (that condition is True, terminal).
func (m *Model) shortLocked(k Key, g *Group) (Condition, bool) {
	l := &g.life
	var c Condition
	switch l.state {
	case Allowed:
		return Condition{}, false
	case PartiallyBound:
		c = Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPartiallyBound, Message: m.shortMessageLocked(k, g), Since: l.since}
		if l.lost {
			c.Reason = v1alpha1.ReasonMemberLost
		}
	case Running:
		c = Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonWhole, Message: "whole again: its minimum is bound", Since: l.since}
	default:
		c = Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNotRunning, Message: fmt.Sprintf("no longer running short: %s", notRunning[l.state])}
	}
	if l.ran {
		c.Note = c.Message
	}
	return c, true
}

var notRunning = map[State]string{
	Held:      "waiting for its pods",
	Pending:   "none of its pods runs",
	Waiting:   "none of its pods runs",
	Released:  "released whole",
	Disrupted: "preempted whole",
	Gone:      "deleted",
}

// shortMessageLocked says how group k, PartiallyBound, runs short and what becomes of it.
func (m *Model) shortMessageLocked(k Key, g *Group) string {
	l := &g.life
	timeout := m.partialBindTimeoutLocked()
	_, unit := m.index.UnitOf(k)
	count, what := m.members.BoundOrRan(k), "pods"
	if k.Kind == KindCompositePodGroup {
		count, what = m.index.readiness(m.members.BoundOrRan, false).readyChildren(k), "child groups ready"
	}
	min := l.runMin(g.Minimum())
	since := l.since.UTC().Format(time.RFC3339)
	if !unit {
		return fmt.Sprintf("running short: %d of %d %s bound since %s (disruptionMode single: it keeps running; its missing pods are retried alone)",
			count, min, what, since)
	}
	due := l.due(timeout).UTC().Format(time.RFC3339)
	if l.lost {
		return fmt.Sprintf("running short: %d of %d %s bound since %s: a member was lost; its replacement is placed in the gang's domain if it fits there, and the gang is released whole at %s otherwise",
			count, min, what, since, due)
	}
	if o := m.permits.attempts.OutcomeOf(k); o.FailedBind != "" {
		// The words of the failure this leader saw: the counts once the gang's other binds
		// landed (one write while they are in flight, one when they are done; a member
		// retried alone since changes the count when it binds, not the words while it binds).
		if m.permits.stillBindingLocked(o.BindingThen) {
			return fmt.Sprintf("partially bound: binding pod %s failed after the gang was allowed; its other binds are in flight (it is retried alone for up to %s, then %s)",
				o.FailedBind, timeout, m.permits.shortFateLocked(k))
		}
		return fmt.Sprintf("partially bound: %d of %d %s bound; binding pod %s failed after the gang was allowed (it is retried alone for up to %s, then %s)",
			count, min, what, o.FailedBind, timeout, m.permits.shortFateLocked(k))
	}
	return fmt.Sprintf("partially bound: %d of %d %s bound since %s, when a bind failed after the gang was allowed (its missing pods are retried alone until %s, then the gang is released whole)",
		count, min, what, since, due)
}

// schedulesLocked reports whether lockstep schedules group k: pods of its profiles belong to
// it (or did: one of its groups was placed by lockstep).
func (m *Model) schedulesLocked(k Key) bool {
	for _, pk := range m.index.PodGroupsOf(k) {
		if m.members.Known(pk) > 0 || m.index.Get(pk).Life().Placed() {
			return true
		}
	}
	return false
}

// reasonOf is the reason of a disrupted group's DisruptionTarget: who disrupted it.
func reasonOf(out Outcome) string {
	if out.DisruptedBy != "" {
		return out.DisruptedBy
	}
	return v1alpha1.ReasonPreemptionByScheduler
}
