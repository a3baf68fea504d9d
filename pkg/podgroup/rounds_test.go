package podgroup

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		objs     []any
		pods     map[string]int
		pod      *v1.Pod
		code     VerdictCode
		contains string
	}{
		{name: "pod without group", pod: func() *v1.Pod { p := pod("x", 0, ""); p.Labels = nil; return p }(), code: NotMember},
		{name: "group not created yet", pods: map[string]int{"a": 2}, pod: pod("a", 0, ""), code: MissingGroup,
			contains: `waiting for PodGroup "a" to be created`},
		{name: "invalid hierarchy", objs: []any{pg("a", 2, "nope")}, pods: map[string]int{"a": 2}, pod: pod("a", 0, ""),
			code: Invalid, contains: `parent CompositePodGroup "nope" not found`},
		{name: "too few pods", objs: []any{pg("a", 3, "")}, pods: map[string]int{"a": 2}, pod: pod("a", 0, ""),
			code: WaitingForPods, contains: "2 of 3 pods exist"},
		{name: "enough pods", objs: []any{pg("a", 3, "")}, pods: map[string]int{"a": 3}, pod: pod("a", 0, ""), code: Proceed},
		{name: "sibling short of pods", objs: []any{cpg("job", 2, ""), pg("s0", 1, "job"), pg("s1", 2, "job")},
			pods: map[string]int{"s0": 1, "s1": 1}, pod: pod("s0", 0, ""),
			code: WaitingForPods, contains: "parent job: 1 of 2 child groups ready"},
		{name: "pods of another scheduler do not count", objs: []any{pg("a", 2, "")}, pods: map[string]int{"a": 1},
			pod:  func() *v1.Pod { p := pod("a", 1, ""); p.Spec.SchedulerName = "default-scheduler"; return p }(),
			code: WaitingForPods, contains: "1 of 2 pods exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testManager(t)
			for _, o := range tc.objs {
				m.onGroup(o)
			}
			for g, n := range tc.pods {
				addPods(m, g, n)
			}
			m.onPod(nil, tc.pod)
			v := m.Check(tc.pod, true)
			if v.Code != tc.code || !strings.Contains(v.Message, tc.contains) {
				t.Errorf("Check = %v %q, want %v containing %q", v.Code, v.Message, tc.code, tc.contains)
			}
		})
	}
}

func TestCheckHoldsPodsUntilPodCacheSynced(t *testing.T) {
	m, _, _ := testManager(t)
	synced := false
	m.podsSynced = func() bool { return synced }
	m.onGroup(pg("a", 1, ""))
	p := addPods(m, "a", 1)[0]
	if v := m.Check(p, false); v.Code != Syncing {
		t.Fatalf("Check before sync = %v, want Syncing", v.Code)
	}
	synced = true
	if v := m.Check(p, false); v.Code != Proceed {
		t.Fatalf("Check after sync = %v, want Proceed", v.Code)
	}
	if len(m.heldAtStart) != 1 {
		t.Errorf("held %d pods, want the one pod for the start-up goroutine to activate", len(m.heldAtStart))
	}
}

func TestGangOfThreeBindsTogether(t *testing.T) {
	m, _, _ := testManager(t)
	m.onGroup(pg("a", 3, ""))
	pods := addPods(m, "a", 4) // one pod more than minCount

	m.Assume(pods[0], "n1")
	d := m.Permit(pods[0], time.Minute)
	if d.Allow || d.Timeout != time.Minute {
		t.Fatalf("first member: %+v, want a one-minute wait", d)
	}
	if diff := cmp.Diff([]string{"a-1", "a-2", "a-3"}, podNames(d.Activate), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("first wait activates the pending members (-want +got):\n%s", diff)
	}
	m.Assume(pods[1], "n1")
	if d := m.Permit(pods[1], time.Minute); d.Allow || len(d.Activate) != 0 {
		t.Fatalf("second member: %+v, want a wait without a second activation", d)
	}
	m.Assume(pods[2], "n1")
	d = m.Permit(pods[2], time.Minute)
	if !d.Allow {
		t.Fatalf("third member: %+v, want allow", d)
	}
	if diff := cmp.Diff([]string{"a-0", "a-1"}, podNames(d.AllowWaiting), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("waiting members allowed with the third (-want +got):\n%s", diff)
	}
	if !m.groups[PodGroupKey("ns", "a")].scheduled {
		t.Error("group not marked scheduled")
	}
	// A member beyond minCount binds at once.
	m.Assume(pods[3], "n1")
	if d := m.Permit(pods[3], time.Minute); !d.Allow {
		t.Errorf("fourth member: %+v, want allow", d)
	}
}

