package topology

import (
	"testing"
	"time"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// withUsed marks cpu as used on the named nodes.
func withUsed(nodes []testNode, used map[string]int64) []testNode {
	out := append([]testNode(nil), nodes...)
	for i := range out {
		if u, ok := used[out[i].name]; ok {
			out[i].used = u
		}
	}
	return out
}

// fillRack uses cpu on every node of a rack.
func fillRack(nodes []testNode, rack string, used int64) []testNode {
	out := append([]testNode(nil), nodes...)
	for i := range out {
		if out[i].rack == rack {
			out[i].used = used
		}
	}
	return out
}

func TestPlanner(t *testing.T) {
	// 1 zone × 2 blocks × 2 racks × 2 hosts × 8 cpu: 8 nodes, 64 cpu.
	small := grid(1, 2, 2, 2, 8)
	tests := []struct {
		name  string
		nodes []testNode
		tree  func() *podgroup.GroupView
		// want maps group name → level → the single domain all its pods must land in
		// ("" to only require a single domain).
		want    map[string]map[int]string
		fail    string // substring of the explanation when the tree cannot be placed
		placedN int    // pods the plan must place (defaults to all)
	}{
		{
			name:  "best fit picks the fullest rack that still fits",
			nodes: fillRack(fillRack(small, "z0-b0-r0", 6), "z0-b1-r1", 2),
			// r0 has 2+2 free, b1-r1 has 6+6 free, the others 16: a gang of 4 × 1 cpu fits r0 exactly.
			tree: func() *podgroup.GroupView { return gang("g", 4, 1, "rack") },
			want: map[string]map[int]string{"g": {2: "z0/z0-b0/z0-b0-r0"}},
		},
		{
			name:  "best fit keeps an empty rack whole for a later gang",
			nodes: fillRack(small, "z0-b1-r1", 4),
			tree:  func() *podgroup.GroupView { return gang("g", 2, 4, "rack") },
			want:  map[string]map[int]string{"g": {2: "z0/z0-b1/z0-b1-r1"}},
		},
		{
			name:  "nested zone, block, rack",
			nodes: grid(2, 2, 2, 2, 8),
			tree: func() *podgroup.GroupView {
				return composite("job", 2, []*podgroup.GroupView{
					composite("b0", 2, []*podgroup.GroupView{gang("s0", 2, 8, "rack"), gang("s1", 2, 8, "rack")}, "block"),
					composite("b1", 1, []*podgroup.GroupView{gang("s2", 4, 4, "rack")}, "block"),
				}, "zone")
			},
			want: map[string]map[int]string{
				"job": {0: ""}, "b0": {1: ""}, "b1": {1: ""}, "s0": {2: ""}, "s1": {2: ""}, "s2": {2: ""},
			},
		},
		{
			name:  "preferred rack when the group fits in one",
			nodes: small,
			tree:  func() *podgroup.GroupView { return gang("g", 2, 8, "~rack") },
			want:  map[string]map[int]string{"g": {2: ""}},
		},
		{
			name:  "preferred rack falls back to a block",
			nodes: small,
			// 4 × 8 cpu: no rack (16 cpu) holds it, a block (32 cpu) does.
			tree: func() *podgroup.GroupView { return gang("g", 4, 8, "~rack") },
			want: map[string]map[int]string{"g": {1: ""}},
		},
		{
			name:  "preferred rack falls back past block to the zone",
			nodes: small,
			tree:  func() *podgroup.GroupView { return gang("g", 6, 8, "~rack") },
			want:  map[string]map[int]string{"g": {0: ""}},
		},
		{
			name:  "required block and preferred rack",
			nodes: fillRack(small, "z0-b0-r0", 4),
			// block b0 has 8 + 16 free, b1 32; best fit tries b0 first, where rack r1 holds 2 × 8.
			tree: func() *podgroup.GroupView { return gang("g", 2, 8, "block", "~rack") },
			want: map[string]map[int]string{"g": {1: "z0/z0-b0", 2: "z0/z0-b0/z0-b0-r1"}},
		},
		{
			name:  "required block, preferred rack, no rack fits: stays in one block",
			nodes: small,
			tree:  func() *podgroup.GroupView { return gang("g", 3, 8, "block", "~rack") },
			want:  map[string]map[int]string{"g": {1: ""}},
		},
		{
			name: "backtracking: the best-fit block cannot hold the racks, the next one can",
			// Block b0 has 24 free cpu spread as 8 per rack-host; block b1 has 32 in two
			// whole racks. Two shards of 2 × 8 rack-required fit only in b1.
			nodes: withUsed(small, map[string]int64{"z0-b0-r0-h0": 8, "z0-b0-r1-h1": 0, "z0-b0-r1-h0": 0, "z0-b0-r0-h1": 4}),
			tree: func() *podgroup.GroupView {
				return composite("job", 2, []*podgroup.GroupView{
					gang("s0", 2, 8, "rack"), gang("s1", 2, 8, "rack"),
				}, "block")
			},
			want: map[string]map[int]string{"job": {1: "z0/z0-b1"}, "s0": {2: ""}, "s1": {2: ""}},
		},
		{
			name:  "heterogeneous pods are packed, not assumed alike",
			nodes: grid(1, 1, 1, 2, 8),
			// 6 + 2 on one node and 4 + 4 on the other: first fit by arrival would fail.
			tree: func() *podgroup.GroupView {
				g := gang("g", 0, 0, "rack")
				for i, cpu := range []int64{2, 4, 6, 4} {
					g.Pending = append(g.Pending, podOf("g-"+string(rune('a'+i)), cpu, 0))
				}
				g.Min = 4
				return g
			},
			want: map[string]map[int]string{"g": {2: ""}},
		},
		{
			name:  "no rack fits: the explanation says so in numbers",
			nodes: fillRack(fillRack(fillRack(fillRack(small, "z0-b0-r0", 4), "z0-b0-r1", 4), "z0-b1-r0", 2), "z0-b1-r1", 4),
			tree:  func() *podgroup.GroupView { return gang("train", 3, 4, "rack") },
			fail:  "PodGroup train: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2",
		},
		{
			// The default levels on nodes labelled only with a zone and a hostname: each host
			// is a domain of the host level, in its zone.
			name:  "host required on nodes without block or rack labels: one host",
			nodes: []testNode{{zone: "z0", name: "n0", cpu: 8, used: 2}, {zone: "z0", name: "n1", cpu: 8}},
			tree:  func() *podgroup.GroupView { return gang("pair", 2, 4, "host") },
			want:  map[string]map[int]string{"pair": {0: "z0", 3: "z0///n1"}},
		},
		{
			name:  "zone required, hosts preferred, on nodes without block or rack labels",
			nodes: []testNode{{zone: "z0", name: "n0", cpu: 4}, {zone: "z1", name: "n1", cpu: 8}, {zone: "z1", name: "n2", cpu: 8}},
			tree:  func() *podgroup.GroupView { return gang("trio", 3, 4, "zone", "~host") },
			want:  map[string]map[int]string{"trio": {0: "z1"}},
		},
		{
			name:  "rack required on nodes without rack labels: the explanation names the label",
			nodes: []testNode{{zone: "z0", name: "n0", cpu: 8}, {zone: "z0", name: "n1", cpu: 8}},
			tree:  func() *podgroup.GroupView { return gang("pair", 2, 4, "rack") },
			fail:  "PodGroup pair: no node carries the rack label " + rackKey,
		},
		{
			name:  "not enough capacity anywhere",
			nodes: grid(1, 1, 1, 2, 4),
			tree:  func() *podgroup.GroupView { return gang("big", 3, 4) },
			fail:  "PodGroup big: not enough free capacity for 3 pods × 4 cpu; the nodes it may use could take 2",
		},
		{
			name:  "minGroupCount: a shard that does not fit is left out",
			nodes: grid(1, 1, 2, 1, 8),
			tree: func() *podgroup.GroupView {
				return composite("job", 2, []*podgroup.GroupView{
					gang("s0", 1, 8, "rack"), gang("s1", 1, 8, "rack"), gang("s2", 1, 8, "rack"),
				})
			},
			placedN: 2,
		},
		{
			name:  "placed members pin their rack",
			nodes: small,
			tree: func() *podgroup.GroupView {
				g := gang("g", 3, 1, "rack")
				g.Pending = g.Pending[:1]
				g.PlacedNodes = []string{"z0-b1-r0-h0", "z0-b1-r0-h1"}
				return g
			},
			want: map[string]map[int]string{"g": {2: "z0/z0-b1/z0-b1-r0"}},
		},
		{
			name:  "placed members in two racks cannot be reconciled",
			nodes: small,
			tree: func() *podgroup.GroupView {
				g := gang("g", 3, 1, "rack")
				g.Pending = g.Pending[:1]
				g.PlacedNodes = []string{"z0-b1-r0-h0", "z0-b0-r0-h1"}
				return g
			},
			fail: "members already placed in racks z0-b0-r0, z0-b1-r0",
		},
		{
			// A bind that landed as its node was deleted: the member's rack is unknown.
			name:  "a member placed only on a node the cluster does not have holds the group back",
			nodes: small,
			tree: func() *podgroup.GroupView {
				g := gang("g", 3, 1, "rack")
				g.Pending = g.Pending[:2]
				g.PlacedNodes = []string{"deleted-node"}
				return g
			},
			fail: "member placed on node deleted-node, which is not in the cluster (deleted?): its rack is unknown until the member is removed",
		},
		{
			name:  "members on known nodes pin their rack past one on a deleted node",
			nodes: small,
			tree: func() *podgroup.GroupView {
				g := gang("g", 3, 1, "rack")
				g.Pending = g.Pending[:1]
				g.PlacedNodes = []string{"deleted-node", "z0-b1-r0-h1"}
				return g
			},
			want: map[string]map[int]string{"g": {2: "z0/z0-b1/z0-b1-r0"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.tree()
			out, c, placed := planExpecting(t, tc.nodes, root, tc.fail)
			if !placed {
				return
			}
			total := 0
			root.Walk(func(g *podgroup.GroupView) { total += len(g.Pending) })
			want := tc.placedN
			if want == 0 {
				want = total
			}
			if got := len(placementOf(out, root)); got != want {
				t.Errorf("placed %d pods, want %d: %v", got, want, placementOf(out, root))
			}
			root.Walk(func(g *podgroup.GroupView) {
				for level, domain := range tc.want[g.Key.Name] {
					got := domainsOf(out, c, g, level)
					if len(got) != 1 || (domain != "" && !got[domain]) {
						t.Errorf("%s spans %v at level %d, want one domain %q", g.Key.Name, got, level, domain)
					}
				}
			})
			// No node is given more than it has.
			used := map[string]int64{}
			root.Walk(func(g *podgroup.GroupView) {
				for _, p := range g.Pending {
					if n, ok := out.assign[p.UID]; ok {
						used[n.name] += out.requests[p.UID].MilliCPU
					}
				}
			})
			for _, n := range c.nodes {
				if used[n.name] > c.freeAt(n.idx).MilliCPU {
					t.Errorf("node %s given %dm cpu, has %dm free", n.name, used[n.name], c.freeAt(n.idx).MilliCPU)
				}
			}
		})
	}
}

// Capacity promised to another tree's plan is not promised twice.
func TestPromisedCapacityIsNotPromisedTwice(t *testing.T) {
	nodes := grid(1, 1, 2, 1, 8) // two racks of one 8-cpu node
	first := gang("first", 2, 4, "rack")
	out, _ := planOn(t, nodes, first, nil)
	if !out.ok {
		t.Fatal("first gang not placed")
	}
	promised := map[string]capacity.Resources{}
	for uid, n := range out.assign {
		r := promised[n.name]
		r.Add(out.requests[uid])
		promised[n.name] = r
	}
	second := gang("second", 2, 4, "rack")
	out2, _ := planOn(t, nodes, second, promised)
	if !out2.ok {
		t.Fatal("second gang not placed")
	}
	for _, p := range second.Pending {
		for _, q := range first.Pending {
			if out2.assign[p.UID].name == out.assign[q.UID].name {
				t.Errorf("%s planned on %s, promised to %s", p.Name, out2.assign[p.UID].name, q.Name)
			}
		}
	}
	third := gang("third", 1, 4)
	all := map[string]capacity.Resources{}
	for k, v := range promised {
		all[k] = v
	}
	for uid, n := range out2.assign {
		r := all[n.name]
		r.Add(out2.requests[uid])
		all[n.name] = r
	}
	if out3, _ := planOn(t, nodes, third, all); out3.ok {
		t.Error("a third gang was placed on capacity promised to the first two")
	}
}

// Pods only go to nodes they may run on: node selector and taints are respected.
func TestPlannerRespectsNodeSelectorAndTaints(t *testing.T) {
	nodes := grid(1, 1, 2, 2, 8)
	infos := nodeInfos(nodes)
	infos[0].Node().Spec.Unschedulable = true
	infos[1].Node().Labels["pool"] = "a"
	infos[2].Node().Labels["pool"] = "a"
	g := gang("g", 2, 4)
	for _, p := range g.Pending {
		p.Spec.NodeSelector = map[string]string{"pool": "a"}
	}
	c := clusterOf(infos, nil)
	out := newPlanner(c, newSpecFitter(newEligibility(c.nodes)), time.Minute).plan(g)
	if !out.ok {
		t.Fatal(c.explain(g, out.failures))
	}
	for name, node := range placementOf(out, g) {
		if node != infos[1].Node().Name && node != infos[2].Node().Name {
			t.Errorf("%s planned on %s, which it may not use", name, node)
		}
	}
}
