package gang

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
