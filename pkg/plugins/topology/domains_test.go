package topology

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// A topology keeps each node's free capacity across plans and reads a node again only when
// its NodeInfo changed (the scheduler's cache gives it a new generation at every change of
// the node or its pods). A pod added or removed must show in the next plan, and what one plan
// subtracts for promised capacity must not stay in the next.
func TestClusterFreeCapacityFollowsNodeChanges(t *testing.T) {
	nodes := grid(1, 1, 1, 3, 8)
	nodes[0].gpus, nodes[1].gpus, nodes[2].gpus = 4, 4, 4
	infos := nodeInfos(nodes)
	var tc topologyCache
	freeCPU := func(c *cluster) []int64 {
		var out []int64
		for i := range c.nodes {
			out = append(out, c.freeAt(i).MilliCPU/1000)
		}
		return out
	}
	gpus := func(c *cluster, i int) int64 { return c.freeAt(i).Scalar["nvidia.com/gpu"] }

	if got := freeCPU(newCluster(tc.get(levels, infos), nil)); !slices.Equal(got, []int64{8, 8, 8}) {
		t.Fatalf("free cpu %v, want [8 8 8]", got)
	}
	bound := podOf("bound", 3, 1)
	bound.Spec.NodeName = nodes[1].name
	node1 := infos[1].(*framework.NodeInfo)
	node1.AddPod(bound)
	c := newCluster(tc.get(levels, infos), map[string]capacity.Resources{nodes[2].name: {MilliCPU: 2000, Scalar: map[v1.ResourceName]int64{"nvidia.com/gpu": 2}}})
	if got := freeCPU(c); !slices.Equal(got, []int64{8, 5, 6}) {
		t.Errorf("after a pod was added to node 1 and 2 cores promised on node 2: free cpu %v, want [8 5 6]", got)
	}
	if gpus(c, 1) != 3 || gpus(c, 2) != 2 {
		t.Errorf("free gpus on nodes 1 and 2: %d and %d, want 3 and 2", gpus(c, 1), gpus(c, 2))
	}
	if err := node1.RemovePod(klog.Background(), bound); err != nil {
		t.Fatal(err)
	}
	c = newCluster(tc.get(levels, infos), nil)
	if got := freeCPU(c); !slices.Equal(got, []int64{8, 8, 8}) {
		t.Errorf("after the pod left and nothing is promised: free cpu %v, want [8 8 8]", got)
	}
	if gpus(c, 1) != 4 || gpus(c, 2) != 4 {
		t.Errorf("free gpus on nodes 1 and 2: %d and %d, want 4 and 4 (a promise of an earlier plan stayed)", gpus(c, 1), gpus(c, 2))
	}
}

// A node lacking a level's label is in no domain of that level and still in the domains of
// the levels it has: with the default levels, nodes labelled with a zone and a hostname only
// are each a host of their zone, in no block and no rack.
func TestDomainsOfNodesMissingLevels(t *testing.T) {
	nodes := []testNode{
		{zone: "z0", name: "n0", cpu: 8},             // zone and host
		{zone: "z0", rack: "r0", name: "n1", cpu: 8}, // no block
		{zone: "z0", block: "b0", rack: "r1", name: "n2", cpu: 8},
		{name: "n3", cpu: 8}, // host only
	}
	top := buildTopology(levels, nodeInfos(nodes), nil)
	keys := func(level int) []string {
		var out []string
		for _, d := range top.sub[""][level] {
			out = append(out, d.key)
		}
		return out
	}
	for level, want := range map[int][]string{
		0: {"z0"},
		1: {"z0/b0"},
		2: {"z0//r0", "z0/b0/r1"},
		3: {"///n3", "z0///n0", "z0//r0/n1", "z0/b0/r1/n2"},
	} {
		if got := keys(level); !slices.Equal(got, want) {
			t.Errorf("domains of level %d: %q, want %q", level, got, want)
		}
	}
	var hostsOfZone []string
	for _, d := range top.sub["z0"][3] {
		hostsOfZone = append(hostsOfZone, d.nodes[0].name)
	}
	if want := []string{"n0", "n1", "n2"}; !slices.Equal(hostsOfZone, want) {
		t.Errorf("hosts of zone z0: %q, want %q", hostsOfZone, want)
	}
	for i, want := range []map[int]bool{{0: true, 3: true}, {0: true, 2: true, 3: true}, {0: true, 1: true, 2: true, 3: true}, {3: true}} {
		for level := range levels {
			if _, ok := top.nodes[i].domainOf(level); ok != want[level] {
				t.Errorf("%s in a domain of level %d: %v, want %v", nodes[i].name, level, ok, want[level])
			}
		}
	}
}

