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

// Policy is the gang policy of the profile a member is scheduled by.
type Policy struct {
	// PermitTimeout bounds how long placed members wait for the rest of their tree, unless
	// their PodGroup sets scheduleTimeoutSeconds.
	PermitTimeout time.Duration
	// Backoff holds a tree back after a failed attempt, unless news arrives.
	Backoff time.Duration
}

// maxPermitWait is the longest wait the model arms; the framework caps its own permit
// timeout at 15 minutes, and the model's deadline must come first.
const maxPermitWait = 15*time.Minute - permitGrace

// permitGrace is how much later than the model's deadline the framework's own permit timeout
// is set: the model rejects waiters itself, under its lock, so that no concurrent Permit
// counts a waiter the framework already let go.
const permitGrace = 5 * time.Second

// VerdictCode says whether a pod may enter the scheduling queue or cycle.
type VerdictCode int

const (
	// Proceed: schedule the pod.
	Proceed VerdictCode = iota
	// NotMember: the pod belongs to no group; lockstep has nothing to say.
	NotMember
	// MissingGroup: the pod's PodGroup does not exist (yet).
	MissingGroup
	// Invalid: the pod's group or one of its ancestors is invalid.
	Invalid
	// WaitingForPods: the tree cannot be ready with the pods that exist.
	WaitingForPods
	// BackingOff: the tree's last attempt failed moments ago.
	BackingOff
	// Syncing: the scheduler just started and has not seen every pod yet.
	Syncing
	// Unseen: the model's pod informer has not delivered the pod yet.
	Unseen
)

var verdictNames = [...]string{"Proceed", "NotMember", "MissingGroup", "Invalid", "WaitingForPods", "BackingOff", "Syncing", "Unseen"}

func (c VerdictCode) String() string { return verdictNames[c] }

// Verdict is the answer to "may this pod be scheduled now?", with a message a person can act
// on whenever the answer is no.
type Verdict struct {
	Code    VerdictCode
	Group   Key
	Root    Key
	Message string
	// MinResources, with Proceed, is the PodGroup's minResources while it waits for its
	// initial scheduling (MinResources), read under the same lock as the verdict.
	MinResources v1.ResourceList
}

// checkMode says who asks: the queue (PreEnqueue), the scheduling cycle (PreFilter), or a
// queueing hint (which must not change anything).
type checkMode int

const (
	modeEnqueue checkMode = iota
	modeCycle
	modePeek
)

// Admit answers PreEnqueue: a pod waits out of the queue until its PodGroup and every
// ancestor exist, its tree is valid and enough pods exist for its path to be ready (or its
// group was initially scheduled). Pods held because the model has not seen them yet are
// activated when it has. A pod whose PodGroup does not exist gets one event saying so (events
// are recorded while the scheduler leads; becoming leader announces again).
func (m *Model) Admit(logger klog.Logger, pod *v1.Pod) Verdict {
	return m.check(logger, pod, modeEnqueue)
}

// Check answers PreFilter: Admit's rules, and a tree that failed moments ago backs off.
func (m *Model) Check(logger klog.Logger, pod *v1.Pod) Verdict {
	return m.check(logger, pod, modeCycle)
}

// Peek answers Admit's question without side effects, for queueing hints.
func (m *Model) Peek(pod *v1.Pod) Verdict {
	return m.check(klog.Background(), pod, modePeek)
}

