package reservation

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// TestTurnIsTheLongestWaiterThatMayFit, over seeded random sequences of starving trees'
// attempts at two levels and two priorities (each checked to fit, checked not to, or not
// checked), trees forgotten and gone, and the clock moving past waiterTTL: Turn names the
// tree an oracle that reads every waiter names (of root and the trees of its level and
// priority that still ask and may fit, the one waiting since the earliest, roots breaking
// ties), Ahead names the front of the line before an attempt when it is another tree, ahead
// of root and checked to fit, and once every tree is gone the store keeps no waiter and no
// place in a line.
func TestTurnIsTheLongestWaiterThatMayFit(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		rs := New(func() time.Time { return now })
		oracle := map[podgroup.Key]Waiter{}
		roots := make([]podgroup.Key, 3+rng.IntN(12))
		for i := range roots {
			roots[i] = podgroup.PodGroupKey("ns", fmt.Sprintf("g%d", i))
		}
		for step := range 60 {
			root := roots[rng.IntN(len(roots))]
			switch rng.IntN(10) {
			case 0:
				rs.ForgetWaiter(root)
				delete(oracle, root)
				continue
			case 1:
				rs.TreeGone(root)
				delete(oracle, root)
				continue
			case 2:
				now = now.Add(time.Duration(rng.IntN(int(3 * waiterTTL))))
			}
			w := Waiter{Level: rng.IntN(2), Priority: int32(rng.IntN(2)), Seen: now,
				Since: now.Add(-time.Duration(rng.IntN(4)) * time.Minute)} // equal sinces: roots break ties
			if old, ok := oracle[root]; ok && rng.IntN(2) == 0 {
				w.Level, w.Priority, w.Since = old.Level, old.Priority, old.Since // as a tree asks again
			}
			switch rng.IntN(3) {
			case 0:
				w.Checked, w.Fits = now, true
			case 1:
				w.Checked = now
			}
			// Ahead, asked before the attempt records w: the front of w's line (the earliest of
			// the trees there that still ask and may fit, root's last place included) if it is
			// another tree, before w, checked to fit.
			var front podgroup.Key
			var frontW Waiter
			for k, o := range oracle {
				if now.Sub(o.Seen) > waiterTTL || o.Level != w.Level || o.Priority != w.Priority || (!o.Checked.IsZero() && !o.Fits) {
					continue
				}
				if front == (podgroup.Key{}) || o.Since.Before(frontW.Since) || (o.Since.Equal(frontW.Since) && k.Less(front)) {
					front, frontW = k, o
				}
			}
			wantAhead := front != (podgroup.Key{}) && front != root && !frontW.Checked.IsZero() && frontW.Fits &&
				(frontW.Since.Before(w.Since) || (frontW.Since.Equal(w.Since) && front.Less(root)))
			if got, ok := rs.Ahead(root, w); ok != wantAhead || (ok && got != front) {
				t.Fatalf("seed %d, step %d: Ahead of %v at level %d, priority %d: %v %v, want %v %v", seed, step, root, w.Level, w.Priority, got, ok, front, wantAhead)
			}
			want := root
			best := w
			oracle[root] = w
			for k, o := range oracle {
				if now.Sub(o.Seen) > waiterTTL {
					delete(oracle, k)
					continue
				}
				if k == root || o.Level != w.Level || o.Priority != w.Priority || (!o.Checked.IsZero() && !o.Fits) {
					continue
				}
				if o.Since.Before(best.Since) || (o.Since.Equal(best.Since) && k.Less(want)) {
					want, best = k, o
				}
			}
			if got := rs.Turn(root, w); got != want {
				t.Fatalf("seed %d, step %d: %v's turn asked at level %d, priority %d: %v, want %v", seed, step, root, w.Level, w.Priority, got, want)
			}
			if got, ok := rs.WaiterOf(root); !ok || got != w {
				t.Fatalf("seed %d, step %d: the line knows %v of %v, want %v", seed, step, got, root, w)
			}
		}
		for _, root := range roots {
			rs.TreeGone(root)
		}
		for kind, n := range rs.Sizes() {
			if n != 0 {
				t.Errorf("seed %d: the store keeps %d %s after every tree is gone", seed, n, kind)
			}
		}
	}
}

// BenchmarkTurn is one starving tree's attempt asking whose turn it is, with waiters starving
// trees in its line (one level and priority), each asking again in turn.
//
//	go test ./pkg/reservation -run '^$' -bench Turn -benchmem
func BenchmarkTurn(b *testing.B) {
	for _, waiters := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("%dWaiters", waiters), func(b *testing.B) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			rs := New(func() time.Time { return now })
			roots := make([]podgroup.Key, waiters)
			for i := range roots {
				roots[i] = podgroup.PodGroupKey("ns", fmt.Sprintf("g%d", i))
				rs.Turn(roots[i], Waiter{Since: now.Add(-time.Duration(i) * time.Second), Seen: now, Checked: now, Fits: true})
			}
			i := 0
			for b.Loop() {
				root := roots[i%waiters]
				rs.Turn(root, Waiter{Since: now.Add(-time.Duration(i%waiters) * time.Second), Seen: now, Checked: now, Fits: true})
				i++
			}
		})
	}
}
