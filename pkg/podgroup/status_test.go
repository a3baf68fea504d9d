package podgroup

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
)

func TestCondition(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(m *Model)
		key     Key
		want    Condition
		noWrite bool
	}{
		{
			name: "gang short of pods",
			setup: func(m *Model) {
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
				addPods(m, "a", 1)
			},
			key: PodGroupKey("ns", "a"),
			want: Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable,
				Message: "waiting for pods: minCount is 3", Note: "waiting for pods: 1 of 3 pods exist"},
		},
		{
			name: "enough pods and no attempt yet: nothing to say",
			setup: func(m *Model) {
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Obj())
				addPods(m, "a", 1)
			},
			key:     PodGroupKey("ns", "a"),
			noWrite: true,
		},
		{
			name: "composite short of children",
			setup: func(m *Model) {
				m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj())
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("s0").Gang(1).Parent("job").Obj())
				addPods(m, "s0", 1)
			},
			key: CompositePodGroupKey("ns", "job"),
			want: Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable,
				Message: "waiting for child groups: 1 of 2 child groups ready", Note: "waiting for child groups: 1 of 2 child groups ready"},
		},
		{
			name: "child ready, waiting for its siblings",
			setup: func(m *Model) {
				m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj())
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("s0").Gang(1).Parent("job").Obj())
				addPods(m, "s0", 1)
			},
			key: PodGroupKey("ns", "s0"),
			want: Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable,
				Message: "waiting for the rest of the tree: job: 1 of 2 child groups ready", Note: "waiting for the rest of the tree: job: 1 of 2 child groups ready"},
		},
		{
			name: "invalid",
			setup: func(m *Model) {
				m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("a").Gang(1).Parent("b").Obj())
				m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("b").Gang(1).Parent("a").Obj())
			},
			key: CompositePodGroupKey("ns", "b"),
			want: Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalid,
				Message: "invalid: cycle: b → a → b; " + recreateAdvice, Note: "invalid: cycle: b → a → b; " + recreateAdvice},
		},
		{
			name: "scheduled and bound",
			setup: func(m *Model) {
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
				for _, p := range addPods(m, "a", 2) {
					reservePermit(m, p)
					m.OnPod(p, assumed(p, "n1"))
				}
			},
			key: PodGroupKey("ns", "a"),
			want: Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonScheduled,
				Message: "2 pods placed together (minCount 2)", Note: "2 pods placed together (minCount 2)", Since: epoch},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			tc.setup(m)
			got, ok := m.Gate().Condition(tc.key)
			if ok == tc.noWrite {
				t.Fatalf("Condition ok = %v, want %v", ok, !tc.noWrite)
			}
			got.UID, got.Generation = "", 0
			if got != tc.want {
				t.Errorf("Condition %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The writer writes a condition once per transition, however often it is asked, and never
// rewrites a True condition.
func TestStatusWriterWritesOncePerTransition(t *testing.T) {
	m, _, _ := testModel(t)
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	w, client, indexer := newStatusWriterOf(t, obj)
	key := PodGroupKey("ns", "a")
	ctx := context.Background()

	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	sync := func() {
		t.Helper()
		if err := w.sync(ctx, m.Gate(), key); err != nil {
			t.Fatal(err)
		}
	}

	m.OnGroup(nil, obj)
	pods := []*v1.Pod{lt.Member("ns", "a", 0).Obj(), lt.Member("ns", "a", 1).Obj(), lt.Member("ns", "a", 2).Obj()}
	m.OnPod(nil, pods[0])
	sync()
	m.OnPod(nil, pods[1])
	sync()
	if got := writes(); got != 1 {
		t.Fatalf("%d writes while waiting for pods, want 1", got)
	}
	m.OnPod(nil, pods[2])
	sync()
	if got := writes(); got != 1 {
		t.Fatalf("%d writes once all pods exist, want still 1", got)
	}
	for _, p := range pods {
		reservePermit(m, p)
	}
	sync()
	if got := writes(); got != 1 {
		t.Fatalf("%d writes while binds are in flight, want still 1", got)
	}
	for _, p := range pods {
		m.OnPod(p, assumed(p, "n1"))
	}
	sync()
	sync()
	if got := writes(); got != 2 {
		t.Fatalf("%d writes after scheduling, want 2", got)
	}
	// The object now carries True: a later failure does not regress it.
	updated, err := client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := indexer.Update(updated); err != nil {
		t.Fatal(err)
	}
	// A member lost, the gang is short: PodGroupInitiallyScheduled stays True (it ran; Short
	// says it is short).
	m.OnPodDelete(assumed(pods[0], "n1"))
	if c, _ := m.Gate().Condition(key); c.Status != metav1.ConditionTrue {
		t.Fatalf("short, the group's condition is %+v, want True", c)
	}
	sync()
	if got := writes(); got != 3 {
		t.Errorf("%d writes, want one more: Short", got)
	}
	updated, err = client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	conds := updated.(*v1alpha1.PodGroup).Status.Conditions
	if c := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("PodGroupInitiallyScheduled is %+v, want a True condition never rewritten", c)
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.Short); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonMemberLost {
		t.Errorf("Short is %+v, want True, MemberLost", c)
	}
	// A group deleted and created again under the same name, not seen by the model yet, is
	// not written with what the model knows of its predecessor.
	recreated := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	recreated.UID = "pg-a-2"
	if err := indexer.Update(recreated); err != nil {
		t.Fatal(err)
	}
	sync()
	if got := writes(); got != 3 {
		t.Errorf("%d writes, want none on an object the model has not judged", got)
	}
}

// statusKeys records the groups the model asks the status writer to look at.
type statusKeys struct{ keys []Key }

func (s *statusKeys) Enqueue(k Key)                       { s.keys = append(s.keys, k) }
func (s *statusKeys) EnqueueAfter(k Key, _ time.Duration) { s.keys = append(s.keys, k) }

// When the last member of a tree binds, every group of its path is looked at again: the
// root's condition waits for the binds of the members it allowed, so a bind must bring the
// root (not only the member's own PodGroup) to the status writer.
func TestBindBringsTheWholePathToTheStatusWriter(t *testing.T) {
	m, _, _ := testModel(t)
	q := &statusKeys{}
	m.status = q
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("root").Gang(2).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Parent("root").Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(1).Parent("root").Obj())
	pa, pb := lt.Member("ns", "a", 0).Obj(), lt.Member("ns", "b", 0).Obj()
	m.OnPod(nil, pa)
	m.OnPod(nil, pb)
	reservePermit(m, pa)
	if d := reservePermit(m, pb); !d.Allow {
		t.Fatalf("Permit = %+v, want the tree allowed", d)
	}
	q.keys = nil
	for _, p := range []*v1.Pod{pa, pb} {
		bound := p.DeepCopy()
		bound.Spec.NodeName = "n1"
		m.OnPod(p, bound)
	}
	if !slices.Contains(q.keys, CompositePodGroupKey("ns", "root")) {
		t.Errorf("after the binds the status writer was asked about %v, want the root among them", q.keys)
	}
}

