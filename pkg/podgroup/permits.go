package podgroup

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Permits is the model's role that owns the scheduler's attempts: which members hold a
// reservation, wait at Permit or were allowed to bind (Attempts), how an attempt ends
// (allowed whole, failed, timed out, hopeless), and what follows a failed one (backoff and
// retries, retries.go). It is the only one to allow or reject a waiting pod.
//
// Never bind short. A tree is allowed when its path is ready counting live members that are
// bound, ran, or hold a reservation; the decision and the Allow calls it makes happen under
// the model's lock, and every rejection of a waiting member the framework makes in memory
// (preemption, through the guarded handle of Frameworks.Guard) asks Rejecting first, under
// the same lock. So a member the framework rejects stops counting before any other member of
// its tree can be allowed, and a member the model allowed is never rejected after the fact
// (its preemptor deletes it instead, as it would a bound pod). The framework's own timeout of
// a waiting pod comes permitGrace after the model's deadline, which every waiter keeps until
// it leaves: the model always ends a wait first. A deleted pod the scheduler rejects itself
// is dropped before a tree is allowed (the scheduler's pod cache, which Live reads, learns
// of a deletion before any handler runs).
type Permits struct {
	m        *Model
	attempts *Attempts
	observer RoundObserver
	// retryFloor is the least time between two attempts of a tree: news retries a failed
	// tree at once, but no faster than this, so that a stream of events is no hot loop.
	retryFloor time.Duration
	// scheduled are the roots scheduled since the observer last heard.
	scheduled []Key
	// gone are the nodes deleted lately, and when: the model may hear of a deletion before
	// the scheduler's cache, which may still place a member there for a moment. Forgotten
	// goneTTL later, or when a node of that name is added again (autoscalers never reuse a
	// name: nothing is kept per node the cluster ever had).
	gone      map[string]time.Time
	goneTimer Timer
	// batches are the retries news armed that have not run yet (newsLocked).
	batches []*newsBatch
	// news counts the news that retried a tree (newsLocked): a retry room news prompted is
	// spent only if none came since (roomSpentLocked).
	news uint64
	// cycles counts the scheduling cycles the model saw (Gate.Check), lastCycle is the sort
	// key of the pod of the latest (scout.go).
	cycles    uint64
	lastCycle SortKey
	// unseenSince is when a cycle's snapshot first held more nodes than the model has seen
	// (zero while it does not; yieldLocked).
	unseenSince time.Time
}

func newPermits(m *Model, observer RoundObserver) *Permits {
	return &Permits{m: m, attempts: NewAttempts(), observer: observer, retryFloor: DefaultRetryFloor, gone: map[string]time.Time{}}
}

// Policy is the gang policy of the profile a member is scheduled by.
type Policy struct {
	// PermitTimeout bounds how long placed members wait for the rest of their tree, unless
	// their PodGroup sets scheduleTimeoutSeconds.
	PermitTimeout time.Duration
	// Backoff holds a tree back after a failed attempt, unless news arrives.
	Backoff time.Duration
	// ReserveAfter is how long a tree fails to fit before a domain is held for it, unless
	// its root sets reserveAfterSeconds; 0: never. ReservationTimeout bounds one reservation.
	ReserveAfter, ReservationTimeout time.Duration
}

// victimsRecheck is the longest a tree waiting for its victims waits before it is tried
// again, news or not: a victim stuck terminating is waited for no longer past its grace period
// plus a margin (gangpreemption.StuckMargin, the same).
const victimsRecheck = 30 * time.Second

// maxPermitWait is the longest wait the model arms; the framework caps its own permit
// timeout at 15 minutes, and the model's deadline must come first.
const maxPermitWait = 15*time.Minute - permitGrace

// permitGrace is how much later than the model's deadline the framework's own permit timeout
// is set: the model rejects waiters itself, under its lock, so that no concurrent Permit
// counts a waiter the framework already let go.
const permitGrace = 5 * time.Second

// Reserve records that a member passed Reserve on node. The first reservation of a tree
// starts an attempt. A pod the model does not count as a member (deleted, not seen, left its
// group) is not recorded: it is never counted from the scheduler's copy.
func (p *Permits) Reserve(logger klog.Logger, pod *v1.Pod, node string) {
	p.m.update(logger, func(eff *effects) {
		m := p.m
		mem := m.members.Of(pod.UID)
		if mem == nil {
			return
		}
		root, ok := m.index.RootOf(mem.Group)
		if !ok {
			return
		}
		p.addLocked(eff, &Attempt{Pod: pod, Group: mem.Group, Root: root, Node: node, State: AttemptReserved})
		logger.V(5).Info("Member reserved", "pod", klog.KObj(pod), "group", mem.Group, "root", root, "node", node)
	})
}

// addLocked records a reservation. The first of an attempt opens the tree: its pending
// members, held back while its scout tried it or rejected in an earlier attempt, are
// activated (scout.go).
func (p *Permits) addLocked(eff *effects, a *Attempt) {
	if !p.attempts.Add(a) {
		return
	}
	eff.logger.V(4).Info("Gang attempt started", "pod", klog.KObj(a.Pod), "group", a.Group, "root", a.Root)
	p.openLocked(eff, a.Root, p.attempts.RoundOf(a.Root), "its attempt started")
}

// PermitDecision tells the gang plugin what to answer at Permit.
type PermitDecision struct {
	// Allow: the pod may bind now.
	Allow bool
	// Reject, if set, refuses the pod with this message.
	Reject string
	// Timeout is how long the framework lets the pod wait otherwise; the model ends the wait
	// first.
	Timeout time.Duration
	// Message says what the pod waits for.
	Message string
}

