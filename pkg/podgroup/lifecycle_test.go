package podgroup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// A pod's disruption unit is the subtree of the highest group of its path whose mode is all:
// explicitly, or by default for a gang; a basic group, or a gang that says single, lets its
// pods go one by one.
func TestDisruptionUnits(t *testing.T) {
	tests := []struct {
		name   string
		groups []runtime.Object
		group  string // the pod's PodGroup
		want   Key    // zero: a victim alone
	}{
		{
			name:   "a gang is one unit by default",
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj()},
			group:  "g", want: PodGroupKey("ns", "g"),
		},
		{
			name:   "a basic group's pods go one by one",
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Basic().Obj()},
			group:  "g",
		},
		{
			name:   "a gang that says single lets its pods go one by one",
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).DisruptedOneByOne().Obj()},
			group:  "g",
		},
		{
			name:   "a basic group that says all is one unit",
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Basic().DisruptedWhole().Obj()},
			group:  "g", want: PodGroupKey("ns", "g"),
		},
		{
			name: "a gang composite makes the whole tree one unit",
			groups: []runtime.Object{
				lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj(),
				lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("job").Obj(),
			},
			group: "a", want: CompositePodGroupKey("ns", "job"),
		},
		{
			name: "under a basic composite each child gang is its own unit",
			groups: []runtime.Object{
				lt.MakeCompositePodGroup().Namespace("ns").Name("job").Basic().Obj(),
				lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("job").Obj(),
			},
			group: "a", want: PodGroupKey("ns", "a"),
		},
		{
			name: "a gang composite that says single leaves its children to their own modes",
			groups: []runtime.Object{
				lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).DisruptedOneByOne().Obj(),
				lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("job").Obj(),
				lt.MakePodGroup().Namespace("ns").Name("b").Basic().Parent("job").Obj(),
			},
			group: "a", want: PodGroupKey("ns", "a"),
		},
		{
			name: "a single-mode composite over a basic child: pods alone",
			groups: []runtime.Object{
				lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).DisruptedOneByOne().Obj(),
				lt.MakePodGroup().Namespace("ns").Name("b").Basic().Parent("job").Obj(),
			},
			group: "b",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			for _, g := range tc.groups {
				m.OnGroup(nil, g)
			}
			pod := lt.Member("ns", tc.group, 0).Node("n1").Obj()
			m.OnPod(nil, pod)
			sum, ok := m.Gate().Summary(pod)
			if !ok {
				t.Fatal("no summary")
			}
			u, isUnit := m.Gate().UnitOf(pod)
			if sum.Unit != tc.want || isUnit != (tc.want != Key{}) || (isUnit && u.Root != tc.want) {
				t.Errorf("Summary.Unit = %v, UnitOf = %v %v; want %v", sum.Unit, u.Root, isUnit, tc.want)
			}
		})
	}
}

// A pod's summary says whether any group of its tree, from the root down, is a gang or has a
// topology constraint, wherever in the tree it is.
func TestSummarySeesTheWholeTree(t *testing.T) {
	tests := []struct {
		name           string
		groups         []runtime.Object
		group          string
		gang, topology bool
	}{
		{
			name:   "a basic group alone",
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Basic().Obj()},
			group:  "g",
		},
		{
			name: "a gang sibling under a basic root with a topology",
			groups: []runtime.Object{
				lt.MakeCompositePodGroup().Namespace("ns").Name("job").Basic().Topology(lt.Required(lt.RackKey)).Obj(),
				lt.MakePodGroup().Namespace("ns").Name("a").Basic().Parent("job").Obj(),
				lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Parent("job").Obj(),
			},
			group: "a", gang: true, topology: true,
		},
		{
			name: "a topology three levels down",
			groups: []runtime.Object{
				lt.MakeCompositePodGroup().Namespace("ns").Name("top").Basic().Obj(),
				lt.MakeCompositePodGroup().Namespace("ns").Name("mid").Basic().Parent("top").Obj(),
				lt.MakePodGroup().Namespace("ns").Name("a").Basic().Parent("mid").Obj(),
				lt.MakePodGroup().Namespace("ns").Name("b").Basic().Parent("mid").Topology(lt.Preferred(lt.RackKey)).Obj(),
			},
			group: "a", topology: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			for _, g := range tc.groups {
				m.OnGroup(nil, g)
			}
			pod := lt.Member("ns", tc.group, 0).Obj()
			m.OnPod(nil, pod)
			sum, ok := m.Gate().Summary(pod)
			if !ok {
				t.Fatal("no summary")
			}
			if sum.Gang != tc.gang || sum.Topology != tc.topology {
				t.Errorf("Summary: gang %v, topology %v; want %v, %v", sum.Gang, sum.Topology, tc.gang, tc.topology)
			}
		})
	}
}