// A gang running short that loses another member brings its group to the status writer: its
// Short condition counts the members bound, though its state (PartiallyBound) does not move.
func TestMemberLostWhileShortBringsTheGroupToTheStatusWriter(t *testing.T) {
	m, _, _ := testModel(t)
	q := &statusKeys{}
	m.status = q
	key := PodGroupKey("ns", "a")
	pods := runningGang(m, "a", 3)
	shortSays := func() string {
		t.Helper()
		d, _ := m.Gate().Conditions(key)
		if d.Short == nil || d.Short.Status != metav1.ConditionTrue {
			t.Fatalf("Short is %+v, want True", d.Short)
		}
		return d.Short.Message
	}
	m.OnPodDelete(assumed(pods[0], "n1"))
	if msg := shortSays(); !strings.Contains(msg, "running short: 2 of 3 pods bound") {
		t.Fatalf("Short says %q after a member was lost, want 2 of 3 bound", msg)
	}
	q.keys = nil
	m.OnPodDelete(assumed(pods[1], "n1"))
	if msg := shortSays(); !strings.Contains(msg, "running short: 1 of 3 pods bound") {
		t.Fatalf("Short says %q after another member was lost, want 1 of 3 bound", msg)
	}
	if !slices.Contains(q.keys, key) {
		t.Errorf("after another member was lost the status writer was asked about %v, want %v: its Short still says 2 of 3", q.keys, key)
	}
}

