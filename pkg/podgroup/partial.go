package podgroup

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Partial binds, one rule for every leader. A gang allowed whole whose member then fails to
// bind (an admission webhook refused it, its node went away) is partially bound: its bound
// members run, the failed member is retried alone. That lasts at most the profile's
// partialBindTimeoutSeconds from the first failure; then, if the gang is still short, its
// disruption unit (Index.UnitOf) is released whole — every bound member evicted, the unit
// marked disrupted (DisruptionTarget, reason GangReleased), so that the pods its controller
// recreates are placed whole again — because a distributed job that cannot get its last rank
// holds room for nothing. A gang that says disruptionMode single keeps running short (it
// declared that it can), and its missing members are retried alone for as long as they
// exist.
//
// When it became partially bound is a fact that decides an eviction, so it is written on the
// group (its PodGroupInitiallyScheduled condition False, reason PartiallyBound, whose
// lastTransitionTime is that moment) and restored from there (Index.Upsert): a restarted or
// new leader treats the gang as scheduled and partially bound since the same moment, and
// releases it at the same time the old leader would have. Only the leader releases.

// DefaultPartialBindTimeout is how long a gang stays partially bound when no profile says.
const DefaultPartialBindTimeout = 5 * time.Minute

// partialBindTimeoutLocked is the longest partialBindTimeout of the profiles: a group does
// not know which profile its pods use.
func (m *Model) partialBindTimeoutLocked() time.Duration {
	d := time.Duration(0)
	for _, p := range m.profiles {
		d = max(d, p.PartialBindTimeout)
	}
	if d == 0 {
		return DefaultPartialBindTimeout
	}
	return d
}

// partialLocked records that an allowed member of PodGroup k (tree root) failed to bind: the
// group is partially bound from now on, unless it already was, and says so.
func (p *Permits) partialLocked(logger klog.Logger, pod *v1.Pod, k, root Key) {
	m := p.m
	g := m.index.Get(k)
	if g.BoundWhole() {
		// A replacement of a gang that ran whole failed to bind: it is retried as any
		// replacement is; the gang is not partially bound.
		logger.V(4).Info("Replacement failed to bind; it is retried alone", "pod", klog.KObj(pod), "group", k, "root", root)
		return
	}
	min := 0
	if g.Exists() {
		min = g.Minimum()
	}
	if m.index.MarkPartial(k, m.clock.Now()) {
		logger.V(2).Info("Gang partially bound", "pod", klog.KObj(pod), "group", k, "root", root, "timeout", m.partialBindTimeoutLocked())
	}
	msg := fmt.Sprintf("partially bound: %d of %d pods bound; binding pod %s failed after the gang was allowed (it is retried alone for up to %s, then %s)",
		m.members.BoundOrRan(k), min, pod.Name, m.partialBindTimeoutLocked(), p.partialFateLocked(k))
	p.attempts.Outcome(k).Partial = msg
	m.status.Enqueue(k)
	metrics.partialBinds.Inc()
	p.armPartialLocked(root)
}

