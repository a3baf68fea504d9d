package podgroup

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
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

// newsBatch is a retry of failed trees that news armed and that has not run yet.
type newsBatch struct {
	why   string
	roots []Key
	// lead are the queue-sort keys of the two trees of it the queue will try first (the
	// highest priority, then the oldest), best first, as of when they joined: a scout of the
	// first yields only to the second.
	lead []SortKey
}

// join adds root, whose tree sorts by key, to the batch.
func (b *newsBatch) join(root Key, key SortKey) {
	b.roots = append(b.roots, root)
	i := 0
	for i < len(b.lead) && !key.Before(b.lead[i]) {
		i++
	}
	if i < 2 {
		b.lead = slices.Insert(b.lead, i, key)[:min(len(b.lead)+1, 2)]
	}
}

// ahead reports whether the batch has a tree other than own's that the queue tries before it.
func (b *newsBatch) ahead(own SortKey) bool {
	for _, k := range b.lead {
		if k.Root != own.Root {
			return k.Before(own)
		}
	}
	return false
}

// newsLocked retries failed trees together, newsDelay from now and no sooner than retryFloor
// after the latest of their failures. Together: their members reach the queue at once, and
// leave it in the order of their trees' priority, so that when room appears for one of several
// trees the higher-priority one gets it, whichever was tried last. A scout of a lower priority
// that reaches its cycle meanwhile joins the batch rather than take the room (yieldLocked).
//
// The delay: the model hears of an event through its own handler, and the scheduler's cache
// through another; an attempt made before the cache has the new node (or has lost the deleted
// pod) would fail for nothing. An attempt that fails anyway shortly after news backs off for
// the retry floor only (see rejectLocked).
func (p *Permits) newsLocked(roots []Key, why string) {
	m := p.m
	at := m.clock.Now().Add(newsDelay)
	b := &newsBatch{why: why}
	for _, root := range roots {
		r := p.attempts.Round(root)
		if r == nil || (!r.stalled && len(r.failed) == 0) {
			continue
		}
		if earliest := r.lastFailure.Add(p.retryFloor); earliest.After(at) {
			at = earliest
		}
		r.news = why
		if key, ok := p.treeKeyLocked(root, r); ok {
			b.join(root, key)
		} else {
			b.roots = append(b.roots, root)
		}
	}
	if len(b.roots) == 0 {
		return
	}
	p.batches = append(p.batches, b)
	m.clock.AfterFunc(at.Sub(m.clock.Now()), func() {
		m.update(m.logger, func(eff *effects) {
			p.batches = slices.DeleteFunc(p.batches, func(x *newsBatch) bool { return x == b })
			now := m.clock.Now()
			for _, root := range b.roots {
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

// treeKeyLocked is the queue-sort key root's scout will have when news retries the tree
// (its age, not its last failure): its scout's, else any pending member's.
func (p *Permits) treeKeyLocked(root Key, r *Round) (SortKey, bool) {
	var pod *v1.Pod
	if mem := p.m.members.Of(r.lastScout); mem != nil {
		pod = mem.Pod
	} else if pending := p.m.pendingLocked(root); len(pending) > 0 {
		pod = pending[0]
	} else {
		return SortKey{}, false
	}
	return p.ageKeyLocked(pod, root), true
}

// ageKeyLocked is the queue-sort key of a member of root's tree queued by the tree's age.
func (p *Permits) ageKeyLocked(pod *v1.Pod, root Key) SortKey {
	return p.m.sortKeyLocked(pod, root, p.m.index.Get(root).CreationTime())
}

// yieldLocked reports whether the scout pod, in its scheduling cycle, must let a tree the
// queue would try before it, and that news is about to retry, try first: one of a higher
// priority, or as high and older. If so, its own tree joins that retry (newsLocked), and the
// queue orders them. Without it, room that appears while a scout is queued (its own timed
// retry, say, or one of a thousand scouts a previous retry queued) goes to that scout, which
// is popped before news has retried the tree the room was for: at 15,000 nodes and 1,250
// waiting gangs, an urgent gang lost a new node so, and at 5,000 nodes and 600 gangs the
// 119th oldest gang got the node the oldest should have.
func (p *Permits) yieldLocked(pod *v1.Pod, root Key) (string, bool) {
	r := p.attempts.Round(root)
	if r == nil || r.open || r.active > 0 || r.scout != pod.UID || len(p.batches) == 0 {
		return "", false
	}
	own := p.ageKeyLocked(pod, root)
	for _, b := range p.batches {
		if !b.ahead(own) {
			continue
		}
		if !slices.Contains(b.roots, root) {
			b.join(root, own)
		}
		r.stalled, r.news, r.quietRetry = true, b.why, false
		return fmt.Sprintf("gang %s lets gangs that go before it in the queue try first (%s); it is tried again with them", root.Name, b.why), true
	}
	return "", false
}

// queueTimeLocked is the time root's members are queued by (SortKey.Time): the root's
// creation, so that when news retries several waiting trees of one priority the oldest gets
// the room; but on a try no news prompted (the backoff's end), its last failure, so that trees
// tried again for nothing go behind those not tried yet, and behind the trees news retries.
func (p *Permits) queueTimeLocked(root Key) time.Time {
	t := p.m.index.Get(root).CreationTime()
	if r := p.attempts.Round(root); r != nil && r.quietRetry && r.lastFailure.After(t) {
		return r.lastFailure
	}
	return t
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