// Permit decides whether a member with a reservation may bind: when its path to the root is
// ready counting live members that are bound, ran or hold a reservation, it and every waiting
// member whose path is ready bind together; otherwise it waits, until the tree is ready or its
// deadline (the group's scheduleTimeoutSeconds or the policy's permit timeout) passes. A pod
// that is not a live member is refused.
func (p *Permits) Permit(logger klog.Logger, pod *v1.Pod, pol Policy) PermitDecision {
	var d PermitDecision
	p.m.update(logger, func(eff *effects) { d = p.permitLocked(eff, logger, pod, pol) })
	return d
}

func (p *Permits) permitLocked(eff *effects, logger klog.Logger, pod *v1.Pod, pol Policy) PermitDecision {
	a, refused := p.permitAttemptLocked(eff, logger, pod)
	if a == nil {
		return refused
	}
	r := p.attempts.RoundOf(a.Root)
	if r.backoff == 0 {
		r.backoff = pol.Backoff
	}
	// The one question: may the tree bind now, and with whom?
	if p.allowReadyLocked(eff, logger, a.Root, a) {
		return PermitDecision{Allow: true}
	}
	if p.m.members.Of(pod.UID) == nil {
		return PermitDecision{Reject: fmt.Sprintf("pod %s was deleted while being scheduled", pod.Name)}
	}
	return p.waitLocked(logger, a, pol)
}

// permitAttemptLocked returns the attempt of a member at Permit, or, for a pod that is not
// a live member of a valid tree, the answer it gets (allowed if it is no member at all).
func (p *Permits) permitAttemptLocked(eff *effects, logger klog.Logger, pod *v1.Pod) (*Attempt, PermitDecision) {
	m := p.m
	mem := m.members.Of(pod.UID)
	if mem == nil || !m.sched.Live(pod) {
		p.attempts.Remove(pod.UID)
		if _, member := m.fileLocked(pod); !member {
			return nil, PermitDecision{Allow: true}
		}
		if mem != nil {
			m.removeMemberLocked(eff, pod.UID, fmt.Sprintf("pod %s was deleted", pod.Name))
		}
		logger.V(4).Info("Permit refused: not a live member", "pod", klog.KObj(pod))
		return nil, PermitDecision{Reject: fmt.Sprintf("pod %s was deleted or left its group while being scheduled", pod.Name)}
	}
	k := mem.Group
	root, ok := m.index.RootOf(k)
	if !ok {
		p.attempts.Remove(pod.UID)
		msg := fmt.Sprintf("the tree of PodGroup %q became invalid or incomplete: %s", k.Name, m.index.readiness(m.members.Known, true).shortfall(k, "exist"))
		logger.V(4).Info("Permit refused", "pod", klog.KObj(pod), "group", k, "why", msg)
		return nil, PermitDecision{Reject: msg}
	}
	a := p.attempts.Of(pod.UID)
	if a == nil || a.Root != root || a.Group != k {
		node := pod.Spec.NodeName
		if a != nil {
			node = a.Node
		}
		a = &Attempt{Pod: pod, Group: k, Root: root, Node: node, State: AttemptReserved}
		p.addLocked(eff, a)
	}
	if _, gone := p.gone[a.Node]; gone {
		// Placed from a cache that had not yet lost the node: allowed, it would bind there.
		p.attempts.Remove(pod.UID)
		why := fmt.Sprintf("node %s was deleted", a.Node)
		logger.V(4).Info("Permit refused", "pod", klog.KObj(pod), "group", k, "root", root, "why", why)
		return nil, PermitDecision{Reject: why}
	}
	return a, PermitDecision{}
}

// waitLocked makes a member wait at Permit for the rest of its tree, until its deadline at
// the latest.
func (p *Permits) waitLocked(logger klog.Logger, a *Attempt, pol Policy) PermitDecision {
	m := p.m
	now := m.clock.Now()
	timeout := pol.PermitTimeout
	if t, ok := m.index.Get(a.Group).ScheduleTimeout(); ok {
		timeout = t
	}
	timeout = min(timeout, maxPermitWait)
	p.attempts.Wait(a, now, now.Add(timeout))
	p.armDeadlineLocked(a.Root, p.attempts.RoundOf(a.Root))
	why := m.index.readiness(p.placedCounter(), true).shortfall(a.Group, "placed")
	logger.V(4).Info("Member waits for its gang", "pod", klog.KObj(a.Pod), "group", a.Group, "root", a.Root, "node", a.Node,
		"deadline", a.Deadline, "why", why)
	return PermitDecision{Timeout: a.Deadline.Sub(now) + permitGrace, Message: fmt.Sprintf("waiting for the rest of the gang %s: %s", a.Root.Name, why)}
}

// armDeadlineLocked sets the round's timer to the earliest deadline of its waiters.
func (p *Permits) armDeadlineLocked(root Key, r *Round) {
	first := r.firstDeadline()
	if first.IsZero() {
		stopTimer(&r.deadlineTimer)
		r.deadline = time.Time{}
		return
	}
	if r.deadlineTimer != nil && r.deadline.Equal(first) {
		return
	}
	stopTimer(&r.deadlineTimer)
	r.deadline = first
	id := r.id
	r.deadlineTimer = p.m.clock.AfterFunc(first.Sub(p.m.clock.Now()), func() { p.expire(root, id) })
}

// placedCounter counts a PodGroup's live members that are bound, ran, or hold a reservation.
func (p *Permits) placedCounter() counter {
	return func(k Key) int { return p.m.members.BoundOrRan(k) + p.attempts.Placed(k) }
}

