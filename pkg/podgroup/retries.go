package podgroup

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// A tree whose attempt failed for want of room backs off (backoffSeconds), so that its
// members do not take reservations again at every cluster event. But news that may let it
// fit (a node added or grown, a pod gone, one of its groups edited, a member created)
// retries it at once: backoff stops hot loops, not news.

// pokeLocked retries a tree held back after a failed attempt, now that something happened
// that may let it fit (see newsLocked).
func (p *Permits) pokeLocked(root Key, why string) { p.newsLocked([]Key{root}, why, "") }

// pokeStalledLocked retries every tree held back after a failed attempt (see newsLocked).
func (p *Permits) pokeStalledLocked(why string) { p.newsLocked(p.attempts.heldRounds(), why, "") }

// pokeRoomLocked retries the trees held back after a failed attempt that room on node can
// help: those it can take a member of, and those whose members' needs are not known
// (room.go). A tree whose scout finds the room taken by then, with no other news since, is
// not tried (roomSpentLocked). The node's free room is read once, not per tree, and weighed
// only against the trees whose need's CPU fits in it (held.go): a pod deleted is news for
// every held tree: 10,000 waiting gangs each looking the node up again cost 8 ms a deletion,
// and weighing each against the room 0.3 ms (BenchmarkPodDeletedFromAFullNode).
func (p *Permits) pokeRoomLocked(node, why string) {
	free, known := p.m.room.free(node)
	if !known {
		p.newsLocked(p.attempts.heldRounds(), why, node)
		return
	}
	p.newsLocked(p.attempts.heldFitting(free), why, node)
}

// pokeLeftLocked retries the trees held back after a failed attempt that a pod leaving its
// node can help: by the room it frees (pokeRoomLocked), or every one if it kept pods off
// other nodes too (freesMoreThanRoomLocked).
func (p *Permits) pokeLeftLocked(left *v1.Pod, why string) {
	if p.m.freesMoreThanRoomLocked(left) {
		p.pokeStalledLocked(why)
		return
	}
	p.pokeRoomLocked(left.Spec.NodeName, why)
}

// heldFromNowLocked returns the pending members among tried, those an attempt of a tree that
// now backs off sent back to the scheduling queue as failed, to be held (Scheduler.Hold): their
// PreEnqueue holds them (BackingOff, LockstepScout's) until the model retries the tree. Left where
// the queue puts a pod that failed, each would be asked about every cluster event its
// rejecting plugins registered, and the answer is never the queue's to give: the model
// retries the tree, on news and at its backoff's end. 10,000 waiting gangs' scouts asked
// about every pod deletion cost a sixth of a core at 15,000 nodes (docs/benchmarks.md).
// Held while its cycle still runs (PostFilter), a member is marked for it by the queue and
// goes through PreEnqueue when it comes back.
func (p *Permits) heldFromNowLocked(tried sets.Set[types.UID]) []*v1.Pod {
	var out []*v1.Pod
	for uid := range tried {
		if mem := p.m.members.Of(uid); mem != nil && !mem.Bound() {
			out = append(out, mem.Pod)
		}
	}
	return out
}

// maxQuietBackoff bounds how long a tree that keeps failing waits without news: as long as
// upstream's scheduling queue keeps an unschedulable pod before it tries it again anyway.
const maxQuietBackoff = 5 * time.Minute

// quietBackoff is how long a tree that failed waits for news before it is tried anyway: the
// backoff, doubled for each of the quiet tries (tries no news prompted) that failed, at most
// maxQuietBackoff; tries news prompted in between neither count nor reset them, as upstream's
// backoff grows with a pod's attempts, not with events. A gang that cannot fit is tried again
// on news that can help it; without news, less and less often: ten thousand waiting gangs in
// a cluster cost a few tries a second, not a thousand, nodes added or not.
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

// quietSpread is the share of a quiet backoff by which a tree may be tried early or late
// (spread).
const quietSpread = 0.1