// A failed gang whose failure's details change at every attempt (how many pods were placed,
// which did not fit) is written once per detailsRefresh; a change of state is written at once.
func TestStatusWriterRewritesDetailsAtMostOncePerRefresh(t *testing.T) {
	m, _, _ := testModel(t)
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
	w, client, _ := newStatusWriterOf(t, obj)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return now }
	key := PodGroupKey("ns", "a")
	m.OnGroup(nil, obj)
	for i := range 2 {
		m.OnPod(nil, lt.Member("ns", "a", i).Obj())
	}
	var written []string
	client.PrependReactor("update", "podgroups", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pg := a.(clienttesting.UpdateAction).GetObject().(*v1alpha1.PodGroup)
		written = append(written, meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupInitiallyScheduled).Message)
		return false, nil, nil
	})
	step := func(d time.Duration, failure string) {
		t.Helper()
		now = now.Add(d)
		m.permits.attempts.Outcome(key).Failure = failure
		if err := w.sync(context.Background(), m.Gate(), key); err != nil {
			t.Fatal(err)
		}
	}
	step(0, "cannot fit: 1 of 2 pods placed")
	step(10*time.Second, "cannot fit: 0 of 2 pods placed")
	step(10*time.Second, "cannot fit: 1 of 2 pods placed; pod a-0")
	step(10*time.Second, "cannot fit: 0 of 2 pods placed; pod a-1")
	step(time.Second, "")
	m.permits.attempts.Outcome(key).Reserving = "rack r1 held"
	step(time.Second, "")
	want := []string{"cannot fit: 1 of 2 pods placed", "cannot fit: 0 of 2 pods placed; pod a-1", "rack r1 held"}
	if !cmp.Equal(written, want) {
		t.Errorf("written %q, want %q", written, want)
	}
}

// newStatusWriterOf returns a writer (no recorder) on a fake clientset and a lister holding
// the PodGroup obj.
func newStatusWriterOf(t *testing.T, obj *v1alpha1.PodGroup) (*StatusWriter, *fake.Clientset, cache.Indexer) {
	t.Helper()
	client := fake.NewSimpleClientset(obj)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(obj); err != nil {
		t.Fatal(err)
	}
	w := NewStatusWriter(client, listers.NewPodGroupLister(indexer),
		listers.NewCompositePodGroupLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})), nil)
	return w, client, indexer
}

// A running gang that gang preemption evicts is told on its group (DisruptionTarget True,
// naming the preemptor) and is a gang again: its recreated pods wait for each other. Placed
// whole again, it says so (DisruptionTarget False, Rescheduled); PodGroupInitiallyScheduled
// stays True throughout, as upstream.
func TestPreemptedGroupIsToldAndIsAGangAgain(t *testing.T) {
	m, _, _ := testModel(t)
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
	w, client, indexer := newStatusWriterOf(t, obj)
	key := PodGroupKey("ns", "a")
	ctx := context.Background()
	current := func() []metav1.Condition {
		t.Helper()
		o, err := client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := indexer.Update(o); err != nil {
			t.Fatal(err)
		}
		return o.(*v1alpha1.PodGroup).Status.Conditions
	}
	sync := func() []metav1.Condition {
		t.Helper()
		if err := w.sync(ctx, m.Gate(), key); err != nil {
			t.Fatal(err)
		}
		return current()
	}
	placeWhole := func(pods ...*v1.Pod) {
		t.Helper()
		for _, p := range pods {
			m.OnPod(nil, p)
		}
		for i, p := range pods {
			d := reservePermit(m, p)
			if last := i == len(pods)-1; d.Allow != last {
				t.Fatalf("pod %s allowed=%v, want %v: the gang binds whole", p.Name, d.Allow, last)
			}
		}
		for _, p := range pods {
			m.OnPod(p, assumed(p, "n1"))
		}
	}
	first := []*v1.Pod{lt.Member("ns", "a", 0).Obj(), lt.Member("ns", "a", 1).Obj()}
	m.OnGroup(nil, obj)
	placeWhole(first...)
	conds := sync()
	if c := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("conditions %+v, want PodGroupInitiallyScheduled True", conds)
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.DisruptionTarget); c != nil {
		t.Fatalf("a group never preempted carries %+v, want no DisruptionTarget", c)
	}

	why := "evicting its 2 running pods: preempted by gang PodGroup ns/train (priority 1000), which takes rack r1"
	m.Permits().NotePreempted(key, why)
	conds = sync()
	if c := meta.FindStatusCondition(conds, v1alpha1.DisruptionTarget); c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != v1alpha1.ReasonPreemptionByScheduler || c.Message != why {
		t.Errorf("after preemption DisruptionTarget is %+v, want True, %s, %q", c, v1alpha1.ReasonPreemptionByScheduler, why)
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("after preemption PodGroupInitiallyScheduled is %+v, want True (terminal)", c)
	}
	// The write comes back through the informer: the group stays a gang.
	m.OnGroup(obj, indexerGet(t, indexer))
	for _, p := range first {
		m.OnPodDelete(assumed(p, "n1"))
	}
	conds = sync()
	if c := meta.FindStatusCondition(conds, v1alpha1.DisruptionTarget); c == nil || c.Message != why+"; now waiting for pods: minCount is 2" {
		t.Errorf("with its pods gone DisruptionTarget is %+v, want it to say the group waits for its pods", c)
	}
	placeWhole(lt.Member("ns", "a", 2).Obj(), lt.Member("ns", "a", 3).Obj())
	conds = sync()
	if c := meta.FindStatusCondition(conds, v1alpha1.DisruptionTarget); c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonRescheduled {
		t.Errorf("placed whole again, DisruptionTarget is %+v, want False, %s", c, v1alpha1.ReasonRescheduled)
	}
}

