package podgroup

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// A gang (some group on a member's path needs more than one pod) that has no attempt in
// progress is tried by one of its members, its scout: the scout's scheduling cycle plans the
// whole tree, and the other members enter the scheduling queue only once that plan holds
// room for them (the attempt starts, Reserve). A tree that
// cannot fit then costs one scheduling cycle per try, not one per member: without a scout,
// a 10,000-member gang retried on news sends 10,000 high-priority pods through the queue,
// each popped only to be turned away, ahead of every lower-priority pod that could bind
// (upstream's starvation workload; docs/benchmarks.md). Upstream's own pod-group cycle pops
// a group as one for the same reason.
//
// The tree is open (every member is let in) from the start of an attempt until the tree
// fails whole; a scout's failure that leaves the tree able to be ready (more members than its
// minimum) opens it too, as does a scout not tried within scoutGrace of being let in (another
// plugin's PreEnqueue holds it, say): the scout saves work, and never holds a gang back.

// scoutGrace is how long a scout let into the queue may take to reach a scheduling cycle
// before its tree is opened to every member, if the queue has passed it: the scheduler was
// idle, or tried a pod that sorts after it (so the scout is not in the queue: another
// plugin's PreEnqueue holds it). While the scheduler tries pods that sort before the scout,
// the scout is waiting its turn, and the grace starts again: under load a scout may wait
// behind a thousand others, and a tree opened for that floods the queue with its members,
// which delays the other scouts past their grace in turn (a fixed grace of a minute did, at
// 15,000 nodes and 1250 waiting gangs).
const scoutGrace = time.Minute

// scoutHoldsLocked reports whether the member pod of group k (not scheduled) must wait for
// its tree's scout, making it the scout if the tree has none. Enqueue (PreEnqueue) only: a
// member already in the queue or in a cycle goes on.
func (p *Permits) scoutHoldsLocked(logger klog.Logger, pod *v1.Pod, k, root Key) (types.UID, bool) {
	r := p.attempts.RoundOf(root)
	if r.open || r.active > 0 || gated(pod) {
		return "", false // a gated pod is held by its gates, and scouts for none
	}
	if scout, held := p.otherScoutLocked(r, pod); held {
		return scout, true
	}
	p.sendScoutLocked(logger, root, r, pod)
	return "", false
}

// scoutPeekLocked answers scoutHoldsLocked's question without side effects (queueing hints).
func (p *Permits) scoutPeekLocked(pod *v1.Pod, root Key) (types.UID, bool) {
	r := p.attempts.Round(root)
	if r == nil || r.open || r.active > 0 {
		return "", false
	}
	return p.otherScoutLocked(r, pod)
}

// otherScoutLocked returns the tree's scout if it is a member other than pod.
func (p *Permits) otherScoutLocked(r *Round, pod *v1.Pod) (types.UID, bool) {
	if r.scout == "" || r.scout == pod.UID || p.m.members.Of(r.scout) == nil {
		return "", false
	}
	return r.scout, true
}

// sendScoutLocked makes pod the scout of root's tree, let into the queue now, and arms the
// timer that opens the tree if the scout is not tried in time.
func (p *Permits) sendScoutLocked(logger klog.Logger, root Key, r *Round, pod *v1.Pod) {
	if r.scout != pod.UID {
		logger.V(4).Info("Gang scout chosen", "pod", klog.KObj(pod), "root", root)
	}
	r.scout, r.lastScout, r.scoutTried = pod.UID, pod.UID, false
	p.armScoutGraceLocked(root, r, pod.UID)
}

// armScoutGraceLocked arms the timer that opens root's tree if its scout uid is not tried
// within scoutGrace while the queue passes it (see scoutGrace).
func (p *Permits) armScoutGraceLocked(root Key, r *Round, uid types.UID) {
	m := p.m
	stopTimer(&r.scoutTimer)
	cycles := p.cycles
	r.scoutTimer = m.clock.AfterFunc(scoutGrace, func() {
		m.update(m.logger, func(eff *effects) {
			r := p.attempts.Round(root)
			if r == nil || r.scout != uid || r.scoutTried || r.open {
				return
			}
			if p.waitsItsTurnLocked(uid, cycles) {
				p.armScoutGraceLocked(root, r, uid) // the scheduler is busy with pods ahead of it
				return
			}
			p.openLocked(eff, root, r, fmt.Sprintf("its scout was not tried within %s", scoutGrace))
		})
	})
}

// waitsItsTurnLocked reports whether the scout uid is in the queue behind the pods the
// scheduler tries: it has tried some since the count was cycles, and the latest sorts ahead
// of the scout.
func (p *Permits) waitsItsTurnLocked(uid types.UID, cycles uint64) bool {
	mem := p.m.members.Of(uid)
	if mem == nil || p.cycles == cycles {
		return false
	}
	key, queued := p.m.gate.SortKey(mem.Pod)
	return queued && !key.Before(p.lastCycle)
}

// scoutRefusedLocked opens the tree of a scout that the scheduler refused without a cycle:
// with no node at all it answers "no nodes available to schedule pods" before any plugin runs
// (a refusal after plugins ran reads "0/N nodes are available: ..."). lockstep hears of it
// only from the PodScheduled condition the scheduler writes on the pod; without this the
// other members would wait out the scout's grace, untold (upstream's "Node add triggers
// queueing hint").
func (p *Permits) scoutRefusedLocked(eff *effects, old, pod *v1.Pod) {
	c := scheduledCondition(pod)
	if pod.Spec.NodeName != "" || c == nil || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable ||
		strings.HasPrefix(c.Message, "0/") {
		return
	}
	if o := scheduledCondition(old); o != nil && o.Message == c.Message && o.LastTransitionTime.Equal(&c.LastTransitionTime) &&
		o.LastProbeTime.Equal(&c.LastProbeTime) {
		return // not news: written before
	}
	root, ok := p.m.rootOfLocked(pod)
	if !ok {
		return
	}
	if r := p.attempts.Round(root); r != nil && r.scout == pod.UID && !r.scoutTried && !r.open {
		p.openLocked(eff, root, r, "the scheduler refused its scout before lockstep's plugins ran: "+c.Message)
	}
}