// spread moves backoff, a quiet one, by up to quietSpread of it either way, by as much as
// root's tree and its attempt id decide: trees that fail together are not tried again
// together. News retries every waiting tree it may help at once, and they fail within a
// second of each other; with their backoffs exact, 10,000 waiting gangs at 15,000 nodes came
// back in bunches, 9,000 failed tries in 40 s, then minutes of few (test/integration/gang's
// TestReactionUnderLoad). Either way, so that the tries of a waiting tree are as many as
// before on average; at maxQuietBackoff, 4.5 to 5.5 minutes, as upstream's queue retries an
// unschedulable pod 5 to 5.5 minutes after (it looks every 30 s). A hash, not a random draw,
// so that a run of the model is the same run again (its seeded tests).
func spread(backoff time.Duration, root Key, id int) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(root.String()))
	h.Write([]byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)})
	share := float64(h.Sum64()>>11)/(1<<53)*2 - 1 // in [-1, 1)
	return backoff + time.Duration(share*quietSpread*float64(backoff))
}

// newsDelay is how long after news failed trees are retried (see newsLocked).
const newsDelay = 50 * time.Millisecond

// newsBatch is a retry of failed trees that news armed and that has not run yet.
type newsBatch struct {
	why   string
	armed time.Time
	roots []Key
	// lowest is the lowest priority of the trees that joined with a key (hasLower).
	lowest   int32
	hasLower bool
	// lead are the two trees of it the queue will try first (the highest priority, then the
	// oldest), best first, with their queue-sort keys as of when they joined: a scout of the
	// first yields only to the second. A tree that preempts leads none (leadLocked).
	lead []leader
}

// leader is a tree of a news batch the queue tries before the others, and its key.
type leader struct {
	root Key
	key  SortKey
}

// join adds root, whose tree sorts by key, to the batch.
func (b *newsBatch) join(root Key, key SortKey) {
	b.roots = append(b.roots, root)
	b.rank(root, key)
}

// rank counts root's tree, which sorts by key, among those the batch's lowest priority and
// lead are of.
func (b *newsBatch) rank(root Key, key SortKey) {
	if !b.hasLower || key.Priority < b.lowest {
		b.lowest, b.hasLower = key.Priority, true
	}
	i := 0
	for i < len(b.lead) && !key.Before(b.lead[i].key) {
		i++
	}
	if i < 2 {
		b.lead = slices.Insert(b.lead, i, leader{root: root, key: key})[:min(len(b.lead)+1, 2)]
	}
}

// ahead returns a tree of the batch, other than own's, that the queue tries before it; false
// if there is none. A tree with no member left to try (tries false: its pods were deleted
// since it joined) is not ahead of any: nothing of it reaches the queue.
func (b *newsBatch) ahead(own SortKey, tries func(Key) bool) (Key, bool) {
	for _, l := range b.lead {
		if l.key.Root != own.Root && tries(l.root) {
			return l.root, l.key.Before(own)
		}
	}
	return Key{}, false
}