// possibleCounter counts a PodGroup's members that may still be placed in root's attempt.
func (p *Permits) possibleCounter(root Key) counter {
	failed := map[Key]int{}
	if r := p.attempts.Round(root); r != nil {
		for _, k := range r.failed {
			failed[k]++
		}
	}
	return func(k Key) int { return p.m.members.Known(k) - failed[k] }
}

// allowWaitersLocked allows the waiters of root whose path is ready (a minimum lowered, a
// member bound or replaced).
func (p *Permits) allowWaitersLocked(eff *effects, root Key) {
	if r := p.attempts.Round(root); r != nil && len(r.waiting) > 0 {
		p.allowReadyLocked(eff, p.m.logger, root, nil)
	}
}

// allowReadyLocked allows the members of root whose path is ready counting placed members:
// self (if set and ready) and every waiter. Members the scheduler's cache shows deleted are
// dropped first, and readiness is evaluated again without them. The waiters are allowed here,
// under the lock (see Permits). It reports whether self was allowed.
func (p *Permits) allowReadyLocked(eff *effects, logger klog.Logger, root Key, self *Attempt) bool {
	m := p.m
	for {
		placed := m.index.readiness(p.placedCounter(), true)
		var ready []*Attempt
		if self != nil {
			// A member that does not complete its own path completes no one else's either.
			if !placed.path(self.Group) {
				return false
			}
			ready = append(ready, self)
		}
		for _, w := range p.attempts.Waiting(root) {
			if (self == nil || w.Pod.UID != self.Pod.UID) && placed.path(w.Group) {
				ready = append(ready, w)
			}
		}
		if len(ready) == 0 {
			return false
		}
		if p.dropDeletedLocked(eff, root, ready) {
			continue
		}
		now := m.clock.Now()
		allowedSelf := false
		for _, a := range ready {
			if a.State == AttemptWaiting {
				metrics.permitWait.WithLabelValues("allowed").Observe(now.Sub(a.WaitStart).Seconds())
				if m.sched != nil {
					m.sched.Allow(a.Pod)
				}
			} else {
				allowedSelf = true
			}
			p.attempts.Allow(a)
			logger.V(4).Info("Member allowed to bind", "pod", klog.KObj(a.Pod), "group", a.Group, "root", root, "node", a.Node)
		}
		p.markScheduledLocked(eff, logger, root, placed)
		if r := p.attempts.Round(root); r != nil {
			p.armDeadlineLocked(root, r)
			if len(r.waiting) == 0 && placed.subtree(root) {
				eff.ended = append(eff.ended, root)
			}
		}
		return allowedSelf
	}
}

// dropDeletedLocked checks, before a tree is allowed, that the members it counts still
// exist: those about to be allowed, and the bound and reserved members of its PodGroups that
// are judged by their count (not the initially scheduled ones). The model hears of a deletion
// through its own informer handler, which may run after the scheduler's; the scheduler's pod
// cache is ahead of both. Members found deleted are forgotten as if the event had arrived
// (their trees are refreshed when the change settles); it reports whether any was.
func (p *Permits) dropDeletedLocked(eff *effects, root Key, ready []*Attempt) bool {
	m := p.m
	if m.sched == nil {
		return false
	}
	var gone []types.UID
	for _, a := range ready {
		if !m.sched.Live(a.Pod) {
			gone = append(gone, a.Pod.UID)
		}
	}
	for _, k := range m.index.PodGroupsOf(root) {
		if m.index.Get(k).Scheduled() {
			continue
		}
		for _, mem := range m.members.InGroup(k) {
			if (mem.Bound() || p.attempts.Of(mem.Pod.UID) != nil) && !m.sched.Live(mem.Pod) {
				gone = append(gone, mem.Pod.UID)
			}
		}
	}
	for _, uid := range gone {
		if mem := m.members.Of(uid); mem != nil {
			m.removeMemberLocked(eff, uid, fmt.Sprintf("pod %s was deleted", mem.Pod.Name))
		}
	}
	return len(gone) > 0
}

// markScheduledLocked tells the groups of the tree whose path is now ready counting placed
// members that they were allowed (TreeAllowed).
func (p *Permits) markScheduledLocked(eff *effects, logger klog.Logger, root Key, placed *readiness) {
	m := p.m
	for _, k := range m.index.Subtree(root) {
		if !placed.path(k) || m.index.Get(k).Scheduled() || m.fireLocked(eff, k, TreeAllowed, "") == nil {
			continue
		}
		if k == root {
			metrics.attempts.WithLabelValues("scheduled").Inc()
			if r := p.attempts.Round(root); r != nil {
				r.stalled, r.backoffUntil = false, time.Time{}
				stopTimer(&r.retryTimer)
			}
			logger.V(2).Info("Gang scheduled", "root", root)
		}
	}
}

// scheduledLocked clears what a group's condition said of its failed attempts: its
// requirement is met. What disrupted it stays until it runs again (runsAgainLocked): its
// binds may still fail. A root scheduled waits no more: the observer hears of it.
func (p *Permits) scheduledLocked(k Key) {
	o := p.attempts.Outcome(k)
	*o = Outcome{FailedBind: o.FailedBind, BindingThen: o.BindingThen,
		Preempted: o.Preempted, DisruptedBy: o.DisruptedBy, PreemptedSince: o.PreemptedSince}
	if root, ok := p.m.index.RootOf(k); ok && root == k {
		if r := p.attempts.Round(root); r != nil {
			r.waitingSince = time.Time{}
		}
		p.scheduled = append(p.scheduled, root)
	}
}

