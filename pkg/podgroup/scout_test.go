package podgroup

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A gang with no attempt in progress is tried by one scout; its other members enter the queue
// once the scout's reservation starts an attempt, or once the scout can no longer try the
// tree for them.
func TestScoutTriesTheTreeForAll(t *testing.T) {
	type step func(t *testing.T, m *Model, clk *simClock, pods []*v1.Pod)
	admit := func(i int, want VerdictCode) step {
		return func(t *testing.T, m *Model, _ *simClock, pods []*v1.Pod) {
			t.Helper()
			if v := m.Gate().Admit(bg, pods[i]); v.Code != want {
				t.Errorf("Admit %s = %v %q, want %v", pods[i].Name, v.Code, v.Message, want)
			}
		}
	}
	peek := func(i int, want VerdictCode) step {
		return func(t *testing.T, m *Model, _ *simClock, pods []*v1.Pod) {
			t.Helper()
			if v := m.Gate().Peek(pods[i]); v.Code != want {
				t.Errorf("Peek %s = %v, want %v", pods[i].Name, v.Code, want)
			}
			if q := m.Gate().Queueable(pods[i]); q != (want == Proceed || want == NotMember) {
				t.Errorf("Queueable %s = %v, Peek %v", pods[i].Name, q, want)
			}
		}
	}
	check := func(i int) step {
		return func(_ *testing.T, m *Model, _ *simClock, pods []*v1.Pod) { m.Gate().Check(bg, pods[i], 0) }
	}
	reserve := func(i int) step {
		return func(_ *testing.T, m *Model, _ *simClock, pods []*v1.Pod) {
			m.Permits().Reserve(bg, assumed(pods[i], "n1"), "n1")
		}
	}
	fail := func(i int) step {
		return func(_ *testing.T, m *Model, _ *simClock, pods []*v1.Pod) {
			m.Permits().Fail(bg, pods[i], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
		}
	}
	deletePod := func(i int) step {
		return func(_ *testing.T, m *Model, _ *simClock, pods []*v1.Pod) { m.OnPodDelete(pods[i]) }
	}
	gate := func(i int) step {
		return func(_ *testing.T, m *Model, _ *simClock, pods []*v1.Pod) {
			gated := pods[i].DeepCopy()
			gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/hold"}}
			m.OnPod(pods[i], gated)
			pods[i] = gated
		}
	}
	// cycle: the scheduler tries a pod in no group, of priority prio (the gang's is 0).
	cycle := func(prio int32) step {
		return func(_ *testing.T, m *Model, _ *simClock, _ []*v1.Pod) {
			m.Gate().Check(bg, lt.MakePod().Namespace("other").Name("plain").UID("plain").Priority(prio).Obj(), 0)
		}
	}
	wait := func(d time.Duration) step {
		return func(_ *testing.T, _ *Model, clk *simClock, _ []*v1.Pod) { clk.Step(d) }
	}
	// refused: the scheduler writes PodScheduled False on the pod (with no node at all, without a
	// cycle: noNodes).
	const noNodes = "no nodes available to schedule pods"
	refused := func(i int, reason, msg string) step {
		return func(_ *testing.T, m *Model, clk *simClock, pods []*v1.Pod) {
			p := pods[i].DeepCopy()
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason,
				Message: msg, LastTransitionTime: metav1.NewTime(clk.Now())}}
			m.OnPod(pods[i], p)
			pods[i] = p
		}
	}

	tests := []struct {
		name      string
		min, pods int
		steps     []step
		// activated are the pods the steps activated; held those they sent back through
		// PreEnqueue, to be held while the gang backs off (the pods its failed try sent back).
		activated, held []string
	}{{
		name: "the first member admitted is the scout; the others wait, hints too",
		min:  3, pods: 3,
		steps:     []step{admit(0, Proceed), admit(1, AwaitingScout), admit(2, AwaitingScout), peek(1, AwaitingScout), peek(0, Proceed), admit(0, Proceed)},
		activated: nil,
	}, {
		name: "the scout's reservation lets the others in",
		min:  3, pods: 3,
		steps:     []step{admit(1, Proceed), admit(0, AwaitingScout), check(1), reserve(1), admit(0, Proceed), admit(2, Proceed)},
		activated: []string{"a-0", "a-2"},
	}, {
		name: "a scout deleted sends another",
		min:  2, pods: 3,
		steps:     []step{admit(0, Proceed), admit(1, AwaitingScout), deletePod(0)},
		activated: []string{"a-1"},
	}, {
		name: "a scout not tried in time opens the tree",
		min:  3, pods: 3,
		steps:     []step{admit(0, Proceed), admit(1, AwaitingScout), wait(scoutGrace)},
		activated: []string{"a-0", "a-1", "a-2"},
	}, {
		name: "a scout waiting its turn behind pods of a higher priority keeps the tree closed; the queue idle opens it",
		min:  3, pods: 3,
		steps:     []step{admit(0, Proceed), admit(1, AwaitingScout), cycle(10), wait(scoutGrace), admit(1, AwaitingScout), wait(scoutGrace)},
		activated: []string{"a-0", "a-1", "a-2"},
	}, {
		name: "a scout the queue passed (a pod of a lower priority tried) opens the tree",
		min:  3, pods: 3,
		steps:     []step{admit(0, Proceed), cycle(10), cycle(-1), wait(scoutGrace), admit(1, Proceed)},
		activated: []string{"a-0", "a-1", "a-2"},
	}, {
		name: "a scout the scheduler refused before any plugin of lockstep's ran opens the tree at once",
		min:  3, pods: 3,
		steps:     []step{admit(0, Proceed), admit(1, AwaitingScout), refused(0, v1.PodReasonUnschedulable, noNodes), admit(1, Proceed)},
		activated: []string{"a-0", "a-1", "a-2"},
	}, {
		name: "a scout's condition unchanged, not Unschedulable, or from a cycle plugins ran in keeps the tree closed",
		min:  3, pods: 3,
		steps: []step{refused(0, v1.PodReasonUnschedulable, noNodes), admit(0, Proceed), refused(0, v1.PodReasonUnschedulable, noNodes),
			refused(0, v1.PodReasonSchedulingGated, noNodes), refused(0, v1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu."),
			admit(1, AwaitingScout)},
		activated: nil,
	}, {
		name: "a scout tried keeps the tree closed past the grace",
		min:  3, pods: 3,
		steps:     []step{admit(0, Proceed), check(0), wait(scoutGrace), admit(1, AwaitingScout)},
		activated: nil,
	}, {
		name: "a scout that fails where the gang can be ready without it opens the tree",
		min:  2, pods: 3,
		steps:     []step{admit(0, Proceed), check(0), fail(0), admit(1, Proceed)},
		activated: []string{"a-1", "a-2"},
	}, {
		name: "a scout that fails the gang whole backs it off; no member is let in",
		min:  3, pods: 3,
		steps:     []step{admit(0, Proceed), check(0), fail(0), admit(0, BackingOff), admit(1, BackingOff), peek(1, BackingOff)},
		activated: nil,
		held:      []string{"a-0"},
	}, {
		name: "the scout that failed tries again (one pod carries the gang's condition and events)",
		min:  3, pods: 3,
		steps:     []step{admit(1, Proceed), check(1), fail(1), wait(backoffEnds), admit(1, Proceed), admit(0, AwaitingScout)},
		activated: []string{"a-1"},
		held:      []string{"a-1"},
	}, {
		name: "a gated member is no scout: its gates hold it, the next member scouts",
		min:  3, pods: 3,
		steps:     []step{gate(0), admit(0, Proceed), admit(1, Proceed), admit(2, AwaitingScout)},
		activated: nil,
	}, {
		name: "a retry sends a member that is not gated",
		min:  3, pods: 3,
		steps:     []step{admit(1, Proceed), check(1), fail(1), gate(1), wait(backoffEnds), admit(0, Proceed), admit(2, AwaitingScout)},
		activated: []string{"a-0"},
		held:      []string{"a-1"},
	}, {
		name: "a gang of one needs no scout",
		min:  1, pods: 3,
		steps:     []step{admit(0, Proceed), admit(1, Proceed), admit(2, Proceed)},
		activated: nil,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec := testModel(t)
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(int32(tc.min)).Obj())
			pods := addPods(m, "a", tc.pods)
			rec.take()
			for _, s := range tc.steps {
				s(t, m, clk, pods)
			}
			if activated, _, _ := rec.take(); !cmp.Equal(activated, tc.activated) {
				t.Errorf("activated %v, want %v", activated, tc.activated)
			}
			if held := rec.takeHeld(); !cmp.Equal(held, tc.held) {
				t.Errorf("held %v, want %v", held, tc.held)
			}
		})
	}
}

