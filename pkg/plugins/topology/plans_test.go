package topology

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A preempting plan, and with it its members' nominations, lives while any of its victims is
// still there to wait for, however long their graceful termination takes (a checkpointing
// job's ten minutes; one stuck past its grace period is not waited for: victimThere, tested in
// TestVictimsStuckTerminatingAreNotWaitedFor); once they are gone it expires as any plan.
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

// The model asks the plans whether a preempting tree waits for its victims with its own lock
// held (newsLocked), and the plans' Promised asks the model whether members are pending: the
// plans must not ask with their lock held, or the two wait for each other forever.
func TestPlansAndTheModelNeverWaitForEachOther(t *testing.T) {
	plans := NewPlans()
	plans.WatchVictims(func(types.UID, types.NamespacedName) bool { return true })
	m := podgroup.New(podgroup.Options{Scheduler: noScheduler{}, Clock: stillClock{}, Observer: plans, Logger: logr.Discard()})
	m.AddProfile(podgroup.Profile{Name: lt.SchedulerName})
	pol := podgroup.Policy{PermitTimeout: time.Minute, Backoff: 10 * time.Second}
	for _, name := range []string{"hi", "other"} {
		m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(2).Obj())
		pods := lt.Members("ns", name, 2, lt.CPU("1"))
		for _, p := range pods {
			m.OnPod(nil, p)
		}
		m.Permits().Fail(klog.Background(), pods[0], "0/1 nodes are available", pol)
		plan := &Plan{Root: podgroup.PodGroupKey("ns", name), Expires: time.Now().Add(time.Hour), Pods: map[types.UID]PlannedPod{},
			Victims: map[types.UID]types.NamespacedName{"v": {Namespace: "ns", Name: "v"}}}
		for _, p := range pods {
			plan.Pods[p.UID] = PlannedPod{Node: "n1", Request: capacity.Resources{MilliCPU: 1000, Pods: 1}}
		}
		plans.Store(plan)
		m.Permits().NotePreempting(plan.Root, "taking node n1: evicting 1 pod of priority 0 (0 gangs whole)")
	}
	done := make(chan struct{}, 2)
	go func() {
		for range 2000 {
			plans.Promised(podgroup.PodGroupKey("ns", "other"), m.Gate().Pending)
		}
		done <- struct{}{}
	}()
	go func() {
		for range 2000 {
			m.OnCapacity("pod ns/x left node n1") // news: the model asks the plans about "hi"
		}
		done <- struct{}{}
	}()
	for range 2 {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the plans and the model wait for each other")
		}
	}
}
