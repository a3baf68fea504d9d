package podgroup

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// Life.fire takes the first edge of the table whose guard holds, and nothing else.
func TestLifeFire(t *testing.T) {
	t0 := epoch
	t1 := epoch.Add(time.Minute)
	running := Life{state: Running, since: t0, decided: t0, min: 3, ran: true}
	short := Life{state: PartiallyBound, since: t0, decided: t0, min: 3, ran: true, lost: true}
	replacedShort := Life{state: PartiallyBound, since: t0, decided: t0, min: 3, ran: true}
	allowed := Life{state: Allowed, since: t0, decided: t0, min: 3}
	tests := []struct {
		name  string
		life  Life
		event Event
		facts Facts
		want  State
		moved bool
		since time.Time
	}{
		{name: "enough pods", life: Life{state: Held}, event: PodsReady, facts: Facts{Now: t1, Ready: true}, want: Pending, moved: true, since: t1},
		{name: "not enough pods", life: Life{state: Held}, event: PodsReady, facts: Facts{Now: t1}, want: Held},
		{name: "an attempt starts", life: Life{state: Pending}, event: AttemptStarted, facts: Facts{Now: t1, Attempt: true}, want: Waiting, moved: true, since: t1},
		{name: "no attempt", life: Life{state: Pending}, event: AttemptStarted, facts: Facts{Now: t1}, want: Pending},
		{name: "the attempt ends", life: Life{state: Waiting}, event: AttemptEnded, facts: Facts{Now: t1}, want: Pending, moved: true, since: t1},
		{name: "allowed", life: Life{state: Waiting}, event: TreeAllowed, facts: Facts{Now: t1, Minimum: 3}, want: Allowed, moved: true, since: t1},
		{name: "held: never allowed", life: Life{state: Held}, event: TreeAllowed, facts: Facts{Now: t1}, want: Held},
		{name: "binds in flight", life: allowed, event: BindsDone, facts: Facts{Now: t1, Minimum: 3, Bound: 2, AnyBound: true, InFlight: 1}, want: Allowed},
		{name: "binds done whole", life: allowed, event: BindsDone, facts: Facts{Now: t1, Minimum: 3, Bound: 3, AnyBound: true}, want: Running, moved: true, since: t1},
		{name: "binds done short", life: allowed, event: BindsDone, facts: Facts{Now: t1, Minimum: 3, Bound: 2, AnyBound: true}, want: PartiallyBound, moved: true, since: t1},
		{name: "binds done, none bound", life: allowed, event: BindsDone, facts: Facts{Now: t1, Minimum: 3}, want: Pending, moved: true, since: t1},
		{name: "a bind fails, others in flight", life: allowed, event: BindFailed, facts: Facts{Now: t1, Minimum: 3, InFlight: 2}, want: PartiallyBound, moved: true, since: t1},
		{name: "the last bind fails, none bound", life: allowed, event: BindFailed, facts: Facts{Now: t1, Minimum: 3}, want: Pending, moved: true, since: t1},
		{name: "a member lost", life: running, event: MemberLost, facts: Facts{Now: t1, Minimum: 3, Bound: 2, AnyBound: true, Gang: true, Synced: true}, want: PartiallyBound, moved: true, since: t1},
		{name: "a member lost before the model synced", life: running, event: MemberLost, facts: Facts{Now: t1, Minimum: 3, Bound: 2, Gang: true}, want: Running},
		{name: "a basic group is never short", life: running, event: MemberLost, facts: Facts{Now: t1, Minimum: 3, Bound: 0, Synced: true}, want: Running},
		{name: "a raised minimum does not make it short", life: running, event: MemberLost, facts: Facts{Now: t1, Minimum: 5, Bound: 3, Gang: true, Synced: true}, want: Running},
		{name: "a replacement's refused bind", life: short, event: BindFailed, facts: Facts{Now: t1, Minimum: 3}, want: PartiallyBound},
		{name: "short by its binds, its bound pods gone", life: replacedShort, event: Emptied, facts: Facts{Now: t1, Minimum: 3, Synced: true}, want: Pending, moved: true, since: t1},
		{name: "short by its binds, before the model has seen every pod", life: replacedShort, event: Emptied, facts: Facts{Now: t1, Minimum: 3}, want: PartiallyBound},
		{name: "short by a lost member, none left: its replacements", life: short, event: Emptied, facts: Facts{Now: t1, Minimum: 3, Synced: true}, want: PartiallyBound},
		{name: "placed again after a disruption, its binds all refused", life: replacedShort, event: BindFailed, facts: Facts{Now: t1, Minimum: 3}, want: Pending, moved: true, since: t1},
		{name: "whole again", life: short, event: Whole, facts: Facts{Now: t1, Minimum: 3, Bound: 3}, want: Running, moved: true, since: t1},
		{name: "short, not due", life: short, event: ShortTimeout, facts: Facts{Now: t0.Add(4 * time.Minute), Unit: true, Timeout: 5 * time.Minute}, want: PartiallyBound, since: t0},
		{name: "short and due", life: short, event: ShortTimeout, facts: Facts{Now: t0.Add(5 * time.Minute), Unit: true, Timeout: 5 * time.Minute}, want: Released, moved: true, since: t0.Add(5 * time.Minute)},
		{name: "short and due, single", life: short, event: ShortTimeout, facts: Facts{Now: t0.Add(5 * time.Minute), Timeout: 5 * time.Minute}, want: PartiallyBound, moved: true, since: t0},
		{name: "released pods gone", life: Life{state: Released}, event: Emptied, facts: Facts{Now: t1}, want: Pending, moved: true, since: t1},
		{name: "preempted", life: running, event: Preempted, facts: Facts{Now: t1}, want: Disrupted, moved: true, since: t1},
		{name: "restart: the object says short", life: Life{state: Pending}, event: Restored,
			facts: Facts{Now: t1, Minimum: 3, FullMinimum: 3, Object: Written{Ran: true, Running: true, Short: true, ShortSince: t0}}, want: PartiallyBound, moved: true, since: t0},
		{name: "restart: the object says placed whole", life: Life{state: Held}, event: Restored,
			facts: Facts{Now: t1, Minimum: 3, FullMinimum: 3, Object: Written{Ran: true, Running: true, RunningAt: t0}}, want: Running, moved: true, since: t0},
		{name: "late event: short before it became whole again", life: Life{state: Running, since: t1, decided: t1, min: 3, ran: true}, event: Restored,
			facts: Facts{Now: t1.Add(time.Second), Minimum: 3, Object: Written{Ran: true, Running: true, Short: true, ShortSince: t0}}, want: Running, since: t1},
		{name: "a standby follows its leader: short since", life: Life{state: Running, since: t0, decided: t0, min: 3, ran: true}, event: Restored,
			facts: Facts{Now: t1, Minimum: 3, Object: Written{Ran: true, Running: true, Short: true, ShortSince: t1}}, want: PartiallyBound, moved: true, since: t1},
		{name: "a preempted group restored is a gang", life: Life{state: Pending}, event: Restored,
			facts: Facts{Now: t1, Minimum: 3, Object: Written{Ran: true, Disrupted: true, DisruptedAt: t0}}, want: Pending},
		{name: "deleted", life: running, event: Deleted, facts: Facts{Now: t1}, want: Gone, moved: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.life
			tr := l.fire(tc.event, tc.facts)
			if (tr != nil) != tc.moved && !(tr != nil && tr.From == tr.To && !tc.moved) {
				t.Fatalf("fire(%s) took %+v, want moved=%v", tc.event, tr, tc.moved)
			}
			if l.State() != tc.want {
				t.Errorf("state %s, want %s", l.State(), tc.want)
			}
			if !tc.since.IsZero() && !l.Since().Equal(tc.since) {
				t.Errorf("since %v, want %v", l.Since(), tc.since)
			}
			if tr != nil && (tr.From != tc.life.state || tr.Event != tc.event || tr.To != l.State()) {
				t.Errorf("took %s --%s--> %s, not an edge from %s", tr.From, tr.Event, tr.To, tc.life.state)
			}
		})
	}
}

