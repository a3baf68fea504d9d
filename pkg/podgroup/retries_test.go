package podgroup

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// heldUntil answers, for every tree of a news batch, what a pass over every floor would: the
// latest end of the floors that hold and are ahead of it (all of them for a tree with no member
// to try). Seeded random floors and trees, of few priorities and moments so that keys tie but
// for their roots, against that pass.
func TestHeldUntilIsTheLatestFloorAhead(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rnd := rand.New(rand.NewSource(seed))
		key := func() SortKey {
			return SortKey{Priority: int32(rnd.Intn(3)), Finishing: rnd.Intn(4) == 0,
				Time: epoch.Add(time.Duration(rnd.Intn(4)) * time.Second), Root: fmt.Sprintf("r%03d", rnd.Intn(1000))}
		}
		floors := map[Key]floor{}
		for i := range rnd.Intn(12) {
			floors[PodGroupKey("ns", fmt.Sprint("floor", i))] = floor{key: key(), holds: rnd.Intn(3) > 0,
				ends: epoch.Add(time.Duration(1+rnd.Intn(2000)) * time.Millisecond)}
		}
		held := heldUntil(floors)
		for range 20 {
			k, known := key(), rnd.Intn(5) > 0
			var want time.Time
			for _, f := range floors {
				if f.holds && (!known || f.key.Before(k)) && f.ends.After(want) {
					want = f.ends
				}
			}
			if got := held(k, known); !got.Equal(want) {
				t.Fatalf("seed %d: a tree of key %+v (known %v) held until %v, want %v; floors %+v", seed, k, known, got, want, floors)
			}
		}
	}
}
