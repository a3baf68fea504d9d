package podgroup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

var bg = klog.Background()

func TestAdmit(t *testing.T) {
	scheduled := lt.MakePodGroup().Namespace("ns").Name("done").Gang(3).Obj()
	scheduled.Generation = 1
	scheduled.Status.Conditions = []metav1.Condition{{Type: "PodGroupInitiallyScheduled", Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	tests := []struct {
		name     string
		objs     []any
		pods     map[string]int
		pod      *v1.Pod
		unseen   bool
		code     VerdictCode
		contains string
	}{
		{name: "pod without group", pod: func() *v1.Pod { p := lt.Member("ns", "x", 0).Obj(); p.Labels = nil; return p }(), code: NotMember},
		{name: "pod of another scheduler", pod: func() *v1.Pod {
			p := lt.Member("ns", "x", 0).Obj()
			p.Spec.SchedulerName = "default-scheduler"
			return p
		}(), code: NotMember},
		{name: "member not seen by the model yet", pod: lt.Member("ns", "a", 0).Obj(), unseen: true, code: Unseen, contains: "waiting for lockstep to observe pod a-0"},
		{name: "group not created yet", pods: map[string]int{"a": 2}, pod: lt.Member("ns", "a", 0).Obj(), code: MissingGroup,
			contains: `waiting for PodGroup "a" to be created`},
		{name: "invalid hierarchy", objs: []any{lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("nope").Obj()}, pods: map[string]int{"a": 2}, pod: lt.Member("ns", "a", 0).Obj(),
			code: Invalid, contains: `parent CompositePodGroup "nope" not found`},
		{name: "too few pods", objs: []any{lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()}, pods: map[string]int{"a": 2}, pod: lt.Member("ns", "a", 0).Obj(),
			code: WaitingForPods, contains: "2 of 3 pods exist"},
		{name: "enough pods", objs: []any{lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()}, pods: map[string]int{"a": 3}, pod: lt.Member("ns", "a", 0).Obj(), code: Proceed},
		{name: "sibling short of pods", objs: []any{lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj(), lt.MakePodGroup().Namespace("ns").Name("s0").Gang(1).Parent("job").Obj(), lt.MakePodGroup().Namespace("ns").Name("s1").Gang(2).Parent("job").Obj()},
			pods: map[string]int{"s0": 1, "s1": 1}, pod: lt.Member("ns", "s0", 0).Obj(),
			code: WaitingForPods, contains: "parent job: 1 of 2 child groups ready"},
		{name: "initially scheduled group: a replacement needs no siblings", objs: []any{scheduled},
			pods: map[string]int{"done": 1}, pod: lt.Member("ns", "done", 0).Obj(), code: Proceed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			for _, o := range tc.objs {
				m.OnGroup(nil, o)
			}
			for g, n := range tc.pods {
				addPods(m, g, n)
			}
			if !tc.unseen {
				m.OnPod(nil, tc.pod)
			}
			v := m.Gate().Admit(bg, tc.pod)
			if v.Code != tc.code || !strings.Contains(v.Message, tc.contains) {
				t.Errorf("Admit = %v %q, want %v containing %q", v.Code, v.Message, tc.code, tc.contains)
			}
			if v.Code != Proceed && v.Code != NotMember && v.Message == "" {
				t.Error("a held pod without a reason")
			}
		})
	}
}

// A pod held because the model had not seen it yet is activated when it does.
func TestUnseenPodIsActivatedWhenSeen(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Obj())
	p := lt.Member("ns", "a", 0).Obj()
	if v := m.Gate().Admit(bg, p); v.Code != Unseen {
		t.Fatalf("Admit = %v, want Unseen", v.Code)
	}
	m.OnPod(nil, p)
	if activated, _, _ := rec.take(); !contains(activated, "a-0") {
		t.Errorf("activated %v, want a-0", activated)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestGangOfThreeBindsTogether(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 4) // one pod more than minCount
	rec.take()
	if d := reservePermit(m, pods[0]); d.Allow || d.Timeout != time.Minute+permitGrace {
		t.Fatalf("first member: %+v, want a wait of the permit timeout (and the grace)", d)
	}
	if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"a-1", "a-2", "a-3"}) {
		t.Errorf("the first wait activates the pending members, got %v", activated)
	}
	if d := reservePermit(m, pods[1]); d.Allow {
		t.Fatalf("second member allowed: %+v", d)
	}
	if d := reservePermit(m, pods[2]); !d.Allow {
		t.Fatalf("third member: %+v, want allowed", d)
	}
	if _, allowed, _ := rec.take(); !cmp.Equal(allowed, []string{"a-0", "a-1"}) {
		t.Errorf("waiting members allowed with the third: %v", allowed)
	}
	if !m.index.Get(PodGroupKey("ns", "a")).Scheduled() {
		t.Error("group not marked scheduled")
	}
	// A member beyond minCount binds at once.
	if d := reservePermit(m, pods[3]); !d.Allow {
		t.Errorf("fourth member: %+v, want allowed", d)
	}
}

// Issue #10 item 1: a waiting member that is deleted stops counting; the scheduler's
// assumed copy (with a node) never brings it back; a replacement does not make a short gang
// look complete.
func TestDeletedWaiterIsNoGhost(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	reservePermit(m, pods[0])
	reservePermit(m, pods[1])
	m.Permits().Fail(bg, pods[2], "0/1 nodes are available: 1 Insufficient cpu", testPolicy) // a-2 can never fit
	rec.take()
	// a-0 is deleted; the scheduler rejects it and calls Unreserve with its assumed copy, and
	// the model's own delete event comes after.
	m.Permits().Unreserve(bg, assumed(pods[0], "n1"))
	m.OnPodDelete(pods[0])
	replacement := lt.Member("ns", "a", 9).Obj()
	m.OnPod(nil, replacement)
	if d := reservePermit(m, replacement); d.Allow {
		t.Fatalf("replacement allowed: two live pods for minCount 3")
	}
	if _, allowed, _ := rec.take(); len(allowed) != 0 {
		t.Errorf("allowed %v with two live pods for minCount 3", allowed)
	}
	if got := m.members.Known(PodGroupKey("ns", "a")); got != 3 {
		t.Errorf("known members %d, want 3 (a-1, a-2, a-9)", got)
	}
}