// runsAgainLocked ends what DisruptionTarget said of group k: it runs whole again. (Placed
// again and short, it may yet fail as an attempt: its disruption is kept until then.)
func (p *Permits) runsAgainLocked(k Key) {
	if o := p.attempts.outcomes[k]; o != nil {
		o.Preempted, o.DisruptedBy, o.PreemptedSince = "", "", time.Time{}
	}
}

// Fail records that a member fits nowhere (PostFilter). If, without it and the other members
// that failed in this attempt, the tree can no longer be ready, every waiting member of the
// tree is rejected, reservations are released and the tree backs off; if only a subtree can
// no longer be ready, its waiting members are rejected. A member of a group that was already
// scheduled fails alone. reason is the scheduler's explanation.
func (p *Permits) Fail(logger klog.Logger, pod *v1.Pod, reason string, pol Policy) string {
	var msg string
	p.m.update(logger, func(eff *effects) { msg = p.failLocked(eff, logger, pod, reason, pol) })
	return msg
}

func (p *Permits) failLocked(eff *effects, logger klog.Logger, pod *v1.Pod, reason string, pol Policy) string {
	m := p.m
	mem := m.members.Of(pod.UID)
	if mem == nil {
		return ""
	}
	k := mem.Group
	root, ok := m.index.RootOf(k)
	if !ok {
		return ""
	}
	possible := m.index.readiness(p.possibleCounter(root), true)
	if m.index.Get(k).Scheduled() && possible.path(k) {
		logger.V(4).Info("Member of a scheduled group fits nowhere; it is retried alone", "pod", klog.KObj(pod), "group", k, "root", root, "why", reason)
		return ""
	}
	r := p.attempts.RoundOf(root)
	p.attempts.failMember(r, pod.UID, k)
	r.reserveAfter, r.reservationTimeout = pol.ReserveAfter, pol.ReservationTimeout
	possible = m.index.readiness(p.possibleCounter(root), true)
	if possible.path(k) {
		logger.V(4).Info("Member fits nowhere; its gang can still be ready", "pod", klog.KObj(pod), "group", k, "root", root, "why", reason)
		if !r.open {
			// The others may fit where this one did not: they are tried.
			p.openLocked(eff, root, r, fmt.Sprintf("member %s fits nowhere, and the gang can be ready without it", pod.Name))
		}
		return ""
	}
	placed, total := p.treeCountsLocked(root)
	msg := fmt.Sprintf("cannot fit: %d of %d pods placed; pod %s: %s", placed, total, pod.Name, reason)
	if r.unplaceable != "" {
		msg = "cannot fit: " + r.unplaceable
		r.unplaceable = ""
	}
	whole := !possible.subtree(root)
	p.rejectLocked(eff, logger, root, msg, whole, pol.Backoff, possible.path, "unschedulable")
	if !whole && !r.open {
		// Only this member's subtree is out; the rest of the tree can be ready without it, and
		// a scout of that subtree tried it for none of the others: they are tried now.
		p.openLocked(eff, root, r, fmt.Sprintf("member %s's group cannot be ready, and the gang can be ready without it", pod.Name))
	}
	return p.memberRejectionLocked(root, "unschedulable")
}

// memberRejection is what the members of a failed attempt are told (the PostFilter message of
// the member that did not fit, the rejection of those waiting): the same words at every
// attempt of the gang, so that after the first the scheduler's write of their PodScheduled
// condition changes nothing and is skipped, and their events are counted in a series. What
// changes from attempt to attempt (counts, the member that did not fit, the nodes' reasons)
// is on the group's condition and in its events.
//
// The condition named is the one that says why: PodGroupInitiallyScheduled, or DisruptionTarget
// for a tree preempted since it was scheduled (its first condition stays True).
func (p *Permits) memberRejectionLocked(root Key, result string) string {
	what := "did not fit"
	if result == "timeout" {
		what = "timed out waiting for its members"
	}
	cond := "Scheduled"
	if p.m.index.Get(root).Life().Ran() {
		// Its PodGroupInitiallyScheduled is True (terminal): what it waits for now is told on
		// its DisruptionTarget.
		cond = v1alpha1.DisruptionTarget
	}
	return fmt.Sprintf("gang %s %s; the %s condition of %s %s says why (retried when the cluster changes)", root.Name, what, cond, root.Kind, root.Name)
}

// NoteUnplaceable records why a planner could not place the tree of pod; the failure that
// follows (PostFilter) reports it instead of the member's node statuses.
func (p *Permits) NoteUnplaceable(pod *v1.Pod, why string) {
	m := p.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if mem := m.members.Of(pod.UID); mem != nil {
		if root, ok := m.index.RootOf(mem.Group); ok {
			p.attempts.RoundOf(root).unplaceable = why
		}
	}
}

// NotePreempting records that a tree is preempting (msg says where and whom), for its
// condition and event, or clears it (msg ""). The victims' deletions are news that retry
// the tree.
func (p *Permits) NotePreempting(root Key, msg string) {
	p.note(root, func(o *Outcome) *string { return &o.Preempting }, msg)
}

// Unnominate clears the nominatedNodeName the pods' statuses carry (the Teller writes it,
// off the scheduling cycle): a plugin that knows a member's nomination is stale (its tree was
// planned afresh) tells the model, whose client writes the member's status.
func (p *Permits) Unnominate(logger klog.Logger, pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	p.m.update(logger, func(eff *effects) { eff.unnominate = append(eff.unnominate, pods...) })
}