// Why a gang is short is read back from its Short's reason: a gang short by a lost member
// keeps running short when its replacement's bind is refused; one short by its attempt's
// binds (placed again after a disruption, though it ran before) whose binds all failed is a
// failed attempt, a gang again.
func TestRestoredShortKeepsWhyItIsShort(t *testing.T) {
	t0 := epoch
	t1 := epoch.Add(time.Minute)
	for _, tc := range []struct {
		name string
		lost bool
		want State
	}{
		{"MemberLost", true, PartiallyBound},
		{"PartiallyBound", false, Pending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Life{state: Pending}
			l.fire(Restored, Facts{Now: t1, Minimum: 3, FullMinimum: 3,
				Object: Written{Ran: true, Running: true, Short: true, ShortSince: t0, Lost: tc.lost}})
			if l.State() != PartiallyBound {
				t.Fatalf("restored as %s, want PartiallyBound", l.State())
			}
			l.fire(BindFailed, Facts{Now: t1, Minimum: 3})
			if l.State() != tc.want {
				t.Errorf("short by %s, none of it bound or binding: %s, want %s", tc.name, l.State(), tc.want)
			}
		})
	}
}

// restartedModel is a new leader's model: it reads the objects (groups as the status writer
// left them) and pods, then syncs, as a scheduler that starts does.
func restartedModel(t *testing.T, clk *simClock, groups []*v1alpha1.PodGroup, pods ...*v1.Pod) (*Model, *recorder) {
	t.Helper()
	m, _, rec := testModel(t)
	m.clock = clk
	m.synced = func() bool { return false }
	for _, g := range groups {
		m.OnGroup(nil, g)
	}
	for _, p := range pods {
		m.OnPod(nil, p)
	}
	m.synced = func() bool { return true }
	m.Synced()
	m.Lead()
	return m, rec
}