// Issue #10 item 2: a CompositePodGroup deleted while a member waits, then created again with
// new pods: no stale waiter, no panic; the waiter is released with a reason.
func TestTreeRecreatedUnderAWaiter(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("s0").Gang(2).Parent("job").Obj())
	pods := addPods(m, "s0", 2)
	reservePermit(m, pods[0])
	rec.take()
	m.OnGroupDelete(lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj())
	if _, _, rejected := rec.take(); !strings.Contains(rejected["s0-0"], "tree of PodGroup s0 changed") {
		t.Errorf("waiter not released when its tree lost its root: %v", rejected)
	}
	m.Permits().Unreserve(bg, assumed(pods[0], "n1")) // the framework's Unreserve after the rejection
	if len(m.Permits().Waiters()) != 0 {
		t.Fatalf("stale waiters %v", m.Permits().Waiters())
	}
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj())
	more := []*v1.Pod{lt.Member("ns", "s0", 5).Obj(), lt.Member("ns", "s0", 6).Obj()}
	for _, p := range more {
		m.OnPod(nil, p)
	}
	reservePermit(m, pods[0])
	if d := reservePermit(m, pods[1]); !d.Allow {
		t.Errorf("tree recreated: %+v, want allowed", d)
	}
}

// Issue #10 item 5: a waiter the framework already let go (its pod deleted, the model's
// delete event not seen yet) is not counted by a concurrent Permit.
func TestRejectedWaiterIsNotCounted(t *testing.T) {
	m, _, rec := testModel(t)
	pods := gangWithWaiters(m, rec, "a", 3, 2)
	rec.gone.Insert(pods[0].UID) // deleted: gone from the scheduler's cache
	if d := reservePermit(m, pods[2]); d.Allow {
		t.Fatalf("allowed with a deleted waiter counted")
	}
	if _, allowed, _ := rec.take(); len(allowed) != 0 {
		t.Errorf("allowed %v", allowed)
	}
	// Bound members are checked too.
	m2, _, rec2 := testModel(t)
	m2.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Obj())
	bound := lt.Member("ns", "b", 0).Node("n1").Obj()
	m2.OnPod(nil, bound)
	p := lt.Member("ns", "b", 1).Obj()
	m2.OnPod(nil, p)
	rec2.gone.Insert(bound.UID)
	if d := reservePermit(m2, p); d.Allow {
		t.Error("allowed counting a bound member the scheduler's cache shows deleted")
	}
}

// Issue #10 item 3: once a group was initially scheduled, retried and replacement members
// bind one by one; the group's minimum raised asks for the gang again.
func TestScheduledGroupSchedulesReplacementsAlone(t *testing.T) {
	m, _, _ := testModel(t)
	g := lt.MakePodGroup().Namespace("ns").Name("a").Gang(4).Obj()
	m.OnGroup(nil, g)
	pods := placedWhole(m, addPods(m, "a", 4))
	// Three completed (gone from the informer), one failed and was replaced.
	for _, p := range pods {
		m.OnPodDelete(assumed(p, "n1"))
	}
	retry := lt.Member("ns", "a", 7).Obj()
	m.OnPod(nil, retry)
	if v := m.Gate().Admit(bg, retry); v.Code != Proceed {
		t.Fatalf("Admit of a retry = %v %q, want Proceed", v.Code, v.Message)
	}
	if d := reservePermit(m, retry); !d.Allow {
		t.Fatalf("Permit of a retry = %+v, want allowed alone", d)
	}
	// minCount raised (an elastic scale-up): no further binding until it is met.
	raised := g.DeepCopy()
	raised.Spec.SchedulingPolicy.Gang.MinCount = 6
	raised.Generation = 2
	m.OnGroup(g, raised)
	extra := lt.Member("ns", "a", 8).Obj()
	m.OnPod(nil, extra)
	if v := m.Gate().Admit(bg, extra); v.Code != WaitingForPods {
		t.Errorf("Admit after minCount raised = %v, want WaitingForPods", v.Code)
	}
}

// minCount lowered while members wait: they are allowed at once.
func TestMinCountLoweredAllowsWaiters(t *testing.T) {
	m, _, rec := testModel(t)
	g := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	m.OnGroup(nil, g)
	pods := addPods(m, "a", 3)
	reservePermit(m, pods[0])
	reservePermit(m, pods[1])
	rec.take()
	lowered := g.DeepCopy()
	lowered.Spec.SchedulingPolicy.Gang.MinCount = 2
	m.OnGroup(g, lowered)
	if _, allowed, _ := rec.take(); !cmp.Equal(allowed, []string{"a-0", "a-1"}) {
		t.Errorf("allowed %v, want both waiters", allowed)
	}
}

// A member deleted while its siblings wait: if the tree can no longer be ready with the pods
// that exist, the waiters are released at once (no backoff); if a replacement already
// exists, they keep waiting and the replacement joins the attempt.
func TestDeletedMemberReleasesWaitersOnlyWhenHopeless(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	reservePermit(m, pods[0])
	reservePermit(m, pods[1])
	spare := lt.Member("ns", "a", 9).Obj()
	m.OnPod(nil, spare)
	rec.take()
	m.OnPodDelete(pods[2])
	if _, _, rejected := rec.take(); len(rejected) != 0 {
		t.Fatalf("released %v though a replacement exists", rejected)
	}
	if d := reservePermit(m, spare); !d.Allow {
		t.Fatalf("the replacement joins the attempt: %+v", d)
	}

	m2, _, rec2 := testModel(t)
	m2.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(3).Obj())
	pods = addPods(m2, "b", 3)
	reservePermit(m2, pods[0])
	reservePermit(m2, pods[1])
	rec2.take()
	m2.OnPodDelete(pods[2])
	_, _, rejected := rec2.take()
	if len(rejected) != 2 || !strings.Contains(rejected["b-0"], "2 of 3 pods exist") {
		t.Fatalf("waiters released %v, want both, saying what the gang lacks", rejected)
	}
	if v := m2.Gate().Check(bg, pods[0], 0); v.Code == BackingOff {
		t.Error("a tree short of pods backs off: no backoff is due")
	}
}

