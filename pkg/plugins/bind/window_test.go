package bind

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// clock is a manual clock for windows.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// backlog returns n binds of latency, the window refilled after each, as the binds waiting
// behind a released gang fill it.
func backlog(t *testing.T, w *Window, c *clock, n int, latency time.Duration, step time.Duration) {
	t.Helper()
	for range n {
		c.t = c.t.Add(step)
		w.Release(nil, latency)
		fill(t, w, w.Size()-w.outstanding())
	}
}

// fill takes n rooms of w, failing the test if one is not free at once.
func fill(t *testing.T, w *Window, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range n {
		if err := w.Acquire(ctx); err != nil {
			t.Fatalf("room %d of a window of %d not free", i, w.Size())
		}
	}
}

func TestWindowAdapts(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tooMany := apierrors.NewTooManyRequests("shed by APF", 1)
	tests := []struct {
		name string
		max  int64
		// run drives the window; want is its size after.
		run  func(t *testing.T, w *Window, c *clock)
		want int
	}{
		{name: "it starts at 32", max: 1024, run: func(*testing.T, *Window, *clock) {}, want: 32},
		{name: "never above maxBindsInFlight", max: 8, run: func(*testing.T, *Window, *clock) {}, want: 8},
		{name: "slow start: a window of prompt binds with more waiting doubles it", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 32)
			backlog(t, w, c, 32, 20*time.Millisecond, time.Millisecond)
		}, want: 64},
		{name: "and on to maxBindsInFlight", max: 512, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 32)
			backlog(t, w, c, 2000, 20*time.Millisecond, time.Millisecond)
		}, want: 512},
		{name: "a window less than half used does not grow", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 10)
			for range 10 {
				w.Release(nil, 20*time.Millisecond)
			}
		}, want: 32},
		{name: "a 429 halves it", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 1)
			w.Release(tooMany, 20*time.Millisecond)
		}, want: 16},
		{name: "server errors and timeouts halve it, once per round trip", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 3)
			w.Release(apierrors.NewServiceUnavailable("busy"), 200*time.Millisecond)
			c.t = c.t.Add(10 * time.Millisecond) // less than a round trip later
			w.Release(apierrors.NewServerTimeout(gr, "create", 1), 200*time.Millisecond)
			c.t = c.t.Add(time.Second)
			w.Release(fmt.Errorf("bind: %w", context.DeadlineExceeded), 200*time.Millisecond)
		}, want: 8},
		{name: "errors about the pod leave it alone", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 2)
			w.Release(apierrors.NewNotFound(gr, "p"), 20*time.Millisecond)
			w.Release(apierrors.NewConflict(gr, "p", errors.New("bound")), 20*time.Millisecond)
		}, want: 32},
		{name: "binds slowed past 4× the base latency shrink it by a fifth", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 2)
			w.Release(nil, 50*time.Millisecond) // the base
			c.t = c.t.Add(time.Second)
			w.Release(nil, 400*time.Millisecond)
		}, want: 25},
		{name: "a bind refused in a millisecond is not the apiserver's latency", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 1)
			w.Release(apierrors.NewForbidden(gr, "p", errors.New("denied by an admission policy")), time.Millisecond)
			fill(t, w, 32)
			backlog(t, w, c, 64, 250*time.Millisecond, 10*time.Millisecond)
		}, want: 96}, // slow start: 32 + 64 prompt binds (against a 1 ms base it shrank to 4)
		{name: "latencies under 100 ms are never congestion", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 2)
			w.Release(nil, time.Millisecond)
			w.Release(nil, 90*time.Millisecond)
		}, want: 32},
		{name: "after a shrink it grows by one per window", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 1)
			w.Release(tooMany, 20*time.Millisecond) // 16, slow start over
			fill(t, w, 16)
			backlog(t, w, c, 33, 20*time.Millisecond, time.Millisecond) // two windows' worth
		}, want: 17}, // 16 + 33 × 1/~16.5
		{name: "never below 4", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			for range 10 {
				fill(t, w, 1)
				c.t = c.t.Add(time.Minute)
				w.Release(tooMany, 20*time.Millisecond)
			}
		}, want: 4},
		{name: "an apiserver busy for good: its slower binds become the base, and the window grows again", max: 1024, run: func(t *testing.T, w *Window, c *clock) {
			fill(t, w, 1)
			w.Release(nil, 5*time.Millisecond) // an idle moment
			for range 2 {                      // then 250 ms binds, congested against the idle base...
				c.t = c.t.Add(baseBucket)
				fill(t, w, 1)
				w.Release(nil, 250*time.Millisecond)
			} // ...once (32 × 0.8 = 25.6); the second comes when the idle base is forgotten
			fill(t, w, 25)
			backlog(t, w, c, 100, 250*time.Millisecond, 10*time.Millisecond)
		}, want: 29}, // 25.6 + ~100/27
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)}
			w := NewWindow(tc.max, c.now)
			tc.run(t, w, c)
			if got := w.Size(); got != tc.want {
				t.Errorf("window %d, want %d", got, tc.want)
			}
		})
	}
}

// Waiters are let in first come first served as room frees, and one that gives up leaves
// no room taken.
func TestWindowOrderAndCancel(t *testing.T) {
	w := NewWindow(1, time.Now)
	fill(t, w, 1)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	for i := range 5 {
		wg.Add(1)
		c := ctx
		if i == 2 {
			c = cancelled
		}
		go func() {
			defer wg.Done()
			if err := w.Acquire(c); err != nil {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			w.Release(nil, time.Millisecond)
		}()
		for w.waitingLen() != i+1 { // queue them in order
			time.Sleep(time.Millisecond)
		}
	}
	cancel()
	for w.waitingLen() != 4 {
		time.Sleep(time.Millisecond)
	}
	w.Release(nil, time.Millisecond)
	wg.Wait()
	if fmt.Sprint(order) != "[0 1 3 4]" {
		t.Errorf("let in %v, want [0 1 3 4]", order)
	}
	fill(t, w, 1) // the room is free again
}

// Under seeded random interleavings of binds, outcomes and latencies, no bind is let in
// beyond the window, every bind is let in, and the window stays within its bounds.
func TestWindowInvariants(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			var clockMu sync.Mutex
			c := &clock{t: time.Now()}
			now := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return c.t }
			w := NewWindow(int64(4+rng.Intn(60)), now)
			beyond := 0
			w.admitted = func(inFlight int, size float64) { // under the window's lock
				if inFlight > int(size) {
					beyond++
				}
			}
			type bind struct {
				latency, hold time.Duration
				err           error
			}
			binds := make([]bind, 300)
			for i := range binds {
				binds[i] = bind{latency: time.Duration(rng.Intn(400)) * time.Millisecond, hold: time.Duration(rng.Intn(3)) * time.Millisecond}
				switch rng.Intn(10) {
				case 0:
					binds[i].err = apierrors.NewTooManyRequests("shed", 1)
				case 1:
					binds[i].err = apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
				}
			}
			var wg sync.WaitGroup
			for _, b := range binds {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := w.Acquire(context.Background()); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(b.hold)
					clockMu.Lock()
					c.t = c.t.Add(b.latency)
					clockMu.Unlock()
					w.Release(b.err, b.latency)
				}()
			}
			wg.Wait()
			if beyond > 0 {
				t.Errorf("%d binds let in beyond the window", beyond)
			}
			if s := w.Size(); float64(s) < w.min || float64(s) > w.max {
				t.Errorf("window %d outside [%v, %v]", s, w.min, w.max)
			}
		})
	}
}
