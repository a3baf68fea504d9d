package topology

import (
	"fmt"
	"strings"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

const gpu v1.ResourceName = "nvidia.com/gpu"

// rackNodes returns nodes of cpu and gpus in racks: counts[i] nodes in rack r<i> (zone z0,
// block b0), named r<i>-n<j>.
func rackNodes(cpu, gpus string, counts ...int) []*v1.Node {
	var out []*v1.Node
	for r, count := range counts {
		for j := 0; j < count; j++ {
			name := fmt.Sprintf("r%d-n%d", r, j)
			capacity := map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: "256Gi", v1.ResourcePods: "110"}
			if gpus != "" {
				capacity[gpu] = gpus
			}
			out = append(out, st.MakeNode().Name(name).Capacity(capacity).
				Label(zoneKey, "z0").Label(blockKey, "b0").Label(rackKey, fmt.Sprintf("r%d", r)).Label(hostKey, name).Obj())
		}
	}
	return out
}

// gangPods returns n members of group g built by build, in namespace "ns" on lockstep's
// profile.
func gangPods(g string, n int, build func(*st.PodWrapper) *st.PodWrapper) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		name := fmt.Sprintf("%s-%d", g, i)
		w := st.MakePod().Namespace("ns").Name(name).UID(name).SchedulerName(lt.SchedulerName).
			Label(v1alpha1.PodGroupLabel, g).Label("app", g).Container("main")
		out[i] = build(w).Obj()
	}
	return out
}

// planWithFilters plans the tree of pods[0] with the upstream Filter plugins enabled and
// returns each member's node, or the refusal.
func planWithFilters(t *testing.T, group *v1alpha1.PodGroup, pods []*v1.Pod, nodes []*v1.Node, existing ...*v1.Pod) (map[string]string, *fwk.Status) {
	t.Helper()
	return planIn(t, podgrouptest.Options{Filters: true}, group, pods, nodes, existing...)
}

// planIn plans the tree of pods[0] in a test framework shaped by opts and returns each
// member's node, or the refusal.
func planIn(t *testing.T, opts podgrouptest.Options, group *v1alpha1.PodGroup, pods []*v1.Pod, nodes []*v1.Node, existing ...*v1.Pod) (map[string]string, *fwk.Status) {
	t.Helper()
	env := newTestEnvOpts(t, []runtime.Object{group}, append(pods, existing...), nodes, opts)
	_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() {
		return nil, s
	}
	plan := env.plans.Get(podgroup.PodGroupKey("ns", group.Name))
	if plan == nil {
		t.Fatal("no plan stored")
	}
	out := map[string]string{}
	for _, p := range pods {
		if pp, ok := plan.Pods[p.UID]; ok {
			out[p.Name] = pp.Node
		}
	}
	return out, nil
}

// plannedAll checks a plan against what a case wants: refused with the words refused (then
// it returns false: nothing more to check), or every one of n members planned.
func plannedAll(t *testing.T, got map[string]string, s *fwk.Status, refused string, n int) bool {
	t.Helper()
	if refused != "" {
		if s.IsSuccess() || !strings.Contains(s.Message(), refused) {
			t.Fatalf("PreFilter = %v, want refused with %q", s, refused)
		}
		return false
	}
	if s != nil {
		t.Fatalf("PreFilter refused: %v", s)
	}
	if len(got) != n {
		t.Fatalf("planned %v, want all %d members", got, n)
	}
	return true
}