// The model ends a wait itself at the deadline, under its lock, before the framework's own
// timeout: every waiter is rejected together and the tree backs off.
func TestDeadlineRejectsTheTree(t *testing.T) {
	m, clk, rec := testModel(t)
	g := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	g.Spec.ScheduleTimeoutSeconds = ptr.To[int32](7)
	m.OnGroup(nil, g)
	pods := addPods(m, "a", 3)
	d := reservePermit(m, pods[0])
	if d.Timeout != 7*time.Second+permitGrace {
		t.Errorf("framework timeout %s, want 7s and the grace", d.Timeout)
	}
	clk.Step(3 * time.Second)
	reservePermit(m, pods[1])
	rec.take()
	clk.Step(4 * time.Second)
	_, _, rejected := rec.take()
	if len(rejected) != 2 || !strings.Contains(rejected["a-1"], "gang a timed out waiting for its members") {
		t.Fatalf("rejected %v, want both waiters at the first one's deadline", rejected)
	}
	if c, _ := m.Gate().Condition(PodGroupKey("ns", "a")); !strings.Contains(c.Message, "timed out after 7s waiting for the gang: 2 of 3 pods placed") {
		t.Errorf("condition %q, want the timeout's details", c.Message)
	}
	if len(m.Permits().Waiters()) != 0 {
		t.Errorf("waiters left: %v", m.Permits().Waiters())
	}
	if v := m.Gate().Check(bg, pods[2], 0); v.Code != BackingOff {
		t.Errorf("Check after a timeout = %v, want BackingOff", v.Code)
	}
	if c, _ := m.Gate().Condition(PodGroupKey("ns", "a")); !strings.Contains(c.Message, "timed out") {
		t.Errorf("condition %q, want the timeout", c.Message)
	}
}

func TestFailRejectsWholeGangAndBacksOff(t *testing.T) {
	m, clk, rec := testModel(t)
	pods := gangWithWaiters(m, rec, "a", 3, 2)
	msg := m.Permits().Fail(bg, pods[2], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	// The members are told the same at every attempt; the details are on the condition.
	want := "gang a did not fit; the Scheduled condition of PodGroup a says why (retried when the cluster changes)"
	if msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	if _, _, rejected := rec.take(); len(rejected) != 2 || rejected["a-0"] != want {
		t.Errorf("rejected %v", rejected)
	}
	details := "cannot fit: 2 of 3 pods placed; pod a-2: 0/1 nodes are available: 1 Insufficient cpu"
	if c, _ := m.Gate().Condition(PodGroupKey("ns", "a")); c.Message != details {
		t.Errorf("condition %q, want %q", c.Message, details)
	}
	for _, p := range pods[:2] {
		m.Permits().Unreserve(bg, assumed(p, "n1"))
	}
	if v := m.Gate().Check(bg, pods[0], 0); v.Code != BackingOff {
		t.Errorf("Check during backoff = %v, want BackingOff", v.Code)
	}
	// Held out of the queue meanwhile: a member popped only to be turned away would have its
	// PodScheduled condition rewritten at every attempt.
	if v := m.Gate().Admit(bg, pods[1]); v.Code != BackingOff {
		t.Errorf("Admit during backoff = %v, want BackingOff", v.Code)
	}
	// With no news, the tree is retried when the backoff ends, by one scout (a member that did
	// not fail): the others wait out of the queue until it has found room for the gang.
	clk.Step(10 * time.Second)
	if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"a-0"}) {
		t.Errorf("retry after backoff activates %v, want the scout a-0 alone", activated)
	}
	if v := m.Gate().Admit(bg, pods[0]); v.Code != Proceed {
		t.Errorf("Admit of the scout after backoff = %v, want Proceed", v.Code)
	}
	if v := m.Gate().Admit(bg, pods[1]); v.Code != AwaitingScout || !strings.Contains(v.Message, "a-0") {
		t.Errorf("Admit of another member after backoff = %v %q, want AwaitingScout naming a-0", v.Code, v.Message)
	}
	if v := m.Gate().Check(bg, pods[0], 0); v.Code != Proceed {
		t.Errorf("Check after backoff = %v, want Proceed", v.Code)
	}
	// The scout's plan holds room: the attempt starts, and the others are let in.
	m.Permits().Reserve(bg, assumed(pods[0], "n1"), "n1")
	if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"a-1", "a-2"}) {
		t.Errorf("the scout's reservation activates %v, want the other members", activated)
	}
	if v := m.Gate().Admit(bg, pods[1]); v.Code != Proceed {
		t.Errorf("Admit once the attempt started = %v, want Proceed", v.Code)
	}
	if c, _ := m.Gate().Condition(PodGroupKey("ns", "a")); c.Message != details {
		t.Errorf("condition %q, want the failure", c.Message)
	}
}

