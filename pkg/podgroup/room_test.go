package podgroup

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A gang that failed for want of room is tried again on news of room only where a node can
// now take one of its members: a small pod leaving a full node is no news for a gang of 2-CPU
// pods, a large one is, and so are a pod finishing, a node added or grown, and room on a node
// the model does not know.
func TestRoomNewsOnlyWhereAMemberFits(t *testing.T) {
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	big := lt.MakePod().Namespace("other").Name("big").UID("big").Req(cpu("3")).Node("n1").Obj()
	small := lt.MakePod().Namespace("other").Name("small").UID("small").Req(cpu("10m")).Node("n1").Obj()
	tests := []struct {
		name string
		news func(m *Model)
		want []string
	}{{
		name: "a small pod leaves the full node",
		news: func(m *Model) { m.OnPodDelete(small) },
	}, {
		name: "the large pod leaves",
		news: func(m *Model) { m.OnPodDelete(big) },
		want: []string{"a-1"},
	}, {
		name: "the large pod finishes",
		news: func(m *Model) {
			done := big.DeepCopy()
			done.Status.Phase = v1.PodSucceeded
			m.OnPod(big, done)
		},
		want: []string{"a-1"},
	}, {
		name: "a small pod finishes",
		news: func(m *Model) {
			done := small.DeepCopy()
			done.Status.Phase = v1.PodSucceeded
			m.OnPod(small, done)
		},
	}, {
		name: "a node too small for a member is added",
		news: func(m *Model) { m.OnNodeAdd(lt.MakeNode("n2", "1").Obj()) },
	}, {
		name: "a node that fits a member is added",
		news: func(m *Model) { m.OnNodeAdd(lt.MakeNode("n2", "4").Obj()) },
		want: []string{"a-1"},
	}, {
		name: "the full node grows",
		news: func(m *Model) { m.onNodeUpdate(lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n1", "8").Obj()) },
		want: []string{"a-1"},
	}, {
		name: "the full node is relabeled (its fit for a member may change)",
		news: func(m *Model) {
			m.onNodeUpdate(lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n1", "4").Label("pool", "gpu").Obj())
		},
		want: []string{"a-1"},
	}, {
		name: "a pod leaves a node the model does not know",
		news: func(m *Model) {
			m.OnPodDelete(lt.MakePod().Namespace("other").Name("x").UID("x").Req(cpu("10m")).Node("unknown").Obj())
		},
		want: []string{"a-1"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec := testModel(t)
			m.OnNodeAdd(lt.MakeNode("n1", "4").Obj())
			m.OnPod(nil, big)
			m.OnPod(nil, small)
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
			pods := []*v1.Pod{lt.Member("ns", "a", 0).Req(cpu("2")).Obj(), lt.Member("ns", "a", 1).Req(cpu("2")).Obj()}
			for _, p := range pods {
				m.OnPod(nil, p)
			}
			m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
			clk.Step(2 * time.Second) // past the retry floor, within the backoff
			rec.take()
			tc.news(m)
			clk.Step(newsDelay)
			if activated, _, _ := rec.take(); !cmp.Equal(activated, tc.want) {
				t.Errorf("activated %v, want %v", activated, tc.want)
			}
		})
	}
}

// The queue's room hint (Gate.RoomHelps) says no to a pod leaving a node only where the
// model's own room news would retry nothing either, whether the model has seen the pod go or
// not yet: a no is never lost news. It says yes for members whose fit a pod leaving may
// change otherwise (inter-pod affinity, spread, host ports, claims), for trees that have not
// failed, pods in no tree and nodes the model does not know.
func TestRoomHintAgreesWithRoomNews(t *testing.T) {
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	big := lt.MakePod().Namespace("other").Name("big").UID("big").Req(cpu("3")).Node("n1").Obj()
	small := lt.MakePod().Namespace("other").Name("small").UID("small").Req(cpu("10m")).Node("n1").Obj()
	elsewhere := lt.MakePod().Namespace("other").Name("x").UID("x").Req(cpu("10m")).Node("unknown").Obj()
	aloof := lt.MakePod().Namespace("other").Name("aloof").UID("aloof").Req(cpu("10m")).Node("n1").
		PodAntiAffinityExists("app", "zone", st.PodAntiAffinityWithRequiredReq).Obj()
	held := lt.Member("other", "ex", 0).Req(cpu("10m")).Node("n1").Obj()
	rack := v1alpha1.TopologyConstraint{Key: "rack", Mode: v1alpha1.TopologyRequired, Exclusive: true}
	plain := func(i int) *st.PodWrapper { return lt.Member("ns", "a", i).Req(cpu("2")) }
	tests := []struct {
		name    string
		members func(i int) *st.PodWrapper
		fail    bool // the tree failed for want of room
		left    *v1.Pod
		want    bool
		// retried: the model's own news retries the tree once it sees the pod go.
		retried bool
		// exclusive: the waiting gang takes a rack to itself.
		exclusive bool
	}{
		{name: "a small pod leaves the full node", members: plain, fail: true, left: small, want: false},
		{name: "the large pod leaves", members: plain, fail: true, left: big, want: true, retried: true},
		{name: "a pod leaves a node the model does not know", members: plain, fail: true, left: elsewhere, want: true, retried: true},
		{name: "a small pod whose anti-affinity kept pods off its zone leaves", members: plain, fail: true, want: true, retried: true,
			left: aloof},
		{name: "a small pod of a group holding its rack to itself leaves", members: plain, fail: true, want: true, retried: true,
			left: held},
		{name: "the tree has not failed", members: plain, left: small, want: true},
		{name: "an exclusive gang", members: plain, exclusive: true, fail: true, left: small, want: true, retried: true},
		{name: "members with a resource claim", fail: true, left: small, want: true, retried: true,
			members: func(i int) *st.PodWrapper {
				return plain(i).PodResourceClaims(v1.PodResourceClaim{Name: "gpu", ResourceClaimName: ptr.To("gpu")})
			}},
		{name: "members with pod anti-affinity", fail: true, left: small, want: true, retried: true,
			members: func(i int) *st.PodWrapper {
				return plain(i).PodAntiAffinityExists("app", "kubernetes.io/hostname", st.PodAntiAffinityWithRequiredReq)
			}},
		{name: "members with a spread constraint", fail: true, left: small, want: true, retried: true,
			members: func(i int) *st.PodWrapper {
				return plain(i).SpreadConstraint(1, "zone", v1.DoNotSchedule, nil, nil, nil, nil, nil)
			}},
		{name: "members with a host port", fail: true, left: small, want: true, retried: true,
			members: func(i int) *st.PodWrapper { return plain(i).HostPort(8080) }},
		{name: "members with a claim", fail: true, left: small, want: true, retried: true,
			members: func(i int) *st.PodWrapper { return plain(i).PVC("data") }},
	}
	for _, tc := range tests {
		for _, seen := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, model saw it go: %v", tc.name, seen), func(t *testing.T) {
				m, clk, rec := testModel(t)
				m.OnNodeAdd(lt.MakeNode("n1", "4").Obj())
				m.OnPod(nil, big)
				m.OnPod(nil, small)
				m.OnPod(nil, aloof)
				m.OnGroup(nil, lt.MakePodGroup().Namespace("other").Name("ex").Gang(1).Topology(rack).Obj())
				m.OnPod(nil, held)
				group := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2)
				if tc.exclusive {
					group.Topology(rack)
				}
				m.OnGroup(nil, group.Obj())
				pods := []*v1.Pod{tc.members(0).Obj(), tc.members(1).Obj()}
				for _, p := range pods {
					m.OnPod(nil, p)
				}
				outsider := lt.MakePod().Namespace("ns").Name("solo").UID("solo").Req(cpu("2")).Obj()
				m.OnPod(nil, outsider)
				if tc.fail {
					m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
				}
				clk.Step(2 * time.Second)
				rec.take()
				if seen {
					m.OnPodDelete(tc.left)
				}
				for _, p := range pods {
					if got := m.Gate().RoomHelps(p, tc.left); got != tc.want {
						t.Errorf("RoomHelps(%s, %s left %s) = %v, want %v", p.Name, tc.left.Name, tc.left.Spec.NodeName, got, tc.want)
					}
				}
				if !m.Gate().RoomHelps(outsider, tc.left) {
					t.Errorf("RoomHelps says no for a pod in no tree")
				}
				if !seen {
					m.OnPodDelete(tc.left)
				}
				clk.Step(newsDelay)
				activated, _, _ := rec.take()
				if len(activated) > 0 && !tc.want {
					t.Errorf("the model's room news retried %v where the hint said no", activated)
				}
				if tc.retried != (len(activated) > 0) {
					t.Errorf("the model's room news retried %v, want a retry: %v", activated, tc.retried)
				}
			})
		}
	}
}