func (m *Model) check(logger klog.Logger, pod *v1.Pod, mode checkMode) Verdict {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.members.Of(pod.UID)
	if mem == nil || !m.synced() {
		k, ok := m.fileLocked(pod)
		if !ok || terminated(pod) {
			return Verdict{Code: NotMember}
		}
		if mode != modePeek {
			m.held[pod.UID] = pod
		}
		if !m.synced() {
			return Verdict{Code: Syncing, Group: k, Message: "lockstep is starting: waiting until it has seen every group and pod (if this lasts, are lockstep's CRDs installed?)"}
		}
		return Verdict{Code: Unseen, Group: k, Message: fmt.Sprintf("waiting for lockstep to observe pod %s", pod.Name)}
	}
	k := mem.Group
	g := m.index.Get(k)
	if !g.Exists() {
		msg := m.missingGroupMessage(pod, k)
		if mode == modeEnqueue {
			m.awaitGroupLocked(pod)
			// No group object to carry a condition: tell the pod, once.
			if !m.noticed.Has(pod.UID) && m.recorder != nil {
				m.noticed.Insert(pod.UID)
				m.recorder.Eventf(pod, nil, v1.EventTypeWarning, "PodGroupNotFound", "Scheduling", "%s", msg)
			}
		}
		return Verdict{Code: MissingGroup, Group: k, Message: msg}
	}
	if g.problem != "" {
		return Verdict{Code: Invalid, Group: k, Message: fmt.Sprintf("PodGroup %q is invalid: %s", k.Name, g.problem)}
	}
	root, ok := m.index.RootOf(k)
	if !ok {
		return Verdict{Code: Invalid, Group: k, Message: fmt.Sprintf("the tree of PodGroup %q is invalid", k.Name)}
	}
	known := m.index.readiness(m.members.Known, true)
	if !known.path(k) {
		return Verdict{Code: WaitingForPods, Group: k, Root: root,
			Message: fmt.Sprintf("waiting for pods of PodGroup %q: %s", k.Name, known.shortfall(k, "exist"))}
	}
	if mode == modeCycle {
		if r := m.attempts.Round(root); r != nil {
			if left := r.backoffUntil.Sub(m.clock.Now()); left > 0 {
				logger.V(4).Info("Gang backs off", "pod", klog.KObj(pod), "group", k, "root", root, "left", left)
				return Verdict{Code: BackingOff, Group: k, Root: root,
					Message: fmt.Sprintf("gang %s backs off for %s after a failed attempt (sooner if the cluster changes)", root.Name, left.Round(time.Millisecond))}
			}
		}
	}
	return Verdict{Code: Proceed, Group: k, Root: root, MinResources: m.minResourcesLocked(k)}
}

// SortKey returns what QueueSort orders a gang member by: its tree's priority (the root's
// priorityClassName, else the pod's), the later of its root's creation and last failure,
// and the root's key, so that members of one tree leave the queue together.
func (m *Model) SortKey(pod *v1.Pod) (int32, time.Time, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.members.Of(pod.UID)
	if mem == nil {
		return 0, time.Time{}, "", false
	}
	root, ok := m.index.RootOf(mem.Group)
	if !ok {
		return 0, time.Time{}, "", false
	}
	t := m.index.Get(root).CreationTime()
	if r := m.attempts.Round(root); r != nil && r.lastFailure.After(t) {
		t = r.lastFailure
	}
	return m.priorityLocked(pod, root), t, root.String(), true
}