// partialMessageLocked is what PodGroup k's condition says of its partial bind, "" when it is
// not partially bound: the words of the failure this leader saw, or, for a partial bind
// restored from the object, its state.
func (p *Permits) partialMessageLocked(k Key) string {
	if msg := p.attempts.OutcomeOf(k).Partial; msg != "" {
		return msg
	}
	m := p.m
	g := m.index.Get(k)
	since := g.PartialSince()
	if since.IsZero() {
		return ""
	}
	if _, ok := p.partialDueLocked(k); !ok {
		return fmt.Sprintf("running short: %d of %d pods bound since %s (disruptionMode single: it keeps running; its missing pods are retried alone)",
			m.members.BoundOrRan(k), g.Minimum(), since.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("partially bound: %d of %d pods bound since %s, when a bind failed after the gang was allowed (its missing pods are retried alone until %s, then %s)",
		m.members.BoundOrRan(k), g.Minimum(), since.UTC().Format(time.RFC3339), since.Add(m.partialBindTimeoutLocked()).UTC().Format(time.RFC3339), p.partialFateLocked(k))
}

// partialFateLocked says what becomes of PodGroup k if it stays partially bound.
func (p *Permits) partialFateLocked(k Key) string {
	if _, whole := p.m.index.UnitOf(k); whole {
		return "the gang is released whole"
	}
	return "the gang keeps running short (disruptionMode single)"
}

// wholeAgainLocked records that PodGroup k is no longer short: it is not partially bound.
func (p *Permits) wholeAgainLocked(k Key) {
	m := p.m
	if g := m.index.Get(k); g.Exists() && m.members.BoundOrRan(k) >= g.Minimum() {
		m.index.MarkBoundWhole(k)
		if !g.PartialSince().IsZero() || p.attempts.OutcomeOf(k).Partial != "" {
			m.index.ClearPartial(k)
			p.attempts.Outcome(k).Partial = ""
			m.status.Enqueue(k)
		}
	}
}

// partialDueLocked is when PodGroup k's partial bind is to be decided, false when there is
// nothing to decide: it is not partially bound, or it keeps running short past its deadline.
func (p *Permits) partialDueLocked(k Key) (time.Time, bool) {
	m := p.m
	since := m.index.Get(k).PartialSince()
	if since.IsZero() {
		return time.Time{}, false
	}
	due := since.Add(m.partialBindTimeoutLocked())
	if _, whole := m.index.UnitOf(k); !whole && !m.clock.Now().Before(due) {
		return time.Time{}, false
	}
	return due, true
}

// armPartialLocked sets root's timer to the earliest partial bind of its tree still to be
// decided, or stops it when none is.
func (p *Permits) armPartialLocked(root Key) {
	m := p.m
	var first time.Time
	for _, k := range m.index.PodGroupsOf(root) {
		if due, ok := p.partialDueLocked(k); ok && (first.IsZero() || due.Before(first)) {
			first = due
		}
	}
	r := p.attempts.Round(root)
	if first.IsZero() {
		if r != nil {
			stopTimer(&r.partialTimer)
		}
		return
	}
	r = p.attempts.RoundOf(root)
	stopTimer(&r.partialTimer)
	r.partialTimer = m.clock.AfterFunc(max(first.Sub(m.clock.Now()), 0), func() {
		m.update(m.logger, func(eff *effects) { p.decidePartialLocked(eff, root) })
	})
}

// decidePartialLocked decides the partial binds of root's tree that are due: a group whole
// again is no longer partial; one still short is released whole with its disruption unit, or
// keeps running short (disruptionMode single). Only the leader decides; a standby's timer
// does nothing, and Lead arms them again.
func (p *Permits) decidePartialLocked(eff *effects, root Key) {
	m := p.m
	if r := p.attempts.Round(root); r != nil {
		r.partialTimer = nil
	}
	if !m.leading {
		return
	}
	now := m.clock.Now()
	released := map[Key]bool{}
	for _, k := range m.index.PodGroupsOf(root) {
		p.wholeAgainLocked(k)
		due, ok := p.partialDueLocked(k)
		if !ok || now.Before(due) {
			continue
		}
		top, whole := m.index.UnitOf(k)
		g := m.index.Get(k)
		if !whole {
			msg := fmt.Sprintf("running short: %d of %d pods bound since %s (disruptionMode single: it keeps running; its missing pods are retried alone)",
				m.members.BoundOrRan(k), g.Minimum(), g.PartialSince().UTC().Format(time.RFC3339))
			if o := p.attempts.Outcome(k); o.Partial != msg {
				o.Partial = msg
				m.status.Enqueue(k)
			}
			eff.logger.V(2).Info("Partially bound gang keeps running short", "group", k, "root", root)
			continue
		}
		if !released[top] {
			released[top] = true
			p.releaseUnitLocked(eff, top, fmt.Sprintf("partially bound for %s: %d of %d pods of PodGroup %s bound, a member's bind failed and its retries did not complete the gang",
				m.partialBindTimeoutLocked(), m.members.BoundOrRan(k), g.Minimum(), k.Name))
		}
	}
	p.armPartialLocked(root)
}

// releaseUnitLocked releases a running unit whole: its bound members are evicted, and every
// group of it is a gang again (DisruptionTarget, reason GangReleased), so that the pods its
// controller recreates are placed together.
func (p *Permits) releaseUnitLocked(eff *effects, top Key, why string) {
	m := p.m
	var pods []*v1.Pod
	var names []string
	for _, k := range m.index.PodGroupsOf(top) {
		for _, mem := range m.members.InGroup(k) {
			if mem.Bound() && mem.Pod.DeletionTimestamp == nil {
				pods = append(pods, mem.Pod)
				names = append(names, mem.Pod.Name)
			}
		}
	}
	msg := fmt.Sprintf("released: %s; evicting its bound pods %s so that it is placed whole again", why, someNames(names))
	for _, k := range m.index.Subtree(top) {
		m.index.MarkDisrupted(k)
		o := p.attempts.Outcome(k)
		o.Partial, o.Preempted, o.DisruptedBy = "", msg, ReasonGangReleased
		m.status.Enqueue(k)
	}
	if len(pods) > 0 {
		eff.evict = append(eff.evict, eviction{group: m.index.Get(top).Object(), pods: pods,
			why: fmt.Sprintf("gang %s %s", top.Name, msg)})
	}
	metrics.released.Inc()
	eff.logger.V(2).Info("Partially bound gang released whole", "unit", top, "evicted", klog.KObjSlice(pods), "why", why)
}

// reasonOfDisruption is the reason of a disrupted group's DisruptionTarget condition: who
// disrupted it.
func reasonOfDisruption(o Outcome) string {
	if o.DisruptedBy != "" {
		return o.DisruptedBy
	}
	return v1alpha1.ReasonPreemptionByScheduler
}
