package gangpreemption

import (
	"fmt"
	"sync"
	"time"
)

// Bounds kept from one decision to the next. Bounding every domain reads every pod of every
// node: at 15,000 nodes, most of a decision's CPU, and in a full cluster one decision follows
// another, each changing a rack or two. A domain's bound depends on the tree only through its
// shape (the mode, its priority, its pending members' count, requests in all and smallest
// requests), and otherwise on what the domain's nodes hold and on the gangs there (their pods
// elsewhere count too). So each domain's bound is kept for the shape, with the domain's
// Version (the topology plugin's version of the domain, which changes with any of its nodes)
// and the highest NodeInfo generation of the nodes outside it that hold pods of its gangs
// (the scheduler's cache gives a NodeInfo a new generation, from one counter, at every change
// of its node or its pods; a domain without a Version is read so too), and used again by the
// next decision of a tree of the same shape while they stand: a decision reads no node of a
// domain that did not change. A gang that gains a member on a node the bound did not read
// costs more than the kept bound says: it is lower than the bound afresh, so still a bound.
// The nodes watched outside a domain are at most maxWatched.
//
// What a node holds is the decision's alone where its pods are being evicted by another
// tree's preemption or are the tree's own: such domains are bounded afresh and their bounds
// not kept. What the group model says of a pod can change without its node changing (a
// group's disruption mode or priority class edited, a pod's group created after it), as can a
// gang's pods on nodes beyond the watched ones: a kept bound lives boundTTL at most. Only the order of the domains and where the search stops
// rest on kept bounds; every domain dry run is run on the snapshot as it is, so a stale
// bound can make a decision look at one more domain, or miss a cheaper one for boundTTL, and
// never evict for a plan that does not fit.

// boundTTL is how long a domain's bound is kept while its nodes do not change.
const boundTTL = 30 * time.Second

// maxShapes is how many shapes of trees have bounds kept: the least recently used goes.
const maxShapes = 16

// boundCache keeps, by shape of tree, each domain's last bound. Decisions run one at a time
// (in PostFilter, on the scheduling goroutine); mu guards the shapes against any other reader.
type boundCache struct {
	mu     sync.Mutex
	now    func() time.Time
	shapes map[string]*keptBounds
}

// keptBounds are one shape's bounds, as one decision reads and renews them.
type keptBounds struct {
	shape string
	used  time.Time
	// byDomain are the bounds the decision found, by Domain.id; next those it keeps, of the
	// domains it was offered (a domain no longer offered is forgotten).
	byDomain, next map[string]keptBound
}

// keptBound is one domain's bound, with what it was read from.
type keptBound struct {
	cost Cost
	ok   bool
	at   time.Time
	// version is the domain's Version, 0 where it has none; gen is the highest generation of
	// the nodes read (the watched ones, and the domain's where it has no version), found how
	// many of them the snapshot had; watched are the nodes outside the domain holding pods of
	// its gangs.
	version uint64
	gen     int64
	found   int
	watched []string
}

// forShape returns the bounds kept for a shape, for one decision.
func (c *boundCache) forShape(shape string, domains []Domain) *keptBounds {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.shapes[shape]
	if k == nil {
		k = &keptBounds{shape: shape}
	}
	k.used = c.now()
	k.next = make(map[string]keptBound, len(domains))
	return k
}

// done keeps what a decision found, and forgets the least recently used shape beyond
// maxShapes.
func (c *boundCache) done(k *keptBounds) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k.byDomain, k.next = k.next, nil
	if c.shapes == nil {
		c.shapes = map[string]*keptBounds{}
	}
	c.shapes[k.shape] = k
	for len(c.shapes) > maxShapes {
		var oldest *keptBounds
		for _, s := range c.shapes {
			if oldest == nil || s.used.Before(oldest.used) {
				oldest = s
			}
		}
		delete(c.shapes, oldest.shape)
	}
}

// lowerBound returns domain d's bound (decision.lowerBound), the kept one if it still
// stands; computed: it was bounded afresh.
func (k *keptBounds) lowerBound(run *decision, d Domain) (floor Cost, ok, computed bool) {
	mine := run.mine(d)
	if b, kept := k.byDomain[d.id()]; kept && !mine && k.used.Sub(b.at) < boundTTL && b.version == d.Version {
		if gen, found := run.generation(d, b.watched); gen == b.gen && found == b.found {
			k.next[d.id()] = b
			return b.cost, b.ok, false
		}
	}
	bounder := run.bounderOf(d)
	floor, ok = bounder.bound()
	if mine {
		return floor, ok, true
	}
	if b, keep := run.keep(d, bounder, floor, ok); keep {
		b.at = k.used
		k.next[d.id()] = b
	}
	return floor, ok, true
}

// maxWatched bounds the nodes outside a domain whose generations its kept bound reads, so that
// a decision reads a few nodes per domain, whatever the gangs' size. Gangs spread over many
// racks (as per-pod scoring spreads them) reach more: their members leaving beyond the first
// maxWatched nodes are seen after boundTTL (the kept bound counts them, so it may be above
// the domain's cost until then).
const maxWatched = 16

// keep returns what keeps domain d's bound, false where the bound is the decision's alone
// (the tree's own pending members are on the domain's nodes) or its gangs are on nodes the
// snapshot does not have.
func (run *decision) keep(d Domain, b *bounder, floor Cost, ok bool) (keptBound, bool) {
	in := make(map[string]bool, len(d.Nodes))
	for _, n := range d.Nodes {
		in[n] = true
		if i, found := run.index.of(n); found && run.nodes.on(i).own {
			return keptBound{}, false
		}
	}
	var watched []string
	for _, s := range b.shares {
		if !s.unit.Gang {
			continue
		}
		for _, pi := range s.unit.Pods() {
			n := pi.GetPod().Spec.NodeName
			if in[n] {
				continue
			}
			if _, found := run.index.of(n); !found {
				return keptBound{}, false
			}
			in[n] = true
			if len(watched) < maxWatched {
				watched = append(watched, n)
			}
		}
	}
	gen, found := run.generation(d, watched)
	return keptBound{cost: floor, ok: ok, version: d.Version, gen: gen, found: found, watched: watched}, true
}

// mine reports whether what domain d holds is this decision's alone: one of its nodes holds
// the tree's own bound or reserved members, or pods other trees' preemptions are evicting.
func (run *decision) mine(d Domain) bool {
	if run.evicting.Len() == 0 && run.placed.Len() == 0 {
		return false
	}
	for _, n := range d.Nodes {
		if run.evicting.Has(n) || run.placed.Has(n) {
			return true
		}
	}
	return false
}

// generation returns the highest NodeInfo generation of the watched nodes, and of the
// domain's where it has no Version, and how many of them the snapshot has.
func (run *decision) generation(d Domain, watched []string) (gen int64, found int) {
	read := func(nodes []string) {
		for _, n := range nodes {
			if i, ok := run.index.of(n); ok {
				found++
				gen = max(gen, run.infos[i].GetGeneration())
			}
		}
	}
	if d.Version == 0 {
		read(d.Nodes)
	}
	read(watched)
	return gen, found
}

// shape is what a domain's bound reads of the tree: the mode, its priority, and its pending
// members' count, requests in all and smallest requests.
func (run *decision) shape() string {
	return fmt.Sprintf("%d/%d/%d/%v/%v", run.mode, run.priority, len(run.members), run.need, run.slot)
}