// Fit means what the scheduler's Filter plugins mean: members that refuse to share a node
// (anti-affinity, host ports) get a node each, GPU pods only go where GPUs are.
func TestPlansTheFiltersAccept(t *testing.T) {
	rackOf4 := func(*testing.T) *v1alpha1.PodGroup {
		return lt.MakePodGroup().Namespace("ns").Name("train").Gang(4).Topology(lt.Required(rackKey)).Obj()
	}
	tests := []struct {
		name     string
		pods     []*v1.Pod
		nodes    []*v1.Node
		existing []*v1.Pod
		// distinct: every member on its own node; in: the nodes allowed.
		distinct bool
		in       sets.Set[string]
		refused  string
	}{
		{
			name: "required hostname anti-affinity inside the gang: one pod per node",
			pods: gangPods("train", 4, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).
					PodAntiAffinityExists("app", hostKey, st.PodAntiAffinityWithRequiredReq)
			}),
			nodes:    rackNodes("64", "", 4),
			distinct: true,
		},
		{
			name: "host ports: one pod per node",
			pods: gangPods("train", 4, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).HostPort(8080)
			}),
			nodes:    rackNodes("64", "", 4),
			distinct: true,
		},
		{
			name: "extended resources: 8-GPU pods, one per 8-GPU node, never on nodes without GPUs",
			pods: gangPods("train", 4, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", gpu: "8"})
			}),
			nodes:    append(rackNodes("64", "", 6), rackNodes("64", "8", 0, 4)...),
			distinct: true,
			in:       sets.New("r1-n0", "r1-n1", "r1-n2", "r1-n3"),
		},
		{
			name: "anti-affinity to a running pod keeps the gang off its node",
			pods: gangPods("train", 4, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
					PodAntiAffinityExists("db", hostKey, st.PodAntiAffinityWithRequiredReq)
			}),
			nodes:    rackNodes("64", "", 2, 2),
			existing: []*v1.Pod{st.MakePod().Namespace("ns").Name("db").UID("db").Label("db", "x").Node("r0-n0").Obj()},
			in:       sets.New("r0-n1", "r1-n0", "r1-n1"),
		},
		{
			name: "a rack of too few nodes for one pod per node is refused, saying why",
			pods: gangPods("train", 4, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).
					PodAntiAffinityExists("app", hostKey, st.PodAntiAffinityWithRequiredReq)
			}),
			nodes:   rackNodes("64", "", 3, 3),
			refused: "PodGroup train: no rack has room for 4 pods × 1 cpu; the roomiest rack could take 3",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, s := planWithFilters(t, rackOf4(t), tc.pods, tc.nodes, tc.existing...)
			if !plannedAll(t, got, s, tc.refused, len(tc.pods)) {
				return
			}
			nodes := sets.New[string]()
			racks := sets.New[string]()
			for _, n := range got {
				nodes.Insert(n)
				racks.Insert(n[:2])
				if tc.in != nil && !tc.in.Has(n) {
					t.Errorf("member planned on %s, want one of %v", n, sets.List(tc.in))
				}
			}
			if tc.distinct && nodes.Len() != len(tc.pods) {
				t.Errorf("planned %v, want every member on its own node", got)
			}
			if racks.Len() != 1 {
				t.Errorf("planned %v, want one rack", got)
			}
		})
	}
}

// tainted returns nodes with a NoSchedule taint the test pods do not tolerate.
func tainted(nodes []*v1.Node) []*v1.Node {
	for _, n := range nodes {
		n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "infra", Effect: v1.TaintEffectNoSchedule}}
	}
	return nodes
}

// labelled labels nodes key=value.
func labelled(nodes []*v1.Node, key, value string) []*v1.Node {
	for _, n := range nodes {
		n.Labels[key] = value
	}
	return nodes
}

// selecting gives pods the node selector key=value.
func selecting(pods []*v1.Pod, key, value string) []*v1.Pod {
	for _, p := range pods {
		p.Spec.NodeSelector = map[string]string{key: value}
	}
	return pods
}

// withRacksFrom renames the racks of nodes to start at first (r<first>...).
func withRacksFrom(first int, nodes []*v1.Node) []*v1.Node {
	for _, n := range nodes {
		var r, j int
		fmt.Sscanf(n.Name, "r%d-n%d", &r, &j)
		name := fmt.Sprintf("r%d-n%d", r+first, j)
		n.Name = name
		n.Labels[rackKey], n.Labels[hostKey] = fmt.Sprintf("r%d", r+first), name
	}
	return nodes
}

