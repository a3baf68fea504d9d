package podgroup

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
)

// A tree left half bound (members bound although it was never scheduled whole: what a leader
// that dies between a gang's binds leaves) goes first in the queue (SortKey.Finishing), so
// that a new leader finishes it while the room its plan found is still free. If its remaining
// members do not fit, it is released one backoff after that failure: its bound members are
// evicted, so that no pod runs without its peers holding room, and the gang is scheduled
// whole once it fits (HalfBoundTimeout: every group of its tree is Released). Not while it
// preempts for room (its victims are leaving), not while an attempt of it is under way (it
// may yet finish), and not if it was placed whole once (a minimum raised since leaves a
// running gang running).

// armReleaseLocked is called when an attempt of root failed: if the tree is half bound, its
// release is due after wait.
func (p *Permits) armReleaseLocked(root Key, r *Round, wait time.Duration) {
	m := p.m
	if r.releaseTimer != nil || !m.halfBoundLocked(root) {
		return
	}
	r.releaseTimer = m.clock.AfterFunc(wait, func() {
		m.update(m.logger, func(eff *effects) { p.releaseLocked(eff, root, wait) })
	})
}

// releaseLocked evicts the bound members of root's tree if it is still half bound.
func (p *Permits) releaseLocked(eff *effects, root Key, wait time.Duration) {
	m := p.m
	r := p.attempts.Round(root)
	if r == nil {
		return
	}
	r.releaseTimer = nil
	if !m.halfBoundLocked(root) {
		return
	}
	if r.active > 0 || p.preemptingLocked(root) {
		// An attempt is under way, or victims are leaving for the tree: look again later.
		p.armReleaseLocked(root, r, max(p.retryFloor, wait/2))
		return
	}
	for _, k := range m.index.Subtree(root) {
		if m.index.Get(k).Life().Placed() {
			// Placed whole once, its minimum raised since: a running gang is not evicted for
			// an edit; it waits for the pods its new minimum asks for.
			return
		}
	}
	pods, names := p.runningLocked(root)
	if len(pods) == 0 {
		return
	}
	placed, total := p.treeCountsLocked(root)
	why := fmt.Sprintf("gang %s released: %d of its %d pods were bound but the rest did not fit; its bound pods are evicted so that it is scheduled whole once it fits",
		root.Name, placed, total)
	released := fmt.Sprintf("released: evicted its bound pods %s (%d of %d pods were bound but the rest did not fit)",
		someNames(names), placed, total)
	if t := m.fireLocked(eff, root, HalfBoundTimeout, why); t == nil || t.To != Released {
		return
	}
	for _, k := range m.index.Subtree(root) {
		o := p.attempts.Outcome(k)
		o.Failure, o.Released, o.Preempted, o.DisruptedBy = released, released, released, ReasonGangReleased
		o.PreemptedSince = m.clock.Now().Truncate(time.Second)
		if k != root {
			m.fireLocked(eff, k, UnitReleased, why)
		}
		m.status.Enqueue(k)
	}
	eff.evict = append(eff.evict, eviction{group: m.index.Get(root).Object(), pods: pods, why: why, reason: ReasonGangReleased})
	metrics.released.Inc()
	eff.logger.V(2).Info("Half-bound gang released", "root", root, "evicted", klog.KObjSlice(pods), "placed", placed, "total", total)
}

// someNames lists a few names, and how many more: a condition's message stays short for a
// gang of thousands.
func someNames(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}

// eviction is a release (or a preemption finished): the group released, its pods evicted and
// why.
type eviction struct {
	group runtime.Object
	pods  []*v1.Pod
	why   string
	// reason is the pods' DisruptionTarget reason and the group's event's:
	// ReasonGangReleased for a release, PreemptionByScheduler for a preemption finished
	// (disruption.go).
	reason string
}