// newsLocked retries failed trees together, newsDelay from now. Together: their members
// reach the queue at once, and leave it in the order of their trees' priority and age, so
// that when room appears for one of several trees the one the queue puts first gets it,
// whichever was tried last. A scout the queue puts after one of them that reaches its cycle
// meanwhile joins the batch rather than take the room (yieldLocked).
//
// A tree that failed less than retryFloor ago waits for its floor to end (it was just tried,
// maybe on a snapshot without the news), and so do the trees the queue puts after it; the
// others do not wait for it: at 600 waiting gangs, a batch that waited for the floor of the
// tree that failed last waited a second, while the scouts of younger gangs took the room.
// Not a tree that missed the news (Round.missed): it was in its cycle when the news came.
//
// A tree that preempted is retried by no news while the pods it evicts are still there: its
// members go where its plan says once they are gone, and before that every try fails (a
// scheduling cycle, and a status write for the count of pods left). The news of the last one
// leaving retries it at once, floor or not: its last failure was only the wait. Before, it was
// retried at its floor (a second) while they left, and bound up to a second after the last
// one was gone.
//
// The delay: the model hears of an event through its own handler, and the scheduler's cache
// through another; an attempt made before the cache has the new node (or has lost the deleted
// pod) would fail for nothing. An attempt that fails anyway shortly after news backs off for
// the retry floor only (see rejectLocked).
//
// room is the node whose room the news is about, if that is all it is about.
func (p *Permits) newsLocked(roots []Key, why, room string) {
	start := time.Now()
	b := &newsBatch{why: why, armed: p.m.clock.Now()}
	for _, root := range roots {
		r := p.attempts.Round(root)
		if r == nil || !r.heldBack() {
			continue
		}
		if _, waiting := p.victimsLocked(root); waiting {
			continue // news cannot help it before its victims are gone
		}
		if r.news != "" && r.newsRoom != room {
			room = "" // news of more than one thing for this tree
		}
		r.news, r.newsRoom = why, room
		p.joinLocked(b, root, r)
	}
	p.news++ // even if it retries none: a tree in the queue may have a use for it
	if len(b.roots) > 0 {
		p.m.logger.V(4).Info("News retries waiting gangs", "why", why, "gangs", len(b.roots), "of", len(roots), "in", time.Since(start), "after", newsDelay)
	}
	p.armBatchLocked(b, p.m.clock.Now().Add(newsDelay))
}

// catchUpLocked retries root's tree, which just failed whole, with the trees of a lower
// priority that news retries and that have not been tried yet: news that came while its
// scout was in its cycle (the cycle's snapshot may not have held it), or the news whose retry
// this attempt was (prompted: it failed at once, the scheduler's cache may have lagged). It
// joins those retries still to run, where the floor of its failure holds back the trees the
// queue puts after it (armBatchLocked). Without it, a tree tried when room appeared waited,
// while trees of a lower priority, which news retried a moment later, took the room (an
// urgent gang lost a new node so to a gang of priority 0: test/integration/gang's
// TestReactionUnderLoad, three runs of four). Only for a lower priority: among trees of one
// priority, under churn, every tree that failed would hold back the younger ones in turn, and
// some were never tried (test/integration/churn).
func (p *Permits) catchUpLocked(root Key, r *Round, prompted time.Time) {
	own, ok := p.treeKeyLocked(root, r)
	if !ok {
		return
	}
	for _, b := range p.batches {
		missed := b.armed.After(r.triedAt)                         // news after its scout's cycle began
		sameNews := !prompted.IsZero() && !b.armed.After(prompted) // the news this attempt was the retry of
		if !(missed || sameNews) || !b.hasLower || own.Priority <= b.lowest || slices.Contains(b.roots, root) {
			continue
		}
		p.joinLocked(b, root, r)
		r.news, r.newsRoom = b.why, ""
	}
}

// missed reports whether r's tree failed a try that was in its scheduling cycle when
// b's news came, and that no news prompted (its backoff's end, its first try): that try could
// not have seen the news, and the news retries it at once, floor or not. Held for its floor,
// an urgent gang whose timed try was in its cycle when a node came held every waiting gang
// behind it for up to a second. A retry news prompted keeps its floor even if more news came
// during its cycle: under churn news comes during most cycles, and a tree retried after each
// would be tried as fast as cycles run. A tree that failed before the news came keeps it too:
// it was just tried.
func (r *Round) missed(b *newsBatch) bool {
	return !r.newsTry && r.triedAt.Before(b.armed) && r.lastFailure.After(b.armed)
}

// joinLocked adds root's tree to b.
func (p *Permits) joinLocked(b *newsBatch, root Key, r *Round) {
	key, ok := p.treeKeyLocked(root, r)
	p.joinAsLocked(b, root, key, ok)
}

// joinAsLocked adds root's tree, which sorts by key if known, to b. A tree that waits for
// the pods it preempted to leave (preemptingLocked) is retried with it, but joins without a
// key: no scout yields to it (yieldLocked), and no tree of a lower priority draws others into
// it (catchUpLocked).
func (p *Permits) joinAsLocked(b *newsBatch, root Key, key SortKey, known bool) {
	if known && !p.preemptingLocked(root) {
		b.join(root, key)
	} else {
		b.roots = append(b.roots, root)
	}
}