// A member the model allowed to bind counted toward its gang: upstream's preemption executor
// may not cancel its binding cycle in PreBind (the gang would bind short in memory); it
// deletes the pod instead. A member still waiting, or a pod in no gang, may be cancelled.
func TestCancellingABindingMember(t *testing.T) {
	m, _, _ := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj())
	pods := addPods(m, "g", 2)
	if d := reservePermit(m, pods[0]); d.Allow {
		t.Fatal("first member allowed alone")
	}
	if !m.Permits().Cancelling(pods[0].UID) {
		t.Error("a waiting member's binding cycle may be cancelled (the guard rejects it through the model first)")
	}
	if d := reservePermit(m, pods[1]); !d.Allow {
		t.Fatalf("Permit = %+v, want the gang allowed", d)
	}
	for _, p := range pods {
		if m.Permits().Cancelling(p.UID) {
			t.Errorf("allowed member %s may be cancelled in PreBind: its gang would bind short", p.Name)
		}
	}
	if !m.Permits().Cancelling("not-a-member") {
		t.Error("a pod the model holds nothing for may be cancelled")
	}
}

// jobEnv is a model that sees Jobs through a lister whose store the test fills.
type jobEnv struct {
	m    *Model
	clk  *simClock
	rec  *recorder
	jobs func(*batchv1.Job)
}

func newJobEnv(t *testing.T) *jobEnv {
	t.Helper()
	m, clk, rec := testModel(t)
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	store := factory.Batch().V1().Jobs().Informer().GetStore()
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	return &jobEnv{m: m, clk: clk, rec: rec, jobs: func(j *batchv1.Job) {
		if err := store.Update(j); err != nil {
			t.Fatal(err)
		}
	}}
}