// A member of a group already scheduled (a replacement) is never held for a scout.
func TestReplacementNeedsNoScout(t *testing.T) {
	m, _, rec := testModel(t)
	pods := gangWithWaiters(m, rec, "a", 2, 1)
	if d := reservePermit(m, pods[1]); !d.Allow {
		t.Fatalf("Permit of the last member = %+v, want allowed", d)
	}
	for i, p := range pods {
		m.OnPod(p, lt.Member("ns", "a", i).Node("n1").Obj())
	}
	for i := 2; i < 4; i++ {
		p := lt.Member("ns", "a", i).Obj()
		m.OnPod(nil, p)
		if v := m.Gate().Admit(bg, p); v.Code != Proceed {
			t.Errorf("Admit of replacement %s = %v %q, want Proceed", p.Name, v.Code, v.Message)
		}
	}
}

// The members a scout tried the gang for are told why it did not fit on the pod itself, in
// the scheduler's words, once: the scout is told by the framework, and a member that already
// says it is not told again.
func TestMembersTheScoutTriedForAreTold(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	m.Gate().Admit(bg, pods[0])
	m.Gate().Check(bg, pods[0], 0)
	msg := m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	want := map[string]string{"a-1": msg, "a-2": msg}
	if told := rec.takeTold(); !cmp.Equal(told, want) {
		t.Errorf("told %v, want %v", told, want)
	}
	// Their condition says it now (the scout's too, written by the framework).
	for i, p := range pods {
		said := p.DeepCopy()
		said.Status.Conditions = []v1.PodCondition{*unschedulable(msg)}
		m.OnPod(p, said)
		pods[i] = said
	}
	m.Permits().Fail(bg, pods[1], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	if told := rec.takeTold(); len(told) != 0 {
		t.Errorf("told %v again, want nothing", told)
	}
}

// Room that appears while a scout is queued goes to the tree priority and age say: a scout
// whose own timed retry queued it lets a tree that news is about to retry, and that the queue
// would try before it (a higher priority, or as high and older), try first, and is tried
// again with it; a scout that goes first anyway does not, nor one behind a tree that waits
// for the pods it preempted (the room they free is nominated to it).
func TestScoutYieldsToNewsForATreeAheadOfIt(t *testing.T) {
	cpu := map[v1.ResourceName]string{v1.ResourceCPU: "2"}
	tests := []struct {
		name                string
		scoutPrio, newsPrio int32
		// scoutAge, newsAge: how long before the test's start each gang was created.
		scoutAge, newsAge time.Duration
		// preempting: the gang news retries waits for its victims to leave, since before the
		// news (before) or since after it (after: it preempted once the retry was armed).
		preempting string
		// gone: the gang news retries lost its pods once the retry was armed.
		gone bool
		want VerdictCode
	}{{
		name:      "a lower-priority scout yields and joins the retry",
		scoutPrio: 0, newsPrio: 100, scoutAge: time.Hour, newsAge: time.Minute,
		want: BackingOff,
	}, {
		name:      "a younger scout of the same priority yields",
		scoutPrio: 100, newsPrio: 100, scoutAge: time.Minute, newsAge: time.Hour,
		want: BackingOff,
	}, {
		name:      "an older scout of the same priority goes on",
		scoutPrio: 100, newsPrio: 100, scoutAge: time.Hour, newsAge: time.Minute,
		want: Proceed,
	}, {
		name:      "a higher-priority scout goes on",
		scoutPrio: 200, newsPrio: 100, scoutAge: time.Minute, newsAge: time.Hour,
		want: Proceed,
	}, {
		name:      "a lower-priority scout goes on when the gang ahead waits for its victims",
		scoutPrio: 0, newsPrio: 100, scoutAge: time.Hour, newsAge: time.Minute, preempting: "before",
		want: Proceed,
	}, {
		name:      "a younger scout goes on when the gang ahead waits for its victims",
		scoutPrio: 100, newsPrio: 100, scoutAge: time.Minute, newsAge: time.Hour, preempting: "before",
		want: Proceed,
	}, {
		name:      "a younger scout goes on when the gang ahead preempted after the news",
		scoutPrio: 100, newsPrio: 100, scoutAge: time.Minute, newsAge: time.Hour, preempting: "after",
		want: Proceed,
	}, {
		name:      "a younger scout goes on when the gang ahead lost its pods after the news",
		scoutPrio: 100, newsPrio: 100, scoutAge: time.Minute, newsAge: time.Hour, gone: true,
		want: Proceed,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec := testModel(t)
			m.OnNodeAdd(lt.MakeNode("n1", "2").Obj())
			m.OnPod(nil, lt.MakePod().Namespace("other").Name("filler").UID("filler").Req(cpu).Node("n1").Obj())
			gang := func(name string, prio int32, age time.Duration) []*v1.Pod {
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(2).Created(epoch.Add(-age)).Obj())
				pods := []*v1.Pod{lt.Member("ns", name, 0).Req(cpu).Priority(prio).Obj(), lt.Member("ns", name, 1).Req(cpu).Priority(prio).Obj()}
				for _, p := range pods {
					m.OnPod(nil, p)
				}
				if v := m.Gate().Admit(bg, pods[0]); v.Code != Proceed {
					t.Fatalf("Admit %s = %v, want its scout let in", pods[0].Name, v.Code)
				}
				m.Gate().Check(bg, pods[0], 0)
				m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
				return pods
			}
			low := gang("low", tc.scoutPrio, tc.scoutAge)
			clk.Step(5 * time.Second)
			urgent := gang("urgent", tc.newsPrio, tc.newsAge)
			preempts := func() {
				m.Permits().NotePreempting(PodGroupKey("ns", "urgent"), "taking node n2: evicting 1 pod of priority 0 (0 gangs whole)")
			}
			if tc.preempting == "before" {
				preempts()
			}
			rec.take()
			clk.Step(testPolicy.Backoff - 4*time.Second) // low's backoff ends: its scout is queued again
			if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"low-0"}) {
				t.Fatalf("activated %v after low's backoff, want its scout", activated)
			}
			if v := m.Gate().Admit(bg, low[0]); v.Code != Proceed {
				t.Fatalf("Admit low-0 = %v, want Proceed", v.Code)
			}
			m.OnNodeAdd(lt.MakeNode("n2", "4").Obj()) // room for one gang: urgent's retry is armed
			if tc.preempting == "after" {
				preempts()
			}
			if tc.gone {
				for _, p := range urgent {
					m.OnPodDelete(p)
				}
			}
			if v := m.Gate().Check(bg, low[0], 0); v.Code != tc.want {
				t.Errorf("Check low-0 = %v %q, want %v", v.Code, v.Message, tc.want)
			}
			if tc.gone {
				return // low's scout is in its cycle; nothing of urgent is left to retry
			}
			clk.Step(newsDelay) // both trees retried together, the queue orders them
			if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"low-0", "urgent-0"}) {
				t.Errorf("activated %v when the news retry ran, want both scouts", activated)
			}
			if v := m.Gate().Check(bg, low[0], 0); v.Code != Proceed {
				t.Errorf("Check low-0 after the retry = %v %q, want Proceed", v.Code, v.Message)
			}
		})
	}
}

