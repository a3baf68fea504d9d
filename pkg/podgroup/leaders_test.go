package podgroup

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// followerShapes is a Workloads (labelWorkloads') that shapes followers with cpu requests.
type followerShapes struct {
	labelWorkloads
	cpu string
}

func (f *followerShapes) FollowerOf(*v1.Pod) *v1.Pod {
	return lt.MakePod().Req(map[v1.ResourceName]string{v1.ResourceCPU: f.cpu}).Obj()
}

// A PodGroup whose leader binds first (gang.leaders 1 of minCount 4): its leader alone may
// bind, planned with 3 followers shaped by the workload (views carry them, never as
// members); once it is bound, the group asks for all 4 — the followers, when they come, bind
// together, the bound leader counting — and its condition says the leader is placed.
func TestLeadersBindFirst(t *testing.T) {
	m, _, _ := testModel(t)
	m.book = filing.NewBook(&followerShapes{labelWorkloads: labelWorkloads{seen: sets.New[string]()}, cpu: "8"})
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("replica").Gang(4).Leaders(1).Obj())
	leader := addPods(m, "replica", 1)[0]
	k := PodGroupKey("ns", "replica")

	g := m.index.Get(k)
	if g.Minimum() != 1 || g.Followers() != 3 {
		t.Fatalf("before the leader binds: minimum %d, followers %d; want 1 and 3", g.Minimum(), g.Followers())
	}
	view, ok := m.Gate().Tree(leader)
	if !ok {
		t.Fatal("no tree for the leader")
	}
	if view.Min != 4 || len(view.Pending) != 4 || view.FollowersTimeout != DefaultFollowersTimeout {
		t.Fatalf("view: min %d, %d pending, followers timeout %s; want the leader and 3 followers to plan, 4", view.Min, len(view.Pending), view.FollowersTimeout)
	}
	uids := map[types.UID]bool{}
	for _, p := range view.Pending[1:] {
		if !IsFollower(p) || p.Spec.Containers[0].Resources.Requests.Cpu().String() != "8" || p.Namespace != "ns" || uids[p.UID] {
			t.Errorf("follower %s (%s): want a follower of the workload's shape (8 cpu), of its own UID", p.Name, p.UID)
		}
		uids[p.UID] = true
		if m.members.Of(p.UID) != nil {
			t.Errorf("follower %s is a member", p.Name)
		}
	}
	if IsFollower(leader) {
		t.Error("the leader is taken for a follower")
	}

	// The leader is allowed alone, and binds.
	if d := reservePermit(m, leader); !d.Allow {
		t.Fatalf("leader not allowed: %+v", d)
	}
	bound := assumed(leader, "n1")
	m.OnPod(leader, bound)
	if g.Minimum() != 4 || g.Followers() != 0 || g.Scheduled() {
		t.Fatalf("after the leader bound: minimum %d, followers %d, scheduled %v; want 4, 0, not scheduled", g.Minimum(), g.Followers(), g.Scheduled())
	}
	if c, _ := m.Gate().Condition(k); c.Reason != "Unschedulable" || c.Message != "leaders placed, room held for the others; waiting for pods: minCount is 4" {
		t.Errorf("condition %+v", c)
	}
	if view, _ := m.Gate().Tree(bound); len(view.Pending) != 0 || view.Min != 4 || len(view.PlacedNodes) != 1 {
		t.Errorf("view after the leader bound: %d pending, min %d, placed %v; want no followers planned any more", len(view.Pending), view.Min, view.PlacedNodes)
	}

	// The followers come: none binds before all three are placed.
	workers := make([]*v1.Pod, 3)
	for i := range workers {
		workers[i] = lt.Member("ns", "replica", i+1).Obj()
		m.OnPod(nil, workers[i])
	}
	for i, w := range workers {
		d := m.Permits().Permit(klog.Background(), reserveOn(m, w, "n2"), testPolicy)
		if last := i == len(workers)-1; d.Allow != last {
			t.Fatalf("worker %d: allowed %v; want only the last to complete the gang", i, d.Allow)
		}
	}
}

// reserveOn runs Reserve for a pod on node and returns the scheduler's copy of it.
func reserveOn(m *Model, p *v1.Pod, node string) *v1.Pod {
	a := assumed(p, node)
	m.Permits().Reserve(klog.Background(), a, node)
	return a
}

// A restarted scheduler that finds a leaders-first group's condition True (written once all
// its members were placed) takes it as scheduled with all of minCount: its replacements are
// not held to the gang again.
func TestLeadersFirstGroupRestoredScheduled(t *testing.T) {
	m, _, _ := testModel(t)
	pg := lt.MakePodGroup().Namespace("ns").Name("replica").Gang(4).Leaders(1).Generation(1).
		Condition(metav1.ConditionTrue, "Scheduled").Obj()
	m.OnGroup(nil, pg)
	g := m.index.Get(PodGroupKey("ns", "replica"))
	if !g.Scheduled() || g.Minimum() != 4 || g.Followers() != 0 {
		t.Errorf("restored: scheduled %v, minimum %d, followers %d; want scheduled with 4, no followers", g.Scheduled(), g.Minimum(), g.Followers())
	}
}