// A Job Kueue kept suspended much longer than jobGroupTimeoutSeconds is a gang once admitted
// like any other: its pods wait for its PodGroup from their own creation (and the Job's
// start), not from the Job's creation, and are not released to bind alone.
func TestQueueTimeDoesNotDecideTheGang(t *testing.T) {
	e := newJobEnv(t)
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).Suspend(true).Obj()
	e.jobs(job)
	e.m.OnJob(job)
	// Queued for ten minutes (the timeout is two).
	e.clk.Step(10 * time.Minute)
	admitted := job.DeepCopy()
	admitted.Spec.Suspend = ptrTo(false)
	admitted.Status.StartTime = &metav1.Time{Time: e.clk.Now()}
	e.jobs(admitted)
	e.m.OnJobUpdate(job, admitted)
	var pods []*v1.Pod
	for i := range 2 {
		p := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).Obj()
		pod := (&lt.JobWrapper{Job: *p}).Pod(i).CreationTimestamp(metav1.NewTime(e.clk.Now())).Obj()
		pods = append(pods, pod)
		e.m.OnPod(nil, pod)
	}
	group := PodGroupKey("ns", filing.JobGroupName("train", job.UID))
	if v := e.m.Gate().Admit(klog.Background(), pods[0]); v.Code != MissingGroup || v.Group != group {
		t.Fatalf("Admit = %+v, want MissingGroup for %s: the pods wait for the Job's PodGroup", v, group)
	}
	// A minute later (within the timeout from the pods' creation) they still wait.
	e.clk.Step(time.Minute)
	if v := e.m.Gate().Admit(klog.Background(), pods[1]); v.Code != MissingGroup {
		t.Fatalf("Admit a minute later = %+v, want MissingGroup", v)
	}
	e.m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(group.Name).Gang(2).Obj())
	for _, p := range pods {
		if v := e.m.Gate().Admit(klog.Background(), p); !admittedOrScouted(v) || v.Group != group {
			t.Errorf("Admit %s with its PodGroup = %+v, want Proceed (or its scout's) in %s", p.Name, v, group)
		}
	}
	// Past the timeout from the pods' creation with no PodGroup, pods do go alone (the
	// controller may be off): the timer is armed from their creation.
	late := lt.MakeJob().Namespace("ns").Name("late").Indexed(2).Obj()
	e.jobs(late)
	lp := (&lt.JobWrapper{Job: *late}).Pod(0).CreationTimestamp(metav1.NewTime(e.clk.Now())).Obj()
	e.m.OnPod(nil, lp)
	if v := e.m.Gate().Admit(klog.Background(), lp); v.Code != MissingGroup {
		t.Fatalf("Admit = %+v, want MissingGroup", v)
	}
	e.clk.Step(3 * time.Minute)
	if v := e.m.Gate().Admit(klog.Background(), lp); v.Code != NotMember {
		t.Errorf("Admit past the timeout = %+v, want NotMember", v)
	}
}

// No pod of a suspended Job binds: its pending pods are held whatever their group, its
// members waiting at Permit are rejected when it is suspended, and its pods are tried again
// when it is resumed.
func TestSuspendedJobsPodsNeverBind(t *testing.T) {
	e := newJobEnv(t)
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(3).Obj()
	e.jobs(job)
	group := filing.JobGroupName("train", job.UID)
	e.m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(group).Gang(3).Obj())
	w := &lt.JobWrapper{Job: *job}
	var pods []*v1.Pod
	for i := range 3 {
		p := w.Pod(i).Obj()
		pods = append(pods, p)
		e.m.OnPod(nil, p)
	}
	for _, p := range pods[:2] {
		if d := reservePermit(e.m, p); d.Allow {
			t.Fatalf("%s allowed before its gang is complete", p.Name)
		}
	}
	e.rec.take()
	// Kueue suspends the Job (to preempt it): the waiters are rejected at once, the third
	// pod is held.
	suspended := job.DeepCopy()
	suspended.Spec.Suspend = ptrTo(true)
	e.jobs(suspended)
	e.m.OnJobUpdate(job, suspended)
	_, allowed, rejected := e.rec.take()
	if len(allowed) != 0 || len(rejected) != 2 {
		t.Errorf("after the suspension: allowed %v, rejected %v; want both waiters rejected", allowed, rejected)
	}
	for _, p := range pods {
		if v := e.m.Gate().Admit(klog.Background(), p); v.Code != Suspended || !strings.Contains(v.Message, "suspended") {
			t.Errorf("Admit %s = %+v, want Suspended", p.Name, v)
		}
	}
	if a := e.m.Permits().Waiters(); len(a) != 0 {
		t.Errorf("waiters %v left after the suspension", a)
	}
	// Resumed: the pods are activated and may proceed.
	e.jobs(job)
	e.m.OnJobUpdate(suspended, job)
	activated, _, _ := e.rec.take()
	if len(activated) < 3 {
		t.Errorf("activated %v on resume, want the 3 pending pods", activated)
	}
	if v := e.m.Gate().Admit(klog.Background(), pods[2]); v.Code != Proceed {
		t.Errorf("Admit after the resume = %+v, want Proceed", v)
	}
}

