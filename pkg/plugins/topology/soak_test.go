package topology

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/reservation"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// The plugin's shared state over weeks: SOAK_GANGS (100,000) trees, each planned (its plan
// stored, a node refused), some given a reservation or room held for followers, scheduled or
// not, then deleted, as the group model tells the plans (its observer). At the end every map
// of the plans and reservations is empty: nothing is kept per tree that ran.
func TestPlansKeepNothingPerTreeThatRan(t *testing.T) {
	gangs := 100000
	if n, err := strconv.Atoi(os.Getenv("SOAK_GANGS")); err == nil {
		gangs = n
	}
	rnd := rand.New(rand.NewSource(1))
	plans := NewPlans()
	m := podgroup.New(podgroup.Options{Scheduler: noScheduler{}, Clock: stillClock{}, Observer: plans, Logger: logr.Discard()})
	m.AddProfile(podgroup.Profile{Name: lt.SchedulerName})
	pol := podgroup.Policy{PermitTimeout: time.Minute, Backoff: 10 * time.Second}
	bg := klog.Background()
	for i := 0; i < gangs; i++ {
		name := fmt.Sprintf("g%d", i)
		group := lt.MakePodGroup().Namespace("ns").Name(name).Gang(2).Obj()
		m.OnGroup(nil, group)
		pods := lt.Members("ns", name, 2, lt.CPU("1"))
		for _, p := range pods {
			m.OnPod(nil, p)
		}
		root := podgroup.PodGroupKey("ns", name)
		plan := &Plan{Root: root, Expires: time.Now().Add(time.Minute), Pods: map[types.UID]PlannedPod{}}
		for _, p := range pods {
			plan.Pods[p.UID] = PlannedPod{Node: "n1", Request: capacity.Resources{MilliCPU: 1000, Pods: 1}}
		}
		if rnd.Intn(3) == 0 { // followers planned before they exist
			plan.Pods[types.UID("lockstep-follower:ns/"+name+"/0")] = PlannedPod{Node: "n2", Request: capacity.Resources{MilliCPU: 1000, Pods: 1}}
			if !podgroup.IsFollowerUID(types.UID("lockstep-follower:ns/" + name + "/0")) {
				t.Fatal("followers' UIDs are not what this test makes")
			}
		}
		plans.Store(plan)
		plans.Refuse(root, "n3", "node(s) had volume node affinity conflict", time.Hour)
		if rnd.Intn(4) == 0 {
			plans.reservations.Store(&reservation.Reservation{Root: root, Domain: "rack r1", Need: map[string]capacity.Resources{"n1": {MilliCPU: 1000}},
				Since: time.Now(), Deadline: time.Now().Add(time.Hour), Expires: time.Now().Add(time.Hour)})
			plans.reservations.Turn(root, reservation.Waiter{Priority: 0, Since: time.Now(), Seen: time.Now()})
		}
		switch rnd.Intn(3) {
		case 0: // scheduled: reserved, allowed, bound
			for _, p := range pods {
				a := p.DeepCopy()
				a.Spec.NodeName = "n1"
				m.Permits().Reserve(bg, a, "n1")
				m.Permits().Permit(bg, a, pol)
			}
			for _, p := range pods {
				b := p.DeepCopy()
				b.Spec.NodeName = "n1"
				m.OnPod(p, b)
			}
		case 1: // failed
			m.Permits().Fail(bg, pods[0], "0/1 nodes are available", pol)
		}
		if rnd.Intn(2) == 0 {
			m.OnGroupDelete(group)
			for _, p := range pods {
				m.OnPodDelete(p)
			}
		} else {
			for _, p := range pods {
				m.OnPodDelete(p)
			}
			m.OnGroupDelete(group)
		}
	}
	for kind, n := range plans.Sizes() {
		if n != 0 {
			t.Errorf("the plans keep %d %s after every tree is gone", n, kind)
		}
	}
	for kind, n := range m.Sizes() {
		if n != 0 {
			t.Errorf("the model keeps %d %s after every tree is gone", n, kind)
		}
	}
}

// noScheduler is a scheduler that does nothing asked of it; every pod is live.
type noScheduler struct{}

func (noScheduler) Activate(klog.Logger, []*v1.Pod) {}
func (noScheduler) Allow(*v1.Pod)                   {}
func (noScheduler) Reject(*v1.Pod, string)          {}
func (noScheduler) Live(*v1.Pod) bool               { return true }

// stillClock is a clock whose time does not pass: its timers never fire, and are not kept.
type stillClock struct{}

func (stillClock) Now() time.Time { return lt.Epoch }
func (stillClock) AfterFunc(time.Duration, func()) podgroup.Timer {
	return stillTimer{}
}

type stillTimer struct{}

func (stillTimer) Stop() bool { return true }
