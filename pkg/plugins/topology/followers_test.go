package topology

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// The room a plan gives the followers of a PodGroup whose leaders bind first is promised to
// them while the leaders' attempt lasts, held once the leaders are allowed (the tree is heard
// scheduled) against other trees and pods of its priority or below — not against the tree
// itself — and released when the followers' attempt schedules the tree, the tree is gone, or
// its timeout passes. An attempt that ends without the leaders allowed holds nothing.
func TestFollowersRoomIsHeldOnceTheLeadersBind(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	root := podgroup.PodGroupKey("ns", "replica")
	other := podgroup.PodGroupKey("ns", "other")
	follower := func(i string) types.UID { return types.UID("lockstep-follower:ns/replica/" + i) }
	plan := func() *Plan {
		return &Plan{Root: root, Priority: 10, FollowersTimeout: time.Minute, Expires: now.Add(time.Minute), Pods: map[types.UID]PlannedPod{
			"leader":      {Node: "n1", Request: capacity.Resources{MilliCPU: 1000}},
			follower("0"): {Node: "n2", Request: capacity.Resources{MilliCPU: 8000}},
			follower("1"): {Node: "n2", Request: capacity.Resources{MilliCPU: 8000}},
			follower("2"): {Node: "n3", Request: capacity.Resources{MilliCPU: 8000}},
		}}
	}
	p := NewPlans()
	p.now = func() time.Time { return now }
	p.reservations.SetClock(p.now)

	// While the leader's attempt lasts, other trees' plans do without the followers' room.
	p.Store(plan())
	promised, _ := p.Promised(other, func(types.UID) bool { return false })
	if promised["n2"].MilliCPU != 16000 || promised["n3"].MilliCPU != 8000 {
		t.Fatalf("promised %v, want the followers' room on n2 and n3", promised)
	}

	// An attempt that ends without the leader allowed holds nothing.
	p.AttemptEnded(root)
	p.Store(plan())
	p.AttemptEnded(root)
	if r := p.reservations.Followers(root); r != nil {
		t.Fatalf("held %+v before the leader was allowed", r)
	}

	// The leader allowed: the followers' room is held against others of its priority or below.
	p.TreeScheduled(root)
	r := p.reservations.Followers(root)
	if r == nil || r.Need["n2"].MilliCPU != 16000 || r.Need["n3"].MilliCPU != 8000 || r.Need["n1"].MilliCPU != 0 || !r.Deadline.Equal(now.Add(time.Minute)) {
		t.Fatalf("held %+v, want 16 cpu on n2 and 8 on n3 for a minute", r)
	}
	if got := p.reservations.Holding(10, other); len(got) != 1 || got[0] != r {
		t.Errorf("held against an equal priority: %v, want the followers' room", got)
	}
	if got := p.reservations.Holding(11, other); len(got) != 0 {
		t.Errorf("held against a higher priority: %v, want nothing", got)
	}
	if got := p.reservations.Holding(10, root); len(got) != 0 {
		t.Errorf("held against the tree itself: %v, want nothing", got)
	}

	// The followers' attempt schedules the tree: released.
	p.AttemptEnded(root)
	p.TreeScheduled(root)
	if r := p.reservations.Followers(root); r != nil {
		t.Errorf("still held after the followers were placed: %+v", r)
	}

	// Gone, or timed out: released.
	p.Store(plan())
	p.AttemptEnded(root)
	p.TreeScheduled(root)
	p.TreeGone(root)
	if r := p.reservations.Followers(root); r != nil {
		t.Errorf("still held after the tree was gone: %+v", r)
	}
	p.Store(plan())
	p.AttemptEnded(root)
	p.TreeScheduled(root)
	now = now.Add(time.Minute + time.Second)
	if r := p.reservations.Followers(root); r != nil || len(p.reservations.All()) != 0 {
		t.Errorf("still held after its timeout: %+v", r)
	}
}

// A leader is planned with its followers: it goes only where the whole replica fits, and
// the plan places the followers too (their room is what is held once the leader binds).
func TestLeaderIsPlannedWithItsFollowers(t *testing.T) {
	// Rack r0 has room for 2 pods of 4 cpu, rack r1 for 4: a leader alone would fit in r0.
	nodes := fillRack(grid(1, 1, 2, 2, 8), "z0-b0-r0", 4)
	g := gang("replica", 1, 4, "rack")
	for i := range 3 {
		f := podOf("replica-follower-"+string(rune('0'+i)), 4, 0)
		f.UID = types.UID("lockstep-follower:ns/replica/" + string(rune('0'+i)))
		g.Pending = append(g.Pending, f)
	}
	g.Min = 4
	out, c, placed := planExpecting(t, nodes, g, "")
	if !placed {
		t.Fatal("the replica was not placed")
	}
	if got := placementOf(out, g); len(got) != 4 {
		t.Fatalf("placed %v, want the leader and its 3 followers", got)
	}
	if racks := domainsOf(out, c, g, 2); len(racks) != 1 || !racks["z0/z0-b0/z0-b0-r1"] {
		t.Errorf("placed in racks %v, want r1, the one rack the whole replica fits", racks)
	}
}
