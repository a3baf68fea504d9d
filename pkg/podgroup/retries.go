package podgroup

import (
	"time"
)

// A tree whose attempt failed for want of room backs off (backoffSeconds), so that its
// members do not take reservations again at every cluster event. But news that may let it
// fit (a node added or grown, a pod gone, one of its groups edited, a member created)
// retries it at once: backoff stops hot loops, not news.

// pokeLocked retries a tree held back after a failed attempt, now that something happened
// that may let it fit (see newsLocked).
func (p *Permits) pokeLocked(root Key, why string) { p.newsLocked([]Key{root}, why) }

// pokeStalledLocked retries every tree held back after a failed attempt (see newsLocked).
func (p *Permits) pokeStalledLocked(why string) { p.newsLocked(p.stalledLocked(nil), why) }

// pokeRoomLocked retries the trees held back after a failed attempt that room on node can
// help: those it can take a member of, and those whose members' needs are not known
// (room.go).
func (p *Permits) pokeRoomLocked(node, why string) {
	p.newsLocked(p.stalledLocked(func(r *Round) bool { return !r.needKnown || p.m.room.helps(node, r.need) }), why)
}

// stalledLocked returns the roots held back after a failed attempt, those keep accepts (nil:
// all).
func (p *Permits) stalledLocked(keep func(*Round) bool) []Key {
	var roots []Key
	for root, r := range p.attempts.rounds {
		if (r.stalled || len(r.failed) > 0) && (keep == nil || keep(r)) {
			roots = append(roots, root)
		}
	}
	return roots
}

// maxQuietBackoff bounds how long a tree that keeps failing waits without news: as long as
// upstream's scheduling queue keeps an unschedulable pod before it tries it again anyway.
const maxQuietBackoff = 5 * time.Minute

// quietBackoff is how long a tree that failed waits for news before it is tried anyway: the
// backoff, doubled for each of the quiet consecutive tries (tries no news prompted) that
// failed, at most maxQuietBackoff. A gang that cannot fit is tried again on news that can help
// it; without news, less and less often: ten thousand waiting gangs in a quiet cluster cost
// a few tries a second, not a thousand.
func quietBackoff(backoff time.Duration, quiet int) time.Duration {
	if backoff >= maxQuietBackoff {
		return backoff
	}
	for ; quiet > 0; quiet-- {
		if backoff *= 2; backoff >= maxQuietBackoff {
			return maxQuietBackoff
		}
	}
	return backoff
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
func (p *Permits) newsLocked(roots []Key, why string) {
	m := p.m
	at := m.clock.Now().Add(newsDelay)
	var due []Key
	for _, root := range roots {
		r := p.attempts.Round(root)
		if r == nil || (!r.stalled && len(r.failed) == 0) {
			continue
		}
		if earliest := r.lastFailure.Add(p.retryFloor); earliest.After(at) {
			at = earliest
		}
		r.news = why
		due = append(due, root)
	}
	if len(due) == 0 {
		return
	}
	m.clock.AfterFunc(at.Sub(m.clock.Now()), func() {
		m.update(m.logger, func(eff *effects) {
			now := m.clock.Now()
			for _, root := range due {
				r := p.attempts.Round(root)
				if r == nil || (!r.stalled && len(r.failed) == 0) {
					continue
				}
				if earliest := r.lastFailure.Add(p.retryFloor); now.Before(earliest) {
					p.armRetryLocked(root, r, earliest) // it failed again meanwhile
					continue
				}
				p.retryLocked(eff, root, why)
			}
		})
	})
}

// retryLocked ends a tree's backoff and lets a scout try it again (scout.go).
func (p *Permits) retryLocked(eff *effects, root Key, why string) {
	m := p.m
	r := p.attempts.RoundOf(root)
	r.stalled, r.backoffUntil = false, time.Time{}
	stopTimer(&r.retryTimer)
	r.retryAt = time.Time{}
	if r.news != "" {
		why, r.news, r.newsAt = r.news, "", m.clock.Now()
	}
	p.retryScoutLocked(eff, root, r, why)
}

// armRetryLocked makes sure the tree is retried at the latest at at.
func (p *Permits) armRetryLocked(root Key, r *Round, at time.Time) {
	m := p.m
	if r.retryTimer != nil && !r.retryAt.After(at) {
		return
	}
	stopTimer(&r.retryTimer)
	r.retryAt = at
	r.retryTimer = m.clock.AfterFunc(at.Sub(m.clock.Now()), func() {
		m.update(m.logger, func(eff *effects) {
			if r := p.attempts.Round(root); r != nil && r.retryAt.Equal(at) {
				r.retryTimer = nil
				if r.stalled || len(r.failed) > 0 {
					r.quietRetry, r.lookAgain = r.news == "" && !r.lookAgain, false
					p.retryLocked(eff, root, "backoff ended")
				}
			}
		})
	})
}