// leadLocked brings b's lead up to date with the trees that preempt: one that began to since
// it joined (news of earlier victims came first, say) leads no more, and the lead is ranked
// again from the trees that do not.
func (p *Permits) leadLocked(b *newsBatch) {
	if !slices.ContainsFunc(b.lead, func(l leader) bool { return p.preemptingLocked(l.root) }) {
		return
	}
	b.lead, b.hasLower = nil, false
	for _, root := range b.roots {
		if r := p.attempts.Round(root); r != nil && !p.preemptingLocked(root) {
			if key, ok := p.treeKeyLocked(root, r); ok {
				b.rank(root, key)
			}
		}
	}
}

// newsChunk is how many trees of a news batch one update of the model retries. The batch's
// trees are retried in the order the queue will try them, a chunk at a time, each chunk's
// scouts handed to the queue before the next chunk is retried: the first scouts reach the
// queue at once, and the lock the scheduling cycles take too is let go between chunks. In one
// update, a node added to a cluster with 10,000 waiting gangs retried all of them first (1 s
// at 15,000 nodes), then handed 10,000 scouts over sorted (0.4 s), before the gang the room
// was for reached its cycle (test/integration/gang's TestReactionUnderLoad).
const newsChunk = 64

// armBatchLocked retries the trees of b at at (newsLocked).
func (p *Permits) armBatchLocked(b *newsBatch, at time.Time) {
	m := p.m
	if len(b.roots) == 0 {
		return
	}
	p.batches = append(p.batches, b)
	m.clock.AfterFunc(at.Sub(m.clock.Now()), func() {
		var retry []Key // the trees to retry, in the order the queue will try them
		start := time.Now()
		m.update(m.logger, func(eff *effects) {
			p.batches = slices.DeleteFunc(p.batches, func(x *newsBatch) bool { return x == b })
			now := m.clock.Now()
			// The trees within their floor, and when it ends. A tree preempting holds back no
			// other: it waits for its own victims.
			floors := map[Key]floor{}
			// What the plans say of the trees that preempted, asked once per tree.
			type victims struct{ preempted, waiting bool }
			awaiting := map[Key]victims{}
			for _, root := range b.roots {
				if r := p.attempts.Round(root); r != nil {
					if preempted, waiting := p.victimsLocked(root); preempted {
						awaiting[root] = victims{preempted, waiting}
						continue // no floor: see below
					}
					if ends := r.lastFailure.Add(p.retryFloor); now.Before(ends) && !r.missed(b) {
						// A tree with no member left (known false) holds no other back:
						// nothing of it will be tried.
						key, known := p.treeKeyLocked(root, r)
						floors[root] = floor{key: key, known: known, holds: known && !p.preemptingLocked(root), ends: ends}
					}
				}
			}
			held := heldUntil(floors)
			later := &newsBatch{why: b.why, armed: b.armed}
			var laterAt time.Time
			var tried []keyedRoot // each tree's key, read once
			for _, root := range b.roots {
				r := p.attempts.Round(root)
				if r == nil || !r.heldBack() {
					continue
				}
				switch v := awaiting[root]; {
				case v.waiting:
					continue // the news of its last victim leaving retries it
				case v.preempted:
					// Its victims are gone: it tries its plan now, floor or not, and waits for
					// no other tree (the room is nominated to its members).
					p.retryLocked(eff, root, b.why)
					continue
				}
				f, inFloor := floors[root]
				key, known, ends := f.key, f.known, f.ends // read once, with its floor
				if !inFloor {
					key, known = p.treeKeyLocked(root, r)
					ends = held(key, known)
				}
				if !ends.IsZero() {
					p.joinAsLocked(later, root, key, known)
					if ends.After(laterAt) {
						laterAt = ends
					}
					continue
				}
				tried = append(tried, keyedRoot{root, key, known})
			}
			p.armBatchLocked(later, laterAt)
			retry = queueOrderRoots(tried)
			p.retryHeldLocked(eff, retry[:min(newsChunk, len(retry))], b.why)
			m.logger.V(4).Info("News batch retries its gangs", "why", b.why, "gangs", len(retry), "heldBack", len(later.roots), "late", m.clock.Now().Sub(b.armed)-newsDelay, "firstChunkIn", time.Since(start))
		})
		for i := newsChunk; i < len(retry); i += newsChunk {
			m.update(m.logger, func(eff *effects) {
				p.retryHeldLocked(eff, retry[i:min(i+newsChunk, len(retry))], b.why)
			})
		}
	})
}

