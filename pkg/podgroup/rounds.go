package podgroup

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// round is the state of one root's current scheduling attempt. A round starts when the first
// member of the tree is assumed and ends when the tree is allowed or rejected.
type round struct {
	// waiters are the members waiting at Permit, and the PodGroup of each.
	waiters map[types.UID]Key
	// failed are the members that could not be placed this round.
	failed map[types.UID]Key
	// activated is set once the tree's pending members were activated this round.
	activated bool
	// backoffUntil holds the tree back after a failed round.
	backoffUntil time.Time
	// lastFailure is when the tree's last round failed. QueueSort orders a tree by the later
	// of its creation and its last failure, so that a gang that keeps failing does not stay
	// at the head of the queue (scheduler-plugins #110).
	lastFailure time.Time
	// retryPending records that a member was turned away during backoff, so the tree must
	// be activated when the backoff ends.
	retryPending bool
	// boundRecorded is set once the whole tree was observed bound (for the e2e metric).
	boundRecorded bool
	// unplaceable is why a placement planner found no place for the tree this round; it
	// explains the failure better than a member's node statuses.
	unplaceable string
}

func (m *Manager) roundOf(root Key) *round {
	r := m.rounds[root]
	if r == nil {
		r = &round{waiters: map[types.UID]Key{}, failed: map[types.UID]Key{}}
		m.rounds[root] = r
	}
	return r
}

// VerdictCode says whether a pod may enter the scheduling queue or cycle.
type VerdictCode int

const (
	// Proceed: schedule the pod.
	Proceed VerdictCode = iota
	// NotMember: the pod belongs to no group; lockstep has nothing to say.
	NotMember
	// MissingGroup: the pod names a PodGroup that does not exist (yet).
	MissingGroup
	// Invalid: the pod's group or one of its ancestors is invalid.
	Invalid
	// WaitingForPods: the tree cannot be ready with the pods that exist.
	WaitingForPods
	// BackingOff: the tree's last attempt failed moments ago.
	BackingOff
	// Syncing: the scheduler just started and has not seen every pod yet.
	Syncing
)

// Verdict is the answer to "may this pod be scheduled now?".
type Verdict struct {
	Code    VerdictCode
	Group   Key
	Root    Key
	Message string
	// Retry is the time left in a backoff; ScheduleRetry is set for the first member turned
	// away during it, so that one timer per tree activates the tree when it ends.
	Retry         time.Duration
	ScheduleRetry bool
}

// Check answers whether a pod may be scheduled: its group and ancestors exist and are valid,
// and enough pods exist for its path to the root to be ready. With backoff it also holds
// pods of trees whose last attempt failed less than the backoff ago.
func (m *Manager) Check(pod *v1.Pod, backoff bool) Verdict {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keyOfLocked(pod)
	if !ok {
		return Verdict{Code: NotMember}
	}
	if !m.podsSynced() {
		m.heldAtStart = append(m.heldAtStart, pod)
		return Verdict{Code: Syncing, Group: k, Message: "lockstep is starting: waiting until it has seen every group and pod (if this lasts, are lockstep's CRDs installed?)"}
	}
	g := m.groups[k]
	if g == nil || !g.exists() {
		m.awaitJobGroupLocked(pod)
		return Verdict{Code: MissingGroup, Group: k, Message: missingGroupMessage(pod, k)}
	}
	if g.problem != "" {
		return Verdict{Code: Invalid, Group: k, Message: fmt.Sprintf("PodGroup %q is invalid: %s", k.Name, g.problem)}
	}
	root, _ := m.groups.rootOf(k)
	known := m.groups.readiness(countKnown)
	if !known.path(k) {
		return Verdict{Code: WaitingForPods, Group: k, Root: root,
			Message: fmt.Sprintf("waiting for pods of PodGroup %q: %s", k.Name, known.shortfall(k, "exist"))}
	}
	if backoff {
		if r := m.rounds[root]; r != nil {
			if left := r.backoffUntil.Sub(m.now()); left > 0 {
				first := !r.retryPending
				r.retryPending = true
				return Verdict{Code: BackingOff, Group: k, Root: root, Retry: left, ScheduleRetry: first,
					Message: fmt.Sprintf("gang %s backs off for %s after a failed attempt", root.Name, left.Round(time.Second))}
			}
		}
	}
	return Verdict{Code: Proceed, Group: k, Root: root}
}