// scoutRetried returns a model with one node and a gang a of 2 whose scout failed for want
// of room and is queued again by the end of its backoff.
func scoutRetried(t *testing.T) (*Model, *simClock, *recorder, []*v1.Pod) {
	t.Helper()
	m, clk, rec := testModel(t)
	m.OnNodeAdd(lt.MakeNode("n1", "2").Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	pods := addPods(m, "a", 2)
	m.Gate().Admit(bg, pods[0])
	m.Gate().Check(bg, pods[0], 1)
	m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	clk.Step(backoffEnds) // the timed retry queues the scout again
	rec.take()
	return m, clk, rec, pods
}

// A scout whose cycle's snapshot holds a node the model has not heard of yet (the scheduler's
// cache got it first) lets the waiting gangs try that room together, by priority and age;
// a difference in counts that lasts is no news, and holds no scout back.
func TestScoutYieldsToANodeTheModelHasNotSeen(t *testing.T) {
	m, clk, rec, pods := scoutRetried(t)
	m.Gate().Admit(bg, pods[0])
	if v := m.Gate().Check(bg, pods[0], 2); v.Code != BackingOff {
		t.Errorf("Check with a node the model has not seen = %v %q, want BackingOff", v.Code, v.Message)
	}
	clk.Step(newsDelay)
	if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"a-0"}) {
		t.Errorf("activated %v, want the scout again with the news's retry", activated)
	}
	m.Gate().Admit(bg, pods[0])
	clk.Step(unseenGrace)
	if v := m.Gate().Check(bg, pods[0], 2); v.Code != Proceed {
		t.Errorf("Check with the counts apart for %s = %v %q, want Proceed", unseenGrace, v.Code, v.Message)
	}
}

