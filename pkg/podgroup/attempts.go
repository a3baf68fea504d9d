package podgroup

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// Attempts records the scheduler's work on trees: which members hold a reservation (and
// where they are in Reserve → Permit → bind), and, per root, the current attempt and what
// follows a failed one (backoff, retry). Everything is keyed by pod UID and by the root the
// member had when it reserved, so that a member is found again whatever happened to its
// tree since. It is not safe for concurrent use; the Model serializes access.
type Attempts struct {
	byPod   map[types.UID]*Attempt
	byGroup map[Key]int
	// inFlight counts, per PodGroup, members allowed to bind whose bind was not seen yet.
	inFlight map[Key]int
	rounds   map[Key]*Round
	// held are the rounds that may be held back after a failed attempt (held.go).
	held heldRounds
	// outcomes remembers, per group, how its last attempt ended, for its condition.
	outcomes map[Key]*Outcome
	// waitingRoots counts roots with members waiting at Permit (a metric).
	waitingRoots int
}

// AttemptState is where a member with a reservation is.
type AttemptState int

const (
	// AttemptReserved: the member passed Reserve on a node.
	AttemptReserved AttemptState = iota
	// AttemptWaiting: the member waits at Permit for the rest of its tree.
	AttemptWaiting
	// AttemptAllowed: the member was allowed to bind; its bind is in flight.
	AttemptAllowed
)

func (s AttemptState) String() string {
	return [...]string{"reserved", "waiting", "allowed"}[s]
}

// Attempt is one member holding a reservation.
type Attempt struct {
	// Pod is the scheduler's copy: it has the node and identifies the waiting pod.
	Pod       *v1.Pod
	Group     Key
	Root      Key
	Node      string
	State     AttemptState
	WaitStart time.Time
	// Deadline ends the member's wait at Permit (its group's scheduleTimeoutSeconds or the
	// policy's permit timeout after WaitStart); it keeps it until it leaves. Recheck, when
	// later, is when a waiter kept past its deadline is looked at again (Permits.expire).
	Deadline, Recheck time.Time
}

// due is when the member's wait is looked at: its deadline, or its recheck if later.
func (a *Attempt) due() time.Time {
	if a.Recheck.After(a.Deadline) {
		return a.Recheck
	}
	return a.Deadline
}

// Round is a root's current attempt and the memory of its last failed one.
type Round struct {
	root Key
	// id numbers the attempts of the root; timers act only on the attempt they were set for.
	id int
	// active counts the members of the current attempt that are reserved or waiting; the
	// attempt ends when none is left (members allowed to bind are done with it).
	active int
	// failed are members that fit nowhere during the current attempt, by PodGroup.
	failed map[types.UID]Key
	// waiting are the members waiting at Permit.
	waiting map[types.UID]*Attempt
	// deadline is when deadlineTimer ends waits: the earliest of the waiters' deadlines.
	deadline      time.Time
	deadlineTimer Timer
	// backoff is the gang policy of the profile whose member first waited.
	backoff time.Duration
	// scout is the member let into the queue to try the tree for all while it is not open
	// (scout.go); scoutTried: it reached a scheduling cycle; scoutTimer opens the tree if it
	// does not in time. open: every member is let in, from the start of an attempt until the
	// tree fails whole.
	scout, lastScout types.UID
	scoutTried       bool
	// triedAt is when the scout last reached its scheduling cycle (catchUpLocked).
	triedAt    time.Time
	scoutTimer Timer
	open       bool
	// unplaceable is why a planner found no place for the tree in this attempt.
	unplaceable string

	// stalled: the last attempt failed for want of room (or time); a cluster event that
	// may bring room retries it.
	stalled      bool
	backoffUntil time.Time
	lastFailure  time.Time
	retryTimer   Timer
	retryAt      time.Time
	// news is what prompted the retry armed now, if anything did; newsAt is when a retry
	// news prompted last ran.
	news   string
	newsAt time.Time
	// newsRoom is the node whose room the news armed now is about, while it is the only news
	// since the last failure; roomTry is the retry it prompted (roomSpentLocked).
	newsRoom string
	roomTry  roomTry
	// quietRetry: the current try is the backoff's end, no news prompted it; quiet counts
	// those that failed (quietBackoff); tries news prompted neither count nor reset it.
	// lookAgain: the backoff is the retry floor's second look after news. newsTry: the
	// current (or last failed) try is a retry news prompted (armBatchLocked).
	quietRetry, lookAgain, newsTry bool
	quiet                          int
	// need is, resource by resource, the least a pending member requested when the tree last
	// failed whole (needKnown): room on a node that cannot fit it is no news for the tree.
	need      capacity.Resources
	needKnown bool

	// releaseTimer releases the tree if it stays half bound after a failed attempt
	// (release.go); partialTimer decides its partial binds when they are due (partial.go).
	releaseTimer, partialTimer Timer

	// boundRecorded: the whole tree was seen bound (for the end-to-end latency metric).
	boundRecorded bool

	// waitingSince is when the tree's first failed attempt since it was last scheduled
	// failed: how long it has waited for room. reserveAfter and reservationTimeout are the
	// policy of the profile whose member failed last.
	waitingSince                     time.Time
	reserveAfter, reservationTimeout time.Duration
}