// NominationDropped records that a member's failed scheduling cycle cleared its nomination
// of node (one an earlier cycle wrote, by preemption) while the scheduler's copy of the pod
// did not show it yet: the failure handler sent no clearing write, and the earlier write may
// still land. If it reaches the model before the member's next cycle, the model clears it
// (nominations.go).
func (p *Permits) NominationDropped(logger klog.Logger, pod *v1.Pod, node string) {
	m := p.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.strayLocked(pod.UID, node)
	logger.V(4).Info("Nomination dropped before it was seen; cleared if it arrives before the member's next cycle", "pod", klog.KObj(pod), "node", node)
}

// NoteReserving records that a domain is held for a tree (msg says which, since when and how
// much of it is free), for its condition, or clears it (msg "").
func (p *Permits) NoteReserving(root Key, msg string) {
	p.note(root, func(o *Outcome) *string { return &o.Reserving }, msg)
}

// NotePreempted records that a preemptor evicts the running unit of root (msg names the
// preemptor, its priority and where it goes): every group of the unit says so
// (DisruptionTarget) and is a gang again, so that the pods its controller recreates are placed
// together, not one by one into whatever room is left. It reports whether this was news (the
// unit's top did not already say msg), so that the event that goes with it is told once.
func (p *Permits) NotePreempted(root Key, msg string) bool {
	m := p.m
	m.mu.Lock()
	defer m.mu.Unlock()
	news := p.attempts.OutcomeOf(root).Preempted != msg || m.index.Get(root).Life().State() != Disrupted
	for _, k := range m.index.Subtree(root) {
		o := p.attempts.Outcome(k)
		o.Preempted, o.DisruptedBy, o.PreemptedSince = msg, "", m.clock.Now().Truncate(time.Second)
		m.status.Enqueue(k)
	}
	// Entering Disrupted asks nothing of the scheduler (no effects to apply): its preemptor
	// may call this with its own locks held.
	m.fireUnitLocked(m.newEffects(m.logger), root, Preempted, msg)
	if news {
		p.armFinishLocked(root) // what the preemptor leaves running is evicted (disruption.go)
	}
	return news
}

func (p *Permits) note(root Key, field func(*Outcome) *string, msg string) {
	m := p.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := p.attempts.OutcomeOf(root); *field(&o) == msg {
		return // no news; and clearing what was never said keeps no outcome
	}
	*field(p.attempts.Outcome(root)) = msg
	m.status.Enqueue(root)
}

// Unreserve records that a member lost its reservation. A member the model rejected itself
// has none left. A waiting member the framework rejected (deleted, timed out) stops counting,
// and if its tree can no longer be ready the other waiters are released. A member that was
// allowed and failed to bind leaves its gang partially bound: the group says so, and the
// member is retried alone.
func (p *Permits) Unreserve(logger klog.Logger, pod *v1.Pod) {
	p.m.update(logger, func(eff *effects) { p.unreserveLocked(eff, logger, pod) })
}

func (p *Permits) unreserveLocked(eff *effects, logger klog.Logger, pod *v1.Pod) {
	m := p.m
	a := p.attempts.Remove(pod.UID)
	node := pod.Spec.NodeName // the framework's assumed copy
	if a != nil {
		node = a.Node
	}
	m.strayLocked(pod.UID, node)
	if a == nil {
		return
	}
	if p.attempts.Ended(a.Root) {
		eff.ended = append(eff.ended, a.Root)
	}
	switch a.State {
	case AttemptReserved:
		logger.V(5).Info("Reservation released", "pod", klog.KObj(pod), "group", a.Group, "root", a.Root)
	case AttemptWaiting:
		metrics.permitWait.WithLabelValues("rejected").Observe(m.clock.Now().Sub(a.WaitStart).Seconds())
		logger.V(4).Info("Waiting member rejected by the scheduler", "pod", klog.KObj(pod), "group", a.Group, "root", a.Root)
		p.releaseHopelessLocked(eff, logger, a.Root, fmt.Sprintf("pod %s stopped waiting", pod.Name))
	case AttemptAllowed:
		p.bindFailedLocked(eff, pod, a.Group, a.Root)
	}
}

// Rejecting is asked before the framework rejects a pod waiting at Permit in memory (a
// preemption taking it as a victim, through Frameworks.Guard). If the model holds the pod as
// a waiter, it stops counting at once (its tree's other waiters are released if the tree can
// no longer be ready) and the rejection may go ahead: true. If the model already allowed it,
// the rejection must not happen, or its tree would bind short: false (the pod binds, and its
// preemptor deletes it as it would a bound pod). A pod the model has no attempt for may be
// rejected.
func (p *Permits) Rejecting(logger klog.Logger, pod *v1.Pod, why string) bool {
	ok := true
	p.m.update(logger, func(eff *effects) {
		a := p.attempts.Of(pod.UID)
		switch {
		case a == nil:
		case a.State == AttemptAllowed:
			ok = false
		default:
			p.attempts.Remove(pod.UID)
			if p.attempts.Ended(a.Root) {
				eff.ended = append(eff.ended, a.Root)
			}
			if a.State == AttemptWaiting {
				metrics.permitWait.WithLabelValues("rejected").Observe(p.m.clock.Now().Sub(a.WaitStart).Seconds())
			}
			logger.V(4).Info("Waiting member rejected by the framework", "pod", klog.KObj(pod), "group", a.Group, "root", a.Root, "why", why)
			p.releaseHopelessLocked(eff, logger, a.Root, fmt.Sprintf("pod %s was %s", pod.Name, why))
		}
	})
	return ok
}