// A scout that yields again and again is told what its PodScheduled condition says already
// of its gang's last attempt, as the scheduler's FitError reads it, PostFilter included
// (HeldPostFilter): the condition is not written again but for a new node count, nor by the
// attempt after the yields when it fails as the last did, and it does not grow. Told why it
// yielded, news cost two writes per waiting gang (the yield's, then the next attempt's); told
// the condition whole, the FitError wrapped it once more at each yield: a write each, and a
// message without bound.
func TestYieldingScoutsConditionSaysWhatItSaid(t *testing.T) {
	const (
		nodes  = 2 // the scheduler's snapshot has a node the model has not heard of: the scout yields
		failed = "cannot place the gang: PodGroup a: not enough free capacity for 2 pods × 1 cpu"
		post   = "preemption: evicting every pod of priority below 0 would not make room in the cluster"
	)
	tests := []struct {
		name string
		// condition is what the scout's PodScheduled condition says before it yields (none
		// if empty).
		condition string
		// writes is how many times the yields and the attempt after them write it.
		writes int
		// want is what it says after the yields.
		want string
	}{
		{
			name:      "its last attempt at this node count",
			condition: "0/2 nodes are available: " + failed + ". " + post,
			want:      "0/2 nodes are available: " + failed + ". " + post,
		},
		{
			name:      "its last attempt at another node count",
			condition: "0/1 nodes are available: " + failed + ". " + post,
			writes:    1,
			want:      "0/2 nodes are available: " + failed + ". " + post,
		},
		{
			name:      "held",
			condition: "0/1 nodes are available: gang a backs off. " + HeldPostFilterMessage,
			writes:    2, // the new count, then the attempt's own reasons
			want:      "0/2 nodes are available: gang a backs off. " + HeldPostFilterMessage,
		},
		{
			name:   "nothing yet",
			writes: 2, // why it yields, then the attempt's own reasons
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec, pods := scoutRetried(t)
			scout := pods[0]
			writes := 0
			// write is the scheduler's failure handler: it writes the condition if it changed.
			write := func(msg string) {
				_, c := podutil.GetPodCondition(&scout.Status, v1.PodScheduled)
				if c != nil && c.Message == msg {
					return
				}
				writes++
				updated := scout.DeepCopy()
				podutil.UpdatePodCondition(&updated.Status, &v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg})
				m.OnPod(scout, updated)
				scout = updated
			}
			if tc.condition != "" {
				write(tc.condition)
			}
			writes = 0
			for i := 0; i < 5; i++ {
				m.Gate().Admit(bg, scout)
				v := m.Gate().Check(bg, scout, nodes)
				if v.Code != BackingOff {
					t.Fatalf("yield %d: Check = %v %q, want BackingOff", i, v.Code, v.Message)
				}
				fit := &framework.FitError{NumAllNodes: nodes, Diagnosis: framework.Diagnosis{PreFilterMsg: v.Message, PostFilterMsg: HeldPostFilter(scout)}}
				write(fit.Error())
				clk.Step(newsDelay)
				rec.take()
			}
			_, c := podutil.GetPodCondition(&scout.Status, v1.PodScheduled)
			if tc.want != "" && c.Message != tc.want {
				t.Errorf("after the yields the condition reads %q, want %q", c.Message, tc.want)
			}
			// The attempt after them fails as the gang's last did.
			write((&framework.FitError{NumAllNodes: nodes, Diagnosis: framework.Diagnosis{PreFilterMsg: failed, PostFilterMsg: post}}).Error())
			if writes != tc.writes {
				_, c := podutil.GetPodCondition(&scout.Status, v1.PodScheduled)
				t.Errorf("%d writes of the yielding scout's condition, want %d; it reads %q", writes, tc.writes, c.Message)
			}
		})
	}
}

