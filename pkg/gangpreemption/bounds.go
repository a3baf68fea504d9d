package gangpreemption

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"
)

// Bounds kept from one decision to the next. Bounding every domain reads every pod of every
// node: at 15,000 nodes, most of a decision's CPU, and in a full cluster one decision follows
// another, each changing a rack or two. A domain's bound depends on the tree only through its
// shape (its threshold: which pods it may take, by the mode and its priority; its pending
// members' count, requests in all and smallest requests), and otherwise on what the domain's
// nodes hold and on the gangs there (their pods elsewhere count too). So each domain's bound is kept for the shape, with the domain's
// Version (the topology plugin's version of the domain, which changes with any of its nodes,
// and never comes back) and, for the nodes outside it that hold pods of its gangs, the
// Versions of their domains (and the nodes' NodeInfo generations: the scheduler's cache gives
// a NodeInfo a new generation, from one counter, at every change of its node or its pods).
// The next decision of a tree of the same shape uses it again while they stand: it reads no
// node of a domain that did not change, and a few numbers per domain. Where a watched domain
// moved, the watched nodes' generations say whether the bound still stands; a domain without
// a Version has its own nodes' generations read instead. A gang that gains a member on a node
// the bound did not read costs more than the kept bound says: it is lower than the bound
// afresh, so still a bound. The nodes watched outside a domain are at most maxWatched. What
// the bound was read from, each domain's free room and candidate victims summed and sorted, is
// kept too, by threshold, for decisions of other shapes (inventories.go).
//
// The topology plugin learns of a node's change when the informers tell it, or at its check
// of every node (once a second): a Version can lag the snapshot by that much, as a plan can.
//
// What a node holds is the decision's alone where its pods are being evicted by another
// tree's preemption or are the tree's own: such domains are bounded afresh and their bounds
// not kept. What the group model says of a pod can change without its node changing (a
// group deleted while its pods run, or created after them; a PriorityClass edited): the
// model logs where (Trees.Regrouped), and each decision first forgets the bounds of the
// domains that hold those nodes, of every shape, and their inventories. A gang's pods beyond
// the watched nodes can change unseen too: such a bound lives partialTTL at most. boundTTL bounds every other
// kept bound's life, for what neither foresees. Only the order of the domains and where the
// search stops rest on kept bounds; every domain dry run is run on the snapshot as it is, so
// a stale bound can make a decision look at one more domain, or miss a cheaper one for a
// while, and never evict for a plan that does not fit.

// boundTTL is how long a domain's bound is kept while its nodes and the model's word on its
// pods do not change, at most (reading.ttl takes up to a quarter off, by domain). Each expiry
// bounds the domain afresh: at 15,000 nodes, a 30-second life made that pass a third of the
// bounding work.
const boundTTL = 5 * time.Minute

// partialTTL is how long a bound is kept whose gangs have pods on more nodes outside the
// domain than it watches (maxWatched).
const partialTTL = 30 * time.Second

// maxShapes is how many shapes of trees have bounds kept: the least recently used goes.
const maxShapes = 16

// maxInventories is how many victim thresholds have inventories kept (inventories.go): the
// least recently used goes. A threshold's inventories are a few sorted lists a domain (about
// 1 MB at 15,000 nodes in racks of 20), where a shape's bounds are a few numbers a domain.
const maxInventories = 4

// boundCache keeps, by shape of tree, each domain's last bound, and by victim threshold, each
// domain's last inventory (inventories.go). Decisions run one at a time (in PostFilter, on the
// scheduling goroutine); mu guards the maps against any other reader.
type boundCache struct {
	mu          sync.Mutex
	now         func() time.Time
	shapes      map[string]*keptBy[keptBound]
	inventories map[string]*keptBy[inventory]
	// regrouping is the number of the model's last change the bounds were brought up to
	// (regrouped).
	regrouping uint64
	// maxRoomHosts is the constant's, or a test's.
	maxRoomHosts int
}