func TestNodeRoomCountsBoundPodsThatHaveNotFinished(t *testing.T) {
	r := newNodeRoom()
	r.setNode(lt.MakeNode("n1", "4").Obj())
	p := lt.MakePod().Name("p").UID("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	bound := p.DeepCopy()
	bound.Spec.NodeName = "n1"
	done := bound.DeepCopy()
	done.Status.Phase = v1.PodFailed
	for _, step := range []struct {
		old, cur *v1.Pod
		wantCPU  int64
	}{
		{nil, p, 4000},       // pending: holds nothing
		{p, bound, 3000},     // bound
		{bound, bound, 3000}, // a resync changes nothing
		{bound, done, 4000},  // finished
		{done, nil, 4000},    // deleted after it finished
		{nil, bound, 3000},   // seen bound at once (a restart)
		{bound, nil, 4000},   // deleted
		{nil, nil, 4000},     // nothing
	} {
		r.pod(step.old, step.cur)
		if f, _ := r.free("n1"); f.MilliCPU != step.wantCPU {
			t.Errorf("after %v → %v: free %dm, want %dm", name(step.old), name(step.cur), f.MilliCPU, step.wantCPU)
		}
	}
	if len(r.used) != 0 {
		t.Errorf("used keeps %v for nodes without pods", r.used)
	}
	r.deleteNode("n1")
	if _, ok := r.free("n1"); ok {
		t.Errorf("a deleted node is still known")
	}
}

func name(p *v1.Pod) string {
	if p == nil {
		return "nil"
	}
	return p.Name + "/" + p.Spec.NodeName + "/" + string(p.Status.Phase)
}

func TestQuietBackoff(t *testing.T) {
	for _, tc := range []struct {
		backoff time.Duration
		quiet   int
		want    time.Duration
	}{
		{10 * time.Second, 0, 10 * time.Second},
		{10 * time.Second, 1, 20 * time.Second},
		{10 * time.Second, 4, 160 * time.Second},
		{10 * time.Second, 5, maxQuietBackoff},
		{10 * time.Second, 100, maxQuietBackoff},
		{10 * time.Minute, 3, 10 * time.Minute}, // a longer backoff is the operator's
	} {
		if got := quietBackoff(tc.backoff, tc.quiet); got != tc.want {
			t.Errorf("quietBackoff(%s, %d) = %s, want %s", tc.backoff, tc.quiet, got, tc.want)
		}
	}
}

// spreadFrom reports whether each of gaps, measured in whole seconds, is its backoff in want
// moved by at most quietSpread of it (spread).
func spreadFrom(gaps, want []time.Duration) bool {
	if len(gaps) != len(want) {
		return false
	}
	for i, g := range gaps {
		by := time.Duration(quietSpread * float64(want[i]))
		if g > want[i]+by+time.Second || g < want[i]-by {
			return false
		}
	}
	return true
}

// Trees that fail together are not tried again together: each quiet backoff is moved by up to
// a tenth either way, by as much as the tree and its attempt decide, the same each time it is
// asked.
func TestSpread(t *testing.T) {
	const backoff = 40 * time.Second
	lowest, highest := backoff, time.Duration(0)
	var sum time.Duration
	for i := range 1000 {
		root := PodGroupKey("ns", fmt.Sprintf("g%d", i))
		got := spread(backoff, root, 1)
		if got > backoff*11/10 || got < backoff*9/10 {
			t.Fatalf("spread(%s, %s, 1) = %s, want within a tenth of it", backoff, root, got)
		}
		if again := spread(backoff, root, 1); again != got {
			t.Fatalf("spread(%s, %s, 1) = %s, then %s", backoff, root, got, again)
		}
		lowest, highest, sum = min(lowest, got), max(highest, got), sum+got
	}
	if lowest > backoff*92/100 || highest < backoff*108/100 {
		t.Errorf("1000 trees' backoffs of %s spread over [%s, %s], want over most of [%s, %s]", backoff, lowest, highest, backoff*9/10, backoff*11/10)
	}
	if mean := sum / 1000; mean < backoff*99/100 || mean > backoff*101/100 {
		t.Errorf("1000 trees' backoffs of %s average %s, want about as many tries as without the spread", backoff, mean)
	}
	root := PodGroupKey("ns", "g0")
	if spread(backoff, root, 1) == spread(backoff, root, 2) && spread(backoff, root, 2) == spread(backoff, root, 3) {
		t.Errorf("one tree's backoffs the same at every attempt: %s", spread(backoff, root, 1))
	}
}

// Gangs that failed in one instant (news retried them all) come back over a fifth of their
// backoff, not in one: 10,000 waiting gangs came back so in bunches of 9,000 failed tries in
// 40 s (TestReactionUnderLoad).
func TestGangsThatFailTogetherComeBackApart(t *testing.T) {
	m, clk, rec := testModel(t)
	const gangs = 100
	var scouts []*v1.Pod
	for i := range gangs {
		name := fmt.Sprintf("g%d", i)
		m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(2).Obj())
		scouts = append(scouts, addPods(m, name, 2)[0])
	}
	for _, p := range scouts {
		m.Permits().Fail(bg, p, "no room", testPolicy)
	}
	rec.take()
	byStep := map[time.Duration]int{} // activations by time since the failures
	var first, last time.Duration
	for since := time.Duration(0); since <= testPolicy.Backoff*11/10; {
		clk.Step(100 * time.Millisecond)
		since += 100 * time.Millisecond
		activated, _, _ := rec.take()
		if len(activated) > 0 && first == 0 {
			first = since
		}
		if len(activated) > 0 {
			byStep[since], last = len(activated), since
		}
	}
	total := 0
	for _, n := range byStep {
		total += n
		if n > gangs/5 {
			t.Errorf("%d of %d gangs tried again in one 100 ms step, want them spread: %v", n, gangs, byStep)
		}
	}
	if total != gangs {
		t.Errorf("%d of %d gangs tried again within their backoff (%s) and a tenth", total, gangs, testPolicy.Backoff)
	}
	if first > testPolicy.Backoff*93/100 || last < testPolicy.Backoff*107/100 {
		t.Errorf("gangs tried again from %s to %s after failing together, want over most of %s ± a tenth", first, last, testPolicy.Backoff)
	}
}