// TakeRetry returns, once the backoff of root is over, the pending pods to activate if a
// member was turned away during it; nil otherwise.
func (m *Manager) TakeRetry(root Key) []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rounds[root]
	if r == nil || !r.retryPending {
		return nil
	}
	r.retryPending = false
	return m.pendingLocked(root)
}

// pendingLocked returns the tree's members that are neither assumed nor bound.
func (m *Manager) pendingLocked(root Key) []*v1.Pod {
	var out []*v1.Pod
	for _, g := range m.treePodGroups(root) {
		for _, mem := range g.members {
			if !mem.bound && !mem.assumed {
				out = append(out, mem.pod)
			}
		}
	}
	return out
}

// SortKey returns what QueueSort orders gang members by: the root's creation time and key,
// so that members of one tree leave the queue together.
func (m *Manager) SortKey(pod *v1.Pod) (time.Time, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keyOfLocked(pod)
	if !ok {
		return time.Time{}, "", false
	}
	root, ok := m.groups.rootOf(k)
	if !ok {
		return time.Time{}, "", false
	}
	t := m.groups[root].creationTime()
	if r := m.rounds[root]; r != nil && r.lastFailure.After(t) {
		t = r.lastFailure
	}
	return t, root.String(), true
}

// Assume records that a member passed Reserve on node. The first assumed member of a tree
// starts a new round: failures of the previous round are forgotten.
func (m *Manager) Assume(pod *v1.Pod, node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.memberKeyLocked(pod)
	if !ok {
		return
	}
	if root, ok := m.groups.rootOf(k); ok && m.treeAssumedLocked(root) == 0 {
		r := m.roundOf(root)
		for uid, fk := range r.failed {
			if g := m.groups[fk]; g != nil {
				g.setMember(uid, func(mem *member) { mem.failed = false })
			}
		}
		clear(r.failed)
		r.activated = false
	}
	m.groups[k].setMember(pod.UID, func(mem *member) {
		mem.assumed, mem.failed, mem.node = true, false, node
	})
}

func (m *Manager) treeAssumedLocked(root Key) int {
	n := 0
	for _, g := range m.treePodGroups(root) {
		n += g.assumed
	}
	return n
}

// PermitDecision tells the gang plugin what to do with a pod at Permit.
type PermitDecision struct {
	// Allow is true when the pod may bind now; AllowWaiting are the waiting members that may
	// bind with it.
	Allow        bool
	AllowWaiting []*v1.Pod
	// Timeout is how long the pod waits otherwise.
	Timeout time.Duration
	// Activate are pending members to pull into the active queue (first wait of a round).
	Activate []*v1.Pod
	// Reject, if set, refuses the pod with this message.
	Reject string
}

// Permit decides whether an assumed member may bind: when its path to the root is ready
// counting assumed and bound pods, it and every waiting member whose path is ready may bind
// together; otherwise it waits (up to the group's scheduleTimeoutSeconds or defaultTimeout).
func (m *Manager) Permit(pod *v1.Pod, defaultTimeout time.Duration) PermitDecision {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.memberKeyLocked(pod)
	if !ok {
		return PermitDecision{Allow: true}
	}
	g := m.groups[k]
	root, ok := m.groups.rootOf(k)
	if !ok {
		return PermitDecision{Reject: fmt.Sprintf("the hierarchy of PodGroup %q became invalid: %s", k.Name, g.problem)}
	}
	r := m.roundOf(root)
	sched := m.groups.readiness(countScheduled)
	if sched.path(k) {
		d := PermitDecision{Allow: true}
		now := m.now()
		for uid, wk := range r.waiters {
			if !sched.path(wk) {
				continue
			}
			mem := m.groups[wk].members[uid]
			metrics.permitWait.WithLabelValues("allowed").Observe(now.Sub(mem.waitStart).Seconds())
			mem.waitStart = time.Time{}
			m.removeWaiterLocked(r, uid)
			d.AllowWaiting = append(d.AllowWaiting, mem.pod)
		}
		m.markScheduledLocked(root, sched)
		if sched.subtree(root) && len(r.waiters) == 0 {
			delete(m.plans, root) // fulfilled
		}
		return d
	}
	d := PermitDecision{Timeout: defaultTimeout}
	if t, ok := g.scheduleTimeout(); ok {
		d.Timeout = t
	}
	g.members[pod.UID].waitStart = m.now()
	m.addWaiterLocked(r, pod.UID, k)
	if !r.activated {
		r.activated = true
		d.Activate = m.pendingLocked(root)
	}
	return d
}

