package podgroup

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// heldRounds are the rounds that may be held back after a failed attempt (Round.heldBack): a
// superset, pruned as it is read, so that news looks at the trees it may retry, not at every
// tree with a round (a round lives as long as its root group, and a pod leaving is news).
//
// Those whose least need is known (Round.needKnown) are also kept by the CPU of that need, so
// that room freed on a node is weighed only against the rounds whose need's CPU fits in it:
// a pod deleted from a full node is news for none of 10,000 waiting gangs, found without
// looking at each of them (each deletion read every held round: 0.8 s of a 5-minute window at
// one deletion a second, docs/benchmarks.md's W4).
type heldRounds struct {
	// all are the held rounds, each with where it is kept.
	all map[Key]heldRound
	// unknown are the rounds whose need is not known: any room is news for them.
	unknown sets.Set[Key]
	// byCPU are the others, by their need's CPU; cpus are its keys, sorted.
	byCPU map[int64]sets.Set[Key]
	cpus  []int64
}

// heldRound is a held round and where it is kept: its need known, by cpu; or with the
// unknown. Where it is kept is what its need was when it was put, which put brings up to date.
type heldRound struct {
	round *Round
	known bool
	cpu   int64
}

func newHeldRounds() heldRounds {
	return heldRounds{all: map[Key]heldRound{}, unknown: sets.New[Key](), byCPU: map[int64]sets.Set[Key]{}}
}

// put keeps r as held, where its need says (again after its need changed).
func (h *heldRounds) put(r *Round) {
	want := heldRound{round: r, known: r.needKnown}
	if r.needKnown {
		want.cpu = r.need.MilliCPU
	}
	if h.all[r.root] == want {
		return
	}
	h.remove(r.root)
	h.all[r.root] = want
	if !want.known {
		h.unknown.Insert(r.root)
		return
	}
	bucket := h.byCPU[want.cpu]
	if bucket == nil {
		bucket = sets.New[Key]()
		h.byCPU[want.cpu] = bucket
		i, _ := slices.BinarySearch(h.cpus, want.cpu)
		h.cpus = slices.Insert(h.cpus, i, want.cpu)
	}
	bucket.Insert(r.root)
}

// repositioned keeps r where its need now says, if it is held.
func (h *heldRounds) repositioned(r *Round) {
	if h.all[r.root].round == r {
		h.put(r)
	}
}

// remove forgets root.
func (h *heldRounds) remove(root Key) {
	at, ok := h.all[root]
	if !ok {
		return
	}
	delete(h.all, root)
	if !at.known {
		h.unknown.Delete(root)
		return
	}
	bucket := h.byCPU[at.cpu]
	bucket.Delete(root)
	if bucket.Len() == 0 {
		delete(h.byCPU, at.cpu)
		if i, found := slices.BinarySearch(h.cpus, at.cpu); found {
			h.cpus = slices.Delete(h.cpus, i, i+1)
		}
	}
}

// rounds returns the roots of the rounds held back, and forgets the ones no longer held.
func (h *heldRounds) rounds() []Key {
	var roots []Key
	for root, held := range h.all {
		roots = h.take(roots, root, held.round, nil)
	}
	return roots
}

// fitting returns the roots of the rounds held back that room free can help: those whose need
// is not known, and those whose need fits in free. It reads only the rounds whose need's CPU
// fits, and forgets the ones it reads no longer held.
func (h *heldRounds) fitting(free capacity.Resources) []Key {
	fits := func(r *Round) bool { return !r.needKnown || free.Fits(r.need) }
	candidates := h.unknown.UnsortedList()
	for _, cpu := range h.cpus {
		if cpu > free.MilliCPU {
			break
		}
		candidates = append(candidates, h.byCPU[cpu].UnsortedList()...)
	}
	var roots []Key
	for _, root := range candidates { // taking may change the sets
		roots = h.take(roots, root, h.all[root].round, fits)
	}
	return roots
}

// take appends root to roots if its round r is held back and keep (nil: any) accepts it;
// a round no longer held back is forgotten (a round leaves held with its root, ForgetGroup).
func (h *heldRounds) take(roots []Key, root Key, r *Round, keep func(*Round) bool) []Key {
	if !r.heldBack() {
		h.remove(root)
		return roots
	}
	if keep == nil || keep(r) {
		roots = append(roots, root)
	}
	return roots
}