// A tree that keeps failing with no news is tried less and less often (10 s, 20 s, 40 s...);
// news brings the short backoff back, and a tree is tried when it has waited long enough for
// a reservation, whatever its backoff.
func TestQuietTriesSpreadOut(t *testing.T) {
	m, clk, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	pods := addPods(m, "a", 2)
	pol := testPolicy
	pol.ReserveAfter = 0
	// quietGaps fails the gang's try now, then each quiet try, and returns the n gaps.
	quietGaps := func(n int) []time.Duration {
		var gaps []time.Duration
		last := clk.Now()
		m.Permits().Fail(bg, pods[0], "no room", pol)
		for len(gaps) < n {
			clk.Step(time.Second)
			if activated, _, _ := rec.take(); len(activated) > 0 {
				gaps = append(gaps, clk.Now().Sub(last).Round(time.Second))
				last = clk.Now()
				m.Permits().Fail(bg, pods[0], "no room", pol)
			}
		}
		return gaps
	}
	rec.take()
	if gaps, want := quietGaps(4), []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second}; !spreadFrom(gaps, want) {
		t.Errorf("quiet tries after %v, want %v, each within a tenth", gaps, want)
	}
	// News: tried at once; its failure brings back the floor, one more look, then the quiet
	// tries go on where they were (four failed: 160 s), neither counted nor reset by news. Reset,
	// each node added would send every waiting gang back to tries 10 s apart.
	clk.Step(2 * time.Second)
	m.OnCapacity("node added")
	clk.Step(newsDelay)
	if activated, _, _ := rec.take(); len(activated) != 1 {
		t.Fatalf("news activated %v, want a scout", activated)
	}
	m.Permits().Fail(bg, pods[0], "no room", pol)
	clk.Step(DefaultRetryFloor)
	if activated, _, _ := rec.take(); len(activated) != 1 {
		t.Fatalf("after a failure news prompted, activated %v at the floor, want a scout", activated)
	}
	if gaps, want := quietGaps(2), []time.Duration{160 * time.Second, maxQuietBackoff}; !spreadFrom(gaps, want) {
		t.Errorf("quiet tries after news after %v, want %v, each within a tenth (news neither counts nor resets them)", gaps, want)
	}

	// reserveAfter: tried when the gang has waited that long.
	m2, clk2, rec2 := testModel(t)
	m2.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Obj())
	pods2 := addPods(m2, "b", 2)
	pol.ReserveAfter = 45 * time.Second
	start := clk2.Now()
	var tries []time.Duration
	rec2.take()
	m2.Permits().Fail(bg, pods2[0], "no room", pol)
	for clk2.Now().Sub(start) < 75*time.Second {
		clk2.Step(time.Second)
		if activated, _, _ := rec2.take(); len(activated) > 0 {
			tries = append(tries, clk2.Now().Sub(start).Round(time.Second))
			m2.Permits().Fail(bg, pods2[0], "no room", pol)
		}
	}
	if len(tries) != 3 || !spreadFrom([]time.Duration{tries[0], tries[1] - tries[0]}, []time.Duration{10 * time.Second, 20 * time.Second}) || tries[2] != 45*time.Second {
		t.Errorf("tries at %v since the first failure, want 10 s and 20 s apart (each within a tenth), then at 45 s (when it may reserve)", tries)
	}
}