// addWaiterLocked registers a member waiting at Permit; the gauge counts roots with waiters.
func (m *Manager) addWaiterLocked(r *round, uid types.UID, k Key) {
	if len(r.waiters) == 0 {
		m.waitingRoots++
		metrics.waitingGangs.Set(float64(m.waitingRoots))
	}
	r.waiters[uid] = k
}

// removeWaiterLocked unregisters a waiting member (allowed, rejected, timed out or deleted).
func (m *Manager) removeWaiterLocked(r *round, uid types.UID) {
	if _, ok := r.waiters[uid]; !ok {
		return
	}
	delete(r.waiters, uid)
	if len(r.waiters) == 0 {
		m.waitingRoots--
		metrics.waitingGangs.Set(float64(m.waitingRoots))
	}
}

// markScheduledLocked records the groups of the tree whose requirement is now met.
func (m *Manager) markScheduledLocked(root Key, sched *readiness) {
	for _, k := range m.groups.subtree(root) {
		g := m.groups[k]
		if g.scheduled || !sched.path(k) {
			continue
		}
		g.scheduled, g.failure = true, ""
		m.status.enqueueNow(k)
		if k == root {
			metrics.attempts.WithLabelValues("scheduled").Inc()
		}
	}
}

// Rejection lists the waiting members to reject after a failure, and why.
type Rejection struct {
	Reject  []*v1.Pod
	Message string
	// Root is the tree's root and Backoff true when the whole tree failed and backs off.
	Root    Key
	Backoff bool
}

// Fail records that a member could not be placed (PostFilter). If, without it and the other
// members that failed this round, the tree can no longer be ready, every waiting member of
// the tree is to be rejected and the tree backs off; if only a subtree can no longer be
// ready, its waiting members are rejected. reason is the scheduler's explanation.
func (m *Manager) Fail(pod *v1.Pod, reason string, backoff time.Duration) Rejection {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.memberKeyLocked(pod)
	if !ok {
		return Rejection{}
	}
	root, ok := m.groups.rootOf(k)
	if !ok {
		return Rejection{}
	}
	m.groups[k].setMember(pod.UID, func(mem *member) {
		if !mem.bound {
			mem.failed, mem.assumed = true, false
		}
	})
	m.roundOf(root).failed[pod.UID] = k
	possible := m.groups.readiness(countPossible)
	if possible.path(k) {
		return Rejection{}
	}
	placed, total := m.treeCountsLocked(root)
	msg := fmt.Sprintf("cannot fit: %d of %d pods placed; pod %s: %s", placed, total, pod.Name, reason)
	if r := m.roundOf(root); r.unplaceable != "" {
		msg = "cannot fit: " + r.unplaceable
		r.unplaceable = ""
	}
	rootFails := !possible.subtree(root)
	return m.rejectLocked(root, msg, rootFails, backoff, possible.path, "unschedulable")
}

// NoteUnplaceable records why a planner could not place the tree of pod; the failure that
// follows (PostFilter) reports it instead of the member's node statuses.
func (m *Manager) NoteUnplaceable(pod *v1.Pod, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keyOfLocked(pod)
	if !ok {
		return
	}
	if root, ok := m.groups.rootOf(k); ok {
		m.roundOf(root).unplaceable = why
	}
}