// Outcome is how a group's last attempt ended, for its condition.
type Outcome struct {
	// Failure explains the last failed attempt; cleared when the group is scheduled.
	Failure string
	// FailedBind names the allowed member whose refused bind made the gang short (this
	// leader saw it); kept while it is short. BindingThen are the attempts whose binds were in
	// flight when it was refused: while one of them still is, the gang's count is not final
	// (a member retried alone since, even one of those, is another attempt).
	FailedBind  string
	BindingThen []*Attempt
	// Preempting says where the tree is preempting and whom (set on the root); cleared when
	// its victims are gone or it is scheduled.
	Preempting string
	// Reserving says which domain is held for the tree (set on the root); cleared when the
	// reservation ends.
	Reserving string
	// Released says which bound members were evicted when the half-bound tree was released
	// (release.go); cleared when the group is scheduled.
	Released string
	// Preempted says which gang preempted the group's running pods, with its priority and
	// the domain it takes (DisruptionTarget); cleared when the group runs whole again, not
	// when it is allowed: its binds may all fail.
	// DisruptedBy is the reason of that condition: "" for a preemption
	// (PreemptionByScheduler), ReasonGangReleased for a partial bind released (partial.go).
	Preempted, DisruptedBy string
	// PreemptedSince is when it was preempted or released (DisruptionTarget's
	// lastTransitionTime, however late it is written).
	PreemptedSince time.Time
}

// NewAttempts returns an empty record.
func NewAttempts() *Attempts {
	return &Attempts{
		byPod:    map[types.UID]*Attempt{},
		byGroup:  map[Key]int{},
		inFlight: map[Key]int{},
		rounds:   map[Key]*Round{},
		held:     newHeldRounds(),
		outcomes: map[Key]*Outcome{},
	}
}

// Of returns the attempt of a pod, nil if it holds no reservation.
func (as *Attempts) Of(uid types.UID) *Attempt { return as.byPod[uid] }

// Placed counts a PodGroup's members that hold a reservation.
func (as *Attempts) Placed(k Key) int { return as.byGroup[k] }

// Round returns the round of a root, nil if it has none.
func (as *Attempts) Round(root Key) *Round { return as.rounds[root] }

// RoundOf returns the round of a root, creating it.
func (as *Attempts) RoundOf(root Key) *Round {
	r := as.rounds[root]
	if r == nil {
		r = &Round{root: root, failed: map[types.UID]Key{}, waiting: map[types.UID]*Attempt{}}
		as.rounds[root] = r
	}
	return r
}

// heldBack reports whether the round is held back after a failed attempt: stalled, or with
// members that failed.
func (r *Round) heldBack() bool { return r.stalled || len(r.failed) > 0 }

// stall holds a round back until news, or its backoff's end, retries it.
func (as *Attempts) stall(r *Round) {
	r.stalled = true
	as.held.put(r)
}

// failMember records that a member of group k failed in the round.
func (as *Attempts) failMember(r *Round, uid types.UID, k Key) {
	r.failed[uid] = k
	as.held.put(r)
}

// setNeed records the least a pending member of the round's tree needs, known or not
// (Round.need), where news about room looks for it.
func (as *Attempts) setNeed(r *Round, need capacity.Resources, known bool) {
	r.need, r.needKnown = need, known
	as.held.repositioned(r)
}

// heldRounds returns the roots of the rounds held back after a failed attempt.
func (as *Attempts) heldRounds() []Key { return as.held.rounds() }

// heldFitting returns the roots of the rounds held back after a failed attempt that room free
// on a node can help (their need is not known, or fits in it).
func (as *Attempts) heldFitting(free capacity.Resources) []Key { return as.held.fitting(free) }

// Add records a reservation. The first reservation of a tree starts a new attempt: failures
// of the previous one are forgotten. It returns true when an attempt starts.
func (as *Attempts) Add(a *Attempt) bool {
	if old := as.byPod[a.Pod.UID]; old != nil {
		as.Remove(a.Pod.UID)
	}
	r := as.RoundOf(a.Root)
	started := r.active == 0
	if started {
		r.id++
		clear(r.failed)
		r.unplaceable = ""
		r.deadline = time.Time{}
		stopTimer(&r.deadlineTimer)
	}
	r.active++
	delete(r.failed, a.Pod.UID)
	as.byPod[a.Pod.UID] = a
	as.byGroup[a.Group]++
	return started
}

