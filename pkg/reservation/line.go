package reservation

import (
	"slices"
	"time"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// The line of starving trees. Each failed attempt of a starving tree asks whose turn it is at
// its level and priority (Turn): of the trees there that could fit (or were not checked
// yet), the one that has waited longest. Read from every waiter at each attempt, the line
// cost each of N starving trees N reads, N² for them all; so each level and priority keeps
// its trees that may take a turn ordered by how long they have waited (lines), and an
// attempt reads the front of its own.

// lineKey is a level and a priority: one line.
type lineKey struct {
	level    int
	priority int32
}

func lineOf(w Waiter) lineKey { return lineKey{level: w.Level, priority: w.Priority} }

// mayTakeTurn reports whether a waiter is in its line: it could fit once the pods in its way
// ended, or was not checked yet. A tree checked not to fit holds nobody back.
func mayTakeTurn(w Waiter) bool { return w.Checked.IsZero() || w.Fits }

// queued is a tree's place in its line: it waited since, its root breaks ties.
type queued struct {
	since time.Time
	root  podgroup.Key
}

// before reports whether a goes before b.
func (a queued) before(b queued) bool {
	if !a.since.Equal(b.since) {
		return a.since.Before(b.since)
	}
	return a.root.Less(b.root)
}

// lines are the lines, each in order.
type lines map[lineKey][]queued

// find returns q's place in line s, and whether q is there.
func find(s []queued, q queued) (int, bool) {
	return slices.BinarySearchFunc(s, q, func(a, b queued) int {
		switch {
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return 0
	})
}

// add places q in line k.
func (l lines) add(k lineKey, q queued) {
	i, _ := find(l[k], q)
	l[k] = slices.Insert(l[k], i, q)
}

// remove takes q out of line k.
func (l lines) remove(k lineKey, q queued) {
	s := l[k]
	i, found := find(s, q)
	if !found {
		return
	}
	if s = slices.Delete(s, i, i+1); len(s) == 0 {
		delete(l, k)
		return
	}
	l[k] = s
}

// len counts the trees in every line.
func (l lines) len() int {
	n := 0
	for _, s := range l {
		n += len(s)
	}
	return n
}

// setWaiterLocked records what the line knows of a tree, and moves it in its line where its
// place changed (a tree asking again keeps it).
func (rs *Reservations) setWaiterLocked(root podgroup.Key, w Waiter) {
	if old, ok := rs.waiters[root]; ok && lineOf(old) == lineOf(w) && old.Since.Equal(w.Since) && mayTakeTurn(old) == mayTakeTurn(w) {
		rs.waiters[root] = w
		return
	}
	rs.dropWaiterLocked(root)
	rs.waiters[root] = w
	if mayTakeTurn(w) {
		rs.line.add(lineOf(w), queued{since: w.Since, root: root})
	}
}

// dropWaiterLocked takes a tree out of the line.
func (rs *Reservations) dropWaiterLocked(root podgroup.Key) {
	if old, ok := rs.waiters[root]; ok {
		if mayTakeTurn(old) {
			rs.line.remove(lineOf(old), queued{since: old.Since, root: root})
		}
		delete(rs.waiters, root)
	}
}

// expired reports whether a waiter stopped asking long enough ago to lose its place.
func expired(w Waiter, now time.Time) bool { return now.Sub(w.Seen) > waiterTTL }

// sweepLocked drops the waiters that stopped asking, every one of them at most once per
// waiterTTL: those at the front of a line are dropped as attempts read them (Turn).
func (rs *Reservations) sweepLocked(now time.Time) {
	if now.Sub(rs.swept) < waiterTTL {
		return
	}
	rs.swept = now
	for root, w := range rs.waiters {
		if expired(w, now) {
			rs.dropWaiterLocked(root)
		}
	}
}

// firstLocked returns whose turn it is in the line of w, which root waits in: the first
// tree in it that still asks, root if none goes before it.
func (rs *Reservations) firstLocked(root podgroup.Key, w Waiter, now time.Time) podgroup.Key {
	if k, _, ok := rs.frontLocked(root, w, now); ok {
		return k
	}
	return root
}

// frontLocked returns the tree at the front of w's line, and what the line knows of it, if
// it is another tree that still asks and goes before root; those that stopped asking are
// dropped on the way.
func (rs *Reservations) frontLocked(root podgroup.Key, w Waiter, now time.Time) (podgroup.Key, Waiter, bool) {
	me := queued{since: w.Since, root: root}
	for {
		s := rs.line[lineOf(w)]
		if len(s) == 0 || s[0].root == root || !s[0].before(me) {
			return podgroup.Key{}, Waiter{}, false
		}
		if o := rs.waiters[s[0].root]; !expired(o, now) {
			return s[0].root, o, true
		}
		rs.dropWaiterLocked(s[0].root)
	}
}

// Ahead returns a tree whose turn comes before root's at w's level and priority whatever
// root's own dry run would find: a live reservation's tree that does not give way to root,
// or the tree at the front of the line, which has waited longer and was checked to fit. A
// starving tree behind one needs no dry run yet (its verdict would decide nothing): with
// thousands starving behind one reservation, their dry runs were most of the scheduler's CPU.
// Only the front is read: a front not checked yet names nobody, and root runs its own.
func (rs *Reservations) Ahead(root podgroup.Key, w Waiter) (podgroup.Key, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if k, ok := rs.holderLocked(root, w); ok {
		return k, true
	}
	if k, o, ok := rs.frontLocked(root, w, rs.now()); ok && !o.Checked.IsZero() && o.Fits {
		return k, true
	}
	return podgroup.Key{}, false
}
