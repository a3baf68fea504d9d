package podgroup

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/sets"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// The regrouping log says where what the model says of running pods changed with no pod
// changing: a group created over running pods, its parent created or edited, a group deleted
// while its pods run, a PriorityClass edited (everywhere). Gang preemption's kept bounds
// follow it instead of expiring every 30 seconds; a change it missed would keep a bound that
// is no longer one.
func TestRegroupedSaysWhereRunningPodsChangedGroup(t *testing.T) {
	m, _, _ := testModel(t)
	g := m.Gate()
	since := uint64(0)
	expect := func(what string, nodes []string, all bool) {
		t.Helper()
		gotNodes, gotAll, now := g.Regrouped(since)
		if !cmp.Equal(gotNodes, nodes) || gotAll != all {
			t.Errorf("%s: Regrouped = %v, all %v; want %v, all %v", what, gotNodes, gotAll, nodes, all)
		}
		since = now
	}
	m.OnPod(nil, lt.Member("ns", "a", 0).Node("n1").Obj())
	m.OnPod(nil, lt.Member("ns", "a", 1).Node("n2").Obj())
	m.OnPod(nil, lt.Member("ns", "b", 0).Obj()) // pending
	expect("pods only", nil, false)

	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("job").Obj())
	expect("group created over running pods", []string{"n1", "n2"}, false)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(1).Obj())
	expect("a group of pending pods only", nil, false)

	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj())
	expect("parent created", []string{"n1", "n2"}, false)

	pg := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("job").Obj()
	m.OnGroupDelete(pg)
	expect("group deleted while its pods run", []string{"n1", "n2"}, false)
	expect("nothing since", nil, false)

	// A member reserved on a node (waiting at Permit for its gang) is there too.
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("w").Gang(2).Obj())
	waiter := lt.Member("ns", "w", 0).Obj()
	m.OnPod(nil, waiter)
	if d := reservePermit(m, waiter); d.Allow {
		t.Fatal("the first of a gang of 2 was allowed, want it to wait")
	}
	expect("a gang waiting", nil, false)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("w").Gang(2).Parent("job").Obj())
	expect("a group edited while its member waits reserved", []string{"n1"}, false)

	m.OnPriorityClass()
	expect("a PriorityClass edited", nil, true)

	m.regroupings.limit = 3
	for i := range 4 {
		m.OnPod(nil, lt.Member("ns", "c", i).Node(fmt.Sprintf("m%d", i)).Obj())
	}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("c").Gang(1).Obj())
	expect("more nodes than it remembers", nil, true)
	if n := len(m.regroupings.at); n > 3 {
		t.Errorf("%d nodes remembered, want at most 3", n)
	}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	expect("then a change as before", []string{"n1", "n2"}, false)
}

// The log answers as a scan of every change would: seeded random changes over few or many
// nodes, PriorityClass edits, readers at random past changes, a small limit that forgets the
// older half (then a reader from before is told every node) and compactions of the log.
func TestRegroupingLogAnswersAsEveryChange(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		rng := rand.New(rand.NewSource(seed))
		r := regroupings{limit: 5 + rng.Intn(40), slack: 1 + rng.Intn(20)}
		var changes []sets.Set[string] // changes[i] touched seq i+1; nil: every node
		for step := range 400 {
			switch x := rng.Intn(100); {
			case x < 2:
				r.everywhere()
				changes = append(changes, nil)
			case x < 70:
				nodes := sets.New[string]()
				for range 1 + rng.Intn(6) {
					nodes.Insert(fmt.Sprintf("n%d", rng.Intn(60)))
				}
				r.note(nodes)
				changes = append(changes, nodes)
			default:
				since := uint64(rng.Intn(len(changes) + 1))
				got, all, now := r.since(since)
				if now != uint64(len(changes)) {
					t.Fatalf("seed %d step %d: now %d, want %d", seed, step, now, len(changes))
				}
				want := sets.New[string]()
				wantAll := false
				for _, c := range changes[since:] {
					if c == nil {
						wantAll = true
					}
					want = want.Union(c)
				}
				if all {
					// Allowed where the reader asks from before what is remembered: never
					// for a change that was not there.
					if since >= r.floor {
						t.Fatalf("seed %d step %d: all from %d, floor %d", seed, step, since, r.floor)
					}
					continue
				}
				if wantAll {
					t.Fatalf("seed %d step %d: a change of every node since %d not told", seed, step, since)
				}
				if !cmp.Equal(got, sets.List(want), cmpopts.EquateEmpty()) {
					t.Fatalf("seed %d step %d: since %d = %v, want %v", seed, step, since, got, sets.List(want))
				}
			}
			if len(r.log) > 2*len(r.at)+r.slack+6 {
				t.Fatalf("seed %d step %d: log of %d notes for %d nodes", seed, step, len(r.log), len(r.at))
			}
		}
	}
}