// written returns a PodGroup object as the status writer of m would leave it now.
func written(t *testing.T, m *Model, obj *v1alpha1.PodGroup) *v1alpha1.PodGroup {
	t.Helper()
	w, client, _ := newStatusWriterOf(t, obj)
	w.now = m.clock.Now
	k := PodGroupKey(obj.Namespace, obj.Name)
	if err := w.sync(context.Background(), m.Gate(), k); err != nil {
		t.Fatal(err)
	}
	o, err := client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), obj.Namespace, obj.Name)
	if err != nil {
		t.Fatal(err)
	}
	return o.(*v1alpha1.PodGroup)
}

// A group event a few seconds stale (still saying the gang is short) that arrives after the
// gang became whole does not make it short again: a member lost later makes it short from
// then, and the gang is released a whole timeout after that loss, not at the stale deadline.
func TestStaleShortEventDoesNotReviveTheOldDeadline(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, rec := testModel(t)
	group := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	pods := partiallyBound(t, m, group)
	stale := written(t, m, group)
	if c := meta.FindStatusCondition(stale.Status.Conditions, v1alpha1.Short); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("written conditions %+v, want Short True", stale.Status.Conditions)
	}
	clk.Step(time.Minute)
	reservePermit(m, pods[2])
	m.OnPod(pods[2], assumed(pods[2], "n1")) // whole again
	m.OnGroup(group, stale)                  // the informer delivers the earlier write now
	if s := m.index.Get(k).Life().State(); s != Running {
		t.Fatalf("after a stale event the gang is %s, want Running", s)
	}
	clk.Step(time.Minute)
	m.OnPodDelete(assumed(pods[0], "n1")) // a member lost: short from now
	clk.Step(3*time.Minute + time.Second) // past the stale deadline
	if ev := rec.takeEvicted(); len(ev) != 0 {
		t.Fatalf("evicted %v at the deadline of a partial bind long over", ev)
	}
	clk.Step(2 * time.Minute)
	if ev := rec.takeEvicted(); fmt.Sprint(ev) != "[a-1 a-2]" {
		t.Fatalf("evicted %v a timeout after the loss, want the members left", ev)
	}
}