// Cancelling is asked before the framework cancels, in memory, the binding cycle of a pod in
// PreBind (upstream's preemption executor does, for a victim). A member the model allowed
// counted toward its tree's readiness when the tree was allowed: cancelling it would leave
// the tree bound short, so the cancel must not happen (false), and the preemptor deletes the
// pod instead, as it would a bound one. A pod the model holds no allowed attempt for may be
// cancelled.
func (p *Permits) Cancelling(uid types.UID) bool {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	a := p.attempts.Of(uid)
	return a == nil || a.State != AttemptAllowed
}

// releaseHopelessLocked releases the waiters of root whose path can no longer be ready with
// the members that exist (and have not failed in this attempt): a member was deleted, left,
// or stopped waiting. This is not a failure to fit: no backoff; the tree is tried again when
// its pods exist.
func (p *Permits) releaseHopelessLocked(eff *effects, logger klog.Logger, root Key, why string) {
	m := p.m
	r := p.attempts.Round(root)
	if r == nil || len(r.waiting) == 0 {
		return
	}
	possible := m.index.readiness(p.possibleCounter(root), true)
	whole := !possible.subtree(root)
	known := m.index.readiness(m.members.Known, true)
	for _, w := range p.attempts.Waiting(root) {
		if !whole && possible.path(w.Group) {
			continue
		}
		msg := fmt.Sprintf("%s; the gang cannot be ready with the pods that exist: %s", why, known.shortfall(w.Group, "exist"))
		metrics.permitWait.WithLabelValues("rejected").Observe(m.clock.Now().Sub(w.WaitStart).Seconds())
		p.attempts.Remove(w.Pod.UID)
		eff.rejectPod(w.Pod, msg)
		logger.V(4).Info("Waiting member released", "pod", klog.KObj(w.Pod), "group", w.Group, "root", root, "why", msg)
	}
	p.armDeadlineLocked(root, r)
	if p.attempts.Ended(root) {
		eff.ended = append(eff.ended, root)
	}
}

// rejectLocked ends an attempt that failed: it rejects the waiting members of the whole tree
// (whole) or of the PodGroups whose path is not ready by stillOK, records the failure on the
// affected groups and, for the whole tree, backs it off until backoff passes or news comes.
func (p *Permits) rejectLocked(eff *effects, logger klog.Logger, root Key, msg string, whole bool, backoff time.Duration, stillOK func(Key) bool, result string) {
	m := p.m
	for _, k := range m.index.Subtree(root) {
		if (whole || !stillOK(k)) && !m.index.Get(k).Scheduled() {
			if o := p.attempts.Outcome(k); o.Failure != msg {
				o.Failure = msg
				m.status.Enqueue(k)
			}
		}
	}
	now := m.clock.Now()
	told := p.memberRejectionLocked(root, result)
	tried := sets.New[types.UID]() // told by the framework
	for _, w := range p.attempts.Waiting(root) {
		if !whole && stillOK(w.Group) {
			continue
		}
		metrics.permitWait.WithLabelValues("rejected").Observe(now.Sub(w.WaitStart).Seconds())
		p.attempts.Remove(w.Pod.UID)
		eff.rejectPod(w.Pod, told)
		tried.Insert(w.Pod.UID)
		logger.V(4).Info("Waiting member rejected", "pod", klog.KObj(w.Pod), "group", w.Group, "root", root, "why", msg)
	}
	r := p.attempts.RoundOf(root)
	p.armDeadlineLocked(root, r)
	if whole {
		// A half-bound tree gets its full backoff to finish, even after a failure that may be
		// the cache's lag (below).
		p.armReleaseLocked(root, r, max(backoff, p.retryFloor))
		if r.quietRetry {
			// Tried again for no news, and failed again: the next try without news waits
			// twice as long (quietBackoff). A try news prompted neither counts nor resets it:
			// the news was spent, and whatever else can help comes as news too. Reset, every
			// node added sent each waiting gang back to tries 10 s, 20 s, 40 s... apart: at
			// 15,000 nodes, 2500 gangs made 2654 timed tries in the 42 s after one node.
			r.quiet++
		}
		r.quietRetry = false
		prompted := r.newsAt // the news retry this attempt was, if any (catchUpLocked)
		if !r.newsAt.IsZero() && now.Sub(r.newsAt) < 2*p.retryFloor {
			// The attempt news prompted failed at once: the scheduler's cache may not have had
			// the news yet. One more look soon; the full backoff after that.
			backoff = min(backoff, p.retryFloor)
			r.newsAt, r.lookAgain = time.Time{}, true
		} else {
			backoff = spread(quietBackoff(backoff, r.quiet), root, r.id)
		}
		p.attempts.stall(r)
		r.lastFailure = now
		p.catchUpLocked(root, r, prompted)
		p.closeLocked(r)
		pending := m.pendingLocked(root)
		p.attempts.setNeed(r, smallestNeed(pending), len(pending) > 0 && roomOnly(pending) && !m.index.exclusiveWithin(root))
		for uid := range r.failed {
			tried.Insert(uid)
		}
		if untold := untold(pending, told, tried); len(untold) > 0 {
			// Members its scout tried the gang for are told what the scheduler tells those
			// it tried (the scout, the waiters, any the framework told since, are told once).
			eff.tell = append(eff.tell, telling{pods: untold, msg: told})
		}
		if r.waitingSince.IsZero() {
			r.waitingSince = now
		}
		switch preempted, waiting := p.victimsLocked(root); {
		case preempted && !waiting:
			// The last of its victims left while its scout was in its cycle: that news found
			// it in its attempt, and retried nothing (newsLocked). It tries its plan at once.
			backoff = min(backoff, newsDelay)
		case waiting:
			// Its victims' deletions retry it; but one may never go (stuck terminating, its
			// node gone): it looks again this often, to plan afresh once that one is waited
			// for no longer.
			backoff = min(backoff, victimsRecheck)
		}
		if due := r.waitingSince.Add(r.reserveAfter); r.reserveAfter > 0 && due.After(now.Add(p.retryFloor)) && due.Before(now.Add(backoff)) {
			// Tried when it has waited long enough for a reservation, whatever the backoff.
			backoff = due.Sub(now)
		}
		r.backoffUntil = now.Add(backoff)
		p.armRetryLocked(root, r, r.backoffUntil)
		eff.hold = append(eff.hold, p.heldFromNowLocked(tried)...)
	}
	eff.ended = append(eff.ended, root)
	metrics.attempts.WithLabelValues(result).Inc()
	logger.V(2).Info("Gang attempt failed", "root", root, "wholeTree", whole, "backoff", backoff, "why", msg)
}