// regrouped forgets the bounds and inventories, of every shape and threshold, of the domains
// that hold a node whose pods the model may say something else of since the last decision;
// all of them where that may be any node.
func (c *boundCache) regrouped(trees Trees, run *decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nodes, all, now := trees.Regrouped(c.regrouping)
	c.regrouping = now
	if all {
		c.shapes, c.inventories = nil, nil
		return
	}
	if len(nodes) == 0 || (len(c.shapes) == 0 && len(c.inventories) == 0) {
		return
	}
	stale := map[int]bool{}
	for _, n := range nodes {
		if i, _ := run.domainOf(n); i >= 0 {
			stale[i] = true
		}
	}
	for i := range stale {
		id := run.domains[i].id()
		for _, k := range c.shapes {
			k.forget(id, i)
		}
		for _, k := range c.inventories {
			k.forget(id, i)
		}
	}
}

// maxRoomHosts is how many hosts the rooms kept with inventories (rooms) cover, in all
// thresholds together. A host's rooms are a few Resources (its free room and each victim's
// there): at 15,000 nodes of 2 pods, rooms for every rack take 2.4 MB, 21.6 MB where every pod
// asks for a GPU (a map per Resources). Beyond it, a domain is bounded from its nodes, as
// without rooms.
const maxRoomHosts = 20000

// keptBound is one domain's bound, with what it was read from.
type keptBound struct {
	cost Cost
	ok   bool
	reading
}

// reading is what a kept bound or inventory was read from, to tell whether it still stands.
type reading struct {
	at time.Time
	// version is the domain's Version, 0 where it has none; gen and found are the highest
	// generation of its nodes and how many of them the snapshot had. The Version is read
	// first, a number; where it moved, or there is none, the generations.
	version uint64
	gen     int64
	found   int
	watched []watch
	// partial: its gangs have pods on more nodes outside the domain than it watches.
	partial bool
}

// watch is the nodes of one other domain that hold pods of a domain's gangs. They are read by
// that domain's Version while it stands, a few numbers for every kept bound of a decision; once
// it moved (a node of it changed, maybe not these), by the nodes' generations.
type watch struct {
	// at is the domain's place in the decision's domains, -1 where the nodes are in none;
	// version its Version then.
	at      int
	version uint64
	nodes   []string
	gen     int64
	found   int
}

// kept is what one decision reads and keeps: its shape's bounds and its threshold's
// inventories, placed as its domains.
type kept struct {
	bounds      *keptBy[keptBound]
	inventories *keptBy[inventory]
	// inventory: domains read from their nodes have their inventories kept. Only once a
	// second shape of the threshold comes: where every tree has one shape, no decision pays
	// for sorting what no other shape will read.
	inventory bool
	// roomHosts is how many more hosts' rooms may be kept (maxRoomHosts less those kept).
	roomHosts *int
}

// forDecision returns the bounds kept for a shape and the inventories kept for a threshold,
// placed as the decision's domains.
func (c *boundCache) forDecision(shape, threshold string, domains []Domain) kept {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	k := kept{bounds: keptFor(c.shapes, shape, now, domains), inventories: &keptBy[inventory]{key: threshold}}
	k.inventory = c.inventories[threshold] != nil
	for other := range c.shapes {
		k.inventory = k.inventory || (other != shape && strings.HasPrefix(other, threshold+"|"))
	}
	if k.inventory {
		k.inventories = keptFor(c.inventories, threshold, now, domains)
	}
	left := c.maxRoomHosts
	for _, inv := range c.inventories {
		_, hosts := roomsKept(inv)
		left -= hosts
	}
	k.roomHosts = &left
	return k
}

// done keeps what a decision found, and forgets the least recently used shapes beyond
// maxShapes and thresholds beyond maxInventories.
func (c *boundCache) done(k kept) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shapes = keepRecent(c.shapes, k.bounds, maxShapes)
	if k.inventory {
		c.inventories = keepRecent(c.inventories, k.inventories, maxInventories)
	}
}

// boundSource is where a domain's bound came from.
type boundSource int

const (
	// keptSource: the bound kept for the shape stood.
	keptSource boundSource = iota
	// inventorySource: the inventory kept for the threshold stood; the domain has only a
	// floor (inventory.floor) until refine bounds it from its nodes.
	inventorySource
	// nodesSource: the domain's nodes were read.
	nodesSource
)

