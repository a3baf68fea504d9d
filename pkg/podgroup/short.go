package podgroup

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// One rule for a gang below its minimum after it started. A gang allowed whole whose member
// then fails to bind (an admission webhook refused it, its node went away), or a running
// gang that loses a member whose replacement does not bind (its node lost, and no room in
// the gang's domain), is short (PartiallyBound): its bound members run, its missing members
// are retried alone, inside its domain. Short for longer than the profile's
// partialBindTimeoutSeconds, its disruption unit (Index.UnitOf) is released whole: every
// bound member evicted, every group of it Released (DisruptionTarget, reason GangReleased),
// so that the pods its controller recreates are placed whole again, elsewhere if need be —
// a distributed job that cannot get its last rank holds room for nothing. A gang that says
// disruptionMode single keeps running short (it declared that it can). A gang none of whose
// binds succeeded is not short: that attempt failed, and the gang backs off and is retried
// whole; nor is a gang none of whose members is left: it is a gang again.
//
// When it became short is a fact that decides an eviction, so it is written on the group
// (Short True, its lastTransitionTime) when it is entered, binds still in flight or not,
// and restored from there (Restored): a restarted or new leader releases it at the moment
// the old leader would have. Only the leader releases.

// DefaultPartialBindTimeout is how long a gang stays short when no profile says.
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

// bindFailedLocked records that an allowed member of PodGroup k (tree root) failed to bind:
// its group and the groups above it still being allowed are short from now on, or, if
// nothing of them is bound or binding, their attempt failed.
func (p *Permits) bindFailedLocked(eff *effects, pod *v1.Pod, k, root Key) {
	m := p.m
	path, ok := m.index.Path(k)
	if !ok {
		path = []Key{k}
	}
	why := fmt.Sprintf("binding pod %s failed after the gang was allowed", pod.Name)
	// Its binds in flight are fewer: a fact the observed events read (a disrupted gang none
	// of whose pods is left is Emptied now).
	eff.touch(m.index.TopOf(k))
	failed := false
	for _, pk := range path {
		m.status.Enqueue(pk) // its binds in flight are fewer: its condition may say so
		t := m.fireLocked(eff, pk, BindFailed, why)
		switch {
		case t == nil:
			if pk == k {
				// A replacement of a gang placed whole failed to bind: it is retried as any
				// replacement is; the gang's count says whether it is short.
				eff.logger.V(4).Info("Replacement failed to bind; it is retried alone", "pod", klog.KObj(pod), "group", k, "root", root)
			}
		case t.To == PartiallyBound:
			o := p.attempts.Outcome(pk)
			o.FailedBind, o.BindingThen = pod.Name, p.bindingLocked(pk, pod.UID)
			if pk == k {
				metrics.partialBinds.Inc()
			}
		case t.To == Pending:
			failed = true
		}
	}
	if failed {
		// None of the gang bound: a failed attempt. It backs off and is retried whole.
		placed, total := p.treeCountsLocked(root)
		msg := fmt.Sprintf("cannot bind: %d of %d pods bound; the binds of the gang failed after it was allowed (pod %s: refused)", placed, total, pod.Name)
		p.rejectLocked(eff, eff.logger, root, msg, true, p.attempts.RoundOf(root).backoff, nil, "unschedulable")
	}
}

// bindingLocked returns the attempts of group k's subtree, but the refused one's, whose
// binds are in flight.
func (p *Permits) bindingLocked(k Key, refused types.UID) []*Attempt {
	var out []*Attempt
	for _, pk := range p.m.index.PodGroupsOf(k) {
		for _, mem := range p.m.members.InGroup(pk) {
			if a := p.attempts.Of(mem.Pod.UID); a != nil && a.State == AttemptAllowed && mem.Pod.UID != refused {
				out = append(out, a)
			}
		}
	}
	return out
}

// stillBindingLocked reports whether one of attempts, whose binds were in flight when a bind
// of their gang was refused, still is.
func (p *Permits) stillBindingLocked(attempts []*Attempt) bool {
	return slices.ContainsFunc(attempts, func(a *Attempt) bool {
		return p.attempts.Of(a.Pod.UID) == a && a.State == AttemptAllowed
	})
}

// shortFateLocked says what becomes of PodGroup k if it stays short.
func (p *Permits) shortFateLocked(k Key) string {
	if _, whole := p.m.index.UnitOf(k); whole {
		return "the gang is released whole"
	}
	return "the gang keeps running short (disruptionMode single)"
}

// shortDueLocked is when group k, short, is to be decided; false when there is nothing to
// decide: it is not short, or it keeps running short past its deadline (disruptionMode
// single).
func (p *Permits) shortDueLocked(k Key) (time.Time, bool) {
	m := p.m
	l := m.index.Get(k).Life()
	if l.State() != PartiallyBound {
		return time.Time{}, false
	}
	if l.shortDecided(m.partialBindTimeoutLocked()) {
		return time.Time{}, false
	}
	return l.due(m.partialBindTimeoutLocked()), true
}