// Backoff stops hot loops, not news: an event that may let a failed tree fit retries it
// at once (no sooner than the retry floor after its failure).
func TestNewsRetriesAFailedTreeNow(t *testing.T) {
	news := map[string]func(m *Model){
		"node added":        func(m *Model) { m.OnCapacity("node added") },
		"bound pod deleted": func(m *Model) { m.OnPodDelete(lt.Member("ns", "other", 0).Node("n1").Obj()) },
		"member created":    func(m *Model) { m.OnPod(nil, lt.Member("ns", "a", 9).Obj()) },
		"group edited": func(m *Model) {
			m.OnGroup(lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj(), lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
		},
		"another group edited": nil,
	}
	for name, event := range news {
		t.Run(name, func(t *testing.T) {
			m, clk, rec := testModel(t)
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
			pods := addPods(m, "a", 3)
			m.Permits().Fail(bg, pods[0], "no room", testPolicy)
			rec.take()
			clk.Step(2 * time.Second) // past the retry floor, well within the backoff
			if event == nil {
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("unrelated").Gang(1).Obj())
				if activated, _, _ := rec.take(); len(activated) != 0 {
					t.Errorf("an unrelated change retried the tree: %v", activated)
				}
				return
			}
			event(m)
			clk.Step(newsDelay)
			// One scout tries the tree (not a-0, which just failed).
			if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"a-1"}) {
				t.Errorf("activated %v, want the scout a-1", activated)
			}
			if v := m.Gate().Check(bg, pods[0], 0); v.Code != Proceed {
				t.Errorf("Check after news = %v %q, want Proceed", v.Code, v.Message)
			}
		})
	}
	// Within the retry floor, the retry waits for the floor.
	m, clk, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	m.Permits().Fail(bg, pods[0], "no room", testPolicy)
	rec.take()
	m.OnCapacity("node added")
	clk.Step(newsDelay)
	if activated, _, _ := rec.take(); len(activated) != 0 {
		t.Errorf("retried within the floor: %v", activated)
	}
	clk.Step(DefaultRetryFloor)
	if activated, _, _ := rec.take(); len(activated) != 1 {
		t.Errorf("retry at the floor activated %v, want one scout", activated)
	}
	// The attempt news prompted fails at once (the scheduler's cache had not caught up): it
	// backs off for the floor only, then the full backoff.
	m.Permits().Fail(bg, pods[0], "no room", testPolicy)
	if r := m.permits.attempts.Round(PodGroupKey("ns", "a")); r.backoffUntil.Sub(clk.Now()) != DefaultRetryFloor {
		t.Errorf("backoff after a failed retry prompted by news: %s, want the floor", r.backoffUntil.Sub(clk.Now()))
	}
	clk.Step(DefaultRetryFloor)
	rec.take()
	m.Permits().Fail(bg, pods[0], "no room", testPolicy)
	if r := m.permits.attempts.Round(PodGroupKey("ns", "a")); !spreadFrom([]time.Duration{r.backoffUntil.Sub(clk.Now())}, []time.Duration{testPolicy.Backoff}) {
		t.Errorf("backoff after the next failure: %s, want the full backoff, within a tenth", r.backoffUntil.Sub(clk.Now()))
	}
}

func TestFailKeepsGangThatCanStillBeReady(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	pods := addPods(m, "a", 3)
	reservePermit(m, pods[0])
	rec.take()
	if msg := m.Permits().Fail(bg, pods[1], "no room", testPolicy); msg != "" {
		t.Errorf("failure %q, want none: a-0 and a-2 can still make minCount 2", msg)
	}
	m.Permits().Fail(bg, pods[2], "no room", testPolicy)
	if _, _, rejected := rec.take(); len(rejected) != 1 {
		t.Errorf("rejected %v, want a-0 once two of three failed", rejected)
	}
}

func TestFailInOneShardReleasesOnlyThatShard(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj())
	for _, s := range []string{"s0", "s1", "s2"} {
		m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(s).Gang(2).Parent("job").Obj())
	}
	s0, s1, s2 := addPods(m, "s0", 2), addPods(m, "s1", 2), addPods(m, "s2", 2)
	for _, p := range []*v1.Pod{s0[0], s1[0], s2[0]} {
		if d := reservePermit(m, p); d.Allow {
			t.Fatalf("%s allowed early", p.Name)
		}
	}
	rec.take()
	m.Permits().Fail(bg, s1[1], "no room", testPolicy)
	if _, _, rejected := rec.take(); len(rejected) != 1 || rejected["s1-0"] == "" {
		t.Fatalf("rejected %v, want only s1-0", rejected)
	}
	if v := m.Gate().Check(bg, s0[1], 0); v.Code != Proceed {
		t.Errorf("a shard failing backs the tree off: %v", v.Code)
	}
	if d := reservePermit(m, s0[1]); d.Allow {
		t.Fatalf("one ready shard must not be enough for minGroupCount 2")
	}
	if d := reservePermit(m, s2[1]); !d.Allow {
		t.Fatalf("two ready shards: %+v, want allowed", d)
	}
	if _, allowed, _ := rec.take(); !cmp.Equal(allowed, []string{"s0-0", "s0-1", "s2-0"}) {
		t.Errorf("allowed %v", allowed)
	}
}

// A member allowed to bind whose bind fails leaves its gang partially bound: the condition
// says so (never True while a bind is in flight), and the member is retried alone.
func TestPartialBindIsReported(t *testing.T) {
	m, _, _ := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	for _, p := range pods {
		reservePermit(m, p)
	}
	if _, ok := m.Gate().Condition(PodGroupKey("ns", "a")); ok {
		t.Error("a condition while binds are in flight")
	}
	m.OnPod(pods[0], assumed(pods[0], "n1"))
	m.OnPod(pods[1], assumed(pods[1], "n1"))
	m.Permits().Unreserve(bg, assumed(pods[2], "n1")) // a webhook refused the binding
	c, _ := m.Gate().Condition(PodGroupKey("ns", "a"))
	if c.Reason != "PartiallyBound" || !strings.Contains(c.Message, "partially bound: 2 of 3 pods bound") {
		t.Fatalf("condition %+v, want PartiallyBound", c)
	}
	if d := reservePermit(m, pods[2]); !d.Allow {
		t.Fatalf("retry of the member that failed to bind: %+v, want allowed alone", d)
	}
	m.OnPod(pods[2], assumed(pods[2], "n1"))
	if c, _ := m.Gate().Condition(PodGroupKey("ns", "a")); c.Reason != "Scheduled" {
		t.Errorf("condition %+v once all bound, want Scheduled", c)
	}
}