// Domains are ranked by slots of the group's shape, on the nodes its pods may use, over
// every candidate; explanations come from the same numbers.
func TestRanksDomainsByEligibleSlots(t *testing.T) {
	gpuPods := func(n int) []*v1.Pod {
		return gangPods("train", n, func(w *st.PodWrapper) *st.PodWrapper {
			return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "2", gpu: "8"})
		})
	}
	cpuPods := func(n int, cpu string) []*v1.Pod {
		return gangPods("train", n, func(w *st.PodWrapper) *st.PodWrapper {
			return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu})
		})
	}
	// The 8-GPU rack r0 has little free CPU (its nodes are small); the 2-node rack r1 has
	// as many GPUs as the gang needs.
	gpuRacks := append(rackNodes("4", "8", 8), withRacksFrom(1, rackNodes("96", "8", 2))...)
	nineTaintedAndOne := append(tainted(rackNodes("64", "", 2, 2, 2, 2, 2, 2, 2, 2, 2)), withRacksFrom(9, rackNodes("4", "", 2))...)
	nineTaintedAndSmall := append(tainted(rackNodes("64", "", 2, 2, 2, 2, 2, 2, 2, 2, 2)), withRacksFrom(9, rackNodes("2", "", 1))...)
	tests := []struct {
		name    string
		pods    []*v1.Pod
		nodes   []*v1.Node
		rack    string
		refused string
	}{
		{name: "2 × 8-GPU pods go to the rack they fill exactly, not the large one", pods: gpuPods(2), nodes: gpuRacks, rack: "r1"},
		{name: "nine tainted racks with room and one eligible rack: the eligible one", pods: cpuPods(2, "2"), nodes: nineTaintedAndOne, rack: "r9"},
		{name: "no eligible rack: said so, with the reason",
			pods: cpuPods(2, "2"), nodes: tainted(rackNodes("64", "", 2, 2)),
			refused: "PodGroup train: no rack has a node the pods may use (4 node(s) had untolerated taint dedicated=infra:NoSchedule)"},
		{name: "the eligible rack too small: the explanation counts it alone",
			pods: cpuPods(2, "2"), nodes: nineTaintedAndSmall,
			refused: "PodGroup train: no rack has room for 2 pods × 2 cpu; the roomiest rack could take 1; 9 other racks have no node the pods may use (18 node(s) had untolerated taint dedicated=infra:NoSchedule)"},
		{name: "the nodes the selector picks are tainted: the taint is named first, then the nodes the selector leaves out",
			pods: selecting(cpuPods(2, "2"), "disktype", "ssd"), nodes: append(labelled(tainted(rackNodes("64", "", 2)), "disktype", "ssd"), withRacksFrom(1, rackNodes("64", "", 3))...),
			refused: "PodGroup train: no rack has a node the pods may use (2 node(s) had untolerated taint dedicated=infra:NoSchedule, 3 node(s) didn't match Pod's node affinity/selector)"},
		{name: "a resource no node has: a likely typo or missing device plugin, not a rack's room",
			pods: gangPods("train", 2, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1", "example.com/fgpa": "1"})
			}), nodes: rackNodes("64", "8", 2, 2),
			refused: "PodGroup train: no node of the cluster has any example.com/fgpa (a typo in the resource's name, or a device plugin that does not run?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			group := lt.MakePodGroup().Namespace("ns").Name("train").Gang(int32(len(tc.pods))).Topology(lt.Required(rackKey)).Obj()
			got, s := planWithFilters(t, group, tc.pods, tc.nodes)
			if tc.refused != "" {
				if s.IsSuccess() || !strings.Contains(s.Message(), tc.refused) {
					t.Fatalf("PreFilter = %v, want refused with %q", s, tc.refused)
				}
				return
			}
			if s != nil {
				t.Fatalf("PreFilter refused: %v", s)
			}
			for pod, n := range got {
				if !strings.HasPrefix(n, tc.rack+"-") {
					t.Errorf("%s planned on %s, want rack %s (plan %v)", pod, n, tc.rack, got)
				}
			}
		})
	}
}