// A group scheduled, then preempted before the status writer's first pass (a writer that
// waits for its model to sync, a busy queue) is written PodGroupInitiallyScheduled True all
// the same: the condition is terminal and says the group was placed whole once; its
// DisruptionTarget says it was preempted and what it waits for now.
func TestGroupPreemptedBeforeItsFirstWriteIsInitiallyScheduled(t *testing.T) {
	m, _, _ := testModel(t)
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
	w, client, _ := newStatusWriterOf(t, obj)
	key := PodGroupKey("ns", "a")
	m.OnGroup(nil, obj)
	pods := []*v1.Pod{lt.Member("ns", "a", 0).Node("n1").Obj(), lt.Member("ns", "a", 1).Node("n1").Obj()}
	for _, p := range pods {
		m.OnPod(nil, p)
	}
	why := "evicting its 2 running pods: preempted by gang PodGroup ns/train (priority 1000), which takes rack r1"
	m.Permits().NotePreempted(key, why)
	for _, p := range pods {
		m.OnPodDelete(p)
	}
	if err := w.sync(context.Background(), m.Gate(), key); err != nil {
		t.Fatal(err)
	}
	o, err := client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	conds := o.(*v1alpha1.PodGroup).Status.Conditions
	if c := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled); c == nil || c.Status != metav1.ConditionTrue ||
		c.Reason != v1alpha1.ReasonScheduled || c.Message != "pods placed together (minCount 2), then preempted" {
		t.Errorf("PodGroupInitiallyScheduled is %+v, want True, Scheduled: it was placed whole once", c)
	}
	if c := meta.FindStatusCondition(conds, v1alpha1.DisruptionTarget); c == nil || c.Status != metav1.ConditionTrue ||
		c.Message != why+"; now waiting for pods: minCount is 2" {
		t.Errorf("DisruptionTarget is %+v, want True, saying the group waits for its pods", c)
	}
	// Deleted and created again, the group starts over: it was not scheduled.
	m.OnGroupDelete(obj)
	again := obj.DeepCopy()
	again.UID = "again"
	m.OnGroup(nil, again)
	if c, _ := m.Gate().Condition(key); c.Status == metav1.ConditionTrue {
		t.Errorf("a group created again reads %+v, want it not scheduled", c)
	}
}