// Which nodes a pod spec may use is kept across plans; a node whose Node object changes
// (tainted, cordoned, relabelled within its domain) is checked again.
func TestEligibilityFollowsNodeObjects(t *testing.T) {
	nodes := grid(1, 1, 1, 2, 8)
	infos := nodeInfos(nodes)
	var tc topologyCache
	topo := tc.get(levels, infos)
	pod := podOf("p", 1, 0)
	if !topo.eligibility().of(pod).allows(1) {
		t.Fatalf("node 1 refused before it was tainted: %s", topo.eligibility().of(pod).why(1))
	}
	tainted := infos[1].Node().DeepCopy()
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "infer", Effect: v1.TaintEffectNoSchedule}}
	infos[1].(*framework.NodeInfo).SetNode(tainted)
	if again := tc.get(levels, infos); again != topo {
		t.Fatal("a taint rebuilt the topology; it only changes which pods may use the node")
	}
	if why := topo.eligibility().of(pod).why(1); why == "" {
		t.Error("node 1 still allowed after it was tainted NoSchedule")
	}
	tolerating := podOf("q", 1, 0)
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	if !topo.eligibility().of(tolerating).allows(1) {
		t.Errorf("a pod tolerating the taint is refused: %s", topo.eligibility().of(tolerating).why(1))
	}
}

// Pods whose specs decide the same nodes share one answer, however their objects are laid out
// in memory: the cache key is the selector, the required node affinity and the tolerations.
func TestEligibilityKey(t *testing.T) {
	required := func(zone string) *v1.Affinity {
		return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: zoneKey, Operator: v1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
	}
	preferred := func(a *v1.Affinity) *v1.Affinity {
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []v1.PreferredSchedulingTerm{{Weight: 1, Preference: v1.NodeSelectorTerm{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: rackKey, Operator: v1.NodeSelectorOpIn, Values: []string{"r1"}}}}}}
		return a
	}
	with := func(f func(*v1.Pod)) *v1.Pod {
		p := podOf("p", 1, 0)
		f(p)
		return p
	}
	for _, tc := range []struct {
		name string
		a, b *v1.Pod
		same bool
	}{
		{"equal required affinity in distinct objects", with(func(p *v1.Pod) { p.Spec.Affinity = required("z0") }), with(func(p *v1.Pod) { p.Spec.Affinity = required("z0") }), true},
		{"preferred affinity does not decide eligibility", with(func(p *v1.Pod) { p.Spec.Affinity = required("z0") }), with(func(p *v1.Pod) { p.Spec.Affinity = preferred(required("z0")) }), true},
		{"different required affinity", with(func(p *v1.Pod) { p.Spec.Affinity = required("z0") }), with(func(p *v1.Pod) { p.Spec.Affinity = required("z1") }), false},
		{"selector", with(func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{zoneKey: "z0"} }), podOf("q", 1, 0), false},
		{"tolerations", with(func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "x", Operator: v1.TolerationOpExists}} }), podOf("q", 1, 0), false},
		{"requests do not matter", podOf("p", 1, 0), podOf("q", 7, 2), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if same := eligibilityKey(tc.a) == eligibilityKey(tc.b); same != tc.same {
				t.Errorf("same key = %v, want %v (%s vs %s)", same, tc.same, eligibilityKey(tc.a), eligibilityKey(tc.b))
			}
		})
	}
}