// A scout whose own group can no longer be ready, in a tree that can be ready without that
// group (a composite's minGroupCount met by the others), opens the tree: the members of the
// other groups are let in at once, not after a retry (upstream's TestCPGHierarchicalScheduling,
// where a member of the impossible group often reaches its cycle first).
func TestScoutOfAGroupTheTreeCanDoWithoutOpensIt(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("root").Gang(1).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Parent("root").Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Parent("root").Obj())
	a, b := addPods(m, "a", 3), addPods(m, "b", 2)
	rec.take()
	if v := m.Gate().Admit(bg, a[0]); v.Code != Proceed {
		t.Fatalf("Admit of the first member %s = %v %q, want Proceed (the scout)", a[0].Name, v.Code, v.Message)
	}
	if v := m.Gate().Admit(bg, b[0]); v.Code != AwaitingScout {
		t.Fatalf("Admit of %s before the scout's cycle = %v %q, want AwaitingScout", b[0].Name, v.Code, v.Message)
	}
	m.Gate().Check(bg, a[0], 0)
	m.Permits().Fail(bg, a[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	activated, _, _ := rec.take()
	for _, p := range b {
		if !slices.Contains(activated, p.Name) {
			t.Errorf("%s not activated after the scout of a group the tree can do without failed (activated %v)", p.Name, activated)
		}
		if v := m.Gate().Admit(bg, p); v.Code != Proceed {
			t.Errorf("Admit of %s = %v %q, want Proceed", p.Name, v.Code, v.Message)
		}
	}
	if slices.Contains(activated, a[0].Name) {
		t.Errorf("the scout that failed was activated again at once (activated %v)", activated)
	}
}

// A tree that news retried and that failed at once (the scheduler's cache had not the news
// yet), while the trees the queue puts after it wait for the floor of their own failure, is
// retried with them, before them: the room goes to the tree of the highest priority. Before,
// the lower trees were retried at their floor's end, alone, and a gang of priority 0 took the
// node an urgent gang had just missed (test/integration/gang's TestReactionUnderLoad, three
// runs of four).
func TestATreeNewsRetriedThatFailsAtOnceGoesFirst(t *testing.T) {
	cpu := map[v1.ResourceName]string{v1.ResourceCPU: "2"}
	m, clk, rec := testModel(t)
	m.OnNodeAdd(lt.MakeNode("n1", "2").Obj())
	m.OnPod(nil, lt.MakePod().Namespace("other").Name("filler").UID("filler").Req(cpu).Node("n1").Obj())
	gang := func(name string, prio int32) []*v1.Pod {
		m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(2).Obj())
		pods := []*v1.Pod{lt.Member("ns", name, 0).Req(cpu).Priority(prio).Obj(), lt.Member("ns", name, 1).Req(cpu).Priority(prio).Obj()}
		for _, p := range pods {
			m.OnPod(nil, p)
		}
		return pods
	}
	try := func(p *v1.Pod) { tryScout(t, m, p) }
	fail := func(p *v1.Pod) { failScout(m, p) }
	low, urgent := gang("low", 0), gang("urgent", 100)
	try(low[0])
	fail(low[0])
	try(urgent[0])
	fail(urgent[0])
	clk.Step(backoffEnds) // both backoffs end: their scouts are queued again
	try(low[0])
	fail(low[0]) // low failed again: within its floor when news comes
	clk.Step(DefaultRetryFloor / 2)
	rec.take()
	m.OnNodeAdd(lt.MakeNode("n2", "4").Obj()) // room for one gang
	clk.Step(newsDelay)
	if activated, _, _ := rec.take(); !cmp.Equal(activated, []string{"urgent-0"}) {
		t.Fatalf("activated %v when news retried the trees, want urgent's scout (low is within its floor)", activated)
	}
	try(urgent[0])
	fail(urgent[0])                                              // at once: its snapshot did not hold n2 yet
	clk.Step(DefaultRetryFloor/2 - newsDelay + time.Millisecond) // low's floor ends
	if activated, _, _ := rec.take(); len(activated) != 0 {
		t.Errorf("activated %v when low's floor ended, want low held behind urgent's retry", activated)
	}
	clk.Step(DefaultRetryFloor)
	// urgent's scout may be activated twice (the retry and its own look-again): one queue entry.
	if activated, _, _ := rec.take(); !cmp.Equal(slices.Compact(activated), []string{"low-0", "urgent-0"}) {
		t.Errorf("activated %v at urgent's retry, want both scouts together (the queue puts urgent's first)", activated)
	}
}