// A restarted scheduler finds the group scheduled from its condition, and counts bound pods.
func TestRestartRebuildsFromTheCluster(t *testing.T) {
	m, _, _ := testModel(t)
	g := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()
	m.OnGroup(nil, g)
	m.OnPod(nil, lt.Member("ns", "a", 0).Node("n1").Obj())
	m.OnPod(nil, lt.Member("ns", "a", 1).Node("n2").Obj())
	if !m.index.Get(PodGroupKey("ns", "a")).Scheduled() {
		t.Error("a group whose minimum is bound is scheduled")
	}
	if c, _ := m.Gate().Condition(PodGroupKey("ns", "a")); c.Reason != "Scheduled" {
		t.Errorf("condition %+v, want Scheduled", c)
	}
}

// QueueSort orders a tree by its root's priorityClassName, else its pods' priority.
func TestSortKeyUsesTheGroupsPriority(t *testing.T) {
	m, _, _ := testModel(t)
	client := kubefake.NewClientset(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Value: 1000})
	factory := informers.NewSharedInformerFactory(client, 0)
	pcs := factory.Scheduling().V1().PriorityClasses()
	_ = pcs.Informer().GetStore().Add(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Value: 1000})
	m.priorityLister = pcs.Lister()
	prod := lt.MakePodGroup().Namespace("ns").Name("prod").Gang(1).Obj()
	prod.Spec.PriorityClassName = "prod"
	m.OnGroup(nil, prod)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("plain").Gang(1).Obj())
	p1, p2 := lt.Member("ns", "prod", 0).Obj(), lt.Member("ns", "plain", 0).Obj()
	p2.Spec.Priority = ptr.To[int32](5)
	m.OnPod(nil, p1)
	m.OnPod(nil, p2)
	for _, p := range []*v1.Pod{p1, p2} {
		if v := m.Gate().Admit(bg, p); v.Code != Proceed {
			t.Fatalf("%s: %v, want Proceed", p.Name, v)
		}
	}
	if k, ok := m.Gate().SortKey(p1); !ok || k.Priority != 1000 {
		t.Errorf("priority %d, want the group's 1000", k.Priority)
	}
	if k, ok := m.Gate().SortKey(p2); !ok || k.Priority != 5 {
		t.Errorf("priority %d, want the pod's 5", k.Priority)
	}
}

// A node deleted under members waiting at Permit releases them (they would bind to a node that
// is gone); their tree keeps waiting for them.
func TestNodeDeletedReleasesItsWaiters(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	reservePermit(m, pods[0])
	a := assumed(pods[1], "n2")
	m.Permits().Reserve(bg, a, "n2")
	m.Permits().Permit(bg, a, testPolicy)
	rec.take()
	m.OnNodeDelete(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	activated, _, rejected := rec.take()
	if len(rejected) != 1 || !strings.Contains(rejected["a-1"], "node n2 was deleted") {
		t.Fatalf("rejected %v, want a-1 only", rejected)
	}
	if !contains(activated, "a-1") {
		t.Errorf("a-1 not retried: %v", activated)
	}
	if got := m.Permits().Waiters(); len(got) != 1 || got[0] != pods[0].UID {
		t.Errorf("waiters %v, want a-0 still waiting", got)
	}
	// The scheduler's cache may not have lost the node yet: a member placed there again is
	// refused, even as the member that would make the tree ready.
	m.Permits().Reserve(bg, a, "n2")
	if d := m.Permits().Permit(bg, a, testPolicy); !strings.Contains(d.Reject, "node n2 was deleted") {
		t.Errorf("Permit on the deleted node = %+v, want refused", d)
	}
	last := assumed(pods[2], "n2")
	m.Permits().Reserve(bg, last, "n2")
	if d := m.Permits().Permit(bg, last, testPolicy); d.Allow || d.Reject == "" {
		t.Errorf("Permit of the last member on the deleted node = %+v, want refused", d)
	}
	// A node added under that name again is a node.
	m.OnNodeAdd(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	m.Permits().Reserve(bg, a, "n2")
	if d := m.Permits().Permit(bg, a, testPolicy); d.Reject != "" {
		t.Errorf("Permit on the node added again = %+v, want no refusal", d)
	}
}

// News retries failed trees together, by the queue's order: a tree that failed within its
// retry floor waits for the floor to end, and so do the trees the queue puts after it (so
// that a tree tried last does not lose the room to one tried earlier that goes after it);
// a tree the queue puts first does not wait for it, nor does any wait for a tree that waits
// for the pods it preempted (the room they free is nominated to it).
func TestNewsRetriesFailedTreesTogether(t *testing.T) {
	tests := []struct {
		name string
		// the priorities of the tree that failed 1.2 s before the news and of the one that
		// failed 0.4 s before it.
		earlyPrio, latePrio int32
		// latePreempting: the tree that failed last waits for its victims to leave;
		// lateGone: its pods were deleted before the news.
		latePreempting, lateGone bool
		now, later               []string
	}{{
		name:      "the tree within its floor goes first: both wait for it",
		earlyPrio: 0, latePrio: 100,
		later: []string{"early-1", "late-1"},
	}, {
		name:      "the tree within its floor goes first but waits for its victims: only it waits",
		earlyPrio: 0, latePrio: 100, latePreempting: true,
		now: []string{"early-1"}, later: []string{"late-1"},
	}, {
		name:      "the tree past its floor goes first: it does not wait",
		earlyPrio: 100, latePrio: 0,
		now: []string{"early-1"}, later: []string{"late-1"},
	}, {
		name:      "the tree within its floor goes first but its pods are gone: none waits for it",
		earlyPrio: 0, latePrio: 100, lateGone: true,
		now: []string{"early-1"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec := testModel(t)
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("early").Gang(2).Obj())
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("late").Gang(2).Obj())
			early := []*v1.Pod{lt.Member("ns", "early", 0).Priority(tc.earlyPrio).Obj(), lt.Member("ns", "early", 1).Priority(tc.earlyPrio).Obj()}
			late := []*v1.Pod{lt.Member("ns", "late", 0).Priority(tc.latePrio).Obj(), lt.Member("ns", "late", 1).Priority(tc.latePrio).Obj()}
			for _, p := range append(early, late...) {
				m.OnPod(nil, p)
			}
			m.Permits().Fail(bg, early[0], "no room", testPolicy)
			clk.Step(800 * time.Millisecond)
			m.Permits().Fail(bg, late[0], "no room", testPolicy)
			if tc.latePreempting {
				m.Permits().NotePreempting(PodGroupKey("ns", "late"), "taking node n1: evicting 2 pods of priority 0 (1 gang whole)")
			}
			if tc.lateGone {
				for _, p := range late {
					m.OnPodDelete(p)
				}
			}
			rec.take()
			clk.Step(400 * time.Millisecond) // early failed 1.2s ago, late 0.4s ago
			m.OnCapacity("node added")
			clk.Step(newsDelay)
			if activated, _, _ := rec.take(); !cmp.Equal(activated, tc.now) {
				t.Errorf("activated at once %v, want %v", activated, tc.now)
			}
			rec.mu.Lock()
			rec.batches = 0
			rec.mu.Unlock()
			clk.Step(DefaultRetryFloor)
			rec.mu.Lock()
			batches := rec.batches
			rec.mu.Unlock()
			if activated, _, _ := rec.take(); !cmp.Equal(activated, tc.later) || batches != min(len(tc.later), 1) {
				t.Errorf("activated %v in %d batches at late's floor, want %v in one", activated, batches, tc.later)
			}
		})
	}
}