// scheduledCondition returns pod's PodScheduled condition, nil if it has none (or pod is nil).
func scheduledCondition(pod *v1.Pod) *v1.PodCondition {
	if pod == nil {
		return nil
	}
	_, c := podutil.GetPodCondition(&pod.Status, v1.PodScheduled)
	return c
}

// cycleLocked records that the scheduler tried a pod that sorts by key (the scout's grace
// tells by it whether the queue passed a scout).
func (p *Permits) cycleLocked(key SortKey) {
	p.cycles++
	p.lastCycle = key
}

// scoutTriedLocked records that a member reached its scheduling cycle (PreFilter).
func (p *Permits) scoutTriedLocked(uid types.UID, root Key) {
	if r := p.attempts.Round(root); r != nil && r.scout == uid {
		r.scoutTried, r.triedAt = true, p.m.clock.Now()
		stopTimer(&r.scoutTimer)
	}
}

// openLocked lets every member of root's tree into the queue, and activates those pending
// (but those that failed in this attempt: they are tried again on news).
func (p *Permits) openLocked(eff *effects, root Key, r *Round, why string) {
	r.open, r.scout, r.scoutTried = true, "", false
	stopTimer(&r.scoutTimer)
	var pending []*v1.Pod
	for _, pod := range p.m.pendingLocked(root) {
		if _, failed := r.failed[pod.UID]; !failed {
			pending = append(pending, pod)
		}
	}
	eff.activate = append(eff.activate, pending...)
	if len(pending) > 0 {
		eff.logger.V(4).Info("Gang open to all its members", "root", root, "pods", len(pending), "why", why)
	}
}

// closeLocked ends the tree's opening after it failed whole: its next try is a scout's.
func (p *Permits) closeLocked(r *Round) {
	r.open, r.scout, r.scoutTried = false, "", false
	stopTimer(&r.scoutTimer)
}

// retryScoutLocked lets a tree that failed be tried again: by a new scout, activated now, or
// by every pending member if the tree is open.
func (p *Permits) retryScoutLocked(eff *effects, root Key, r *Round, why string) {
	if r.open || r.active > 0 {
		p.openLocked(eff, root, r, why)
		return
	}
	pending := p.m.pendingLocked(root)
	if len(pending) == 0 {
		return
	}
	// The last scout again if it is still pending: one pod per gang carries the failures'
	// condition and events (a series of one event, not an event per try). Else one that did
	// not fail in the last attempt. But where the scheduler places members one by one in the
	// order they come (inter-pod affinity, spread, ports, claims: not roomOnly), the order can
	// decide whether the gang fits: a member that failed after the scout was placed goes first
	// next time (upstream's gang with an anti-affinity member pinned to a node fits only if that
	// member is placed before the others).
	var scout, fresh, failedAfter *v1.Pod
	pending = slices.DeleteFunc(pending, gated)
	if len(pending) == 0 {
		return // the first member whose gates go is let in as the scout (scoutHoldsLocked)
	}
	_, scoutFailed := r.failed[r.lastScout]
	for _, pod := range pending {
		_, failed := r.failed[pod.UID]
		if failed && !scoutFailed && failedAfter == nil {
			failedAfter = pod
		}
		if pod.UID == r.lastScout {
			scout = pod
		}
		if !failed && fresh == nil {
			fresh = pod
		}
	}
	if failedAfter != nil && scout != nil && !roomOnly(pending) {
		scout = failedAfter
	}
	if scout == nil {
		scout = fresh
	}
	if scout == nil {
		scout = pending[0]
	}
	p.sendScoutLocked(eff.logger, root, r, scout)
	eff.activate = append(eff.activate, scout)
	eff.logger.V(4).Info("Retrying gang", "root", root, "scout", klog.KObj(scout), "pending", len(pending), "why", why)
}

// scoutGoneLocked sends a new scout when the scout of root's tree stopped being a pending
// member (deleted, left its group, bound by someone else).
func (p *Permits) scoutGoneLocked(eff *effects, uid types.UID, root Key) {
	r := p.attempts.Round(root)
	if r == nil || r.scout != uid {
		return
	}
	r.scout, r.scoutTried = "", false
	stopTimer(&r.scoutTimer)
	if r.stalled || p.m.index.Get(root).Scheduled() {
		return // the retry sends one
	}
	p.retryScoutLocked(eff, root, r, "its scout is gone")
}

// scoutMessage is what a member held for its tree's scout is told.
func scoutMessage(root Key, scout *v1.Pod) string {
	name := "another member"
	if scout != nil {
		name = "member " + scout.Name
	}
	return fmt.Sprintf("gang %s is tried by %s first; its other members are scheduled once it has found room for the gang", root.Name, name)
}

// gated reports whether pod has scheduling gates: the queue holds it whatever lockstep says,
// so it cannot be a scout (one chosen so would hold its gang until the scout's grace ends).
func gated(pod *v1.Pod) bool { return len(pod.Spec.SchedulingGates) > 0 }
