package preemption

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Issue #18 item 1, the starvation it describes: a 4 × 2-cpu gang waits on a cluster whose
// 4 nodes × 2 cpu are held by plain 1-cpu pods of the same priority. The plain pods end one
// by one, and each time a new 1-pod gang of 1 cpu (or a plain pod) arrives. Without a
// reservation the small ones take every freed cpu and the big gang never binds. With one
// (reserveAfterSeconds 3 here), the freed cpus are held: no small pod binds before the big
// gang, which binds once the last plain pod ends; the small ones follow when it ends.
func TestStarvingGangGetsAReservation(t *testing.T) {
	testenv.ForEachAPI(t, testStarvingGangGetsAReservation)
}

func testStarvingGangGetsAReservation(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "starvation")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 1, 4, "2")...)
	sched := env.StartScheduler(t, testenv.GangArgs{"reserveAfterSeconds": 3, "backoffSeconds": 1})
	var plain []string
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("plain-%d", i)
		env.CreatePods(t, lt.GroupPod(ns, name, "").Req(lt.CPU("1")).Obj())
		plain = append(plain, name)
	}
	env.WaitBound(t, ns, plain...)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("big").Gang(4).Obj())
	big := make([]string, 4)
	for i := range big {
		env.CreatePods(t, lt.Member(ns, "big", i).Req(lt.CPU("2")).Obj())
		big[i] = fmt.Sprintf("big-%d", i)
	}
	env.WaitCondition(t, "PodGroup", ns, "big", metav1.ConditionFalse, v1alpha1.ReasonReserving, "the cluster held since")
	env.WaitEvent(t, ns, "big", "Reserving", "Reserving the cluster for 4 pods × 2 cpu")

	var small []string
	for i, p := range plain {
		env.DeletePods(t, ns, p)
		name := fmt.Sprintf("small-%d", i)
		if i%4 == 3 {
			env.CreatePods(t, lt.GroupPod(ns, name, "").Req(lt.CPU("1")).Obj()) // a plain pod, held back by Filter
		} else {
			env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(name).Gang(1).Obj())
			env.CreatePods(t, lt.GroupPod(ns, name, name).Req(lt.CPU("1")).Obj())
		}
		small = append(small, name)
		env.Settled(t, "no small pod in the room held for the big gang", func() (bool, string) {
			n := env.BoundCount(t, ns, small...)
			return n == 0 || env.BoundCount(t, ns, big...) > 0, fmt.Sprintf("%d of %v bound", n, small)
		})
	}
	env.WaitBound(t, ns, big...)
	env.WaitCondition(t, "PodGroup", ns, "big", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	if n := env.BoundCount(t, ns, small...); n > 0 {
		t.Errorf("%d small pods bound though the big gang fills the cluster", n)
	}
	// The big gang ends: the small ones follow.
	env.DeletePods(t, ns, big...)
	env.WaitBound(t, ns, small...)
	metrics := sched.Metrics(t)
	if !regexp.MustCompile(`lockstep_reservations_total\{event="bound"\} [1-9]`).MatchString(metrics) {
		t.Errorf("metrics do not count the reservation that bound:\n%s", grep(metrics, "lockstep_reservation"))
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
