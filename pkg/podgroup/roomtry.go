package podgroup

import "time"

// roomTry is a retry that room news on one node prompted, and nothing else: the tree's last
// attempt failed for want of room, and the node could then take one of its members.
//
// News of room on a node retries every waiting tree the node can take a member of (room.go),
// and the queue tries them in its order; the first that fits takes the room, and every later
// one would fail as it did before the news, in a scheduling cycle of its own: with 10,000
// waiting gangs at 15,000 nodes, a node added cost 10,000 failed cycles of half a second each
// (test/integration/gang's TestReactionUnderLoad). Its scout, in its cycle, finds the room
// taken and lets its tree wait again for the rest of its backoff, in a moment and with no
// write (roomSpentLocked).
type roomTry struct {
	// node is where the room was.
	node string
	// news is the count of news (Permits.news) when the tree was retried: any news since may
	// help it elsewhere.
	news uint64
	// resume is when the backoff the news cut short would have ended (zero: none was armed).
	resume time.Time
}

// roomSpentLocked reports, with the node, whether root's tree, whose scout is in its cycle, was retried for
// room on a node that is taken since, with no other news since: a try would fail as the last
// one did. If so the tree waits again for the rest of the backoff the news cut short, at least
// the retry floor. The retry is spent either way: it is asked once.
//
// The room is the model's (nodeRoom): pods bound there as the informers last saw them, so a
// scout in its cycle while the room's taker is still binding is tried. A tree whose members'
// needs are not known, or a node the model does not know, is always tried.
func (p *Permits) roomSpentLocked(root Key, r *Round) (string, bool) {
	t := r.roomTry
	r.roomTry = roomTry{}
	if t.node == "" || t.news != p.news || !r.needKnown {
		return "", false
	}
	if free, known := p.m.room.free(t.node); !known || free.Fits(r.need) {
		return "", false
	}
	p.attempts.stall(r)
	r.backoffUntil = latest(t.resume, p.m.clock.Now().Add(p.retryFloor))
	p.armRetryLocked(root, r, r.backoffUntil)
	return t.node, true
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