// floor is a tree within its retry floor at a news batch: its queue-sort key (known: it has
// a member left to try), whether it holds back the trees behind it in the queue (it has a
// member to try and preempts nothing), and when its floor ends.
type floor struct {
	key          SortKey
	known, holds bool
	ends         time.Time
}

// heldUntil returns, for a tree not within its floor, until when the floors hold it back: the
// latest end of those that hold and are ahead of it in the queue (all of them for a tree with
// no member left to try, known false); zero for none. The floors are sorted once and their
// ends carried forward, so that a batch of many trees behind many floors costs a search per
// tree, not a pass over the floors.
func heldUntil(floors map[Key]floor) func(key SortKey, known bool) time.Time {
	var ahead []floor
	for _, f := range floors {
		if f.holds {
			ahead = append(ahead, f)
		}
	}
	slices.SortFunc(ahead, func(a, b floor) int { return a.key.compare(b.key) })
	latest := make([]time.Time, len(ahead)) // latest[i]: the latest end of ahead[:i+1]
	for i, f := range ahead {
		latest[i] = f.ends
		if i > 0 && latest[i-1].After(f.ends) {
			latest[i] = latest[i-1]
		}
	}
	return func(key SortKey, known bool) time.Time {
		n := len(ahead)
		if known {
			n, _ = slices.BinarySearchFunc(ahead, key, func(f floor, k SortKey) int { return f.key.compare(k) })
		}
		if n == 0 {
			return time.Time{}
		}
		return latest[n-1]
	}
}

// keyedRoot is a tree's root and queue-sort key, if it has a member left to try (known).
type keyedRoot struct {
	root  Key
	key   SortKey
	known bool
}

// queueOrderRoots returns the roots of trees in the order the queue will try them (by their
// keys), those with no member left to try last, in the order given.
func queueOrderRoots(trees []keyedRoot) []Key {
	slices.SortStableFunc(trees, func(a, b keyedRoot) int {
		switch {
		case a.known != b.known && a.known:
			return -1
		case a.known != b.known:
			return 1
		case !a.known:
			return 0
		}
		return a.key.compare(b.key)
	})
	roots := make([]Key, len(trees))
	for i, t := range trees {
		roots[i] = t.root
	}
	return roots
}

// retryHeldLocked retries those of roots' trees that are still held back: news, a backoff or
// their deletion may have come since they were chosen.
func (p *Permits) retryHeldLocked(eff *effects, roots []Key, why string) {
	for _, root := range roots {
		if r := p.attempts.Round(root); r != nil && r.heldBack() {
			p.retryLocked(eff, root, why)
		}
	}
}

// victimsLocked asks the observer whether root's tree, which preempts (preemptingLocked),
// has a live plan made by preempting, and whether pods it evicts are still there.
func (p *Permits) victimsLocked(root Key) (preempted, waiting bool) {
	if p.observer == nil || p.attempts.OutcomeOf(root).Preempting == "" {
		return false, false
	}
	return p.observer.AwaitsVictims(root)
}