// A tree whose timed try was in its scheduling cycle when news came, and that failed after
// it (on a snapshot without the news), is retried with the news at once, not at the end of
// its retry floor: its try could not have seen the news. Held for its floor, the urgent gang
// held every waiting gang behind it for up to a second (test/integration/gang's
// TestReactionUnderLoad at 10,000 gangs). A retry news prompted that fails while more news
// comes keeps its floor: under churn that would be a try per cycle.
func TestATreeInItsCycleWhenNewsComesIsRetriedWithIt(t *testing.T) {
	cpu := map[v1.ResourceName]string{v1.ResourceCPU: "2"}
	m, clk, rec := testModel(t)
	m.OnNodeAdd(lt.MakeNode("n1", "2").Obj())
	m.OnPod(nil, lt.MakePod().Namespace("other").Name("filler").UID("filler").Req(cpu).Node("n1").Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("urgent").Gang(2).Obj())
	urgent := []*v1.Pod{lt.Member("ns", "urgent", 0).Req(cpu).Priority(100).Obj(), lt.Member("ns", "urgent", 1).Req(cpu).Priority(100).Obj()}
	for _, p := range urgent {
		m.OnPod(nil, p)
	}
	try := func() { tryScout(t, m, urgent[0]) }
	fail := func() { failScout(m, urgent[0]) }
	try()
	fail()
	clk.Step(backoffEnds) // its backoff ends: its scout is queued again
	try()                 // its timed try reaches its cycle
	rec.take()
	clk.Step(time.Millisecond)
	m.OnNodeAdd(lt.MakeNode("n2", "4").Obj()) // room for it, after its cycle's snapshot
	clk.Step(time.Millisecond)
	fail()
	clk.Step(newsDelay)
	if activated, _, _ := rec.take(); !slices.Contains(activated, "urgent-0") {
		t.Fatalf("activated %v when news retried the waiting trees, want urgent's scout: its failed try began before the news", activated)
	}
	try() // the news's retry
	clk.Step(time.Millisecond)
	m.OnNodeAdd(lt.MakeNode("n3", "4").Obj())
	clk.Step(time.Millisecond)
	fail() // at once, as more news came
	clk.Step(newsDelay)
	if activated, _, _ := rec.take(); len(activated) != 0 {
		t.Errorf("activated %v when the second news was retried, want urgent held for its floor: it failed a retry news prompted", activated)
	}
	clk.Step(DefaultRetryFloor)
	if activated, _, _ := rec.take(); !slices.Contains(activated, "urgent-0") {
		t.Errorf("activated %v at the end of its floor, want urgent's scout", activated)
	}
}