// MayFree says whether a preemption's dry run can free anything: a pod holding room with a
// priority a tree may take, one terminating, or a gang member's reservation. Pods pending or
// finished hold nothing.
func TestMayFree(t *testing.T) {
	m, _, rec := testModel(t)
	gate := m.Gate()
	type ask struct {
		of      int32
		orEqual bool
		want    bool
	}
	expect := func(when string, asks ...ask) {
		t.Helper()
		for _, a := range asks {
			if got := gate.MayFree(a.of, a.orEqual); got != a.want {
				t.Errorf("%s: MayFree(%d, orEqual %v) = %v, want %v", when, a.of, a.orEqual, got, a.want)
			}
		}
	}
	expect("empty cluster", ask{1000, true, false})
	pending := lt.MakePod().Namespace("other").Name("pending").UID("pending").Priority(0).Obj()
	m.OnPod(nil, pending)
	expect("a pending pod", ask{1000, true, false})
	filler := lt.MakePod().Namespace("other").Name("filler").UID("filler").Priority(100).Node("n1").Obj()
	m.OnPod(nil, filler)
	expect("a bound pod of priority 100",
		ask{100, false, false}, ask{100, true, true}, ask{101, false, true}, ask{50, true, false})
	done := filler.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	m.OnPod(filler, done)
	expect("the pod finished", ask{1000, true, false})
	m.OnPod(done, filler) // seen running again (a relist)
	leaving := filler.DeepCopy()
	leaving.DeletionTimestamp = &metav1.Time{Time: epoch}
	m.OnPod(filler, leaving)
	expect("the pod terminating", ask{0, false, true})
	m.OnPodDelete(leaving)
	expect("the pod deleted", ask{1000, true, false})

	gangWithWaiters(m, rec, "a", 2, 1)
	expect("a gang member reserved", ask{0, false, true})
}

