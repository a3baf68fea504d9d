package topology

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// usedPerHost marks cpu as used on every host of a rack, one value per host in order.
func usedPerHost(nodes []testNode, used map[string][]int64) []testNode {
	out := append([]testNode(nil), nodes...)
	seen := map[string]int{}
	for i := range out {
		if u, ok := used[out[i].rack]; ok {
			out[i].used = u[seen[out[i].rack]]
			seen[out[i].rack]++
		}
	}
	return out
}

// sliceCountsOf returns, per domain of a level, how many members of g are there: placed
// ones and those the plan placed.
func sliceCountsOf(out outcome, c *cluster, g *podgroup.GroupView, level int) map[string]int {
	nodes := make([]*node, 0, len(g.PlacedNodes)+len(g.Pending))
	for _, name := range g.PlacedNodes {
		nodes = append(nodes, c.byName[name])
	}
	for _, p := range g.Pending {
		if n, ok := out.assign[p.UID]; ok {
			nodes = append(nodes, n)
		}
	}
	return sliceCounts(nodes, level)
}

func TestSlices(t *testing.T) {
	rack := func(name string) string { // z0-b1-r0 → its domain key
		return "z0/" + name[:len("z0-b0")] + "/" + name
	}
	tests := []struct {
		name  string
		nodes []testNode
		tree  func() *podgroup.GroupView
		// want is the number of the group's members (placed and planned) per rack.
		want map[string]int
		fail string // substring of the explanation when the tree cannot be placed
	}{
		{
			name: "two racks of 4 even where one rack has room for 6",
			// Free: r0 6, r1 2, r2 4. Packed without slices, the gang would take r1, r2 and
			// 2 of r0 (fullest rack first).
			nodes: usedPerHost(grid(1, 1, 3, 2, 4), map[string][]int64{"z0-b0-r0": {1, 1}, "z0-b0-r1": {3, 3}, "z0-b0-r2": {2, 2}}),
			tree:  func() *podgroup.GroupView { return gang("g", 8, 1, "rack/4") },
			want:  map[string]int{rack("z0-b0-r0"): 4, rack("z0-b0-r2"): 4},
		},
		{
			name: "required block: the block whose racks hold whole slices",
			// Block b0 has exactly 8 free (best fit) but as 3 + 5; b1 has 5 + 5.
			nodes: usedPerHost(grid(1, 2, 2, 2, 4), map[string][]int64{
				"z0-b0-r0": {4, 1}, "z0-b0-r1": {0, 3}, "z0-b1-r0": {0, 3}, "z0-b1-r1": {0, 3}}),
			tree: func() *podgroup.GroupView { return gang("g", 8, 1, "block", "rack/4") },
			want: map[string]int{rack("z0-b1-r0"): 4, rack("z0-b1-r1"): 4},
		},
		{
			name: "placed members' open slice is completed first",
			// 2 members placed in r0, which has 3 free; r1 has 4, r2 6. Without slices the
			// fullest rack, r0, would take 3.
			nodes: usedPerHost(grid(1, 1, 3, 2, 4), map[string][]int64{"z0-b0-r0": {4, 1}, "z0-b0-r1": {2, 2}, "z0-b0-r2": {1, 1}}),
			tree: func() *podgroup.GroupView {
				g := gang("g", 8, 1, "rack/4")
				g.Pending, g.PlacedNodes = g.Pending[:6], []string{"z0-b0-r0-h0", "z0-b0-r0-h1"}
				return g
			},
			want: map[string]int{rack("z0-b0-r0"): 4, rack("z0-b0-r1"): 4},
		},
		{
			name:  "a gang that is not a multiple of the slice size ends with a short slice",
			nodes: usedPerHost(grid(1, 1, 2, 2, 4), map[string][]int64{"z0-b0-r0": {2, 2}}),
			tree:  func() *podgroup.GroupView { return gang("g", 6, 1, "rack/4") },
			want:  map[string]int{rack("z0-b0-r0"): 4, rack("z0-b0-r1"): 2},
		},
		{
			name: "slices inside a preferred rack",
			// The gang fits in rack r1 and prefers it; each host there takes one slice of 2.
			nodes: usedPerHost(grid(1, 1, 2, 2, 2), map[string][]int64{"z0-b0-r0": {1, 1}}),
			tree:  func() *podgroup.GroupView { return gang("g", 4, 1, "~rack", "host/2") },
			want:  map[string]int{rack("z0-b0-r1"): 4},
		},
		{
			name:  "slice level equal to the Required level",
			nodes: grid(1, 1, 2, 2, 4),
			tree:  func() *podgroup.GroupView { return gang("g", 8, 1, "rack", "rack/4") },
			want:  map[string]int{rack("z0-b0-r0"): 8},
		},
		{
			name: "a preferred host finer than the slice level holds the whole gang",
			// Host r0-h0 has room for the 4 pods; r1 has 2 slots, the tightest for a slice.
			nodes: usedPerHost(grid(1, 1, 2, 2, 4), map[string][]int64{"z0-b0-r0": {0, 4}, "z0-b0-r1": {3, 3}}),
			tree:  func() *podgroup.GroupView { return gang("g", 4, 1, "~host", "rack/2") },
			want:  map[string]int{rack("z0-b0-r0"): 4},
		},
		{
			name: "no rack holds a slice: the explanation names the slice level",
			// Two racks of 3 one-pod nodes: room for 6 pods, but not for 4 in one rack.
			nodes: grid(1, 1, 2, 3, 1),
			tree:  func() *podgroup.GroupView { return gang("g", 4, 1, "rack/4") },
			fail:  "PodGroup g: not enough room for 4 pods × 1 cpu in slices of 4 pods, each within one rack; the nodes it may use could take 0 in such slices",
		},
		{
			name: "no block holds two slices: the explanation names both levels",
			nodes: usedPerHost(grid(1, 2, 2, 2, 4), map[string][]int64{
				"z0-b0-r0": {4, 1}, "z0-b0-r1": {0, 3}, "z0-b1-r0": {4, 1}, "z0-b1-r1": {0, 3}}),
			tree: func() *podgroup.GroupView { return gang("g", 8, 1, "block", "rack/4") },
			fail: "PodGroup g: no block has room for 8 pods × 1 cpu in slices of 4 pods, each within one rack; the roomiest block could take 4 in such slices",
		},
		{
			name:  "slice level broader than the Required level",
			nodes: grid(1, 2, 2, 2, 4),
			tree:  func() *podgroup.GroupView { return gang("g", 4, 1, "rack", "block/4") },
			fail:  "PodGroup g: slices of 4 pods each within one block cannot be cut inside the group's rack",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.tree()
			out, c, placed := planExpecting(t, tc.nodes, root, tc.fail)
			if !placed {
				return
			}
			if got := sliceCountsOf(out, c, root, c.levelOf(rackKey)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("members per rack %v, want %v (placement %v)", got, tc.want, placementOf(out, root))
			}
		})
	}
}