// armPartialLocked sets root's timer to the earliest short group of its tree still to be
// decided, or stops it when none is.
func (p *Permits) armPartialLocked(root Key) {
	m := p.m
	var first time.Time
	for _, k := range m.index.Subtree(root) {
		if due, ok := p.shortDueLocked(k); ok && (first.IsZero() || due.Before(first)) {
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
		m.update(m.logger, func(eff *effects) { p.decideShortLocked(eff, root) })
	})
}

// decideShortLocked decides the short groups of root's tree that are due: each is released
// whole with its disruption unit, or keeps running short (disruptionMode single). Only the
// leader decides; a standby's timer does nothing, and Lead arms them again.
func (p *Permits) decideShortLocked(eff *effects, root Key) {
	m := p.m
	if r := p.attempts.Round(root); r != nil {
		r.partialTimer = nil
	}
	if !m.leading {
		return
	}
	released := map[Key]bool{}
	for _, k := range m.index.Subtree(root) {
		if _, ok := p.shortDueLocked(k); !ok {
			continue
		}
		g := m.index.Get(k)
		why := fmt.Sprintf("partially bound for %s: %d of %d pods of %s %s bound, a member's bind failed and its retries did not complete the gang",
			m.partialBindTimeoutLocked(), m.members.BoundOrRan(k), g.life.runMin(g.Minimum()), k.Kind, k.Name)
		if g.life.Ran() {
			why = fmt.Sprintf("short for %s: %d of %d pods of %s %s bound, a member was lost and its replacement was not placed in the gang's domain",
				m.partialBindTimeoutLocked(), m.members.BoundOrRan(k), g.life.runMin(g.Minimum()), k.Kind, k.Name)
		}
		t := m.fireLocked(eff, k, ShortTimeout, why)
		if t == nil || t.To != Released {
			continue
		}
		top, _ := m.index.UnitOf(k)
		if !released[top] {
			released[top] = true
			p.releaseUnitLocked(eff, top, k, why)
		}
	}
	p.armPartialLocked(root)
}

// runningLocked returns the members of the subtree of top that run or are about to: bound,
// or allowed to bind (their binds land after a release decided now: they go too, so that
// nothing of the released run is left), and their names.
func (p *Permits) runningLocked(top Key) ([]*v1.Pod, []string) {
	m := p.m
	var pods []*v1.Pod
	var names []string
	for _, k := range m.index.PodGroupsOf(top) {
		for _, mem := range m.members.InGroup(k) {
			a := p.attempts.Of(mem.Pod.UID)
			if (mem.Bound() || (a != nil && a.State == AttemptAllowed)) && mem.Pod.DeletionTimestamp == nil {
				pods = append(pods, mem.Pod)
				names = append(names, mem.Pod.Name)
			}
		}
		for _, pod := range m.foreign.byGroup[k] { // another scheduler's, in a native gang
			if pod.Spec.NodeName != "" {
				pods = append(pods, pod)
				names = append(names, pod.Name)
			}
		}
	}
	return pods, names
}

// releaseUnitLocked releases a running unit whole (one of its groups, by, was released
// already): its bound members are evicted, and every group of it is Released, so that the
// pods its controller recreates are placed together.
func (p *Permits) releaseUnitLocked(eff *effects, top, by Key, why string) {
	m := p.m
	pods, names := p.runningLocked(top)
	msg := fmt.Sprintf("released: %s; evicting its bound pods %s so that it is placed whole again", why, someNames(names))
	for _, k := range m.index.Subtree(top) {
		o := p.attempts.Outcome(k)
		o.FailedBind, o.BindingThen = "", nil
		o.Preempted, o.DisruptedBy, o.PreemptedSince = msg, ReasonGangReleased, m.clock.Now().Truncate(time.Second)
		if k != by {
			m.fireLocked(eff, k, UnitReleased, why)
		}
		m.status.Enqueue(k)
	}
	if len(pods) > 0 {
		eff.evict = append(eff.evict, eviction{group: m.index.Get(top).Object(), pods: pods,
			why: fmt.Sprintf("gang %s %s", top.Name, msg), reason: ReasonGangReleased})
	} else {
		// No eviction will bring a pod event to settle it: emptied already, it is a gang
		// again now (Released --Emptied--> Pending).
		eff.touch(m.index.TopOf(top))
	}
	metrics.released.Inc()
	eff.logger.V(2).Info("Short gang released whole", "unit", top, "evicted", klog.KObjSlice(pods), "why", why)
}