// Unreserve records that an assumed member lost its reservation: a Permit rejection, a
// timeout or a failure while binding. A member still registered as waiting timed out (a
// rejected member is unregistered when it is rejected): the tree failed to come together in
// time, and its other waiting members are rejected too, so that reservations are released
// together.
func (m *Manager) Unreserve(pod *v1.Pod, backoff time.Duration) Rejection {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.memberKeyLocked(pod)
	if !ok {
		return Rejection{}
	}
	g := m.groups[k]
	waitStart := g.members[pod.UID].waitStart
	root, ok := m.groups.rootOf(k)
	if !ok || waitStart.IsZero() {
		g.setMember(pod.UID, func(mem *member) { mem.assumed = false })
		return Rejection{}
	}
	// Describe the tree as it stood when the wait ended, this member still placed.
	waited := m.now().Sub(waitStart)
	sched := m.groups.readiness(countScheduled)
	placed, total := m.treeCountsLocked(root)
	msg := fmt.Sprintf("timed out after %s waiting for the gang: %d of %d pods placed; %s",
		waited.Round(time.Second), placed, total, sched.shortfall(k, "placed"))
	wholeTree := !sched.subtree(root)

	g.setMember(pod.UID, func(mem *member) {
		mem.assumed, mem.waitStart = false, time.Time{}
	})
	m.removeWaiterLocked(m.roundOf(root), pod.UID)
	metrics.permitWait.WithLabelValues("rejected").Observe(waited.Seconds())
	return m.rejectLocked(root, msg, wholeTree, backoff, m.groups.readiness(countScheduled).path, "timeout")
}

// rejectLocked collects the waiting members to reject: all of the tree when wholeTree,
// otherwise those of PodGroups whose path is not ready by stillOK. Collected members are
// unregistered as waiters, so that their Unreserve is not taken for a timeout. It records
// the failure message on the affected groups and starts the tree's backoff when wholeTree.
func (m *Manager) rejectLocked(root Key, msg string, wholeTree bool, backoff time.Duration, stillOK func(Key) bool, result string) Rejection {
	rej := Rejection{Message: msg, Root: root, Backoff: wholeTree}
	r := m.roundOf(root)
	now := m.now()
	for _, k := range m.groups.subtree(root) {
		g := m.groups[k]
		if (wholeTree || !stillOK(k)) && !g.scheduled && g.failure != msg {
			g.failure = msg
			m.status.enqueueNow(k)
		}
	}
	for uid, wk := range r.waiters {
		if !wholeTree && stillOK(wk) {
			continue
		}
		mem := m.groups[wk].members[uid]
		metrics.permitWait.WithLabelValues("rejected").Observe(now.Sub(mem.waitStart).Seconds())
		mem.waitStart = time.Time{}
		m.removeWaiterLocked(r, uid)
		rej.Reject = append(rej.Reject, mem.pod)
	}
	if wholeTree {
		r.backoffUntil = now.Add(backoff)
		r.lastFailure = now
	}
	// Whatever was planned for the tree is stale now; the next attempt plans again around
	// the members that stay placed.
	delete(m.plans, root)
	metrics.attempts.WithLabelValues(result).Inc()
	return rej
}

// treeCountsLocked returns the pods of the tree that are placed (assumed or bound) and all.
func (m *Manager) treeCountsLocked(root Key) (placed, total int) {
	for _, g := range m.treePodGroups(root) {
		placed += g.scheduledN()
		total += g.known()
	}
	return placed, total
}

// observeBoundLocked records the end-to-end latency of a gang the first time all of its
// tree is bound: from its first member's creation to the bind that completed it.
func (m *Manager) observeBoundLocked(k Key) {
	root, ok := m.groups.rootOf(k)
	if !ok {
		return
	}
	r := m.roundOf(root)
	if r.boundRecorded || !m.groups.readiness(countBound).subtree(root) {
		return
	}
	r.boundRecorded = true
	var first time.Time
	for _, g := range m.treePodGroups(root) {
		for _, mem := range g.members {
			if t := mem.pod.CreationTimestamp.Time; first.IsZero() || t.Before(first) {
				first = t
			}
		}
	}
	if !first.IsZero() {
		metrics.gangLatency.Observe(m.now().Sub(first).Seconds())
	}
}

// Related reports whether group k matters to pod: it is on the chain of parents the pod's
// PodGroup names (even ones not observed yet), or it has the same root.
func (m *Manager) Related(pod *v1.Pod, k Key) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	pk, ok := m.keyOfLocked(pod)
	if !ok {
		return false
	}
	cur := pk
	for i := 0; i <= v1alpha1.MaxTreeDepth; i++ {
		if cur == k {
			return true
		}
		g := m.groups[cur]
		if g == nil {
			break
		}
		p, ok := g.parentKey()
		if !ok {
			break
		}
		cur = p
	}
	r1, ok1 := m.groups.rootOf(pk)
	r2, ok2 := m.groups.rootOf(k)
	return ok1 && ok2 && r1 == r2
}