// A gang whose only constraint is its slices is planned, and its members are narrowed to
// their planned nodes: the slice constraint is not the group's Required level, but it is a
// topology constraint.
func TestGangWithOnlySlicesIsPlanned(t *testing.T) {
	pods := lt.Members("ns", "train", 8, lt.CPU("1"))
	group := lt.MakePodGroup().Namespace("ns").Name("train").Gang(8).Topology(v1alpha1.TopologyConstraint{Key: rackKey, Mode: v1alpha1.TopologyRequired, SliceSize: ptr.To[int32](4)}).Obj()
	// Racks of 2 hosts × 3 cpu: 6 slots each, so a rack holds one slice of 4, never two.
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("3"))
	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 {
		t.Fatalf("PreFilter = %v, %v; want the member narrowed to its planned node", res, s)
	}
	plan := env.plans.Get(podgroup.PodGroupKey("ns", "train"))
	if plan == nil || len(plan.Pods) != 8 {
		t.Fatalf("plan %v, want all 8 members planned", plan)
	}
	perRack := map[string]int{}
	for _, pp := range plan.Pods {
		perRack[rackOf(pp.Node)]++
	}
	if len(perRack) != 2 {
		t.Errorf("members per rack %v, want two racks of 4", perRack)
	}
	for r, n := range perRack {
		if n != 4 {
			t.Errorf("rack %s holds %d members, want 4", r, n)
		}
	}
}