// expire ends the waits of root's attempt id that reached their deadline. If the tree is not
// ready without them, its whole wait ends: every waiter is rejected and the tree backs off.
// Otherwise the subtrees that are not ready are released, and the waiters left keep their
// own deadlines. A waiter past its deadline whose path is ready only by a member still
// between Reserve and Permit is looked at again a moment later (that member allows it or
// fails), always before the framework's own timeout of the waiter.
func (p *Permits) expire(root Key, id int) {
	m := p.m
	m.update(m.logger, func(eff *effects) {
		r := p.attempts.Round(root)
		if r == nil || r.id != id || len(r.waiting) == 0 {
			return
		}
		r.deadlineTimer = nil
		now := m.clock.Now()
		if first := r.firstDeadline(); first.After(now) {
			p.armDeadlineLocked(root, r) // the waiter that set the deadline left
			return
		}
		var longest *Attempt
		for _, w := range r.waiting {
			if longest == nil || w.WaitStart.Before(longest.WaitStart) {
				longest = w
			}
		}
		placed := m.index.readiness(p.placedCounter(), true)
		n, total := p.treeCountsLocked(root)
		msg := fmt.Sprintf("timed out after %s waiting for the gang: %d of %d pods placed; %s",
			now.Sub(longest.WaitStart).Round(time.Second), n, total, placed.shortfall(longest.Group, "placed"))
		overdue := sets.New[Key]()
		for _, w := range r.waiting {
			if w.due().After(now) || !placed.path(w.Group) {
				continue
			}
			if now.Before(w.Deadline.Add(permitGrace / 2)) {
				w.Recheck = now.Add(expiryRecheck)
				continue
			}
			overdue.Insert(w.Group)
		}
		stillOK := func(k Key) bool { return placed.path(k) && !overdue.Has(k) }
		p.rejectLocked(eff, m.logger, root, msg, !placed.subtree(root), r.backoff, stillOK, "timeout")
	})
}

// expiryRecheck is how soon a waiter past its deadline, kept because its path is ready by a
// member between Reserve and Permit, is looked at again.
const expiryRecheck = time.Second

// --- what the model's other roles tell Permits (under the lock) ---

// memberGoneLocked releases what a member that stopped being one held: its reservation (a
// pod still waiting at Permit that merely left its group is rejected; a deleted one the
// scheduler rejects itself), and the waiters of its tree if the tree can no longer be ready
// with the pods that exist.
func (p *Permits) memberGoneLocked(eff *effects, uid types.UID, root Key, hasRoot bool, why string) {
	if a := p.attempts.Remove(uid); a != nil {
		root, hasRoot = a.Root, true
		if a.State == AttemptWaiting {
			eff.rejectPod(a.Pod, why)
		}
		if p.attempts.Ended(a.Root) {
			eff.ended = append(eff.ended, a.Root)
		}
	}
	if hasRoot {
		if r := p.attempts.Round(root); r != nil {
			delete(r.failed, uid)
		}
		p.releaseHopelessLocked(eff, p.m.logger, root, why)
		p.scoutGoneLocked(eff, uid, root)
	}
}

// boundLocked records that the informer shows a member bound: its reservation is over.
func (p *Permits) boundLocked(pod *v1.Pod, k Key) {
	m := p.m
	if a := p.attempts.Remove(pod.UID); a != nil {
		m.logger.V(5).Info("Member bound", "pod", klog.KObj(pod), "group", k, "node", pod.Spec.NodeName)
	}
	if root, ok := m.index.RootOf(k); ok {
		p.observeBoundLocked(root)
	}
}

// goneTTL is how long a deleted node is remembered: longer than the scheduler's cache takes
// to learn of a deletion, by far.
const goneTTL = 2 * time.Minute