// A plan ranks candidate domains by their room (room.go), which it takes from a cache for
// the domains none of whose nodes changed since it was summed. Over a seeded random history of
// pods coming and going, nodes tainted and untainted, capacity promised to other plans and
// gangs of different specs, every plan must be the plan made by summing every node afresh.
func TestCachedRoomPlansAsNodeByNodeSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2026))
	nodes := grid(2, 2, 3, 4, 8)
	for i := range nodes {
		if i%5 == 0 {
			nodes[i].gpus = 4
		}
	}
	infos := nodeInfos(nodes)
	var tc topologyCache
	var bound []*v1.Pod
	taint := v1.Taint{Key: "maintenance", Effect: v1.TaintEffectNoSchedule}
	for step := 0; step < 400; step++ {
		switch rng.IntN(4) {
		case 0, 1: // a pod binds
			i := rng.IntN(len(infos))
			p := podOf(fmt.Sprintf("bound-%d", step), int64(1+rng.IntN(4)), int64(rng.IntN(2)))
			p.Spec.NodeName = nodes[i].name
			infos[i].(*framework.NodeInfo).AddPod(p)
			bound = append(bound, p)
		case 2: // a pod leaves
			if len(bound) > 0 {
				k := rng.IntN(len(bound))
				p := bound[k]
				bound = append(bound[:k], bound[k+1:]...)
				ni := infos[slices.IndexFunc(nodes, func(n testNode) bool { return n.name == p.Spec.NodeName })]
				if err := ni.(*framework.NodeInfo).RemovePod(klog.Background(), p); err != nil {
					t.Fatal(err)
				}
			}
		case 3: // a node is tainted or untainted
			ni := infos[rng.IntN(len(infos))].(*framework.NodeInfo)
			n := ni.Node().DeepCopy()
			if len(n.Spec.Taints) == 0 {
				n.Spec.Taints = []v1.Taint{taint}
			} else {
				n.Spec.Taints = nil
			}
			ni.SetNode(n)
		}
		promised := map[string]capacity.Resources{}
		for k := rng.IntN(3); k > 0; k-- {
			promised[nodes[rng.IntN(len(nodes))].name] = capacity.Resources{MilliCPU: int64(1+rng.IntN(6)) * 1000}
		}
		constraint := []string{"rack", "block", "zone", "rack/2"}[rng.IntN(4)]
		g := gang(fmt.Sprintf("g%d", step), 2+rng.IntN(6), int64(1+rng.IntN(4)), constraint)
		if rng.IntN(3) == 0 {
			for _, p := range g.Pending {
				p.Spec.Tolerations = []v1.Toleration{{Key: taint.Key, Operator: v1.TolerationOpExists}}
			}
		}

		topo := tc.get(levels, infos)
		c := newCluster(topo, promised)
		cached := newPlanner(c, newSpecFitter(topo.eligibility()), time.Minute)
		if !cached.cached {
			t.Fatal("a plan with the spec's eligibility alone does not use the cache")
		}
		got := cached.plan(g)
		summed := newPlanner(c, excluding{fitter: newSpecFitter(newEligibility(topo.nodes)), out: func(*node) string { return "" }}, time.Minute)
		want := summed.plan(g)
		if got.ok != want.ok || !maps.Equal(placementOf(got, g), placementOf(want, g)) {
			t.Fatalf("step %d (%s gang of %d): cached room placed %v (ok %v), node-by-node sums %v (ok %v)",
				step, constraint, len(g.Pending), placementOf(got, g), got.ok, placementOf(want, g), want.ok)
		}
	}
}

// A domain's allocatable CPU (what plans break ties between domains by) follows its nodes'
// objects: a node that grows grows its rack, block and zone, and no other domain.
func TestDomainCapacityFollowsNodeObjects(t *testing.T) {
	nodes := grid(1, 1, 2, 2, 8)
	infos := nodeInfos(nodes)
	var tc topologyCache
	topo := tc.get(levels, infos)
	cpuOf := func(key string) int64 { return topo.domains[key].cpu / 1000 }
	if got := cpuOf("z0/z0-b0/z0-b0-r0"); got != 16 {
		t.Fatalf("rack r0 has %d cores, want 16", got)
	}
	grown := infos[0].Node().DeepCopy()
	grown.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("24")
	infos[0].(*framework.NodeInfo).SetNode(grown)
	if again := tc.get(levels, infos); again != topo {
		t.Fatal("a node's new allocatable rebuilt the topology")
	}
	for key, want := range map[string]int64{"z0": 48, "z0/z0-b0": 48, "z0/z0-b0/z0-b0-r0": 32, "z0/z0-b0/z0-b0-r1": 16} {
		if got := cpuOf(key); got != want {
			t.Errorf("domain %s has %d cores after node 0 grew to 24, want %d", key, got, want)
		}
	}
	if got := topo.anywhere.cpu / 1000; got != 48 {
		t.Errorf("anywhere has %d cores, want 48", got)
	}
}

