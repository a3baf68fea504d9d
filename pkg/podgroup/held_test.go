package podgroup

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// TestHeldFittingIsTheFilterOverEveryHeldRound checks the held rounds' index by need against
// the pass over every held round it replaces (room free can help a round whose need is not
// known or fits in it), on seeded sequences of rounds held, their needs changed, their tries
// started (no longer held back) and their groups forgotten.
func TestHeldFittingIsTheFilterOverEveryHeldRound(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		as := NewAttempts()
		var roots []Key
		for i := 0; i < 12; i++ {
			roots = append(roots, Key{Kind: KindPodGroup, Namespace: "ns", Name: fmt.Sprintf("g%d", i)})
		}
		res := func() capacity.Resources {
			return capacity.Resources{MilliCPU: int64(rng.Intn(5)) * 500, Memory: int64(rng.Intn(3)), Pods: int64(rng.Intn(2))}
		}
		for step := 0; step < 60; step++ {
			root := roots[rng.Intn(len(roots))]
			switch op := rng.Intn(5); op {
			case 0, 1: // a failed attempt: held, then its need is known or not
				r := as.RoundOf(root)
				as.stall(r)
				as.setNeed(r, res(), rng.Intn(3) > 0)
			case 2: // a new try: the round is no longer held back
				if r := as.Round(root); r != nil {
					r.stalled = false
					clear(r.failed)
				}
			case 3: // a member failed
				as.failMember(as.RoundOf(root), "uid", root)
			case 4:
				as.ForgetGroup(root)
			}
			free := res()
			var want []Key
			for _, root := range as.heldRounds() {
				if r := as.Round(root); !r.needKnown || free.Fits(r.need) {
					want = append(want, root)
				}
			}
			got := as.heldFitting(free)
			slices.SortFunc(got, compareKeys)
			slices.SortFunc(want, compareKeys)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, step %d: held rounds %v can help with free %+v, want %v", seed, step, got, free, want)
			}
		}
	}
}
