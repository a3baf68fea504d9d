package podgroup

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// The earliest creation of each group's members without a node, which the metrics read at
// every scrape, is kept as members come, bind, move between groups and go: after every change
// of a seeded random sequence it is what reading every member says. Creation times are drawn
// from a few seconds, as a controller's pods share theirs.
func TestUnboundSinceFollowsTheMembers(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			ms := NewMembers()
			groups := []Key{PodGroupKey("ns", "a"), PodGroupKey("ns", "b"), PodGroupKey("ns", "c")}
			for step := range 400 {
				name := fmt.Sprintf("p%d", rng.Intn(12))
				k := groups[rng.Intn(len(groups))]
				switch rng.Intn(3) {
				case 0:
					ms.Remove(types.UID(name))
				default:
					w := lt.Member("ns", k.Name, 0).Name(name).UID(name).
						CreationTimestamp(metav1.NewTime(lt.Epoch.Add(time.Duration(rng.Intn(4)) * time.Second)))
					if prev := ms.Of(w.Obj().UID); prev != nil {
						// A pod's creation never changes: only its group and node do.
						w = w.CreationTimestamp(prev.Pod.CreationTimestamp)
					}
					if rng.Intn(3) == 0 {
						w = w.Node("n1")
					}
					ms.Put(w.Obj(), k)
				}
				if got, want := unboundSince(ms), readEveryMember(ms); !cmp.Equal(got, want) {
					t.Fatalf("step %d: earliest unbound creation by group %v, reading every member %v", step, got, want)
				}
			}
		})
	}
}

func unboundSince(ms *Members) map[Key]time.Time {
	out := map[Key]time.Time{}
	for k, t := range ms.Unbound() {
		out[k] = t
	}
	return out
}

func readEveryMember(ms *Members) map[Key]time.Time {
	out := map[Key]time.Time{}
	for _, m := range ms.byUID {
		if m.Bound() {
			continue
		}
		if t, ok := out[m.Group]; !ok || m.Pod.CreationTimestamp.Time.Before(t) {
			out[m.Group] = m.Pod.CreationTimestamp.Time
		}
	}
	return out
}