// victimsWatch is the plans as the model asks them whether a tree waits for the pods its
// preemption evicts (RoundObserver.AwaitsVictims).
type victimsWatch struct{ preempted, waiting map[Key]bool }

func (w *victimsWatch) AttemptEnded(Key)  {}
func (w *victimsWatch) TreeScheduled(Key) {}
func (w *victimsWatch) TreeGone(Key)      {}
func (w *victimsWatch) AwaitsVictims(root Key) (bool, bool) {
	return w.preempted[root], w.waiting[root]
}

// A tree that preempted is retried by no news while the pods it evicts are still there (every
// try would fail), and by the news of the last one leaving at once, within its retry floor or
// not; if the last one leaves while its scout is in its cycle, the attempt's failure retries
// it at once rather than after its backoff.
func TestNewsWaitsForAPreemptorsVictims(t *testing.T) {
	for _, tc := range []struct {
		name string
		// goneInCycle: the victims leave while the scout is in its cycle, not after.
		goneInCycle bool
	}{{name: "the victims leave while the tree backs off"}, {name: "the last victim leaves during its attempt", goneInCycle: true}} {
		t.Run(tc.name, func(t *testing.T) {
			hi := PodGroupKey("ns", "hi")
			watch := &victimsWatch{preempted: map[Key]bool{hi: true}, waiting: map[Key]bool{hi: true}}
			m, clk, rec := observedModel(t, watch)
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("hi").Gang(2).Obj())
			pods := addPods(m, "hi", 2)
			m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
			m.Permits().NotePreempting(hi, "taking node n1: evicting 2 pods of priority 0 (0 gangs whole)")
			rec.take()
			clk.Step(2 * DefaultRetryFloor)
			m.OnCapacity("pod ns/v1 left node n1") // one victim of two
			clk.Step(newsDelay)
			if activated, _, _ := rec.take(); len(activated) != 0 {
				t.Fatalf("activated %v while a victim is still there, want nothing", activated)
			}
			if tc.goneInCycle {
				watch.waiting[hi] = false
			}
			// Its scout is tried (its timed retry, say), and fails: its victims are not gone.
			m.Permits().Fail(bg, pods[0], "waiting for 1 preempted pods to leave node n1", testPolicy)
			rec.take()
			if !tc.goneInCycle {
				clk.Step(DefaultRetryFloor / 4)
				watch.waiting[hi] = false
				m.OnCapacity("pod ns/v2 left node n1") // the last one, within the tree's floor
			}
			clk.Step(newsDelay)
			if activated, _, _ := rec.take(); len(activated) != 1 {
				t.Errorf("activated %v once the victims are gone, want the tree's scout at once", activated)
			}
		})
	}
}

// Issue #18 item 3: a member the framework rejects in memory while it waits (a preemption
// taking it as a victim) stops counting before any other member of its tree can be allowed:
// the member that completes the gang an instant later waits instead of binding short.
func TestFrameworkRejectionStopsCountingAtOnce(t *testing.T) {
	m, _, rec := testModel(t)
	pods := gangWithWaiters(m, rec, "a", 3, 2)
	if !m.Permits().Rejecting(bg, assumed(pods[0], "n1"), "preempted") {
		t.Fatal("the model refused the preemption of a waiter")
	}
	if d := reservePermit(m, pods[2]); d.Allow {
		t.Fatal("a-2 allowed while a-0, rejected by the framework, was counted")
	}
	if _, allowed, _ := rec.take(); len(allowed) != 0 {
		t.Errorf("allowed %v, want none: the gang is short of a-0", allowed)
	}
	if got := len(m.Permits().Waiters()); got != 2 {
		t.Errorf("%d waiters, want a-1 and a-2", got)
	}
	// The framework's Unreserve of a-0 follows; it changes nothing.
	m.Permits().Unreserve(bg, assumed(pods[0], "n1"))
	if got := len(m.Permits().Waiters()); got != 2 {
		t.Errorf("%d waiters after the late Unreserve, want 2", got)
	}
}