// Where the scheduler places members one by one (here, members with inter-pod anti-affinity),
// the order can decide whether the gang fits: a member that failed after the scout was
// placed scouts the next try. A gang whose members only room decides keeps its scout (one
// pod carries the gang's condition and events).
func TestMemberThatFailedAfterTheScoutScoutsNext(t *testing.T) {
	for _, tc := range []struct {
		name string
		anti bool
		want []string
	}{
		{name: "members placed one by one", anti: true, want: []string{"a-1"}},
		{name: "members only room decides", want: []string{"a-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec := testModel(t)
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
			var pods []*v1.Pod
			for i := range 2 {
				w := lt.Member("ns", "a", i).Req(lt.CPU("1"))
				if tc.anti {
					w = w.PodAntiAffinityExists("app", lt.HostKey, st.PodAntiAffinityWithRequiredReq)
				}
				pods = append(pods, w.Obj())
				m.OnPod(nil, pods[i])
			}
			m.Gate().Admit(bg, pods[0]) // the scout
			m.Gate().Check(bg, pods[0], 0)
			m.Permits().Reserve(bg, assumed(pods[0], "n1"), "n1")
			m.Gate().Check(bg, pods[1], 0)
			m.Permits().Fail(bg, pods[1], "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules", testPolicy)
			m.Permits().Unreserve(bg, pods[0])
			rec.take()
			clk.Step(10 * time.Second)
			if activated, _, _ := rec.take(); !cmp.Equal(activated, tc.want) {
				t.Errorf("the retry activated %v, want %v", activated, tc.want)
			}
		})
	}
}