// With Kueue's topology-aware scheduling, Kueue gates each pod until it has pinned it (node
// selector): the gang is not tried while any member is still gated, and is tried at once when
// the last gate goes; a change to a pending member's node selector retries a gang that
// failed.
func TestKueuePinsHoldAndRetryTheGang(t *testing.T) {
	m, clk, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj())
	gated := func(i int) *v1.Pod {
		return lt.Member("ns", "g", i).SchedulingGates([]string{filing.KueueTopologySchedulingGate}).Obj()
	}
	p0, p1 := gated(0), gated(1)
	m.OnPod(nil, p0)
	m.OnPod(nil, p1)
	// Kueue pins and ungates the first pod: the gang waits for the second.
	pinned0 := pin(p0, "r1")
	m.OnPod(p0, pinned0)
	v := m.Gate().Admit(klog.Background(), pinned0)
	if v.Code != AwaitingKueue || !strings.Contains(v.Message, "waiting for Kueue to place 1 pods") {
		t.Fatalf("Admit = %+v, want AwaitingKueue for the gated sibling", v)
	}
	rec.take()
	pinned1 := pin(p1, "r1")
	m.OnPod(p1, pinned1)
	activated, _, _ := rec.take()
	if len(activated) != 2 {
		t.Errorf("activated %v when the last gate went, want both members", activated)
	}
	if v := m.Gate().Admit(klog.Background(), pinned1); v.Code != Proceed {
		t.Fatalf("Admit once Kueue placed every member = %+v, want Proceed", v)
	}
	// The gang fails (say, the selector and the plan disagreed) and backs off; Kueue pins a
	// member again: news, retried without waiting the backoff out.
	a := assumed(pinned0, "n1")
	m.Permits().Reserve(klog.Background(), a, "n1")
	m.Permits().Permit(klog.Background(), a, testPolicy)
	clk.Step(2 * time.Second)
	m.Permits().Fail(klog.Background(), pinned1, "0/2 nodes are available", testPolicy)
	if left := m.permits.backoffLeftLocked(PodGroupKey("ns", "g")); left <= 0 {
		t.Fatalf("the gang does not back off after its failure (%v)", left)
	}
	rec.take()
	repinned := pin(pinned1, "r2")
	m.OnPod(pinned1, repinned)
	// News retries a failed gang no sooner than a second after its failure (the retry
	// floor), long before its backoff ends.
	clk.Step(1100 * time.Millisecond)
	if activated, _, _ := rec.take(); len(activated) == 0 {
		t.Error("a member's new node selector did not retry its failed gang")
	}
}

// pin returns p with Kueue's gate removed and a rack node selector, as Kueue's topology-aware
// scheduling leaves it.
func pin(p *v1.Pod, rack string) *v1.Pod {
	c := p.DeepCopy()
	c.ResourceVersion += "1"
	c.Spec.SchedulingGates = nil
	c.Spec.NodeSelector = map[string]string{"topology.kubernetes.io/rack": rack}
	return c
}

func ptrTo[T any](v T) *T { return &v }

// partiallyBound makes gang "a" of 3 (with mode, if set) allowed whole, two members bound and
// the third refused at bind, on a leading model; it returns the pods.
func partiallyBound(t *testing.T, m *Model, group *v1alpha1.PodGroup) []*v1.Pod {
	t.Helper()
	m.Lead()
	m.OnGroup(nil, group)
	pods := addPods(m, group.Name, 3)
	for _, p := range pods {
		reservePermit(m, p)
	}
	m.OnPod(pods[0], assumed(pods[0], "n1"))
	m.OnPod(pods[1], assumed(pods[1], "n1"))
	m.Permits().Unreserve(bg, assumed(pods[2], "n1")) // a webhook refused the binding
	return pods
}