// preemptingLocked reports whether root's tree waits for the pods it preempted to leave
// (Outcome.Preempting). News of them retries it, but the room they free is nominated to its
// members already: the scheduler keeps it from every pod of their priority or lower, so a
// scout behind it in the queue would not take it. Were that news to hold such a scout back,
// each victim that left would hold it back again: on upstream's workload-preemption shape
// (10 gangs of 10 on 100 full nodes), the third gang's scout yielded to the news of the first
// two gangs' victims until they bound, so the gangs preempted two at a time, in five cycles
// of two seconds, where upstream frees room for all ten at once.
//
// The condition alone is not enough: it is cleared when the tree plans again or is
// scheduled, but its plan may end first (expired, dropped), and a tree that preempts nothing
// any more must hold its floor, be yielded to and be released as any other. So where the
// plans are heard (the observer), they have the last word, and a condition they contradict
// is cleared here.
func (p *Permits) preemptingLocked(root Key) bool {
	o := p.attempts.OutcomeOf(root)
	if o.Preempting == "" {
		return false
	}
	if p.observer == nil {
		return true
	}
	if preempted, _ := p.observer.AwaitsVictims(root); preempted {
		return true
	}
	p.attempts.Outcome(root).Preempting = ""
	p.m.status.Enqueue(root)
	return false
}