// Remove forgets a reservation and returns it, nil if the pod held none.
func (as *Attempts) Remove(uid types.UID) *Attempt {
	a := as.byPod[uid]
	if a == nil {
		return nil
	}
	delete(as.byPod, uid)
	if as.byGroup[a.Group]--; as.byGroup[a.Group] <= 0 {
		delete(as.byGroup, a.Group)
	}
	if a.State == AttemptAllowed {
		if as.inFlight[a.Group]--; as.inFlight[a.Group] <= 0 {
			delete(as.inFlight, a.Group)
		}
	}
	if r := as.rounds[a.Root]; r != nil {
		as.unwait(r, uid)
		if a.State != AttemptAllowed {
			as.deactivate(r)
		}
	}
	return a
}

// Wait records that an attempt waits at Permit, until deadline at the latest.
func (as *Attempts) Wait(a *Attempt, now, deadline time.Time) {
	r := as.RoundOf(a.Root)
	if len(r.waiting) == 0 {
		as.waitingRoots++
		metrics.waitingGangs.Set(float64(as.waitingRoots))
	}
	a.State, a.WaitStart, a.Deadline, a.Recheck = AttemptWaiting, now, deadline, time.Time{}
	r.waiting[a.Pod.UID] = a
}

// firstDeadline is the earliest deadline of the round's waiters, zero for none.
func (r *Round) firstDeadline() time.Time {
	var first time.Time
	for _, w := range r.waiting {
		if due := w.due(); first.IsZero() || due.Before(first) {
			first = due
		}
	}
	return first
}

// Allow records that an attempt may bind.
func (as *Attempts) Allow(a *Attempt) {
	if a.State == AttemptAllowed {
		return
	}
	if r := as.rounds[a.Root]; r != nil {
		as.unwait(r, a.Pod.UID)
		as.deactivate(r)
	}
	a.State, a.WaitStart, a.Deadline, a.Recheck = AttemptAllowed, time.Time{}, time.Time{}, time.Time{}
	as.inFlight[a.Group]++
}

func (as *Attempts) deactivate(r *Round) {
	if r.active--; r.active <= 0 {
		r.active = 0
		stopTimer(&r.deadlineTimer)
		r.deadline = time.Time{}
	}
}

// Ended reports whether root has no attempt in progress.
func (as *Attempts) Ended(root Key) bool {
	r := as.rounds[root]
	return r == nil || r.active == 0
}

func (as *Attempts) unwait(r *Round, uid types.UID) {
	if _, ok := r.waiting[uid]; !ok {
		return
	}
	delete(r.waiting, uid)
	if len(r.waiting) == 0 {
		as.waitingRoots--
		metrics.waitingGangs.Set(float64(as.waitingRoots))
	}
}

// Waiting returns the members of a root waiting at Permit, ordered by pod name.
func (as *Attempts) Waiting(root Key) []*Attempt {
	r := as.rounds[root]
	if r == nil {
		return nil
	}
	out := make([]*Attempt, 0, len(r.waiting))
	for _, a := range r.waiting {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod.Name < out[j].Pod.Name })
	return out
}

// WaitingUIDs returns every pod waiting at Permit.
func (as *Attempts) WaitingUIDs() []types.UID {
	var out []types.UID
	for _, r := range as.rounds {
		for uid := range r.waiting {
			out = append(out, uid)
		}
	}
	return out
}

// InFlight counts a PodGroup's members allowed to bind whose bind was not seen yet.
func (as *Attempts) InFlight(k Key) int { return as.inFlight[k] }

// Outcome returns the outcome record of a group, creating it.
func (as *Attempts) Outcome(k Key) *Outcome {
	o := as.outcomes[k]
	if o == nil {
		o = &Outcome{}
		as.outcomes[k] = o
	}
	return o
}

// OutcomeOf returns the outcome of a group's last attempt, zero if none.
func (as *Attempts) OutcomeOf(k Key) Outcome {
	if o := as.outcomes[k]; o != nil {
		return *o
	}
	return Outcome{}
}

// ForgetGroup drops what was recorded about a group that no longer exists: its outcome, and,
// if it was a root, its round and the round's timers. Reservations its members still hold
// (already allowed, binding) keep their attempt, which no round needs any more.
func (as *Attempts) ForgetGroup(k Key) {
	delete(as.outcomes, k)
	if r := as.rounds[k]; r != nil {
		stopTimer(&r.retryTimer)
		stopTimer(&r.deadlineTimer)
		stopTimer(&r.releaseTimer)
		stopTimer(&r.partialTimer)
		stopTimer(&r.scoutTimer)
		if len(r.waiting) > 0 {
			as.waitingRoots--
			metrics.waitingGangs.Set(float64(as.waitingRoots))
		}
		delete(as.rounds, k)
		as.held.remove(k)
	}
}

// Timer is a timer of the model's clock.
type Timer interface{ Stop() bool }

func stopTimer(t *Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// anyReserved reports whether any member holds a reservation.
func (as *Attempts) anyReserved() bool { return len(as.byPod) > 0 }