// A tree that room news on a node retried, and whose scout finds that room taken by its
// cycle, with no other news since, is not tried: it waits again for the backoff the news cut
// short. Room still there, news since, or news of two rooms, and it is tried.
func TestRoomTakenBeforeItsTryIsNoTry(t *testing.T) {
	cpu := func(q string) map[v1.ResourceName]string { return map[v1.ResourceName]string{v1.ResourceCPU: q} }
	taker := lt.MakePod().Namespace("other").Name("taker").UID("taker").Req(cpu("4")).Node("n2").Obj()
	tests := []struct {
		name string
		// news comes within newsDelay of n2's; then meanwhile before the scout's cycle.
		news, meanwhile func(m *Model)
		tried           bool
	}{{
		name:      "the room is taken",
		meanwhile: func(m *Model) { m.OnPod(nil, taker) },
	}, {
		name:  "the room is still there",
		tried: true,
	}, {
		name: "the room is taken, and a pod left another node",
		meanwhile: func(m *Model) {
			m.OnPod(nil, taker)
			m.OnPodDelete(lt.MakePod().Namespace("other").Name("x").UID("x").Req(cpu("4")).Node("n1").Obj())
		},
		tried: true,
	}, {
		name: "news of room on two nodes, the later one taken",
		news: func(m *Model) { m.OnNodeAdd(lt.MakeNode("n3", "4").Obj()) },
		meanwhile: func(m *Model) {
			m.OnPod(nil, lt.MakePod().Namespace("other").Name("taker").UID("taker").Req(cpu("4")).Node("n3").Obj())
		},
		tried: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec := testModel(t)
			m.OnNodeAdd(lt.MakeNode("n1", "4").Obj())
			m.OnPod(nil, lt.MakePod().Namespace("other").Name("x").UID("x").Req(cpu("4")).Node("n1").Obj())
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
			pods := []*v1.Pod{lt.Member("ns", "a", 0).Req(cpu("2")).Obj(), lt.Member("ns", "a", 1).Req(cpu("2")).Obj()}
			for _, p := range pods {
				m.OnPod(nil, p)
			}
			if v := m.Gate().Admit(bg, pods[0]); v.Code != Proceed {
				t.Fatalf("Admit = %v %q, want the scout let in", v.Code, v.Message)
			}
			m.Gate().Check(bg, pods[0], 1)
			m.Permits().Fail(bg, pods[0], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
			root := PodGroupKey("ns", "a")
			m.mu.Lock()
			resume := m.permits.attempts.Round(root).retryAt
			m.mu.Unlock()
			clk.Step(2 * time.Second) // past the retry floor, within the backoff
			rec.take()
			m.OnNodeAdd(lt.MakeNode("n2", "4").Obj())
			if tc.news != nil {
				tc.news(m)
			}
			clk.Step(newsDelay)
			activated, _, _ := rec.take()
			if len(activated) == 0 || len(slices.Compact(activated)) != 1 {
				t.Fatalf("news activated %v, want the gang's scout", activated)
			}
			scout := pods[0]
			if activated[0] == pods[1].Name {
				scout = pods[1]
			}
			if tc.meanwhile != nil {
				tc.meanwhile(m)
			}
			m.mu.Lock()
			nodes := m.room.nodes()
			m.mu.Unlock()
			v := m.Gate().Check(bg, scout, nodes)
			if tried := v.Code == Proceed; tried != tc.tried {
				t.Fatalf("scout's cycle: %v %q, want tried %v", v.Code, v.Message, tc.tried)
			}
			if tc.tried {
				return
			}
			// It waits for the rest of the backoff the news cut short: held out of the queue
			// until then, retried at its end.
			if v := m.Gate().Admit(bg, scout); v.Code != BackingOff {
				t.Errorf("Admit after the spent try = %v %q, want BackingOff", v.Code, v.Message)
			}
			clk.Step(resume.Sub(clk.Now()) - time.Millisecond)
			if activated, _, _ := rec.take(); len(activated) != 0 {
				t.Errorf("activated %v before the backoff's end", activated)
			}
			clk.Step(time.Millisecond)
			if activated, _, _ := rec.take(); len(activated) != 1 {
				t.Errorf("activated %v at the backoff's end, want the gang's scout", activated)
			}
		})
	}
}