// A member the model allowed is not the framework's to reject any more: the rejection fails
// (the preemptor deletes the pod instead), and the guard delivers the Allow.
func TestRejectingAnAllowedMemberFails(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	pods := addPods(m, "a", 2)
	reservePermit(m, pods[0])
	if d := reservePermit(m, pods[1]); !d.Allow {
		t.Fatal("the gang is whole: a-1 must be allowed")
	}
	if _, allowed, _ := rec.take(); len(allowed) != 1 || allowed[0] != "a-0" {
		t.Fatalf("allowed %v, want a-0", allowed)
	}
	if m.Permits().Rejecting(bg, assumed(pods[0], "n1"), "preempted") {
		t.Error("the framework may reject a-0 after the model allowed it: its gang would bind short")
	}
	wp := &fakeWaitingPod{pod: assumed(pods[0], "n1")}
	guarded := guardedWaitingPod{WaitingPod: wp, g: guardedHandle{r: m.Permits(), plugin: "LockstepGang"}}
	if guarded.Preempt("DefaultPreemption", "preempted") {
		t.Error("the guarded waiting pod let a preemption stop an allowed member")
	}
	if !wp.allowed || wp.stopped {
		t.Errorf("allowed %v stopped %v, want the Allow delivered and no rejection", wp.allowed, wp.stopped)
	}
	// A pod the model holds as a waiter is rejected through the guard, and stops counting.
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Obj())
	b := addPods(m, "b", 2)
	reservePermit(m, b[0])
	wb := &fakeWaitingPod{pod: assumed(b[0], "n1")}
	if !(guardedWaitingPod{WaitingPod: wb, g: guardedHandle{r: m.Permits()}}).Reject("", "removed") || !wb.stopped {
		t.Error("the guard refused to reject a waiter")
	}
	if d := reservePermit(m, b[1]); d.Allow {
		t.Error("b-1 allowed counting b-0, which the framework rejected")
	}
}

// fakeWaitingPod is a framework's waiting pod that records what it was told.
type fakeWaitingPod struct {
	pod              *v1.Pod
	allowed, stopped bool
}

func (w *fakeWaitingPod) GetPod() *v1.Pod             { return w.pod }
func (w *fakeWaitingPod) GetPendingPlugins() []string { return nil }
func (w *fakeWaitingPod) Allow(string)                { w.allowed = true }
func (w *fakeWaitingPod) Reject(string, string) bool  { return w.stop() }
func (w *fakeWaitingPod) Preempt(string, string) bool { return w.stop() }
func (w *fakeWaitingPod) stop() bool {
	if w.allowed || w.stopped {
		return false
	}
	w.stopped = true
	return true
}

// Waiters keep their deadline after a partial timeout: a waiter kept because a member between
// Reserve and Permit made its path ready is looked at again a moment later, and released by
// the model, not by the framework's timeout behind its back, when that member never comes.
func TestWaitersKeepTheirDeadlineAfterAPartialTimeout(t *testing.T) {
	m, clk, rec := testModel(t)
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Parent("job").Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Parent("job").ScheduleTimeout(10).Obj())
	m.OnPod(nil, lt.Member("ns", "a", 0).Node("n1").Obj()) // a is ready: so is job
	b := addPods(m, "b", 2)
	d := reservePermit(m, b[0])
	if d.Allow {
		t.Fatal("b-0 allowed alone")
	}
	clk.Step(9 * time.Second)
	late := assumed(b[1], "n2")
	m.Permits().Reserve(bg, late, "n2") // Reserve, not yet Permit
	rec.take()
	clk.Step(time.Second) // b-0's deadline: b's path is ready counting b-1's reservation
	if _, _, rejected := rec.take(); len(rejected) != 0 {
		t.Fatalf("rejected %v at the deadline, though b-1 is about to complete b", rejected)
	}
	m.Permits().Unreserve(bg, late) // b-1 never reaches Permit
	clk.Step(expiryRecheck)
	_, _, rejected := rec.take()
	if len(rejected) != 1 || !strings.Contains(rejected["b-0"], "timed out") {
		t.Fatalf("rejected %v, want b-0 timed out by the model", rejected)
	}
	if clk.Now().After(epoch.Add(10*time.Second + permitGrace)) {
		t.Errorf("the model released b-0 at %s, after the framework's own timeout", clk.Now().Sub(epoch))
	}
}

// The queue-sort key is fixed while a pod sits in the queue: a change of its tree (half
// bound, a leader having died between its binds, or a failure) moves the key of members that
// enter the queue afterwards, not of those already in it. A try at the backoff's end is
// queued by the last failure (behind trees not tried yet); a try news prompted by the tree's
// age (the oldest tree of a priority gets the room).
func TestSortKeyIsFixedWhileQueued(t *testing.T) {
	m, clk, _ := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	if v := m.Gate().Admit(bg, pods[0]); v.Code != Proceed {
		t.Fatalf("Admit: %v", v)
	}
	before, _ := m.Gate().SortKey(pods[0])
	clk.Step(time.Minute)
	m.Permits().Fail(bg, pods[0], "no room", testPolicy)
	m.OnPod(pods[2], assumed(pods[2], "n1")) // bound before the tree was scheduled
	if k, _ := m.Gate().SortKey(pods[0]); k != before {
		t.Errorf("key changed while queued: %+v, was %+v", k, before)
	}
	clk.Step(backoffEnds)
	m.Gate().Admit(bg, pods[0])
	if k, _ := m.Gate().SortKey(pods[0]); !k.Finishing || !k.Time.Equal(epoch.Add(time.Minute)) {
		t.Errorf("key at the backoff's end, the tree half bound: %+v, want it finishing, queued by the failure (%s)", k, epoch.Add(time.Minute))
	}
	m.Gate().Check(bg, pods[0], 0)
	m.Permits().Fail(bg, pods[0], "no room", testPolicy)
	clk.Step(2 * time.Second) // past the retry floor
	m.OnNodeAdd(lt.MakeNode("n2", "4").Obj())
	clk.Step(newsDelay)
	m.Gate().Admit(bg, pods[0])
	if k, _ := m.Gate().SortKey(pods[0]); !k.Time.Equal(before.Time) {
		t.Errorf("key on news: %+v, want the tree's age (%s)", k, before.Time)
	}
	m.OnPodDelete(pods[0])
	if _, ok := m.Gate().SortKey(pods[0]); ok {
		t.Error("a deleted pod's key is kept")
	}
}