func TestScheduleTimeoutOverridesDefault(t *testing.T) {
	m, _, _ := testManager(t)
	g := pg("a", 2, "")
	g.Spec.ScheduleTimeoutSeconds = ptr.To[int32](7)
	m.onGroup(g)
	pods := addPods(m, "a", 2)
	m.Assume(pods[0], "n1")
	if d := m.Permit(pods[0], time.Minute); d.Timeout != 7*time.Second {
		t.Errorf("timeout %s, want 7s", d.Timeout)
	}
}

func TestFailRejectsWholeGangAndBacksOff(t *testing.T) {
	m, clk, _ := testManager(t)
	m.onGroup(pg("a", 3, ""))
	pods := addPods(m, "a", 3)
	for _, p := range pods[:2] {
		m.Assume(p, "n1")
		m.Permit(p, time.Minute)
	}
	rej := m.Fail(pods[2], "0/1 nodes are available: 1 Insufficient cpu", 10*time.Second)
	if !rej.Backoff || rej.Root != PodGroupKey("ns", "a") {
		t.Errorf("rejection %+v, want a backoff of root a", rej)
	}
	if diff := cmp.Diff([]string{"a-0", "a-1"}, podNames(rej.Reject), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("rejected (-want +got):\n%s", diff)
	}
	want := "cannot fit: 2 of 3 pods placed; pod a-2: 0/1 nodes are available: 1 Insufficient cpu"
	if rej.Message != want {
		t.Errorf("message %q, want %q", rej.Message, want)
	}
	// The rejected members' Unreserve is not taken for a timeout.
	for _, p := range pods[:2] {
		if r := m.Unreserve(p, 10*time.Second); len(r.Reject) != 0 || r.Message != "" {
			t.Errorf("Unreserve of a rejected member = %+v, want nothing", r)
		}
	}
	if v := m.Check(pods[0], true); v.Code != BackingOff {
		t.Errorf("Check during backoff = %v, want BackingOff", v.Code)
	}
	if got := podNames(m.TakeRetry(rej.Root)); len(got) != 3 {
		t.Errorf("retry after backoff activates %v, want all 3 members", got)
	}
	clk.Step(11 * time.Second)
	if v := m.Check(pods[0], true); v.Code != Proceed {
		t.Errorf("Check after backoff = %v, want Proceed", v.Code)
	}
	if c, ok := m.desiredLocked(PodGroupKey("ns", "a")); !ok || c.message != want {
		t.Errorf("desired condition %+v, want the failure message", c)
	}
}

func TestFailKeepsGangThatCanStillBeReady(t *testing.T) {
	m, _, _ := testManager(t)
	m.onGroup(pg("a", 2, ""))
	pods := addPods(m, "a", 3)
	m.Assume(pods[0], "n1")
	m.Permit(pods[0], time.Minute)
	if rej := m.Fail(pods[1], "no room", time.Second); len(rej.Reject) != 0 || rej.Backoff {
		t.Errorf("rejection %+v, want none: a-0 and a-2 can still make minCount 2", rej)
	}
	if rej := m.Fail(pods[2], "no room", time.Second); len(rej.Reject) != 1 || !rej.Backoff {
		t.Errorf("rejection %+v, want a-0 rejected once two of three failed", rej)
	}
}

func TestFailInOneShardReleasesOnlyThatShard(t *testing.T) {
	m, _, _ := testManager(t)
	m.onGroup(cpg("job", 2, ""))
	for _, s := range []string{"s0", "s1", "s2"} {
		m.onGroup(pg(s, 2, "job"))
	}
	s0, s1, s2 := addPods(m, "s0", 2), addPods(m, "s1", 2), addPods(m, "s2", 2)
	for _, p := range []*v1.Pod{s0[0], s1[0], s2[0]} {
		m.Assume(p, "n1")
		if d := m.Permit(p, time.Minute); d.Allow {
			t.Fatalf("%s allowed early", p.Name)
		}
	}
	rej := m.Fail(s1[1], "no room", time.Second)
	if rej.Backoff || len(rej.Reject) != 1 || rej.Reject[0].Name != "s1-0" {
		t.Fatalf("rejection %+v, want only s1-0 released and no backoff", rej)
	}
	m.Assume(s0[1], "n1")
	if d := m.Permit(s0[1], time.Minute); d.Allow {
		t.Fatalf("one ready shard must not be enough for minGroupCount 2")
	}
	m.Assume(s2[1], "n1")
	d := m.Permit(s2[1], time.Minute)
	if !d.Allow {
		t.Fatalf("second ready shard: %+v, want allow", d)
	}
	if diff := cmp.Diff([]string{"s0-0", "s0-1", "s2-0"}, podNames(d.AllowWaiting), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("allowed (-want +got):\n%s", diff)
	}
	for k, want := range map[Key]bool{
		CompositePodGroupKey("ns", "job"): true, PodGroupKey("ns", "s0"): true,
		PodGroupKey("ns", "s1"): false, PodGroupKey("ns", "s2"): true,
	} {
		if got := m.groups[k].scheduled; got != want {
			t.Errorf("%s scheduled = %v, want %v", k, got, want)
		}
	}
}