// A gang none of whose binds succeeded (an admission webhook refused them all) is a failed
// attempt: it backs off and is retried whole, its members never bound one by one.
func TestGangWhoseBindsAllFailedIsRetriedWhole(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, _ := testModel(t)
	m.Lead()
	pods := allowedGang(m, "a", 3)
	for _, p := range pods {
		m.Permits().Unreserve(bg, assumed(p, "n1"))
	}
	if g := m.index.Get(k); g.Scheduled() || g.Life().State() != Pending {
		t.Fatalf("after every bind failed the gang is %s (scheduled %v), want Pending, a gang", g.Life().State(), g.Scheduled())
	}
	if c, _ := m.Gate().Condition(k); c.Reason != v1alpha1.ReasonUnschedulable || !strings.Contains(c.Message, "cannot bind") {
		t.Errorf("condition %+v, want Unschedulable: the binds failed", c)
	}
	if v := m.Gate().Admit(bg, pods[0]); v.Code != BackingOff {
		t.Errorf("Admit = %v %q, want BackingOff", v.Code, v.Message)
	}
	clk.Step(time.Minute)
	if d := reservePermit(m, pods[0]); d.Allow {
		t.Fatal("a member of a gang whose binds all failed was allowed alone")
	}
}

// A gang partially bound by its attempt whose bound pods are gone (deleted, their node lost)
// before it ran whole has nothing running: it is a gang again, its pods placed whole, never
// one by one. (A gang that ran whole and lost its members gets its replacements one by one.)
func TestPartiallyBoundGangWhoseBoundPodsAreGoneIsAGangAgain(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, _, _ := testModel(t)
	m.Lead()
	pods := allowedGang(m, "a", 3)
	m.OnPod(pods[0], assumed(pods[0], "n1"))
	m.Permits().Unreserve(bg, assumed(pods[1], "n1")) // refused
	m.Permits().Unreserve(bg, assumed(pods[2], "n1")) // refused
	if s := m.index.Get(k).Life().State(); s != PartiallyBound {
		t.Fatalf("with one of three bound the gang is %s, want PartiallyBound", s)
	}
	m.OnPodDelete(assumed(pods[0], "n1"))
	m.OnPod(nil, lt.Member("ns", "a", 3).Obj()) // its controller's replacement
	if g := m.index.Get(k); g.Scheduled() || g.Life().State() != Pending {
		t.Fatalf("with its bound pod gone the gang is %s (scheduled %v), want Pending, a gang", g.Life().State(), g.Scheduled())
	}
	if c, _ := m.Gate().Condition(k); c.Reason != v1alpha1.ReasonUnschedulable || !strings.Contains(c.Message, "the pods it bound are gone") {
		t.Errorf("condition %+v, want Unschedulable, saying its bound pods are gone", c)
	}
	if c, _ := m.Gate().Short(k); c.Status != metav1.ConditionFalse {
		t.Errorf("Short %+v, want False: nothing of it runs", c)
	}
	if d := reservePermit(m, pods[1]); d.Allow {
		t.Fatal("a member of a gang with nothing running was allowed alone")
	}
}

