package gang

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Backoff stops hot loops, not news. With the manifests' configuration (backoffSeconds 10), a
// gang that failed for want of room is retried as soon as something happens that may let it
// fit: a node added, a pod deleted, its minCount lowered, its missing member created. The test
// measures the time from such an event to the whole gang bound and logs it (the numbers in
// docs/benchmarks.md come from here); it asserts only that the gang binds, whole.
func TestReactionToNews(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "news")
	env.CreateNodes(t, lt.MakeNode("small", "500m").Obj()) // room for none of the pods
	env.StartScheduler(t, nil)                             // backoffSeconds 10, as deployed

	type result struct {
		event string
		took  time.Duration
	}
	var results []result
	measure := func(event string, i int, setup func(g string), news func(g string)) {
		g := fmt.Sprintf("%s-%d", strings.ToLower(strings.ReplaceAll(event, " ", "-")), i)
		setup(g)
		env.WaitCondition(t, "PodGroup", ns, g, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "")
		time.Sleep(1500 * time.Millisecond) // past the retry floor, well inside the backoff
		start := time.Now()
		news(g)
		for env.BoundCount(t, ns, names(4, g)...) < 4 {
			if time.Since(start) > time.Minute {
				t.Fatalf("gang %s not bound a minute after %s: %v", g, event, env.Placement(t, ns))
			}
			time.Sleep(10 * time.Millisecond)
		}
		results = append(results, result{event, time.Since(start)})
	}
	gangOf4 := func(g string) {
		env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(g).Gang(4).Obj())
		env.CreatePods(t, lt.Members(ns, g, 4, lt.CPU("1"))...)
	}
	for i := 0; i < 3; i++ {
		// No room: a node with room for the gang arrives.
		measure("node added", i, gangOf4, func(g string) {
			env.CreateNodes(t, lt.MakeNode("node-"+g, "4").Obj())
		})
		// Room taken by a plain pod: it is deleted.
		measure("pod deleted", i, func(g string) {
			env.CreateNodes(t, lt.MakeNode("node-"+g, "4").Obj())
			env.CreatePods(t, lt.GroupPod(ns, "blocker-"+g, "").Req(lt.CPU("4")).Obj())
			env.WaitBound(t, ns, "blocker-"+g)
			gangOf4(g)
		}, func(g string) {
			env.DeletePods(t, ns, "blocker-"+g)
		})
		// minCount 5 with 4 pods that fit: lowered to 4.
		measure("minCount lowered", i, func(g string) {
			env.CreateNodes(t, lt.MakeNode("node-"+g, "4").Obj())
			env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(g).Gang(5).Obj())
			env.CreatePods(t, lt.Members(ns, g, 4, lt.CPU("1"))...)
		}, func(g string) {
			env.SetMinCount(t, ns, g, 4)
		})
		// Three pods of four exist: the fourth is created.
		measure("member created", i, func(g string) {
			env.CreateNodes(t, lt.MakeNode("node-"+g, "4").Obj())
			env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(g).Gang(4).Obj())
			env.CreatePods(t, lt.Members(ns, g, 3, lt.CPU("1"))...)
		}, func(g string) {
			env.CreatePods(t, lt.Member(ns, g, 3).Req(lt.CPU("1")).Obj())
		})
	}
	byEvent := map[string][]time.Duration{}
	for _, r := range results {
		byEvent[r.event] = append(byEvent[r.event], r.took)
	}
	events := make([]string, 0, len(byEvent))
	for e := range byEvent {
		events = append(events, e)
	}
	sort.Strings(events)
	for _, e := range events {
		ds := byEvent[e]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("reaction: %s → gang of 4 bound: %v (min %v, max %v; backoffSeconds 10)", e, ds, ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
}

// Reaction under load (issue 34, item 3): a cluster whose nodes are full of pods of a higher
// priority (nothing to preempt), gangs of 8 waiting (each tried and told why); room for one
// gang appears. The gang that binds is the one priority says — an urgent gang created last —
// whole, and no other binds a pod; room for one more then goes to the oldest gang of the next
// priority, whole (news retries the waiting gangs together, their scouts sorted by priority,
// then age). The time from the node's creation
// to the gang bound is logged, not asserted. REACTION_NODES and REACTION_GANGS scale it
// (defaults 200 and 50; docs/benchmarks.md records larger runs).
func TestReactionUnderLoad(t *testing.T) {
	nodes, gangs := testenv.EnvInt(t, "REACTION_NODES", 200), testenv.EnvInt(t, "REACTION_GANGS", 50)
	env := testenv.Start(t)
	ns := env.Namespace(t, "load")
	// Binds as they happen (a watch): listing every pod while room appears would be load of
	// its own at scale.
	var mu sync.Mutex
	bound := map[string]bool{}
	env.FollowPods(t, ns, func(p *v1.Pod, deleted bool) {
		if !deleted && p.Spec.NodeName != "" && !strings.HasPrefix(p.Name, "filler-") {
			mu.Lock()
			bound[p.Name] = true
			mu.Unlock()
		}
	})
	env.CreatePriorityClass(t, "urgent", 100, false)
	env.CreatePriorityClass(t, "filler", 1000, false) // nothing the gangs may preempt
	var full []*v1.Node
	var fillers []*v1.Pod
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("full-%d", i)
		full = append(full, lt.MakeNode(name, "4").Obj())
		f := lt.GroupPod(ns, "filler-"+name, "").Req(lt.CPU("3")).Node(name).Obj()
		f.Spec.PriorityClassName = "filler"
		fillers = append(fillers, f)
	}
	env.CreateInBulk(t, full, nil, fillers)
	// The shipped backoff (10 s, doubling without news): the gangs' own timed retries are in
	// the queue when room appears. A lower-priority scout popped then lets the news's retry of
	// the urgent gang try first (yieldLocked); before it did, at 15,000 nodes and 1250 gangs the
	// room went to gang-175, not the urgent gang (docs/benchmarks.md).
	env.StartScheduler(t, nil)
	// The gangs arrive at once, in bulk; the first, created on its own before them, is the
	// oldest (the others' creation is no earlier, and age ties go by name).
	var names []string
	var groups []*v1alpha1.PodGroup
	var members []*v1.Pod
	for i := 0; i < gangs; i++ {
		g := fmt.Sprintf("gang-%03d", i)
		names = append(names, g)
		groups = append(groups, lt.MakePodGroup().Namespace(ns).Name(g).Gang(8).Obj())
		members = append(members, lt.Members(ns, g, 8, lt.CPU("2"))...)
	}
	env.CreatePodGroups(t, groups[0])
	env.CreateInBulk(t, nil, groups[1:], members)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("urgent").Gang(8).PriorityClass("urgent").Obj())
	var urgent []*v1.Pod
	for i := 0; i < 8; i++ {
		p := lt.Member(ns, "urgent", i).Req(lt.CPU("2")).Obj()
		p.Spec.PriorityClassName = "urgent" // the apiserver's Priority admission sets its priority
		urgent = append(urgent, p)
	}
	env.CreatePods(t, urgent...)
	// Every gang tried, and every member told why it waits (its scout's failure): the scouts'
	// cycles, and one condition write per member through the scheduler's client (qps 100 as
	// deployed, shared with its events and group status writes).
	// Polled every 2 s: a list of every pod is itself load at scale.
	told := 5*time.Minute + time.Duration(gangs*8/25)*time.Second
	logged := time.Now()
	for start := time.Now(); ; time.Sleep(2 * time.Second) {
		pods, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		untold := map[string]int{}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" && !podScheduledFalse(&p) {
				untold[p.Name[:strings.LastIndex(p.Name, "-")]]++
			}
		}
		if len(untold) == 0 {
			break
		}
		if time.Since(logged) > time.Minute {
			logged = time.Now()
			t.Logf("%s: members of %d gangs not told yet; the scheduler: %s", time.Since(start).Round(time.Second), len(untold), schedulerState(t))
		}
		if time.Since(start) > told {
			t.Fatalf("members of %d gangs without a PodScheduled condition %s after the gangs were created (by gang: %v); the scheduler: %s",
				len(untold), told, untold, schedulerState(t))
		}
	}
	time.Sleep(1500 * time.Millisecond) // past the retry floor

	bindsOf := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for pod := range bound {
			out[pod[:strings.LastIndex(pod, "-")]]++
		}
		return out
	}
	// News of a node retries every waiting gang once, and each fails but one (their tries
	// without news go on 20 s, 40 s... apart, as before the news: when news reset them to 10 s,
	// at 15,000 nodes and 2500 gangs the scheduler was still busy 160 s after the second node).
	idle := time.Minute + time.Duration(gangs)*200*time.Millisecond
	room := func(node, want string) time.Duration {
		start := time.Now()
		env.CreateNodes(t, lt.MakeNode(node, "16").Obj())
		for bindsOf()[want] < 8 {
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("gang %s not bound 2 minutes after node %s was added: binds %v", want, node, bindsOf())
			}
			time.Sleep(10 * time.Millisecond)
		}
		took := time.Since(start)
		env.WaitIdleWithin(t, idle) // a wrong bind has had its turn
		t.Logf("node %s: the scheduler idle %v after it was added", node, time.Since(start).Round(time.Second))
		return took
	}
	tookUrgent := room("room-1", "urgent")
	if binds := bindsOf(); len(binds) != 1 {
		t.Fatalf("room for one gang: binds %v, want the urgent gang's 8 alone", binds)
	}
	start := time.Now()
	env.CreateNodes(t, lt.MakeNode("room-2", "16").Obj())
	var second string
	testenv.Eventually(t, 2*time.Minute, "a second gang bound whole", func() (bool, string) {
		binds := bindsOf()
		for g, n := range binds {
			if g != "urgent" && n == 8 {
				second = g
				return true, ""
			}
		}
		return false, fmt.Sprint(binds)
	})
	tookSecond := time.Since(start)
	t.Logf("reaction under load (%d full nodes, %d gangs of 8 waiting): node added → urgent gang bound %v; next node → %s (created %d of %d) bound %v",
		nodes, gangs, tookUrgent.Round(time.Millisecond), second, slices.Index(names, second)+1, gangs, tookSecond.Round(time.Millisecond))
	env.WaitIdleWithin(t, idle)
	t.Logf("node room-2: the scheduler idle %v after it was added", time.Since(start).Round(time.Second))
	if binds := bindsOf(); len(binds) != 2 {
		t.Fatalf("room for one more gang: binds %v, want the urgent gang and %s alone, whole", binds, second)
	}
	// Among gangs of one priority, age decides: the oldest. The second oldest is allowed: the
	// oldest's own timed try may have been in its scheduling cycle, on a snapshot without
	// the node, when the node came (it then waits out the retry floor).
	if i := slices.Index(names, second); i > 1 {
		t.Errorf("the next node went to %s, created %d of %d; want the oldest gang (%s)", second, i+1, gangs, names[0])
	}
}

func podScheduledFalse(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return true
		}
	}
	return false
}

// schedulerState describes the scheduler running in this process from its metrics: its queue
// by sub-queue, its attempts by result, lockstep's gang verdicts at PreEnqueue.
func schedulerState(t *testing.T) string {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, f := range families {
		switch name := f.GetName(); {
		case name == "scheduler_pending_pods" || name == "scheduler_schedule_attempts_total" || strings.HasPrefix(name, "lockstep_"):
			for _, m := range f.GetMetric() {
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				if v == 0 {
					continue
				}
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				out = append(out, fmt.Sprintf("%s{%s}=%g", name, strings.Join(labels, ","), v))
			}
		}
	}
	return strings.Join(out, " ")
}