// A gang that ran whole and lost a member before the status writer's first pass is written
// PodGroupInitiallyScheduled True all the same (it ran; the condition is terminal), not
// PartiallyBound: a new leader reading False would take its replacements for a gang's.
func TestGangShortBeforeItsFirstWriteIsInitiallyScheduled(t *testing.T) {
	m, _, _ := testModel(t)
	m.Lead()
	pods := runningGang(m, "a", 2)
	key := PodGroupKey("ns", "a")
	if s := m.index.Get(key).Life().State(); s != Running {
		t.Fatalf("the gang is %s, want Running", s)
	}
	m.OnPodDelete(assumed(pods[0], "n1"))
	obj := written(t, m, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	if c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.PodGroupInitiallyScheduled); c == nil || c.Status != metav1.ConditionTrue ||
		c.Message != "pods placed together (minCount 2), then short" {
		t.Errorf("PodGroupInitiallyScheduled is %+v, want True: it ran whole, then went short", c)
	}
	if c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.Short); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonMemberLost {
		t.Errorf("Short is %+v, want True, MemberLost", c)
	}
}

// A gang placed whole whose minimum is raised before the status writer's first pass is
// written PodGroupInitiallyScheduled True observing the generation it was placed under, as a
// True written in time would be: a new leader reading True at the raised generation would take
// the raised minimum as placed, and the gang as short of it (MemberLost), its missing members
// placed one by one.
func TestTrueWrittenLateObservesTheGenerationItWasPlacedUnder(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, _ := testModel(t)
	m.Lead()
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Generation(1).Obj()
	m.OnGroup(nil, obj)
	pods := placedWhole(m, addPods(m, "a", 2))
	if s := m.index.Get(k).Life().State(); s != Running {
		t.Fatalf("the gang is %s, want Running", s)
	}
	raised := obj.DeepCopy()
	raised.Generation = 2
	raised.Spec.SchedulingPolicy.Gang.MinCount = 3
	m.OnGroup(obj, raised)
	out := written(t, m, raised)
	if c := meta.FindStatusCondition(out.Status.Conditions, v1alpha1.PodGroupInitiallyScheduled); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 {
		t.Fatalf("PodGroupInitiallyScheduled is %+v, want True observing generation 1, the one it was placed under", c)
	}
	nm, _ := restartedModel(t, clk, []*v1alpha1.PodGroup{out}, assumed(pods[0], "n1"), assumed(pods[1], "n1"), lt.Member("ns", "a", 2).Obj())
	if s := nm.index.Get(k).Life().State(); s.runs() {
		t.Errorf("a new leader finds the gang %s, want it not placed under its raised minimum (as with a True written in time)", s)
	}
	if c, ok := nm.Gate().Short(k); ok && c.Status == metav1.ConditionTrue {
		t.Errorf("a new leader says Short %+v: its minimum was raised, nothing of it was lost", c)
	}
}

// A gang preempted, placed again, and whose binds all failed before the status writer wrote
// any of it (a writer far behind) is still a disrupted gang: its object says DisruptionTarget
// True beside the terminal PodGroupInitiallyScheduled True written late, so that neither this
// leader reading its write back nor a new leader takes it as placed whole (and then, with
// none of it bound, as short, to be released).
func TestGangWhoseBindsFailedAfterItsPreemptionStaysDisrupted(t *testing.T) {
	m, clk, _ := testModel(t)
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
	w, client, indexer := newStatusWriterOf(t, obj)
	w.now = clk.Now
	key := PodGroupKey("ns", "a")
	m.OnGroup(nil, obj)
	first := []*v1.Pod{lt.Member("ns", "a", 0).Node("n1").Obj(), lt.Member("ns", "a", 1).Node("n1").Obj()}
	for _, p := range first {
		m.OnPod(nil, p)
	}
	clk.Step(time.Minute)
	why := "evicting its 2 running pods: preempted by gang PodGroup ns/train (priority 1000), which takes rack r1"
	m.Permits().NotePreempted(key, why)
	preemptedAt := clk.Now().Truncate(time.Second)
	for _, p := range first {
		m.OnPodDelete(p)
	}
	clk.Step(time.Minute)
	again := []*v1.Pod{lt.Member("ns", "a", 2).Obj(), lt.Member("ns", "a", 3).Obj()}
	for _, p := range again {
		m.OnPod(nil, p)
	}
	for _, p := range again {
		reservePermit(m, p)
	}
	if s := m.index.Get(key).Life().State(); s != Allowed {
		t.Fatalf("placed again the gang is %s, want Allowed", s)
	}
	clk.Step(time.Second)
	for _, p := range again {
		m.Permits().Unreserve(bg, assumed(p, "n1")) // refused: its binds all failed
	}
	if s := m.index.Get(key).Life().State(); s != Pending {
		t.Fatalf("its binds all failed, the gang is %s, want Pending", s)
	}
	clk.Step(time.Minute)
	if err := w.sync(context.Background(), m.Gate(), key); err != nil {
		t.Fatal(err)
	}
	o, err := client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	written := o.(*v1alpha1.PodGroup)
	if c := meta.FindStatusCondition(written.Status.Conditions, v1alpha1.DisruptionTarget); c == nil || c.Status != metav1.ConditionTrue ||
		!c.LastTransitionTime.Time.Equal(preemptedAt) {
		t.Errorf("DisruptionTarget is %+v, want True since its preemption (%s): it has not run again", c, preemptedAt)
	}
	// Its write read back by this leader, and by a new one.
	if err := indexer.Update(written); err != nil {
		t.Fatal(err)
	}
	m.OnGroup(obj, indexerGet(t, indexer))
	m2, _, _ := testModel(t)
	m2.OnGroup(nil, written)
	for name, model := range map[string]*Model{"this leader": m, "a new leader": m2} {
		if g := model.index.Get(key); g.Scheduled() || g.Life().State().runs() {
			t.Errorf("%s reads it back as %s (scheduled %v), want a gang waiting to be placed", name, g.Life().State(), g.Scheduled())
		}
	}
}