// armGoneLocked arms the one timer that forgets deleted nodes goneTTL after their deletion,
// while any is remembered: it fires when the oldest is due.
func (p *Permits) armGoneLocked() {
	if p.goneTimer != nil || len(p.gone) == 0 {
		return
	}
	var oldest time.Time
	for _, at := range p.gone {
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	p.goneTimer = p.m.clock.AfterFunc(oldest.Add(goneTTL).Sub(p.m.clock.Now()), func() {
		p.m.mu.Lock()
		defer p.m.mu.Unlock()
		p.goneTimer = nil
		now := p.m.clock.Now()
		for name, at := range p.gone {
			if now.Sub(at) >= goneTTL {
				delete(p.gone, name)
			}
		}
		p.armGoneLocked()
	})
}

// nodeGoneLocked releases the members waiting at Permit on a node that is gone: allowed, they
// would bind to it. They are scheduled again; their trees keep waiting for them if they can
// still be ready.
func (p *Permits) nodeGoneLocked(eff *effects, node string) {
	p.gone[node] = p.m.clock.Now()
	p.armGoneLocked()
	why := fmt.Sprintf("node %s was deleted", node)
	roots := sets.New[Key]()
	for _, uid := range p.attempts.WaitingUIDs() {
		a := p.attempts.Of(uid)
		if a == nil || a.Node != node {
			continue
		}
		p.attempts.Remove(uid)
		eff.rejectPod(a.Pod, why)
		eff.activate = append(eff.activate, a.Pod)
		roots.Insert(a.Root)
		p.m.logger.V(4).Info("Waiting member released: its node is gone", "pod", klog.KObj(a.Pod), "group", a.Group, "root", a.Root, "node", node)
	}
	for root := range roots {
		eff.ended = append(eff.ended, root) // its plan placed members on the node
		p.releaseHopelessLocked(eff, p.m.logger, root, why)
	}
}

// reconcileLocked releases the reservations of members whose tree is not the one they
// reserved in any more: their group or an ancestor was deleted, became invalid, or joined
// another tree. A waiting member is rejected; a member already allowed to bind keeps its
// bind and moves to its new tree.
func (p *Permits) reconcileLocked(eff *effects, keys []Key) {
	m := p.m
	oldRoots := sets.New[Key]()
	for _, k := range keys {
		if k.Kind != KindPodGroup {
			continue
		}
		root, valid := m.index.RootOf(k)
		for _, mem := range m.members.InGroup(k) {
			a := p.attempts.Of(mem.Pod.UID)
			if a == nil || (valid && a.Root == root) {
				continue
			}
			if a.State == AttemptAllowed && valid {
				a.Root = root // done with its attempt: counted as placed until its bind is seen
				continue
			}
			p.attempts.Remove(mem.Pod.UID)
			oldRoots.Insert(a.Root)
			if a.State == AttemptWaiting {
				why := fmt.Sprintf("the tree of PodGroup %s changed: %s", k.Name,
					m.index.readiness(m.members.Known, true).shortfall(k, "exist"))
				eff.rejectPod(a.Pod, why)
				m.logger.V(4).Info("Waiting member released: its tree changed", "pod", a.Pod.Name, "group", k, "root", a.Root, "why", why)
			}
		}
	}
	for root := range oldRoots {
		if p.attempts.Ended(root) {
			eff.ended = append(eff.ended, root)
		}
		p.releaseHopelessLocked(eff, m.logger, root, "a group left the tree")
	}
}

// forgetGroupLocked drops what was recorded about a group that no longer exists.
func (p *Permits) forgetGroupLocked(k Key) { p.attempts.ForgetGroup(k) }

// ended tells the observer which trees' attempts ended, and which trees were scheduled since
// it last heard. Never called with the lock held.
func (p *Permits) ended(roots []Key) {
	p.m.mu.Lock()
	scheduled := p.scheduled
	p.scheduled = nil
	p.m.mu.Unlock()
	if p.observer == nil {
		return
	}
	for _, root := range roots {
		p.observer.AttemptEnded(root)
	}
	for _, root := range scheduled {
		p.observer.TreeScheduled(root)
	}
}

// --- what the other roles read (under the lock) ---

// holdsLocked reports whether a pod holds a reservation.
func (p *Permits) holdsLocked(uid types.UID) bool { return p.attempts.Of(uid) != nil }

// reservedNodeLocked returns the node a pod holds a reservation on.
func (p *Permits) reservedNodeLocked(uid types.UID) (string, bool) {
	if a := p.attempts.Of(uid); a != nil {
		return a.Node, true
	}
	return "", false
}

// backoffLeftLocked is how long root still backs off after a failed attempt.
func (p *Permits) backoffLeftLocked(root Key) time.Duration {
	if r := p.attempts.Round(root); r != nil {
		return r.backoffUntil.Sub(p.m.clock.Now())
	}
	return 0
}

// subtreeFailedLocked reports whether member uid fit nowhere in root's current attempt and
// its path can no longer be ready without the members that failed: its subtree failed,
// though the tree may be ready without it (failLocked then backs off nothing).
func (p *Permits) subtreeFailedLocked(uid types.UID, root Key) bool {
	r := p.attempts.Round(root)
	if r == nil {
		return false
	}
	k, failed := r.failed[uid]
	if !failed {
		return false
	}
	return !p.m.index.readiness(p.possibleCounter(root), true).path(k)
}

// Waiters returns the pods waiting at Permit (for tests and diagnostics).
func (p *Permits) Waiters() []types.UID {
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	return p.attempts.WaitingUIDs()
}

// treeCountsLocked returns the pods of the tree that are placed (bound, ran or reserved) and
// all of them.
func (p *Permits) treeCountsLocked(root Key) (placed, total int) {
	m := p.m
	for _, k := range m.index.PodGroupsOf(root) {
		placed += m.members.BoundOrRan(k) + p.attempts.Placed(k)
		total += m.members.Known(k)
	}
	return placed, total
}

// observeBoundLocked records the end-to-end latency of a gang the first time all of its tree
// is bound: from its first member's creation to the bind that completed it.
func (p *Permits) observeBoundLocked(root Key) {
	m := p.m
	r := p.attempts.RoundOf(root)
	if r.boundRecorded || !m.index.readiness(m.members.BoundOrRan, false).subtree(root) {
		return
	}
	r.boundRecorded = true
	var first time.Time
	for _, k := range m.index.PodGroupsOf(root) {
		for _, mem := range m.members.InGroup(k) {
			if t := mem.Pod.CreationTimestamp.Time; first.IsZero() || t.Before(first) {
				first = t
			}
		}
	}
	if !first.IsZero() {
		metrics.gangLatency.Observe(m.clock.Now().Sub(first).Seconds())
	}
}