// lowerBound returns domain d, at place i of the decision's domains, its bound
// (decision.lowerBound): the kept one if it still stands, else the floor of the kept inventory
// if that stands (refine gives the bound), else one bounded from the domain's nodes read
// afresh; and where it came from.
func (k kept) lowerBound(run *decision, i int, d Domain) (floor Cost, ok bool, source boundSource) {
	now, id := k.bounds.used, d.id()
	mine := run.mine(i)
	if !mine {
		if b, found := k.bounds.get(id, i); found && now.Sub(b.at) < b.ttl(id) {
			if r, stands := run.stands(d, b.reading); stands {
				b.reading = r
				k.bounds.set(i, b)
				return b.cost, b.ok, keptSource
			}
		}
		if inv, found := k.inventories.get(id, i); found && now.Sub(inv.at) < inv.ttl(id) {
			if r, stands := run.stands(d, inv.reading); stands {
				inv.reading = r
				floor, ok = inv.floor(run.need)
				k.inventories.set(i, inv)
				k.bounds.forget(id, i) // it did not stand; refine keeps one afresh
				return floor, ok, inventorySource
			}
		}
	}
	floor, ok = k.read(run, i, d, mine)
	return floor, ok, nodesSource
}

// refine returns the bound of domain d, at place i, which lowerBound gave a floor of: from
// the rooms its inventory kept, where it kept them (its reading stood in lowerBound), else
// from its nodes; and keeps the bound for the shape.
func (k kept) refine(run *decision, i int, d Domain) (Cost, bool) {
	inv, found := k.inventories.get(d.id(), i)
	if !found || inv.rooms == nil {
		return k.read(run, i, d, false)
	}
	cost, ok := inv.rooms.bounder(run).bound()
	k.bounds.set(i, keptBound{cost: cost, ok: ok, reading: inv.reading})
	return cost, ok
}

// read bounds domain d, at place i, from its nodes, and keeps its bound for the shape and its
// inventory for the threshold, unless what it holds is the decision's alone (mine).
func (k kept) read(run *decision, i int, d Domain, mine bool) (Cost, bool) {
	id := d.id()
	bounder := run.bounderOf(d)
	floor, ok := bounder.bound()
	k.bounds.forget(id, i)
	if inv, found := k.inventories.get(id, i); found && inv.rooms != nil {
		*k.roomHosts += len(inv.rooms.hosts)
	}
	k.inventories.forget(id, i)
	if mine {
		return floor, ok
	}
	if r, keep := run.readingOf(d, bounder); keep {
		r.at = k.bounds.used
		k.bounds.set(i, keptBound{cost: floor, ok: ok, reading: r})
		if k.inventory {
			inv := inventoryOf(bounder, r)
			if short, _ := inv.floor(run.need); ok && run.mode.better(short, floor) && len(bounder.hosts) <= *k.roomHosts {
				inv.rooms = roomsOf(bounder)
				*k.roomHosts -= len(bounder.hosts)
			}
			k.inventories.set(i, inv)
		}
	}
	return floor, ok
}