// A restarted scheduler restores a group as scheduled from its condition, but not one whose
// DisruptionTarget is True: it was preempted and its pods must be placed together again.
func TestRestoredPreemptedGroupIsAGang(t *testing.T) {
	scheduled := metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonScheduled}
	disrupted := metav1.Condition{Type: v1alpha1.DisruptionTarget, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPreemptionByScheduler}
	rescheduled := metav1.Condition{Type: v1alpha1.DisruptionTarget, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRescheduled}
	for _, tc := range []struct {
		name       string
		conditions []metav1.Condition
		want       bool
	}{
		{"scheduled", []metav1.Condition{scheduled}, true},
		{"preempted", []metav1.Condition{scheduled, disrupted}, false},
		{"placed again after preemption", []metav1.Condition{scheduled, rescheduled}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
			obj.Status.Conditions = tc.conditions
			m, _, _ := testModel(t)
			m.OnGroup(nil, obj)
			if got := m.index.Get(PodGroupKey("ns", "a")).Scheduled(); got != tc.want {
				t.Errorf("restored as scheduled: %v, want %v", got, tc.want)
			}
		})
	}
}

func indexerGet(t *testing.T, indexer cache.Indexer) *v1alpha1.PodGroup {
	t.Helper()
	o, ok, err := indexer.GetByKey("ns/a")
	if err != nil || !ok {
		t.Fatalf("group ns/a not in the lister: %v", err)
	}
	return o.(*v1alpha1.PodGroup)
}

// The events of a root group are told on the workload that controls it too (its Job: where
// users of Jobs, and Kueue's users beside Kueue's events, look); those of a child group only
// on the group.
func TestStatusWriterTellsTheWorkload(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  *v1alpha1.PodGroup
		want []string
	}{
		{"a Job's PodGroup", lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Owner("batch/v1", "Job", "train", "uid-train").Obj(),
			[]string{"a", "train"}},
		{"a PodGroup of no workload", lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), []string{"a"}},
		{"a child PodGroup of a JobSet's tree", lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("root").Owner("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "uid-js").Obj(),
			[]string{"a"}},
		{"a PodGroup of a Job Kueue admitted", lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Owner("batch/v1", "Job", "queued", "uid-queued").Obj(),
			[]string{"a", "queued", "job-queued-1a2b3"}},
		{"a PodGroup of a Job Kueue does not manage", lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Owner("batch/v1", "Job", "queued", "uid-elsewhere").Obj(),
			[]string{"a", "queued"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			w, _, _ := newStatusWriterOf(t, tc.obj)
			events := &eventLog{}
			w.recorder = events
			w.admissions = admissionsOf{"ns/uid-queued": "job-queued-1a2b3"}
			key := PodGroupKey("ns", "a")
			m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("root").Gang(1).Owner("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "uid-js").Obj())
			m.OnGroup(nil, tc.obj)
			for i := range 2 {
				m.OnPod(nil, lt.Member("ns", "a", i).Obj())
			}
			m.permits.attempts.Outcome(key).Failure = "cannot fit: no rack has room"
			if err := w.sync(context.Background(), m.Gate(), key); err != nil {
				t.Fatal(err)
			}
			var regarding []string
			for _, e := range events.take() {
				regarding = append(regarding, strings.Fields(e)[0])
			}
			if diff := cmp.Diff(tc.want, regarding); diff != "" {
				t.Errorf("events regarding (-want +got):\n%s", diff)
			}
		})
	}
}