// A node's info is found in a list of the topology's nodes by the topology's index: the
// snapshot's, or a dry run's copy of it (the copy's info, not the snapshot's); in a list that
// is not in the topology's order (a topology being replaced), by reading the list; nowhere
// for a node the list does not have.
func TestInfoOfFindsTheListsOwnInfo(t *testing.T) {
	infos := nodeInfos(grid(1, 1, 2, 2, 8))
	top := buildTopology(levels, infos, nil)
	copied := append([]fwk.NodeInfo(nil), infos...)
	copied[2] = infos[2].Snapshot()
	reversed := slices.Clone(infos)
	slices.Reverse(reversed)
	for _, tc := range []struct {
		name  string
		infos []fwk.NodeInfo
		node  string
		want  fwk.NodeInfo
	}{
		{"the snapshot", infos, "z0-b0-r1-h0", infos[2]},
		{"a dry run's copy", copied, "z0-b0-r1-h0", copied[2]},
		{"a node the dry run did not copy", copied, "z0-b0-r0-h1", infos[1]},
		{"another order", reversed, "z0-b0-r0-h0", infos[0]},
		{"a shorter list", infos[:1], "z0-b0-r1-h1", nil},
		{"an unknown node", infos, "elsewhere", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := top.infoOf(tc.infos, tc.node); got != tc.want {
				t.Errorf("infoOf(%s) = %v, want %v", tc.node, got, tc.want)
			}
		})
	}
}

// A topology built anew after nodes were added or deleted (from the one it replaces) is the
// topology built from nothing: the same nodes, paths, sizes, domains and eligibility. What it
// took from the old one is what the old one read of the Node objects it still holds: their
// eligibility is known without checking them again; a new node, and one whose object changed
// (relabelled into another rack, tainted), is checked when first asked about.
func TestTopologyRebuiltFromTheLastIsBuiltFromNothing(t *testing.T) {
	infos := nodeInfos(grid(2, 1, 2, 2, 8))
	var tc topologyCache
	old := tc.get(levels, infos)
	pods := []*v1.Pod{podOf("p", 1, 0), podOf("q", 1, 0)}
	pods[1].Spec.NodeSelector = map[string]string{zoneKey: "z1"}
	for _, p := range pods {
		for i := range infos {
			old.eligibility().of(p).allows(i)
		}
	}
	// Node 0 deleted (every other node's index moves), node 3 moved to another rack, node 5
	// tainted, a node added.
	moved := infos[3].Node().DeepCopy()
	moved.Labels[rackKey] = "z0-b0-r9"
	infos[3].(*framework.NodeInfo).SetNode(moved)
	tainted := infos[5].Node().DeepCopy()
	tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Effect: v1.TaintEffectNoSchedule}}
	infos[5].(*framework.NodeInfo).SetNode(tainted)
	added := nodeInfos([]testNode{{zone: "z1", block: "z1-b0", rack: "z1-b0-r0", name: "added", cpu: 4}})
	grown := append(slices.Clone(infos[1:]), added...)

	got := tc.get(levels, grown)
	if got == old {
		t.Fatal("the topology was not rebuilt for a node added and one deleted")
	}
	want := buildTopology(levels, grown, nil)
	for i, n := range want.nodes {
		g := got.nodes[i]
		if g.name != n.name || !slices.Equal(g.path, n.path) || !slices.Equal(g.keys, n.keys) || g.cpu != n.cpu || g.obj != n.obj {
			t.Errorf("node %d: %s %v %v %d, want %s %v %v %d", i, g.name, g.path, g.keys, g.cpu, n.name, n.path, n.keys, n.cpu)
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got.domains)), slices.Sorted(maps.Keys(want.domains))) {
		t.Errorf("domains %v, want %v", slices.Sorted(maps.Keys(got.domains)), slices.Sorted(maps.Keys(want.domains)))
	}
	for key, d := range want.domains {
		var gotNodes, wantNodes []string
		for _, n := range got.domains[key].nodes {
			gotNodes = append(gotNodes, n.name)
		}
		for _, n := range d.nodes {
			wantNodes = append(wantNodes, n.name)
		}
		if !slices.Equal(gotNodes, wantNodes) || got.domains[key].cpu != d.cpu {
			t.Errorf("domain %s: %v (%d), want %v (%d)", key, gotNodes, got.domains[key].cpu, wantNodes, d.cpu)
		}
	}
	for _, p := range pods {
		kept := got.eligibility().of(p)
		for i, n := range got.nodes {
			changed := n.name == "added" || i == 2 || i == 4 // the new node, node 3 and node 5 of before
			if known := kept.state[i] != 0; known == changed {
				t.Errorf("pod %s, node %s: eligibility known before asked %v, want %v", p.Name, n.name, known, !changed)
			}
			if g, w := kept.why(i), want.eligibility().of(p).why(i); g != w {
				t.Errorf("pod %s, node %s: refused for %q, want %q", p.Name, n.name, g, w)
			}
		}
	}
}