// ttl is how long a bound or inventory of the domain of id is kept while what it watches
// stands: boundTTL (partialTTL where partial), less up to a quarter of it, the same for a
// domain every time (a hash of its id). A shape's first decision bounds every domain at once
// (at 15,000 nodes in racks of 20, 66–92 ms): with one life for all, the bounds of the
// domains that did not change since all expired together, and one decision bounded every
// domain again, every boundTTL. Spread over the last quarter of their life, they expire a
// few at a time, over the decisions of that quarter, and, each bounded again with its own
// life, stay spread.
func (b reading) ttl(id string) time.Duration {
	life := boundTTL
	if b.partial {
		life = partialTTL
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	// FNV's high bits barely move with an id's last byte (rack-1, rack-2...): splitmix64's
	// finalizer spreads them before they are read as a fraction.
	x := h.Sum64()
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return life - time.Duration(float64(life/4)*float64(x>>11)/(1<<53))
}

// stands reports whether what domain d's kept bound or inventory was read from is unchanged,
// and returns the reading with the domains it watches read by their Versions again where they
// moved but not the watched nodes.
//
// A Version moves at every read of a node the topology keeps, and a preemption's dry run reads
// the nodes it simulates from copies, then back from the snapshot: each dry run moved the
// Version of every domain holding a node it simulated, the whole cluster's among them. Read
// by the Version alone, a gang with no topology constraint, whose one domain is the cluster,
// bounded all 15,000 nodes again at every try after any dry run (a third of the scheduler's
// CPU with 2500 gangs waiting past reserveAfter while gangs of their priority ran:
// test/integration/gang's TestReactionUnderLoad). The snapshot's generations say whether a
// node changed, simulated or not.
func (run *decision) stands(d Domain, b reading) (reading, bool) {
	if b.version != d.Version || d.Version == 0 {
		if gen, found := run.generation(d.Nodes); gen != b.gen || found != b.found {
			return b, false
		}
		b.version = d.Version
	}
	renewed := false
	for i, w := range b.watched {
		if w.version != 0 && w.at < len(run.domains) && run.domains[w.at].Version == w.version {
			continue
		}
		if gen, found := run.generation(w.nodes); gen != w.gen || found != w.found {
			return b, false
		}
		if !renewed {
			b.watched, renewed = append([]watch(nil), b.watched...), true
		}
		b.watched[i].at, b.watched[i].version = run.domainOf(w.nodes[0])
	}
	return b, true
}

// maxWatched bounds the nodes outside a domain that its kept bound watches. They are watched
// by their domains' versions (a few integers per domain each decision), and read node by node
// only where such a domain moved, so a bound may watch many: a rack of 20 nodes holding
// members of 20 gangs of 8, spread over other racks as per-pod scoring spreads them, reaches
// 140 nodes. Beyond maxWatched, members leaving are seen after partialTTL (the kept bound
// counts them, so it may be above the domain's cost until then). With 16, nearly every rack's
// bound on the rack preemption shape was partial, and every rack was bounded again every
// 30 seconds.
const maxWatched = 256

// readingOf returns what domain d's bound and inventory, read into b, were read from; false
// where they are the decision's alone (the tree's own pending members are on the domain's
// nodes) or its gangs are on nodes the snapshot does not have.
func (run *decision) readingOf(d Domain, b *bounder) (reading, bool) {
	in := make(map[string]bool, len(d.Nodes))
	for _, n := range d.Nodes {
		in[n] = true
		if i, found := run.index.of(n); found && run.nodes.on(i).own {
			return reading{}, false
		}
	}
	kb := reading{version: d.Version}
	kb.gen, kb.found = run.generation(d.Nodes)
	byDomain := map[int]int{} // a watched domain's place in domains → its place in kb.watched
	watched := 0
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
				return reading{}, false
			}
			in[n] = true
			if watched == maxWatched {
				kb.partial = true
				continue
			}
			watched++
			at, version := run.domainOf(n)
			w, seen := byDomain[at]
			if !seen {
				w = len(kb.watched)
				byDomain[at] = w
				kb.watched = append(kb.watched, watch{at: at, version: version})
			}
			kb.watched[w].nodes = append(kb.watched[w].nodes, n)
		}
	}
	for i, w := range kb.watched {
		kb.watched[i].gen, kb.watched[i].found = run.generation(w.nodes)
	}
	return kb, true
}

// domainOf returns the place among the decision's domains of the one that holds the node,
// and its Version; -1 and 0 where none does.
func (run *decision) domainOf(node string) (int, uint64) {
	if i, ok := run.dry.DomainOf(node); ok && i < len(run.domains) {
		return i, run.domains[i].Version
	}
	return -1, 0
}

// mine reports whether what the domain at place i holds is this decision's alone: one of its
// nodes holds the tree's own bound or reserved members, or pods other trees' preemptions are
// evicting.
func (run *decision) mine(i int) bool { return run.own.Has(i) }

// generation returns the highest NodeInfo generation of the nodes, and how many of them the
// snapshot has.
func (run *decision) generation(nodes []string) (gen int64, found int) {
	for _, n := range nodes {
		if i, ok := run.index.of(n); ok {
			found++
			gen = max(gen, run.infos[i].GetGeneration())
		}
	}
	return gen, found
}

// shape is what a domain's bound reads of the tree: its threshold (which pods it may take), and
// its pending members' count, requests in all and smallest requests. It starts with the
// threshold and "|".
func (run *decision) shape() string {
	return fmt.Sprintf("%s|%d/%v/%v", run.threshold(), len(run.members), run.need, run.slot)
}
