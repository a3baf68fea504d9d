package bind

import (
	"container/list"
	"context"
	"errors"
	"net"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Window bounds the binds outstanding at once by what the apiserver sustains, as TCP's
// congestion window bounds a connection's packets (AIMD with slow start), so that a busy
// apiserver still gets every bind it can take and a 1000-pod release still cannot flood it:
//
//   - it starts at initialWindow and, while nothing says the apiserver is loaded, grows by
//     one for every bind that succeeds while the window limits the binds (binds wait for
//     room, or it is at least half used): it doubles every round trip under a backlog (slow
//     start), then, past the size at which it last had to shrink, grows by one per window
//     of binds (additive increase);
//   - a bind that says the apiserver is overloaded shrinks it (multiplicative decrease), at
//     most once per round trip: halved for a request the apiserver refused or failed (429
//     from API Priority and Fairness, 5xx, a timeout), by a fifth for one whose latency grew
//     past latencyTolerance times the least latency of the last minutes (requests queue);
//   - it stays between minWindow and the args' maxBindsInFlight.
//
// A fixed bound caps throughput at bound ÷ latency whenever latency rises (32 binds of
// 250 ms each: 128 pods/s however much more the apiserver could take); a window follows the
// latency instead. Waiters are served in the order they came, so the members of the gang
// released first go out first.
type Window struct {
	mu       sync.Mutex
	now      func() time.Time
	size     float64 // the window: binds that may be outstanding
	ssthresh float64 // slow start below it
	min, max float64
	inFlight int
	waiters  list.List // of chan struct{}, first come first served
	// base is the least latency of the current and the previous baseBucket (the apiserver's
	// latency without lockstep's queue in it); shrunk is when the window last shrank; rtt a
	// moving average of the latency, the round trip that paces decreases.
	base         [2]time.Duration
	baseStart    time.Time
	shrunk       time.Time
	rtt          time.Duration
	observedSize func(float64)
	// admitted, when set (tests), is told the binds outstanding and the window each time
	// one is let in.
	admitted func(inFlight int, size float64)
}

const (
	// initialWindow is the window before any bind returned (the former fixed bound).
	initialWindow = 32
	// minWindow: never fewer binds outstanding, however loaded the apiserver.
	minWindow = 4
	// latencyTolerance: a bind slower than this many times the base latency means binds
	// queue at the apiserver, beyond what raises its throughput.
	latencyTolerance = 4
	// latencyFloor: latencies under it never count as congestion (a 2 ms base would make a
	// 10 ms bind look congested).
	latencyFloor = 100 * time.Millisecond
	// baseBucket is how long a base latency is remembered (two buckets): long enough to
	// span a burst, short enough to follow an apiserver that became busier for good.
	baseBucket = 2 * time.Minute
)

// Cap lowers the window's ceiling to max binds, if it is higher: the window is the
// process's, shared by its profiles, and each profile's maxBindsInFlight bounds it.
func (w *Window) Cap(max int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := float64(max); m < w.max {
		w.max = m
		w.min = min(w.min, m)
		w.size = min(w.size, m)
		w.ssthresh = min(w.ssthresh, m)
	}
}

// NewWindow returns a window of at most max binds, on the clock now.
func NewWindow(max int64, now func() time.Time) *Window {
	w := &Window{now: now, max: float64(max), min: float64(min(minWindow, max)), observedSize: func(float64) {}}
	w.size = float64(min(initialWindow, max))
	w.ssthresh = w.max
	w.baseStart = now()
	return w
}

// Size is the window now.
func (w *Window) Size() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int(w.size)
}

// Acquire waits for room in the window, or returns the context's error.
func (w *Window) Acquire(ctx context.Context) error {
	w.mu.Lock()
	if w.waiters.Len() == 0 && w.inFlight < int(w.size) {
		w.admitOneLocked()
		w.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	e := w.waiters.PushBack(ready)
	w.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		w.mu.Lock()
		defer w.mu.Unlock()
		select {
		case <-ready: // admitted meanwhile: give the room back
			w.inFlight--
			w.admitLocked()
		default:
			w.waiters.Remove(e)
		}
		return ctx.Err()
	}
}

// Release returns a bind's room, and adapts the window to how the bind went: its error
// (nil when it bound) and how long the request took.
func (w *Window) Release(err error, latency time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// The window limits the binds when binds wait for room or it is at least half used;
	// only then does a prompt bind say it could be larger.
	limited := w.waiters.Len() > 0 || 2*w.inFlight >= int(w.size)
	w.inFlight--
	now := w.now()
	// Only a bind that went through says how long the apiserver takes: one refused in a
	// millisecond (an admission policy, a pod deleted meanwhile) must not become the base
	// that every later bind looks congested against.
	w.observeLocked(now, latency, err == nil)
	switch {
	case overloaded(err):
		w.shrinkLocked(now, 0.5)
	case err != nil:
		// The pod was deleted, the node refused it...: nothing about the apiserver's load.
	case latency > max(latencyFloor, latencyTolerance*w.baseLocked()):
		w.shrinkLocked(now, 0.8)
	case limited:
		if w.size < w.ssthresh {
			w.size++
		} else {
			w.size += 1 / w.size
		}
		w.size = min(w.size, w.max)
	}
	w.observedSize(w.size)
	w.admitLocked()
}

// shrinkLocked multiplies the window by factor, unless it shrank less than a round trip ago
// (the binds sent before that shrink say nothing of the window after it).
func (w *Window) shrinkLocked(now time.Time, factor float64) {
	if !w.shrunk.IsZero() && now.Sub(w.shrunk) < w.rtt {
		return
	}
	w.shrunk = now
	w.size = max(w.min, w.size*factor)
	w.ssthresh = w.size
}

// observeLocked records a request's latency: the moving average that paces decreases, and,
// for a bind that went through (bound), the base of the current bucket.
func (w *Window) observeLocked(now time.Time, latency time.Duration, bound bool) {
	if now.Sub(w.baseStart) >= baseBucket {
		w.base[1], w.base[0], w.baseStart = w.base[0], 0, now
	}
	if bound && (w.base[0] == 0 || latency < w.base[0]) {
		w.base[0] = latency
	}
	if w.rtt == 0 {
		w.rtt = latency
	} else {
		w.rtt = (7*w.rtt + latency) / 8
	}
}

// baseLocked is the least latency of the two buckets.
func (w *Window) baseLocked() time.Duration {
	b := w.base[0]
	if w.base[1] != 0 && (b == 0 || w.base[1] < b) {
		b = w.base[1]
	}
	return b
}

// admitLocked lets waiters in, first come first served, while the window has room.
func (w *Window) admitLocked() {
	for w.waiters.Len() > 0 && w.inFlight < int(w.size) {
		e := w.waiters.Front()
		w.waiters.Remove(e)
		w.admitOneLocked()
		close(e.Value.(chan struct{}))
	}
}

// admitOneLocked counts a bind let in.
func (w *Window) admitOneLocked() {
	w.inFlight++
	if w.admitted != nil {
		w.admitted(w.inFlight, w.size)
	}
}

// overloaded reports whether a bind's error says the apiserver could not take it: refused
// by API Priority and Fairness (429), a server error or timeout, or no answer in time.
func overloaded(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) ||
		errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
}

// outstanding is how many binds are let in and not released (tests).
func (w *Window) outstanding() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inFlight
}

// waitingLen is how many binds wait for room (tests).
func (w *Window) waitingLen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiters.Len()
}