func TestTimeoutRejectsTheRestOnce(t *testing.T) {
	m, clk, _ := testManager(t)
	m.onGroup(pg("a", 3, ""))
	pods := addPods(m, "a", 3)
	for _, p := range pods[:2] {
		m.Assume(p, "n1")
		m.Permit(p, time.Minute)
	}
	clk.Step(time.Minute)
	rej := m.Unreserve(pods[0], time.Second)
	if len(rej.Reject) != 1 || rej.Reject[0].Name != "a-1" || !rej.Backoff {
		t.Fatalf("rejection %+v, want a-1 rejected with backoff", rej)
	}
	if want := "timed out after 1m0s waiting for the gang: 2 of 3 pods placed; 2 of 3 pods placed"; rej.Message != want {
		t.Errorf("message %q, want %q", rej.Message, want)
	}
	if r := m.Unreserve(pods[1], time.Second); len(r.Reject) != 0 || r.Message != "" {
		t.Errorf("second Unreserve = %+v, want nothing", r)
	}
	if got := m.groups[PodGroupKey("ns", "a")].assumed; got != 0 {
		t.Errorf("%d members still assumed", got)
	}
}

func TestNewRoundForgetsFailures(t *testing.T) {
	m, _, _ := testManager(t)
	m.onGroup(pg("a", 2, ""))
	pods := addPods(m, "a", 2)
	m.Fail(pods[1], "no room", 0)
	if v := m.groups.readiness(countPossible).subtree(PodGroupKey("ns", "a")); v {
		t.Fatal("gang possible with a failed member")
	}
	m.Assume(pods[0], "n1") // first assumed member of a new round
	if v := m.groups.readiness(countPossible).subtree(PodGroupKey("ns", "a")); !v {
		t.Error("failures of the previous round still counted")
	}
}

func TestBoundMembersCount(t *testing.T) {
	m, _, _ := testManager(t)
	m.onGroup(pg("a", 4, ""))
	m.onPod(nil, pod("a", 0, "n1"))
	m.onPod(nil, pod("a", 1, "n2"))
	pending := []*v1.Pod{pod("a", 2, ""), pod("a", 3, "")}
	for _, p := range pending {
		m.onPod(nil, p)
	}
	m.Assume(pending[0], "n1")
	if d := m.Permit(pending[0], time.Minute); d.Allow {
		t.Fatal("3 of 4 allowed")
	}
	m.Assume(pending[1], "n1")
	if d := m.Permit(pending[1], time.Minute); !d.Allow || len(d.AllowWaiting) != 1 {
		t.Fatalf("%+v, want allow with one waiting member", d)
	}
	// Binding moves assumed members to bound.
	bound := pending[0].DeepCopy()
	bound.Spec.NodeName = "n1"
	m.onPod(pending[0], bound)
	if g := m.groups[PodGroupKey("ns", "a")]; g.bound != 3 || g.assumed != 1 {
		t.Errorf("bound %d assumed %d, want 3 and 1", g.bound, g.assumed)
	}
}

func TestActivationWhenTreeBecomesReady(t *testing.T) {
	m, _, act := testManager(t)
	m.onGroup(cpg("job", 2, ""))
	m.onGroup(pg("s0", 1, "job"))
	addPods(m, "s0", 1)
	m.onGroup(pg("s1", 2, "job"))
	addPods(m, "s1", 1)
	if len(act.pods) != 0 {
		t.Fatalf("activated %v before the tree could be ready", act.pods)
	}
	m.onPod(nil, pod("s1", 1, ""))
	if diff := cmp.Diff([]string{"ns/s0-0", "ns/s1-0", "ns/s1-1"}, act.pods, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("activated (-want +got):\n%s", diff)
	}
	act.pods = nil
	m.onPod(nil, pod("s1", 2, ""))
	if len(act.pods) != 0 {
		t.Errorf("activated %v again", act.pods)
	}
}

func TestTerminatedAndDeletedPodsDoNotCount(t *testing.T) {
	m, _, _ := testManager(t)
	m.onGroup(pg("a", 2, ""))
	pods := addPods(m, "a", 2)
	done := pods[0].DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	m.onPod(pods[0], done)
	if got := m.groups[PodGroupKey("ns", "a")].known(); got != 1 {
		t.Errorf("known %d after a pod succeeded, want 1", got)
	}
	m.onPodDelete(pods[1])
	if g := m.groups[PodGroupKey("ns", "a")]; g.known() != 0 {
		t.Errorf("known %d after deletion, want 0", g.known())
	}
	relabeled := pods[1].DeepCopy()
	relabeled.Labels[v1alpha1.PodGroupLabel] = "b"
	m.onPod(nil, relabeled)
	if _, ok := m.groups[PodGroupKey("ns", "b")]; !ok {
		t.Error("relabeled pod not filed under its new group")
	}
}