// Reserve records that a member passed Reserve on node. The first reservation of a tree
// starts an attempt. A pod the model does not count as a member (deleted, not seen, left its
// group) is not recorded: it is never counted from the scheduler's copy.
func (m *Model) Reserve(logger klog.Logger, pod *v1.Pod, node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mem := m.members.Of(pod.UID)
	if mem == nil {
		return
	}
	root, ok := m.index.RootOf(mem.Group)
	if !ok {
		return
	}
	if m.attempts.Add(&Attempt{Pod: pod, Group: mem.Group, Root: root, Node: node, State: Reserved}) {
		logger.V(4).Info("Gang attempt started", "pod", klog.KObj(pod), "group", mem.Group, "root", root)
	}
	logger.V(5).Info("Member reserved", "pod", klog.KObj(pod), "group", mem.Group, "root", root, "node", node)
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
func (m *Model) Permit(logger klog.Logger, pod *v1.Pod, p Policy) PermitDecision {
	m.mu.Lock()
	eff := effects{logger: logger}
	d := m.permitLocked(&eff, logger, pod, p)
	m.mu.Unlock()
	m.apply(eff)
	return d
}

func (m *Model) permitLocked(eff *effects, logger klog.Logger, pod *v1.Pod, p Policy) PermitDecision {
	mem := m.members.Of(pod.UID)
	if mem == nil || !m.sched.Live(pod) {
		m.attempts.Remove(pod.UID)
		if _, member := m.fileLocked(pod); !member {
			return PermitDecision{Allow: true}
		}
		if mem != nil {
			m.removeMemberLocked(eff, pod.UID, fmt.Sprintf("pod %s was deleted", pod.Name))
		}
		logger.V(4).Info("Permit refused: not a live member", "pod", klog.KObj(pod))
		return PermitDecision{Reject: fmt.Sprintf("pod %s was deleted or left its group while being scheduled", pod.Name)}
	}
	k := mem.Group
	root, ok := m.index.RootOf(k)
	if !ok {
		m.attempts.Remove(pod.UID)
		msg := fmt.Sprintf("the tree of PodGroup %q became invalid or incomplete: %s", k.Name, m.index.readiness(m.members.Known, true).shortfall(k, "exist"))
		logger.V(4).Info("Permit refused", "pod", klog.KObj(pod), "group", k, "why", msg)
		return PermitDecision{Reject: msg}
	}
	a := m.attempts.Of(pod.UID)
	if a == nil || a.Root != root || a.Group != k {
		node := pod.Spec.NodeName
		if a != nil {
			node = a.Node
		}
		a = &Attempt{Pod: pod, Group: k, Root: root, Node: node, State: Reserved}
		m.attempts.Add(a)
	}
	if m.allowReadyLocked(eff, logger, root, a) {
		return PermitDecision{Allow: true}
	}
	if m.members.Of(pod.UID) == nil {
		return PermitDecision{Reject: fmt.Sprintf("pod %s was deleted while being scheduled", pod.Name)}
	}
	// Wait for the rest of the tree.
	now := m.clock.Now()
	timeout := p.PermitTimeout
	if t, ok := m.index.Get(k).ScheduleTimeout(); ok {
		timeout = t
	}
	timeout = min(timeout, maxPermitWait)
	m.attempts.Wait(a, now)
	r := m.attempts.RoundOf(root)
	if r.backoff == 0 {
		r.backoff = p.Backoff
	}
	if deadline := now.Add(timeout); r.deadline.IsZero() || deadline.Before(r.deadline) {
		r.deadline = deadline
		stopTimer(&r.deadlineTimer)
		id := r.id
		r.deadlineTimer = m.clock.AfterFunc(timeout, func() { m.expire(root, id) })
	}
	if !r.activated {
		r.activated = true
		eff.activate = append(eff.activate, m.pendingLocked(root)...)
	}
	placed := m.index.readiness(m.placedCounter(), true)
	msg := fmt.Sprintf("waiting for the rest of the gang %s: %s", root.Name, placed.shortfall(k, "placed"))
	logger.V(4).Info("Member waits for its gang", "pod", klog.KObj(pod), "group", k, "root", root, "node", a.Node,
		"deadline", r.deadline, "why", placed.shortfall(k, "placed"))
	return PermitDecision{Timeout: r.deadline.Sub(now) + permitGrace, Message: msg}
}

// placedCounter counts a PodGroup's live members that are bound, ran, or hold a reservation.
func (m *Model) placedCounter() counter {
	return func(k Key) int { return m.members.BoundOrRan(k) + m.attempts.Placed(k) }
}

// possibleCounter counts a PodGroup's members that may still be placed in root's attempt.
func (m *Model) possibleCounter(root Key) counter {
	failed := map[Key]int{}
	if r := m.attempts.Round(root); r != nil {
		for _, k := range r.failed {
			failed[k]++
		}
	}
	return func(k Key) int { return m.members.Known(k) - failed[k] }
}

// allowReadyLocked allows the members of root whose path is ready counting placed members:
// self (if set and ready) and every waiter. Members the scheduler's cache shows deleted are
// dropped first, and readiness is evaluated again without them. It reports whether self was
// allowed.
func (m *Model) allowReadyLocked(eff *effects, logger klog.Logger, root Key, self *Attempt) bool {
	for {
		placed := m.index.readiness(m.placedCounter(), true)
		var ready []*Attempt
		if self != nil {
			// A member that does not complete its own path completes no one else's either.
			if !placed.path(self.Group) {
				return false
			}
			ready = append(ready, self)
		}
		for _, w := range m.attempts.Waiting(root) {
			if (self == nil || w.Pod.UID != self.Pod.UID) && placed.path(w.Group) {
				ready = append(ready, w)
			}
		}
		if len(ready) == 0 {
			return false
		}
		if m.dropDeletedLocked(eff, root, ready) {
			continue
		}
		now := m.clock.Now()
		allowedSelf := false
		for _, a := range ready {
			if a.State == Waiting {
				metrics.permitWait.WithLabelValues("allowed").Observe(now.Sub(a.WaitStart).Seconds())
				eff.allow = append(eff.allow, a.Pod)
			} else {
				allowedSelf = true
			}
			m.attempts.Allow(a)
			logger.V(4).Info("Member allowed to bind", "pod", klog.KObj(a.Pod), "group", a.Group, "root", root, "node", a.Node)
		}
		m.markScheduledLocked(logger, root, placed)
		r := m.attempts.Round(root)
		if r != nil && len(r.waiting) == 0 {
			stopTimer(&r.deadlineTimer)
			r.deadline = time.Time{}
			if placed.subtree(root) {
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
// cache is ahead of both. Members found deleted are dropped as if the event had arrived; it
// reports whether any was.
func (m *Model) dropDeletedLocked(eff *effects, root Key, ready []*Attempt) bool {
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
			if (mem.Bound() || m.attempts.Of(mem.Pod.UID) != nil) && !m.sched.Live(mem.Pod) {
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

// markScheduledLocked records the groups of the tree whose requirement is now met.
func (m *Model) markScheduledLocked(logger klog.Logger, root Key, placed *readiness) {
	for _, k := range m.index.Subtree(root) {
		if !placed.path(k) || !m.index.MarkScheduled(k) {
			continue
		}
		o := m.attempts.Outcome(k)
		o.Failure, o.Preempting = "", ""
		m.status.Enqueue(k)
		if k == root {
			metrics.attempts.WithLabelValues("scheduled").Inc()
			if r := m.attempts.Round(root); r != nil {
				r.stalled, r.backoffUntil = false, time.Time{}
				stopTimer(&r.retryTimer)
			}
			logger.V(2).Info("Gang scheduled", "root", root)
		}
	}
}

// Fail records that a member fits nowhere (PostFilter). If, without it and the other members
// that failed in this attempt, the tree can no longer be ready, every waiting member of the
// tree is rejected, reservations are released and the tree backs off; if only a subtree can
// no longer be ready, its waiting members are rejected. A member of a group that was already
// scheduled fails alone. reason is the scheduler's explanation.
func (m *Model) Fail(logger klog.Logger, pod *v1.Pod, reason string, p Policy) string {
	m.mu.Lock()
	eff := effects{logger: logger}
	msg := m.failLocked(&eff, logger, pod, reason, p)
	m.mu.Unlock()
	m.apply(eff)
	return msg
}

func (m *Model) failLocked(eff *effects, logger klog.Logger, pod *v1.Pod, reason string, p Policy) string {
	mem := m.members.Of(pod.UID)
	if mem == nil {
		return ""
	}
	k := mem.Group
	root, ok := m.index.RootOf(k)
	if !ok {
		return ""
	}
	possible := m.index.readiness(m.possibleCounter(root), true)
	if m.index.Get(k).Scheduled() && possible.path(k) {
		logger.V(4).Info("Member of a scheduled group fits nowhere; it is retried alone", "pod", klog.KObj(pod), "group", k, "root", root, "why", reason)
		return ""
	}
	r := m.attempts.RoundOf(root)
	r.failed[pod.UID] = k
	possible = m.index.readiness(m.possibleCounter(root), true)
	if possible.path(k) {
		logger.V(4).Info("Member fits nowhere; its gang can still be ready", "pod", klog.KObj(pod), "group", k, "root", root, "why", reason)
		return ""
	}
	placed, total := m.treeCountsLocked(root)
	msg := fmt.Sprintf("cannot fit: %d of %d pods placed; pod %s: %s", placed, total, pod.Name, reason)
	if r.unplaceable != "" {
		msg = "cannot fit: " + r.unplaceable
		r.unplaceable = ""
	}
	m.rejectLocked(eff, logger, root, msg, !possible.subtree(root), p.Backoff, possible.path, "unschedulable")
	return msg
}

// NoteUnplaceable records why a planner could not place the tree of pod; the failure that
// follows (PostFilter) reports it instead of the member's node statuses.
func (m *Model) NoteUnplaceable(pod *v1.Pod, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mem := m.members.Of(pod.UID); mem != nil {
		if root, ok := m.index.RootOf(mem.Group); ok {
			m.attempts.RoundOf(root).unplaceable = why
		}
	}
}

// Unreserve records that a member lost its reservation. A member the model rejected itself
// has none left. A waiting member the framework rejected (deleted, preempted, timed out)
// stops counting, and if its tree can no longer be ready the other waiters are released. A
// member that was allowed and failed to bind leaves its gang partially bound: the group says
// so, and the member is retried alone.
func (m *Model) Unreserve(logger klog.Logger, pod *v1.Pod) {
	m.mu.Lock()
	eff := effects{logger: logger}
	m.unreserveLocked(&eff, logger, pod)
	m.mu.Unlock()
	m.apply(eff)
}

func (m *Model) unreserveLocked(eff *effects, logger klog.Logger, pod *v1.Pod) {
	a := m.attempts.Remove(pod.UID)
	if a == nil {
		return
	}
	if m.attempts.Ended(a.Root) {
		eff.ended = append(eff.ended, a.Root)
	}
	switch a.State {
	case Reserved:
		logger.V(5).Info("Reservation released", "pod", klog.KObj(pod), "group", a.Group, "root", a.Root)
	case Waiting:
		metrics.permitWait.WithLabelValues("rejected").Observe(m.clock.Now().Sub(a.WaitStart).Seconds())
		logger.V(4).Info("Waiting member rejected by the scheduler", "pod", klog.KObj(pod), "group", a.Group, "root", a.Root)
		m.releaseHopelessLocked(eff, logger, a.Root, fmt.Sprintf("pod %s stopped waiting", pod.Name))
	case Allowed:
		g := m.index.Get(a.Group)
		min := 0
		if g.Exists() {
			min = g.Minimum()
		}
		msg := fmt.Sprintf("partially bound: %d of %d pods bound; binding pod %s failed after the gang was allowed (it is retried alone)",
			m.members.BoundOrRan(a.Group), min, pod.Name)
		m.attempts.Outcome(a.Group).Partial = msg
		m.status.Enqueue(a.Group)
		metrics.partialBinds.Inc()
		logger.V(2).Info("Gang partially bound", "pod", klog.KObj(pod), "group", a.Group, "root", a.Root, "why", msg)
	}
}

// releaseHopelessLocked releases the waiters of root whose path can no longer be ready with
// the members that exist (and have not failed in this attempt): a member was deleted, left,
// or stopped waiting. This is not a failure to fit: no backoff; the tree is tried again when
// its pods exist.
func (m *Model) releaseHopelessLocked(eff *effects, logger klog.Logger, root Key, why string) {
	r := m.attempts.Round(root)
	if r == nil || len(r.waiting) == 0 {
		return
	}
	possible := m.index.readiness(m.possibleCounter(root), true)
	whole := !possible.subtree(root)
	known := m.index.readiness(m.members.Known, true)
	for _, w := range m.attempts.Waiting(root) {
		if !whole && possible.path(w.Group) {
			continue
		}
		msg := fmt.Sprintf("%s; the gang cannot be ready with the pods that exist: %s", why, known.shortfall(w.Group, "exist"))
		metrics.permitWait.WithLabelValues("rejected").Observe(m.clock.Now().Sub(w.WaitStart).Seconds())
		m.attempts.Remove(w.Pod.UID)
		eff.rejectPod(w.Pod, msg)
		logger.V(4).Info("Waiting member released", "pod", klog.KObj(w.Pod), "group", w.Group, "root", root, "why", msg)
	}
	if m.attempts.Ended(root) {
		eff.ended = append(eff.ended, root)
	}
}

// rejectLocked ends an attempt that failed: it rejects the waiting members of the whole tree
// (whole) or of the PodGroups whose path is not ready by stillOK, records the failure on the
// affected groups and, for the whole tree, backs it off until backoff passes or news comes.
func (m *Model) rejectLocked(eff *effects, logger klog.Logger, root Key, msg string, whole bool, backoff time.Duration, stillOK func(Key) bool, result string) {
	for _, k := range m.index.Subtree(root) {
		if (whole || !stillOK(k)) && !m.index.Get(k).Scheduled() {
			if o := m.attempts.Outcome(k); o.Failure != msg {
				o.Failure = msg
				m.status.Enqueue(k)
			}
		}
	}
	now := m.clock.Now()
	for _, w := range m.attempts.Waiting(root) {
		if !whole && stillOK(w.Group) {
			continue
		}
		metrics.permitWait.WithLabelValues("rejected").Observe(now.Sub(w.WaitStart).Seconds())
		m.attempts.Remove(w.Pod.UID)
		eff.rejectPod(w.Pod, msg)
		logger.V(4).Info("Waiting member rejected", "pod", klog.KObj(w.Pod), "group", w.Group, "root", root, "why", msg)
	}
	r := m.attempts.RoundOf(root)
	if whole {
		if !r.newsAt.IsZero() && now.Sub(r.newsAt) < 2*m.retryFloor {
			// The attempt news prompted failed at once: the scheduler's cache may not have had
			// the news yet. One more look soon; the full backoff after that.
			backoff = min(backoff, m.retryFloor)
			r.newsAt = time.Time{}
		}
		r.stalled, r.lastFailure = true, now
		r.backoffUntil = now.Add(backoff)
		m.armRetryLocked(root, r, r.backoffUntil)
	}
	eff.ended = append(eff.ended, root)
	metrics.attempts.WithLabelValues(result).Inc()
	logger.V(2).Info("Gang attempt failed", "root", root, "wholeTree", whole, "backoff", backoff, "why", msg)
}

// expire ends the wait of root's attempt id at its deadline.
func (m *Model) expire(root Key, id int) {
	m.mu.Lock()
	eff := effects{logger: m.logger}
	r := m.attempts.Round(root)
	if r != nil && r.id == id && len(r.waiting) > 0 {
		now := m.clock.Now()
		var first time.Time
		for _, w := range r.waiting {
			if first.IsZero() || w.WaitStart.Before(first) {
				first = w.WaitStart
			}
		}
		placed := m.index.readiness(m.placedCounter(), true)
		n, total := m.treeCountsLocked(root)
		msg := fmt.Sprintf("timed out after %s waiting for the gang: %d of %d pods placed; %s",
			now.Sub(first).Round(time.Second), n, total, placed.shortfall(m.anyWaiterGroupLocked(r), "placed"))
		backoff := r.backoff
		m.rejectLocked(&eff, m.logger, root, msg, !placed.subtree(root), backoff, placed.path, "timeout")
		r.deadline = time.Time{}
		r.deadlineTimer = nil
	}
	m.mu.Unlock()
	m.apply(eff)
}

// anyWaiterGroupLocked returns the PodGroup of the waiter that waited longest.
func (m *Model) anyWaiterGroupLocked(r *Round) Key {
	var best *Attempt
	for _, w := range r.waiting {
		if best == nil || w.WaitStart.Before(best.WaitStart) {
			best = w
		}
	}
	return best.Group
}

// --- news ---

// pokeLocked retries a tree held back after a failed attempt, now that something happened
// that may let it fit (see newsLocked).
func (m *Model) pokeLocked(root Key, why string) { m.newsLocked([]Key{root}, why) }

// pokeStalledLocked retries every tree held back after a failed attempt (see newsLocked).
func (m *Model) pokeStalledLocked(why string) {
	var roots []Key
	for root, r := range m.attempts.rounds {
		if r.stalled || len(r.failed) > 0 {
			roots = append(roots, root)
		}
	}
	m.newsLocked(roots, why)
}

// newsDelay is how long after news failed trees are retried (see newsLocked).
const newsDelay = 50 * time.Millisecond

// newsLocked retries failed trees together, newsDelay from now and no sooner than retryFloor
// after the latest of their failures. Together: their members reach the queue at once, and
// leave it in the order of their trees' priority, so that when room appears for one of several
// trees the higher-priority one gets it, whichever was tried last.
//
// The delay: the model hears of an event through its own handler, and the scheduler's cache
// through another; an attempt made before the cache has the new node (or has lost the deleted
// pod) would fail for nothing. An attempt that fails anyway shortly after news backs off for
// the retry floor only (see rejectLocked).
func (m *Model) newsLocked(roots []Key, why string) {
	at := m.clock.Now().Add(newsDelay)
	var due []Key
	for _, root := range roots {
		r := m.attempts.Round(root)
		if r == nil || (!r.stalled && len(r.failed) == 0) {
			continue
		}
		if earliest := r.lastFailure.Add(m.retryFloor); earliest.After(at) {
			at = earliest
		}
		r.news = why
		due = append(due, root)
	}
	if len(due) == 0 {
		return
	}
	m.clock.AfterFunc(at.Sub(m.clock.Now()), func() {
		m.mu.Lock()
		eff := effects{logger: m.logger}
		now := m.clock.Now()
		for _, root := range due {
			r := m.attempts.Round(root)
			if r == nil || (!r.stalled && len(r.failed) == 0) {
				continue
			}
			if earliest := r.lastFailure.Add(m.retryFloor); now.Before(earliest) {
				m.armRetryLocked(root, r, earliest) // it failed again meanwhile
				continue
			}
			m.retryLocked(&eff, root, why)
		}
		m.mu.Unlock()
		m.apply(eff)
	})
}

// retryLocked ends a tree's backoff and activates its pending members.
func (m *Model) retryLocked(eff *effects, root Key, why string) {
	r := m.attempts.RoundOf(root)
	r.stalled, r.backoffUntil = false, time.Time{}
	stopTimer(&r.retryTimer)
	r.retryAt = time.Time{}
	if r.news != "" {
		why, r.news, r.newsAt = r.news, "", m.clock.Now()
	}
	pending := m.pendingLocked(root)
	eff.activate = append(eff.activate, pending...)
	if len(pending) > 0 {
		eff.logger.V(4).Info("Retrying gang", "root", root, "pods", len(pending), "why", why)
	}
}

// armRetryLocked makes sure the tree is retried at the latest at at.
func (m *Model) armRetryLocked(root Key, r *Round, at time.Time) {
	if r.retryTimer != nil && !r.retryAt.After(at) {
		return
	}
	stopTimer(&r.retryTimer)
	r.retryAt = at
	r.retryTimer = m.clock.AfterFunc(at.Sub(m.clock.Now()), func() {
		m.mu.Lock()
		eff := effects{logger: m.logger}
		if r := m.attempts.Round(root); r != nil && r.retryAt.Equal(at) {
			r.retryTimer = nil
			if r.stalled || len(r.failed) > 0 {
				m.retryLocked(&eff, root, "backoff ended")
			}
		}
		m.mu.Unlock()
		m.apply(eff)
	})
}

// --- helpers ---

// pendingLocked returns the tree's members that are neither bound nor reserved.
func (m *Model) pendingLocked(root Key) []*v1.Pod {
	var out []*v1.Pod
	for _, k := range m.index.PodGroupsOf(root) {
		out = append(out, m.pendingOfLocked(k)...)
	}
	return out
}

// treeCountsLocked returns the pods of the tree that are placed (bound, ran or reserved) and
// all of them.
func (m *Model) treeCountsLocked(root Key) (placed, total int) {
	for _, k := range m.index.PodGroupsOf(root) {
		placed += m.members.BoundOrRan(k) + m.attempts.Placed(k)
		total += m.members.Known(k)
	}
	return placed, total
}

// observeBoundLocked records the end-to-end latency of a gang the first time all of its tree
// is bound: from its first member's creation to the bind that completed it.
func (m *Model) observeBoundLocked(root Key) {
	r := m.attempts.RoundOf(root)
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

// Related reports whether group k matters to pod: it is on the chain of parents the pod's
// PodGroup names (even ones not observed yet), or it has the same root.
func (m *Model) Related(pod *v1.Pod, k Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	pk, ok := m.groupOfLocked(pod)
	if !ok {
		return false
	}
	cur := pk
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		if cur == k {
			return true
		}
		g := m.index.Get(cur)
		if g == nil {
			break
		}
		p, ok := g.ParentKey()
		if !ok {
			break
		}
		cur = p
	}
	r1, ok1 := m.index.RootOf(pk)
	r2, ok2 := m.index.RootOf(k)
	return ok1 && ok2 && r1 == r2
}

// MinResources is PodGroup k's minResources while it waits for its initial scheduling (an
// early check of the whole gang), nil once it was scheduled or when it sets none.
func (m *Model) MinResources(k Key) v1.ResourceList {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.minResourcesLocked(k)
}

func (m *Model) minResourcesLocked(k Key) v1.ResourceList {
	g := m.index.Get(k)
	if g == nil || g.Scheduled() {
		return nil
	}
	return g.MinResources()
}

// GroupOf returns the group of a pod: its member's group, or the group the filing rules give
// a pod not seen yet.
func (m *Model) GroupOf(pod *v1.Pod) (Key, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groupOfLocked(pod)
}

// groupOfLocked: the member's group, or the group the filing rules give a pod not seen yet.
func (m *Model) groupOfLocked(pod *v1.Pod) (Key, bool) {
	if mem := m.members.Of(pod.UID); mem != nil {
		return mem.Group, true
	}
	return m.fileLocked(pod)
}

// Waiters returns the pods waiting at Permit (for tests and diagnostics).
func (m *Model) Waiters() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.attempts.WaitingUIDs()
}

// Lead is called when the scheduler becomes the leader: what a standby did not announce is
// announced now (events per pod, conditions), and held members are looked at again.
func (m *Model) Lead() {
	m.mu.Lock()
	m.noticed = sets.New[types.UID]()
	for _, k := range m.index.Keys() {
		if m.index.Get(k).Exists() {
			m.status.Enqueue(k)
		}
	}
	var pods []*v1.Pod
	for _, k := range m.members.Groups() {
		for _, mem := range m.members.InGroup(k) {
			if !mem.Bound() && m.attempts.Of(mem.Pod.UID) == nil {
				pods = append(pods, mem.Pod)
			}
		}
	}
	m.mu.Unlock()
	m.activate(m.logger, pods)
}
