package topology

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// A preempting plan, and with it its members' nominations, lives while any of its victims
// still exists, however long their termination takes (a checkpointing job's ten minutes);
// once they are gone it expires as any plan.
func TestPreemptingPlanLivesWhileVictimsRemain(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	plans := NewPlans()
	plans.now = func() time.Time { return now }
	left := true
	plans.WatchVictims(func(types.UID, types.NamespacedName) bool { return left })
	root := podgroup.PodGroupKey("ns", "hi")
	plans.Store(&Plan{Root: root, Expires: now.Add(victimsGrace), Freed: "rack r1",
		Victims: map[types.UID]types.NamespacedName{"v": {Namespace: "ns", Name: "v"}}})
	for range 20 { // ten minutes
		now = now.Add(victimsRecheck)
		if plans.Get(root) == nil {
			t.Fatalf("the plan expired at %s while a victim still terminates", now.Format(time.TimeOnly))
		}
	}
	left = false
	now = now.Add(victimsRecheck + time.Second)
	if plans.Get(root) != nil {
		t.Error("the plan outlived its victims and its expiry")
	}
	plans.Store(&Plan{Root: root, Expires: now.Add(time.Minute)})
	now = now.Add(2 * time.Minute)
	if plans.Get(root) != nil {
		t.Error("a plan that preempted nobody outlived its expiry")
	}
}

// A tree whose live plan preempted waits while any of its victims is still there, and news
// cannot help it before they are gone (the model asks, podgroup.RoundObserver); the victims
// left are counted for its members' message.
func TestAwaitsVictims(t *testing.T) {
	plans := NewPlans()
	there := sets.New[types.UID]("v1", "v2")
	plans.WatchVictims(func(uid types.UID, _ types.NamespacedName) bool { return there.Has(uid) })
	root, quiet := podgroup.PodGroupKey("ns", "hi"), podgroup.PodGroupKey("ns", "quiet")
	plan := &Plan{Root: root, Expires: time.Now().Add(time.Minute), Victims: map[types.UID]types.NamespacedName{
		"v1": {Namespace: "ns", Name: "v1"}, "v2": {Namespace: "ns", Name: "v2"}, "v3": {Namespace: "ns", Name: "v3"}}}
	plans.Store(plan)
	plans.Store(&Plan{Root: quiet, Expires: time.Now().Add(time.Minute)})
	check := func(when string, k podgroup.Key, wantPreempted, wantWaiting bool) {
		t.Helper()
		if preempted, waiting := plans.AwaitsVictims(k); preempted != wantPreempted || waiting != wantWaiting {
			t.Errorf("%s: AwaitsVictims(%s) = %v, %v; want %v, %v", when, k, preempted, waiting, wantPreempted, wantWaiting)
		}
	}
	check("two victims there", root, true, true)
	if left := plans.VictimsLeft(plan); left != 2 {
		t.Errorf("VictimsLeft = %d, want 2", left)
	}
	there.Delete("v1")
	check("one victim there", root, true, true)
	there.Delete("v2")
	check("every victim gone", root, true, false)
	if left := plans.VictimsLeft(plan); left != 0 {
		t.Errorf("VictimsLeft with every victim gone = %d, want 0", left)
	}
	check("a plan that preempted nobody", quiet, false, false)
	check("no plan", podgroup.PodGroupKey("ns", "none"), false, false)
}

// The victims of other trees' live preempting plans are being evicted: a dry run counts them
// leaving (gangpreemption.DryRun.Evicting), and bounds their nodes afresh, never its own
// tree's, nor an expired plan's.
func TestPlansEvicting(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	plans := NewPlans()
	plans.now = func() time.Time { return now }
	a, b, c := podgroup.PodGroupKey("ns", "a"), podgroup.PodGroupKey("ns", "b"), podgroup.PodGroupKey("ns", "c")
	plans.Store(&Plan{Root: a, Expires: now.Add(time.Minute), Victims: map[types.UID]types.NamespacedName{"va": {Namespace: "ns", Name: "va"}}, VictimNodes: sets.New("na")})
	plans.Store(&Plan{Root: b, Expires: now.Add(time.Minute), Victims: map[types.UID]types.NamespacedName{"vb": {Namespace: "ns", Name: "vb"}}, VictimNodes: sets.New("nb")})
	plans.Store(&Plan{Root: c, Expires: now.Add(-time.Second), Victims: map[types.UID]types.NamespacedName{"vc": {Namespace: "ns", Name: "vc"}}, VictimNodes: sets.New("nc")})
	got := plans.Evicting(a)
	if fmt.Sprint(sets.List(got.Pods), sets.List(got.Nodes)) != "[vb] [nb]" {
		t.Errorf("Evicting(a) = %v on %v, want [vb] on [nb]", sets.List(got.Pods), sets.List(got.Nodes))
	}
}