// A partial bind is resolved by one rule: the member that failed is retried alone for
// partialBindTimeoutSeconds; a gang still short then is released whole (its bound members
// evicted, a gang again, DisruptionTarget GangReleased); one that says disruptionMode single
// keeps running short; one whole again in time is left alone.
func TestPartialBindIsResolvedByOneRule(t *testing.T) {
	k := PodGroupKey("ns", "a")
	t.Run("released whole after the timeout", func(t *testing.T) {
		m, clk, rec := testModel(t)
		partiallyBound(t, m, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
		c, _ := m.Gate().Condition(k)
		if c.Reason != v1alpha1.ReasonPartiallyBound || !c.Since.Equal(clk.Now()) {
			t.Fatalf("condition %+v, want PartiallyBound since now", c)
		}
		clk.Step(DefaultPartialBindTimeout - time.Second)
		if ev := rec.takeEvicted(); len(ev) != 0 {
			t.Fatalf("evicted %v before the timeout", ev)
		}
		clk.Step(2 * time.Second)
		if ev := rec.takeEvicted(); fmt.Sprint(ev) != "[a-0 a-1]" {
			t.Fatalf("evicted %v after the timeout, want both bound members", ev)
		}
		if d, ok := m.Gate().Disruption(k); !ok || d.Reason != ReasonGangReleased || !strings.Contains(d.Message, "released: partially bound for 5m0s") {
			t.Errorf("DisruptionTarget %+v, want GangReleased", d)
		}
		if m.index.Get(k).Scheduled() {
			t.Error("a released gang is still scheduled: its recreated pods would bind one by one")
		}
	})
	t.Run("disruptionMode single keeps running short", func(t *testing.T) {
		m, clk, rec := testModel(t)
		partiallyBound(t, m, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).DisruptedOneByOne().Obj())
		clk.Step(DefaultPartialBindTimeout + time.Second)
		if ev := rec.takeEvicted(); len(ev) != 0 {
			t.Fatalf("evicted %v, want none: the gang may run short", ev)
		}
		if c, _ := m.Gate().Condition(k); c.Reason != v1alpha1.ReasonPartiallyBound || !strings.Contains(c.Message, "running short") {
			t.Errorf("condition %+v, want running short", c)
		}
		clk.Step(time.Hour)
		if ev := rec.takeEvicted(); len(ev) != 0 {
			t.Fatalf("evicted %v later", ev)
		}
	})
	t.Run("whole again in time", func(t *testing.T) {
		m, clk, rec := testModel(t)
		pods := partiallyBound(t, m, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
		clk.Step(time.Minute)
		if d := reservePermit(m, pods[2]); !d.Allow {
			t.Fatalf("retry: %+v, want allowed alone", d)
		}
		m.OnPod(pods[2], assumed(pods[2], "n1"))
		clk.Step(DefaultPartialBindTimeout)
		if ev := rec.takeEvicted(); len(ev) != 0 {
			t.Fatalf("evicted %v from a gang whole again", ev)
		}
		if c, _ := m.Gate().Condition(k); c.Reason != v1alpha1.ReasonScheduled {
			t.Errorf("condition %+v, want Scheduled", c)
		}
	})
}

// The words of a refused bind: "its other binds are in flight" while binds of the gang's own
// attempt are, then the count; a member retried alone since changes the count when it binds,
// not the words while it binds (a replacement in flight is none of the gang's other binds).
func TestPartialBindWordsFollowTheGangsOwnBinds(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, _, _ := testModel(t)
	m.Lead()
	pods := allowedGang(m, "a", 3)
	says := func(want string) {
		t.Helper()
		if c, _ := m.Gate().Condition(k); !strings.Contains(c.Message, want) {
			t.Fatalf("the condition says %q, want %q", c.Message, want)
		}
	}
	m.OnPod(pods[0], assumed(pods[0], "n1"))
	m.Permits().Unreserve(bg, assumed(pods[2], "n1")) // refused; a-1 still binding
	says("binding pod a-2 failed after the gang was allowed; its other binds are in flight")
	m.OnPod(pods[1], assumed(pods[1], "n1"))
	says("partially bound: 2 of 3 pods bound; binding pod a-2 failed")
	if d := reservePermit(m, pods[2]); !d.Allow {
		t.Fatalf("retry: %+v, want allowed alone", d)
	}
	says("partially bound: 2 of 3 pods bound; binding pod a-2 failed")
}

// The partial bind is decided the same after a restart: a new leader reads when the gang
// became partially bound from its condition, treats it as scheduled (not half bound: its
// running pods are not released after one backoff), and releases it at the same moment the
// old leader would have. A standby releases nothing.
func TestPartialBindSurvivesARestart(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, _ := testModel(t)
	pods := partiallyBound(t, m, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	since := clk.Now()
	c, _ := m.Gate().Condition(k)
	// What the old leader wrote.
	var conds []metav1.Condition
	setCondition(&conds, v1alpha1.PodGroupInitiallyScheduled, c, clk.Now())
	if got := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled).LastTransitionTime.Time; !got.Equal(since) {
		t.Fatalf("written lastTransitionTime %v, want %v", got, since)
	}
	written := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Conditions(conds...).Obj()

	clk.Step(2 * time.Minute) // the old leader dies; the new one starts
	nm, _, nrec := testModel(t)
	nm.clock = clk
	nm.synced = func() bool { return false } // it reads its groups, then its pods
	nm.OnGroup(nil, written)
	nm.OnPod(nil, assumed(pods[0], "n1"))
	nm.OnPod(nil, assumed(pods[1], "n1"))
	nm.OnPod(nil, pods[2])
	nm.synced = func() bool { return true }
	nm.Synced()
	g := nm.index.Get(k)
	if !g.Scheduled() || g.Life().State() != PartiallyBound || !g.Life().Since().Equal(since) {
		t.Fatalf("restored scheduled=%v %s since %v, want scheduled, PartiallyBound since %v", g.Scheduled(), g.Life().State(), g.Life().Since(), since)
	}
	if v := nm.Gate().Admit(bg, pods[2]); v.Code != Proceed {
		t.Fatalf("the missing member: %+v, want Proceed (retried alone)", v)
	}
	// A standby decides nothing, even past the deadline.
	clk.Step(DefaultPartialBindTimeout)
	if ev := nrec.takeEvicted(); len(ev) != 0 {
		t.Fatalf("a standby evicted %v", ev)
	}
	// It leads: the decision the old leader would have made is due, and made.
	nm.Lead()
	clk.Step(time.Millisecond)
	if ev := nrec.takeEvicted(); fmt.Sprint(ev) != "[a-0 a-1]" {
		t.Fatalf("new leader evicted %v, want both bound members", ev)
	}
}

// A new leader that takes over before the deadline releases at the old leader's deadline, not
// a full timeout after it started.
func TestPartialBindDeadlineIsTheOldLeaders(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, _ := testModel(t)
	pods := partiallyBound(t, m, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	c, _ := m.Gate().Condition(k)
	var conds []metav1.Condition
	setCondition(&conds, v1alpha1.PodGroupInitiallyScheduled, c, clk.Now())
	clk.Step(4 * time.Minute)
	nm, _, nrec := testModel(t)
	nm.clock = clk
	nm.Lead()
	nm.synced = func() bool { return false } // it reads its groups, then its pods
	nm.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Conditions(conds...).Obj())
	nm.OnPod(nil, assumed(pods[0], "n1"))
	nm.OnPod(nil, assumed(pods[1], "n1"))
	nm.synced = func() bool { return true }
	nm.Synced()
	clk.Step(59 * time.Second)
	if ev := nrec.takeEvicted(); len(ev) != 0 {
		t.Fatalf("evicted %v before the old leader's deadline", ev)
	}
	clk.Step(2 * time.Second)
	if ev := nrec.takeEvicted(); fmt.Sprint(ev) != "[a-0 a-1]" {
		t.Fatalf("evicted %v at the old leader's deadline, want both bound members", ev)
	}
}

// A running gang that loses a member is short from that moment (one rule with partial
// binds): its replacement is placed alone, and a refused bind of it changes nothing; still
// short partialBindTimeoutSeconds after the loss, the gang is released whole. Its
// PodGroupInitiallyScheduled stays True (terminal): Short says it runs short, and since when.
func TestRunningGangThatLosesAMemberIsShort(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, rec := testModel(t)
	m.Lead()
	pods := runningGang(m, "a", 2)
	lost := clk.Now()
	m.OnPodDelete(assumed(pods[1], "n1")) // its node was lost
	if s, _ := m.Gate().Short(k); s.Status != metav1.ConditionTrue || s.Reason != v1alpha1.ReasonMemberLost || !s.Since.Equal(lost) {
		t.Fatalf("Short %+v, want True, MemberLost, since the loss", s)
	}
	clk.Step(time.Minute)
	repl := lt.Member("ns", "a", 2).Obj()
	m.OnPod(nil, repl)
	if d := reservePermit(m, repl); !d.Allow {
		t.Fatalf("replacement: %+v, want allowed alone", d)
	}
	m.Permits().Unreserve(bg, assumed(repl, "n1")) // refused; retried alone
	if s, _ := m.Gate().Short(k); !s.Since.Equal(lost) {
		t.Errorf("Short %+v after the replacement's refused bind, want still since the loss", s)
	}
	clk.Step(DefaultPartialBindTimeout - time.Minute - time.Second)
	if ev := rec.takeEvicted(); len(ev) != 0 {
		t.Fatalf("evicted %v before the timeout", ev)
	}
	clk.Step(2 * time.Second)
	if ev := rec.takeEvicted(); fmt.Sprint(ev) != "[a-0]" {
		t.Fatalf("evicted %v at the timeout, want the member left", ev)
	}
	if d, _ := m.Gate().Disruption(k); d.Reason != ReasonGangReleased || !strings.Contains(d.Message, "a member was lost") {
		t.Errorf("DisruptionTarget %+v, want GangReleased, saying a member was lost", d)
	}
}

// A running gang whose lost member is replaced in time is whole again: nothing is released.
func TestRunningGangWholeAgainInTime(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, rec := testModel(t)
	m.Lead()
	pods := runningGang(m, "a", 2)
	m.OnPodDelete(assumed(pods[1], "n1"))
	clk.Step(time.Minute)
	repl := lt.Member("ns", "a", 2).Obj()
	m.OnPod(nil, repl)
	reservePermit(m, repl)
	m.OnPod(repl, assumed(repl, "n1"))
	if s, _ := m.Gate().Short(k); s.Status != metav1.ConditionFalse || s.Reason != v1alpha1.ReasonWhole {
		t.Errorf("Short %+v, want False, Whole", s)
	}
	clk.Step(time.Hour)
	if ev := rec.takeEvicted(); len(ev) != 0 {
		t.Errorf("evicted %v from a gang whole again", ev)
	}
}

// A running gang that lost every member it had bound is released at its short timeout with
// nothing to evict, and at once a gang again (Released --Emptied--> Pending, then Held: its
// pods are gone): no pod event follows a release that evicts nothing, so the release settles
// its tree itself.
func TestShortGangReleasedWithNothingToEvictIsAGangAgain(t *testing.T) {
	k := PodGroupKey("ns", "a")
	m, clk, rec := testModel(t)
	m.Lead()
	pods := runningGang(m, "a", 2)
	m.OnPodDelete(assumed(pods[1], "n1"))
	m.OnPodDelete(assumed(pods[0], "n1"))
	clk.Step(DefaultPartialBindTimeout + time.Second)
	if ev := rec.takeEvicted(); len(ev) != 0 {
		t.Errorf("evicted %v, want nothing: none of it is bound", ev)
	}
	if got := m.index.Get(k).Life().State(); got != Held {
		t.Errorf("state %s after its release, want Held (a gang again, waiting for its pods)", got)
	}
}