// The members let in when their tree's attempt started leave the queue before the scouts of
// older trees of their priority — the room their plan holds waits for them — but not before
// a tree of a higher priority; once the attempt failed, their tree's scout is queued by its own key.
func TestAttemptUnderWayGoesFirst(t *testing.T) {
	m, clk, _ := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("old").Gang(2).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("young").Gang(2).Created(lt.Epoch.Add(time.Minute)).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("urgent").Gang(2).Created(lt.Epoch.Add(time.Hour)).Obj())
	old, young := addPods(m, "old", 2), addPods(m, "young", 2)
	var urgent []*v1.Pod
	for i := range 2 {
		urgent = append(urgent, lt.Member("ns", "urgent", i).Priority(100).Obj())
		m.OnPod(nil, urgent[i])
	}
	for _, scout := range []*v1.Pod{old[0], young[0], urgent[0]} {
		if v := m.Gate().Admit(bg, scout); v.Code != Proceed {
			t.Fatalf("Admit %s: %v", scout.Name, v)
		}
	}
	m.Permits().Reserve(bg, assumed(young[0], "n1"), "n1") // young's attempt starts
	if v := m.Gate().Admit(bg, young[1]); v.Code != Proceed {
		t.Fatalf("Admit young-1 once its tree's attempt started: %v", v)
	}
	member, _ := m.Gate().SortKey(young[1])
	oldScout, _ := m.Gate().SortKey(old[0])
	urgentScout, _ := m.Gate().SortKey(urgent[0])
	if !member.Before(oldScout) {
		t.Errorf("young-1, its attempt under way (%+v), leaves the queue after old's scout (%+v)", member, oldScout)
	}
	if !urgentScout.Before(member) {
		t.Errorf("young-1 (%+v) leaves the queue before the scout of a higher priority (%+v)", member, urgentScout)
	}
	m.Permits().Unreserve(bg, assumed(young[0], "n1"))
	m.Permits().Fail(bg, young[0], "no room", testPolicy)
	clk.Step(backoffEnds)
	if v := m.Gate().Admit(bg, young[0]); v.Code != Proceed {
		t.Fatalf("Admit young's scout after the backoff: %v", v)
	}
	if k, _ := m.Gate().SortKey(young[0]); k.Finishing || !oldScout.Before(k) {
		t.Errorf("young's scout's key once its attempt failed: %+v, want its tree's own, after old's scout (%+v)", k, oldScout)
	}
}

// Nodes deleted are remembered a while (a member placed there from a cache that had not lost
// the node yet is refused), not for ever: autoscalers never reuse a name, and nothing is kept
// per node the cluster ever had.
func TestDeletedNodesAreForgotten(t *testing.T) {
	m, clk, _ := testModel(t)
	for i := range 100 {
		m.OnNodeDelete(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("old-%d", i)}})
	}
	if n := m.Sizes()["gone"]; n != 100 {
		t.Fatalf("%d deleted nodes remembered at once, want 100", n)
	}
	clk.Step(time.Minute)
	m.OnNodeDelete(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "new"}})
	clk.Step(goneTTL - time.Minute)
	if n := m.Sizes()["gone"]; n != 1 {
		t.Errorf("%d deleted nodes remembered after %s, want only the one deleted since", n, goneTTL)
	}
	clk.Step(time.Minute) // no more deletions: the last is forgotten too
	if n := m.Sizes()["gone"]; n != 0 {
		t.Errorf("%d deleted nodes remembered %s after the last deletion", n, goneTTL)
	}
}

// A tree waiting for the pods its preemption evicts is tried again at least every
// victimsRecheck, news or not, however many quiet retries it failed: a victim stuck
// terminating sends no news, and the tree must plan afresh once it is waited for no longer.
func TestTreeWaitingForVictimsLooksAgainInTime(t *testing.T) {
	hi := PodGroupKey("ns", "hi")
	watch := &victimsWatch{preempted: map[Key]bool{hi: true}, waiting: map[Key]bool{hi: true}}
	m, clk, rec := observedModel(t, watch)
	slow := Policy{PermitTimeout: time.Minute, Backoff: 5 * time.Minute}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("hi").Gang(2).Obj())
	pods := addPods(m, "hi", 2)
	m.Permits().NotePreempting(hi, "taking node n1: evicting 2 pods of priority 0 (0 gangs whole)")
	for i := range 4 {
		m.Permits().Fail(bg, pods[0], "waiting for 2 preempted pods to leave node n1", slow)
		rec.take()
		clk.Step(victimsRecheck)
		if activated, _, _ := rec.take(); len(activated) == 0 {
			t.Fatalf("try %d: not tried again within %s while it waits for its victims", i, victimsRecheck)
		}
	}
}

// A root group's deletion settles in two steps (OnGroupDelete: the tree is reshaped, then what
// was kept of the group goes); news another informer delivers in between (a pod left a node)
// finds the tree's round with its root gone. It retries nothing there and does not crash (it
// did: the scheduler died on a nil group while a user deleted PodGroups under churn).
func TestNewsBetweenARootsDeletionAndItsSettling(t *testing.T) {
	m, clk, rec := testModel(t)
	m.OnNodeAdd(lt.MakeNode("n1", "4").Obj())
	g := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj()
	m.OnGroup(nil, g)
	pods := addPods(m, "g", 2)
	for _, p := range pods {
		m.Gate().Admit(bg, p) // queued: one is its scout
	}
	m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	rec.take()
	m.update(m.logger, func(*effects) { m.index.Delete(g) }) // OnGroupDelete's first step
	other := lt.MakePod().Namespace("ns").Name("other").UID("other").Req(lt.CPU("1")).Node("n1").Obj()
	m.OnPod(nil, other)
	m.OnPodDelete(other)
	clk.Step(time.Minute)
	m.update(m.logger, func(*effects) { m.goneLocked(PodGroupKey("ns", "g")) }) // and its second
	if n := m.Sizes()["rounds"]; n != 0 {
		t.Errorf("%d rounds kept after the root was deleted", n)
	}
}