// A gang that every node with room refuses (running pods' anti-affinity repels it) is told
// so, not that no rack has room.
func TestExplainsFilterRefusals(t *testing.T) {
	nodes := rackNodes("4", "", 2)
	var blockers []*v1.Pod
	for _, n := range nodes {
		blockers = append(blockers, st.MakePod().Namespace("ns").Name("block-"+n.Name).UID("block-"+n.Name).Node(n.Name).
			SchedulerName(lt.SchedulerName).Label("app", "blocker").Req(lt.CPU("1")).
			PodAntiAffinityExists("app", hostKey, st.PodAntiAffinityWithRequiredReq).Obj())
	}
	pods := gangPods("train", 2, func(w *st.PodWrapper) *st.PodWrapper { return w.Req(lt.CPU("2")) })
	group := lt.MakePodGroup().Namespace("ns").Name("train").Gang(2).Topology(lt.Required(rackKey)).Obj()
	_, s := planWithFilters(t, group, pods, nodes, blockers...)
	if s.IsSuccess() {
		t.Fatal("planned a gang every node refuses")
	}
	for _, want := range []string{"no rack can take 2 pods × 2 cpu", "running pods' anti-affinity", "every node with room"} {
		if !strings.Contains(s.Message(), want) {
			t.Errorf("explanation %q, want it to say %q", s.Message(), want)
		}
	}
	if strings.Contains(s.Message(), "has room for") {
		t.Errorf("explanation %q blames the room, which every node has", s.Message())
	}
}

// A plan's verdicts are its own: the lists they are kept in go from one plan to the next
// (verdictCache.list), and a node one plan's shape was refused (a host port in use) is
// still open to the next plan's shape that needs no port.
func TestAPlanSeesNoVerdictOfAnEarlierPlan(t *testing.T) {
	ports := gangPods("ports", 1, func(w *st.PodWrapper) *st.PodWrapper {
		return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).HostPort(8080)
	})
	plain := gangPods("plain", 1, func(w *st.PodWrapper) *st.PodWrapper {
		return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"})
	})
	web := st.MakePod().Namespace("ns").Name("web").UID("web").Node("r0-n0").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).HostPort(8080).Obj()
	groups := []runtime.Object{
		lt.MakePodGroup().Namespace("ns").Name("ports").Gang(1).Topology(lt.Required(rackKey)).Obj(),
		lt.MakePodGroup().Namespace("ns").Name("plain").Gang(1).Topology(lt.Required(rackKey)).Obj(),
	}
	env := newTestEnvOpts(t, groups, append(append(ports, plain...), web), rackNodes("64", "", 1), podgrouptest.Options{Filters: true})
	for i := range 3 {
		if _, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), ports[0], env.NodeInfos(t)); s.IsSuccess() {
			t.Fatalf("round %d: a member that needs host port 8080 was planned beside the pod that holds it", i)
		}
		if _, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), plain[0], env.NodeInfos(t)); !s.IsSuccess() {
			t.Fatalf("round %d: the member without a host port was refused the only node: %v", i, s)
		}
		if pp := env.plans.Get(podgroup.PodGroupKey("ns", "plain")).Pods[plain[0].UID]; pp.Node != "r0-n0" {
			t.Fatalf("round %d: planned on %q, want r0-n0", i, pp.Node)
		}
		env.plans.Drop(podgroup.PodGroupKey("ns", "plain"))
	}
	if kept := len(env.plugin.verdicts.lists); kept == 0 {
		t.Error("no list of verdicts kept for the next plan")
	}
}