// News that retries many waiting trees hands their scouts to the queue in the order the
// queue sorts them (a higher priority, then the older root first), whatever order the trees
// joined the retry in: the queue pushes them one by one while its scheduling loop pops, and a
// scout pushed before an earlier one would be tried first (Model.queueOrderLocked).
func TestNewsActivatesScoutsInQueueOrder(t *testing.T) {
	m, clk, rec := testModel(t)
	gangs := []struct {
		name    string
		created time.Duration // after lt.Epoch
		prio    int32
	}{{"c", 3 * time.Second, 0}, {"a", time.Second, 0}, {"urgent", 5 * time.Second, 100}, {"d", 4 * time.Second, 0}, {"b", 2 * time.Second, 0}}
	var scouts []*v1.Pod
	for _, g := range gangs {
		m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(g.name).Created(lt.Epoch.Add(g.created)).Gang(2).Obj())
		for i := range 2 {
			m.OnPod(nil, lt.Member("ns", g.name, i).Priority(g.prio).Obj())
		}
		scouts = append(scouts, lt.Member("ns", g.name, 0).Priority(g.prio).Obj())
	}
	for _, p := range scouts {
		if v := m.Gate().Admit(bg, p); v.Code != Proceed {
			t.Fatalf("Admit %s = %v %q, want its scout let in", p.Name, v.Code, v.Message)
		}
		m.Gate().Check(bg, p, 0)
		m.Permits().Fail(bg, p, "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	}
	clk.Step(DefaultRetryFloor + time.Millisecond) // past every floor, within every backoff
	rec.take()
	m.OnCapacity("node added")
	clk.Step(newsDelay)
	rec.mu.Lock()
	activated := rec.activated
	rec.mu.Unlock()
	if want := []string{"urgent-0", "a-0", "b-0", "c-0", "d-0"}; !cmp.Equal(activated, want) {
		t.Errorf("news activated %v, want %v (the queue's order)", activated, want)
	}
}

// News for more trees than newsChunk retries them a chunk at a time, in the queue's order
// across chunks: the tree the queue puts first reaches it with the first chunk, not after
// every tree has been retried, and the queue never holds a later scout without the earlier
// ones.
func TestNewsRetriesTreesAChunkAtATime(t *testing.T) {
	m, clk, rec := testModel(t)
	type gang struct {
		name    string
		created time.Time
		prio    int32
	}
	n := 2*newsChunk + 1
	var gangs []gang
	want := []string{"urgent-0"}
	for i := range n {
		name := "g" + strconv.Itoa(1000+i)
		gangs = append(gangs, gang{name, lt.Epoch.Add(time.Duration(i) * time.Second), 0})
		want = append(want, name+"-0")
	}
	slices.Reverse(gangs) // they join the news the oldest last, the urgent one in the second chunk
	gangs = slices.Insert(gangs, newsChunk, gang{"urgent", lt.Epoch.Add(time.Hour), 100})
	for _, g := range gangs {
		m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(g.name).Created(g.created).Gang(2).Obj())
		for i := range 2 {
			m.OnPod(nil, lt.Member("ns", g.name, i).Priority(g.prio).Obj())
		}
		scout := lt.Member("ns", g.name, 0).Priority(g.prio).Obj()
		if v := m.Gate().Admit(bg, scout); v.Code != Proceed {
			t.Fatalf("Admit %s = %v %q, want its scout let in", scout.Name, v.Code, v.Message)
		}
		m.Gate().Check(bg, scout, 0)
		m.Permits().Fail(bg, scout, "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	}
	clk.Step(DefaultRetryFloor + time.Millisecond)
	rec.take()
	rec.mu.Lock()
	rec.batches = 0
	rec.mu.Unlock()
	m.OnCapacity("node added")
	clk.Step(newsDelay)
	rec.mu.Lock()
	activated, calls := rec.activated, rec.batches
	rec.mu.Unlock()
	if !cmp.Equal(activated, want) {
		t.Errorf("news activated %v, want %v (the queue's order)", activated, want)
	}
	if wantCalls := (n + newsChunk) / newsChunk; calls != wantCalls {
		t.Errorf("news activated its %d scouts in %d calls, want %d of at most %d", n+1, calls, wantCalls, newsChunk)
	}
}