// treeKeyLocked is the queue-sort key root's scout will have when news retries the tree
// (its age, not its last failure): its scout's, else any pending member's. A tree whose root
// object was just deleted (its round is forgotten once the deletion settled: OnGroupDelete)
// has none: nothing retries it.
func (p *Permits) treeKeyLocked(root Key, r *Round) (SortKey, bool) {
	if !p.m.index.Get(root).Exists() {
		return SortKey{}, false
	}
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

// triesLocked reports whether root's tree has a member to try: its scout, or a pending
// member.
func (p *Permits) triesLocked(root Key) bool {
	r := p.attempts.Round(root)
	if r == nil {
		return false
	}
	_, ok := p.treeKeyLocked(root, r)
	return ok
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
//
// The scheduler's cache and the model hear of a node from one informer, each through its own
// handler: a scout whose cycle's snapshot holds more nodes than the model has seen would
// take room on a node before the model has heard of it, and retried the trees it is for. It
// arms that retry itself and joins it, for a moment only (unseenGrace): a count that stays
// apart is no news.
func (p *Permits) yieldLocked(logger klog.Logger, pod *v1.Pod, root Key, nodes int) (string, bool) {
	r := p.attempts.Round(root)
	if r == nil || r.open || r.active > 0 || r.scout != pod.UID {
		return "", false
	}
	if p.unseenNodeLocked(nodes) {
		const why = "a node the scheduler has that lockstep has not heard of yet"
		p.attempts.stall(r)
		r.quietRetry = false
		p.newsLocked(p.attempts.heldRounds(), why, "")
		logger.V(4).Info("Gang yields to a node the scheduler has and lockstep has not heard of yet", "pod", klog.KObj(pod), "root", root, "nodes", nodes)
		return p.yieldMessageLocked(pod, fmt.Sprintf("gang %s lets the waiting gangs try %s first; it is tried again with them", root.Name, why)), true
	}
	if node, spent := p.roomSpentLocked(root, r); spent {
		logger.V(4).Info("Gang not tried: the room news retried it for is taken, and no other news came", "pod", klog.KObj(pod), "root", root, "node", node, "retryAt", r.retryAt)
		return p.yieldMessageLocked(pod, fmt.Sprintf("gang %s: the room on node %s it was retried for is taken; it is tried again when the cluster changes", root.Name, node)), true
	}
	if len(p.batches) == 0 {
		return "", false
	}
	own := p.ageKeyLocked(pod, root)
	for _, b := range p.batches {
		p.leadLocked(b)
		ahead, ok := b.ahead(own, p.triesLocked)
		if !ok {
			continue
		}
		logger.V(4).Info("Gang yields to news for a tree the queue puts first", "pod", klog.KObj(pod), "root", root, "ahead", ahead, "news", b.why)
		if !slices.Contains(b.roots, root) {
			p.joinAsLocked(b, root, own, true)
		}
		p.attempts.stall(r)
		r.news, r.newsRoom, r.quietRetry = b.why, "", false
		return p.yieldMessageLocked(pod, fmt.Sprintf("gang %s lets gangs that go before it in the queue try first (%s); it is tried again with them", root.Name, b.why)), true
	}
	return "", false
}

// yieldMessageLocked is what a yielding scout is told: what its PodScheduled condition says
// already (why its gang waits, from its last attempt), so that the scheduler's failure handler
// writes nothing (a new node count alone included: lockstep's binary keeps the condition's,
// pkg/scheduler's keepFailureWords): a status write per yield, in the scheduling cycle, made
// each yield cost ten times a try, and a yield that said why it yielded cost two writes per
// waiting gang for every piece of news (this one, then the next try's).
// Why it yields is said only where the condition says nothing of an attempt yet. The scheduler
// writes the condition as its FitError reads: "0/<nodes> nodes are available: <PreFilter's
// message>. <PostFilter's message>", where PostFilter's is HeldPostFilter's for a member the gang
// refused; what the scout is told is the PreFilter message that reads as the condition. Told
// the condition whole, each yield wrapped it once more, and the pod's condition grew at every
// yield, each a write.
func (p *Permits) yieldMessageLocked(pod *v1.Pod, why string) string {
	if mem := p.m.members.Of(pod.UID); mem != nil {
		if pre, _, ok := fitMessage(&mem.Pod.Status); ok {
			return pre
		}
	}
	return why
}

// HeldPostFilterMessage is what PostFilter says of a member its gang held (LockstepTopology's
// PostFilter) where the member's condition says nothing of an attempt: its preemption, if any,
// was decided when the gang's attempt failed.
const HeldPostFilterMessage = "preemption: the gang backs off"

// HeldPostFilter is what PostFilter says of a member its gang refused before Filter ran: what
// its condition says already of the gang's last attempt's preemption, so that the condition is
// not rewritten (see yieldMessageLocked), or HeldPostFilterMessage.
func HeldPostFilter(pod *v1.Pod) string {
	if _, post, ok := fitMessage(&pod.Status); ok {
		return post
	}
	return HeldPostFilterMessage
}

// fitMessage splits a pod's Unschedulable PodScheduled condition, if it reads as the
// scheduler's FitError for a member whose PreFilter failed ("0/<nodes> nodes are available:
// <pre>. <post>", post being a preemption's "preemption: ..."), into its PreFilter and
// PostFilter messages.
func fitMessage(status *v1.PodStatus) (pre, post string, ok bool) {
	_, c := podutil.GetPodCondition(status, v1.PodScheduled)
	if c == nil || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(c.Message, "0/")
	count, rest, cut := strings.Cut(rest, " nodes are available: ")
	if _, err := strconv.Atoi(count); !ok || !cut || err != nil {
		return "", "", false
	}
	pre, post, ok = strings.Cut(rest, ". preemption: ")
	if !ok || pre == "" {
		return "", "", false
	}
	return pre, "preemption: " + post, true
}

// unseenGrace is how long the scheduler's snapshot may hold more nodes than the model has
// seen before the difference is taken for something else than news the model has yet to hear
// (a node the model saw deleted first, say).
const unseenGrace = time.Second

// unseenNodeLocked reports whether a snapshot of nodes nodes holds a node the model has not
// seen, for less than unseenGrace.
func (p *Permits) unseenNodeLocked(nodes int) bool {
	if nodes <= p.m.room.nodes() {
		p.unseenSince = time.Time{}
		return false
	}
	now := p.m.clock.Now()
	if p.unseenSince.IsZero() {
		p.unseenSince = now
	}
	return now.Sub(p.unseenSince) < unseenGrace
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
	r.roomTry = roomTry{}
	r.newsTry = r.news != ""
	if r.news != "" {
		if r.newsRoom != "" {
			r.roomTry = roomTry{node: r.newsRoom, news: p.news, resume: r.retryAt}
		}
		why, r.news, r.newsRoom, r.newsAt = r.news, "", "", m.clock.Now()
	}
	r.stalled, r.backoffUntil = false, time.Time{}
	stopTimer(&r.retryTimer)
	r.retryAt = time.Time{}
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
				if r.heldBack() {
					r.quietRetry, r.lookAgain = r.news == "" && !r.lookAgain, false
					p.retryLocked(eff, root, "backoff ended")
				}
			}
		})
	})
}