// admissionsOf finds the Kueue Workload named by "namespace/controller UID".
type admissionsOf map[string]string

func (a admissionsOf) Of(namespace string, controller types.UID) runtime.Object {
	name, ok := a[namespace+"/"+string(controller)]
	if !ok {
		return nil
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// syncingConditions judges a group invalid until it has synced (a child group whose parent
// is not seen yet), and records a read before then.
type syncingConditions struct {
	mu        sync.Mutex
	synced    bool
	readEarly bool
	uid       types.UID
}

func (c *syncingConditions) Conditions(Key) (Desired, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.synced {
		c.readEarly = true
		return Desired{UID: c.uid, Initial: &Condition{UID: c.uid, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonInvalid, Message: "invalid: parent not found"}}, true
	}
	return Desired{UID: c.uid, Initial: &Condition{UID: c.uid, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonUnschedulable, Message: "cannot fit"}}, true
}

func (c *syncingConditions) state() (synced, readEarly bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced, c.readEarly
}

// A scheduler that starts leading before its model has seen every group and pod writes no
// condition until it has: what it would judge before (a child whose parent it has not seen
// reads invalid) is written, then taken back, at every restart otherwise.
func TestStatusWriterWaitsForTheModelToSync(t *testing.T) {
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
	w, client, _ := newStatusWriterOf(t, obj)
	conds := &syncingConditions{uid: obj.UID}
	var polls atomic.Int32
	synced := func() bool {
		polls.Add(1)
		s, _ := conds.state()
		return s
	}
	w.Enqueue(PodGroupKey("ns", "a"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		w.Run(ctx, conds, synced)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	// The sync wait polls every 100ms: a second poll means the writer is waiting.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, early := conds.state()
		return polls.Load() >= 2 || early, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, early := conds.state(); early {
		t.Fatal("the writer judged a group before the model synced")
	}
	conds.mu.Lock()
	conds.synced = true
	conds.mu.Unlock()
	var written []metav1.Condition
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, a := range client.Actions() {
			if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
				written = append(written, u.GetObject().(*v1alpha1.PodGroup).Status.Conditions...)
			}
		}
		return len(written) > 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range written {
		if c.Reason != v1alpha1.ReasonUnschedulable {
			t.Errorf("wrote %s/%s %q, want only what the synced model judged", c.Status, c.Reason, c.Message)
		}
	}
}

// desired is a group's conditions as a test states them.
type desired map[Key]Desired

func (d desired) Conditions(k Key) (Desired, bool) { c, ok := d[k]; return c, ok }

// A gang short again in the same words as its last short spell, before the first was written
// over, is written for its new moment: Short's lastTransitionTime is the fact a new leader
// releases it by, and the first spell's would release it early.
func TestStatusWriterWritesANewMomentInTheSameWords(t *testing.T) {
	obj := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
	w, client, indexer := newStatusWriterOf(t, obj)
	key := PodGroupKey("ns", "a")
	t1 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	short := func(since time.Time) desired {
		return desired{key: {UID: obj.UID, Short: &Condition{UID: obj.UID, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPartiallyBound,
			Message: "partially bound: binding pod a-1 failed after the gang was allowed; its other binds are in flight", Since: since}}}
	}
	written := func() time.Time {
		t.Helper()
		o, err := client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := indexer.Update(o); err != nil { // the informer's copy
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(o.(*v1alpha1.PodGroup).Status.Conditions, v1alpha1.Short)
		if c == nil {
			t.Fatal("no Short written")
		}
		return c.LastTransitionTime.Time
	}
	for _, since := range []time.Time{t1, t1.Add(4 * time.Second)} {
		if err := w.sync(context.Background(), short(since), key); err != nil {
			t.Fatal(err)
		}
		if got := written(); !got.Equal(since) {
			t.Errorf("Short written since %v, want %v", got, since)
		}
	}
}