// A replacement in a scheduled gang goes where its slice lost a member, not where the
// group's first member is, and not anywhere.
func TestReplacementCompletesItsOpenSlice(t *testing.T) {
	pods := lt.Members("ns", "train", 4, lt.CPU("1"))
	pods[0].Spec.NodeName, pods[1].Spec.NodeName, pods[2].Spec.NodeName = "z0-r0-h0", "z0-r0-h1", "z1-r1-h0"
	group := lt.MakePodGroup().Namespace("ns").Name("train").Gang(4).Topology(v1alpha1.TopologyConstraint{Key: rackKey, Mode: v1alpha1.TopologyRequired, SliceSize: ptr.To[int32](2)}).Obj()
	group.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue}}
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[3], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || !res.NodeNames.Equal(sets.New("z1-r1-h0", "z1-r1-h1")) {
		t.Errorf("PreFilter = %v, %v; want rack z1-r1, where a slice lacks a member", res, s)
	}
}

// Slices broader than the group's Required level are refused, as Kueue refuses them: the
// group is Invalid, with the plugin's explanation.
func TestSliceBroaderThanRequiredIsInvalid(t *testing.T) {
	pods := lt.Members("ns", "g", 1, nil)
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(1).Topology(lt.Required(rackKey), v1alpha1.TopologyConstraint{Key: zoneKey, Mode: v1alpha1.TopologyRequired, SliceSize: ptr.To[int32](1)}).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	v := env.Components.Model.Gate().Admit(klog.Background(), pods[0])
	if v.Code != podgroup.Invalid || !strings.Contains(v.Message, "slices of 1 pods each within one zone cannot be cut inside the group's rack") {
		t.Errorf("Check = %v %q, want Invalid naming both levels", v.Code, v.Message)
	}
}

// Seeded random clusters and gangs with slices (a slice level, maybe a Required level at or
// above it, maybe a Preferred one, maybe members placed in an open slice): whenever the
// planner places the gang, at least its minimum is placed, every domain of the slice level
// holds a multiple of the slice size of its members, except at most one when the gang's
// size or minimum is not a multiple, and a Required level holds the gang in one domain.
// SLICE_SEED=n replays one seed.
func TestSlicePlacementInvariants(t *testing.T) {
	seeds := 300
	first := int64(1)
	if s, err := strconv.ParseInt(os.Getenv("SLICE_SEED"), 10, 64); err == nil {
		seeds, first = 1, s
	}
	names := []string{"zone", "block", "rack", "host"}
	placed := 0
	for seed := first; seed < first+int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		nodes := grid(1+rng.Intn(2), 1+rng.Intn(2), 2+rng.Intn(2), 1+rng.Intn(3), 4)
		for i := range nodes {
			nodes[i].used = int64(rng.Intn(5))
		}
		size := 1 + rng.Intn(4)
		sliceLevel := 1 + rng.Intn(3) // block, rack or host
		constraints := []string{fmt.Sprintf("%s/%d", names[sliceLevel], size)}
		required := -1
		if rng.Intn(2) == 0 {
			required = rng.Intn(sliceLevel + 1)
			constraints = append(constraints, names[required])
		}
		if rng.Intn(3) == 0 {
			constraints = append(constraints, "~"+names[rng.Intn(4)])
		}
		members := 1 + rng.Intn(12)
		g := gang("g", members, 1+int64(rng.Intn(2)), constraints...)
		g.Min = members - rng.Intn(min(3, members))
		if k := rng.Intn(size); k > 0 && k < members && rng.Intn(3) == 0 {
			// k members placed on one node: an open slice.
			on := nodes[rng.Intn(len(nodes))].name
			g.Pending = g.Pending[:members-k]
			for range k {
				g.PlacedNodes = append(g.PlacedNodes, on)
			}
		}
		out, c := planOn(t, nodes, g, nil)
		if !out.ok {
			continue
		}
		placed++
		counts := sliceCountsOf(out, c, g, sliceLevel)
		total, short := 0, 0
		for _, n := range counts {
			total += n
			if n%size != 0 {
				short++
			}
		}
		if total < g.Min {
			t.Errorf("seed %d: %d members placed, want at least %d", seed, total, g.Min)
		}
		mayShort := members%size != 0 || g.Min%size != 0
		if short > 1 || (short == 1 && !mayShort) {
			t.Errorf("seed %d: %d %ss hold a short slice of %d (gang of %d, min %d): %v", seed, short, names[sliceLevel], size, members, g.Min, counts)
		}
		if required >= 0 {
			if r := sliceCountsOf(out, c, g, required); len(r) != 1 {
				t.Errorf("seed %d: the gang spans %ss %v, want one", seed, names[required], r)
			}
		}
	}
	if seeds > 1 && placed < seeds/4 {
		t.Errorf("only %d of %d random gangs were placed: the generator no longer exercises placement", placed, seeds)
	}
}
