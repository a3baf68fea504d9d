package podgroup

import (
	"context"
	"fmt"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
)

// failingGangs sets up n gangs of 2 that fail to fit, their groups in a fake clientset and
// lister, and a status writer on a fake clock that counts writes and events.
func failingGangs(t *testing.T, n int) (m *Model, w *StatusWriter, keys []Key, now *time.Time, writes func() int, rec *events.FakeRecorder) {
	t.Helper()
	m, _, _ = testModel(t)
	client := fake.NewSimpleClientset()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for i := range n {
		obj := lt.MakePodGroup().Namespace("ns").Name(fmt.Sprintf("g%d", i)).Gang(2).Obj()
		if err := client.Tracker().Add(obj); err != nil {
			t.Fatal(err)
		}
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
		m.OnGroup(nil, obj)
		for j := range 2 {
			m.OnPod(nil, lt.Member("ns", obj.Name, j).Obj())
		}
		keys = append(keys, PodGroupKey("ns", obj.Name))
	}
	rec = events.NewFakeRecorder(100000)
	w = NewStatusWriter(client, listers.NewPodGroupLister(indexer),
		listers.NewCompositePodGroupLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), rec)
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	now = &t0
	w.now = func() time.Time { return *now }
	writes = func() int {
		c := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				c++
			}
		}
		return c
	}
	return m, w, keys, now, writes, rec
}

// A gang that fails for an hour, its details changing at every attempt (every 10 s), writes
// its group at most 12 times in the hour (its state once, then details ever more rarely) and
// tells one event: not a write every 30 s with three events each.
func TestFailingGangWritesPerHour(t *testing.T) {
	m, w, keys, now, writes, rec := failingGangs(t, 1)
	k := keys[0]
	for i := 0; i < 360; i++ {
		m.permits.attempts.Outcome(k).Failure = fmt.Sprintf("cannot fit: %d of 2 pods placed; attempt %d", i%2, i)
		if err := w.sync(context.Background(), m.Gate(), k); err != nil {
			t.Fatal(err)
		}
		*now = now.Add(10 * time.Second)
	}
	if got := writes(); got > 12 || got < 2 {
		t.Errorf("%d status writes in an hour of failures, want 2 to 12", got)
	}
	if got := len(rec.Events); got != 1 {
		t.Errorf("%d events in an hour of failures of one state, want 1", got)
	}
	t.Logf("one failing gang, one hour: %d status writes, %d events", writes(), len(rec.Events))
	// A change of state is written at once, with its event.
	m.permits.attempts.Outcome(k).Reserving = "rack r1 held"
	before := writes()
	if err := w.sync(context.Background(), m.Gate(), k); err != nil {
		t.Fatal(err)
	}
	if writes() != before+1 {
		t.Error("a change of state was not written at once")
	}
}

// Rewrites of details of every group together spend one budget: a thousand gangs whose
// details are due at once write at most the budget's burst, then its rate; their changes of
// state are not held back.
func TestDetailsRewritesShareABudget(t *testing.T) {
	const n = 1000
	m, w, keys, now, writes, _ := failingGangs(t, n)
	ctx := context.Background()
	for _, k := range keys {
		m.permits.attempts.Outcome(k).Failure = "cannot fit: 0 of 2 pods placed"
		if err := w.sync(ctx, m.Gate(), k); err != nil {
			t.Fatal(err)
		}
	}
	if got := writes(); got != n {
		t.Fatalf("%d writes of the first failure of %d gangs, want %d: changes of state are not budgeted", got, n, n)
	}
	*now = now.Add(detailsRefresh + time.Second)
	for _, k := range keys {
		m.permits.attempts.Outcome(k).Failure = "cannot fit: 1 of 2 pods placed"
		if err := w.sync(ctx, m.Gate(), k); err != nil {
			t.Fatal(err)
		}
	}
	if got := writes() - n; got > detailsBudgetBurst {
		t.Errorf("%d rewrites of details at one instant, want at most the burst %d", got, detailsBudgetBurst)
	}
}