// A gang becomes partially bound the moment an allowed member's bind fails, other binds still
// in flight: its condition is written then (PodGroupInitiallyScheduled PartiallyBound, Short
// True), so that a leader that dies before the other binds land leaves its successor the same
// gang.
func TestPartiallyBoundIsWrittenWhileBindsAreInFlight(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, _ := testModel(t)
	m.Lead()
	group := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	m.OnGroup(nil, group)
	pods := addPods(m, "a", 3)
	for _, p := range pods {
		reservePermit(m, p)
	}
	m.OnPod(pods[0], assumed(pods[0], "n1"))
	m.Permits().Unreserve(bg, assumed(pods[1], "n1")) // refused; a-2's bind is in flight
	obj := written(t, m, group)
	since := clk.Now()
	c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.PodGroupInitiallyScheduled)
	if c == nil || c.Reason != v1alpha1.ReasonPartiallyBound {
		t.Fatalf("PodGroupInitiallyScheduled %+v, want PartiallyBound while a-2's bind is in flight", c)
	}
	if s := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.Short); s == nil || s.Status != metav1.ConditionTrue || !s.LastTransitionTime.Time.Equal(since) {
		t.Fatalf("Short %+v, want True since the failure", s)
	}
	// The leader dies before a-2's bind lands; its successor finds a-0 and a-2 bound.
	clk.Step(time.Minute)
	nm, nrec := restartedModel(t, clk, []*v1alpha1.PodGroup{obj}, assumed(pods[0], "n1"), assumed(pods[2], "n1"), pods[1])
	if l := nm.index.Get(k).Life(); l.State() != PartiallyBound || !l.Since().Equal(since) {
		t.Fatalf("successor: %s since %v, want PartiallyBound since %v", l.State(), l.Since(), since)
	}
	clk.Step(4*time.Minute - time.Second)
	if ev := nrec.takeEvicted(); len(ev) != 0 {
		t.Fatalf("the successor evicted %v before the old leader's deadline", ev)
	}
	clk.Step(2 * time.Second)
	if ev := nrec.takeEvicted(); fmt.Sprint(ev) != "[a-0 a-2]" {
		t.Fatalf("the successor evicted %v at the old leader's deadline, want both bound members", ev)
	}
}

// A gang a preemptor takes is taken whole: if the preemptor's executor stopped midway (an
// eviction failed, and upstream's cancels the rest), the model evicts what it left running,
// and again while some is left, so that no gang is left partly evicted.
func TestPreemptionLeftMidwayIsFinished(t *testing.T) {
	m, clk, rec := testModel(t)
	m.Lead()
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	for _, p := range pods {
		reservePermit(m, p)
		m.OnPod(p, assumed(p, "n1"))
	}
	k := PodGroupKey("ns", "a")
	if !m.Permits().NotePreempted(k, "evicting its 3 running pods: preempted by gang PodGroup ns/big (priority 1000)") {
		t.Fatal("the first word of a preemption is no news")
	}
	// The executor evicted one member, then stopped.
	gone := assumed(pods[0], "n1")
	gone.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
	m.OnPod(assumed(pods[0], "n1"), gone)
	clk.Step(disruptionFinish - time.Second)
	if ev := rec.takeEvicted(); len(ev) != 0 {
		t.Fatalf("evicted %v before the executor had its time", ev)
	}
	clk.Step(2 * time.Second)
	if ev := rec.takeEvicted(); fmt.Sprint(ev) != "[a-1 a-2]" {
		t.Fatalf("evicted %v, want the members the executor left running", ev)
	}
	// Those evictions failed too: looked at again.
	clk.Step(disruptionFinish)
	if ev := rec.takeEvicted(); fmt.Sprint(ev) != "[a-1 a-2]" {
		t.Fatalf("evicted %v after a failed finish, want the same members again", ev)
	}
	for _, p := range pods[1:] {
		d := assumed(p, "n1")
		d.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
		m.OnPod(assumed(p, "n1"), d)
	}
	clk.Step(time.Hour)
	if ev := rec.takeEvicted(); len(ev) != 0 {
		t.Errorf("evicted %v once every member left", ev)
	}
}
