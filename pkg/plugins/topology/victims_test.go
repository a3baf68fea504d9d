package topology

import (
	"fmt"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

// running is a bound pod of cpu cores and priority on node, in gang g if g is not "".
func running(name, node, cpu string, priority int32, g string) *v1.Pod {
	w := st.MakePod().Namespace("ns").Name(name).UID(name).Node(node).Priority(priority).
		SchedulerName(podgrouptest.SchedulerName).Label("app", name).Container("main").
		Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu})
	if g != "" {
		w = w.Label(v1alpha1.PodGroupLabel, g)
	}
	return w.Obj()
}

// fill returns pods of 1 cpu and priority filling n cores of node.
func fill(node string, n int, priority int32) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = running(fmt.Sprintf("%s-p%d", node, i), node, "1", priority, "")
	}
	return out
}

// runningRack fills both nodes of a rack of labeledNodes("4").
func runningRack(rack string, priority int32) []*v1.Pod {
	return append(fill(rack+"-h0", 4, priority), fill(rack+"-h1", 4, priority)...)
}

// choose runs victim selection for the rack-required gang "hi" of members × cpu at priority
// 1000 on labeledNodes("4") (4 racks of 2 nodes of 4 cpu) with the running pods.
func choose(t *testing.T, members int, cpu string, groups []runtime.Object, running []*v1.Pod, objects ...runtime.Object) (*preemptionChoice, string) {
	t.Helper()
	pending := gangPods("hi", members, func(w *st.PodWrapper) *st.PodWrapper {
		return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Priority(1000)
	})
	groups = append(groups, podgrouptest.WithTopology(podgrouptest.Gang("hi", int32(members), ""), constraint(rackKey, v1alpha1.TopologyRequired)))
	env := newTestEnvOpts(t, groups, append(pending, running...), labeledNodes("4"), podgrouptest.Options{Filters: true, Objects: objects})
	tree, ok := env.Components.Model.Tree(pending[0])
	if !ok {
		t.Fatal("no tree for the preemptor")
	}
	c, why := env.plugin.selectVictims(env.Ctx, tree, podgroup.Preemptor{Root: podgroup.PodGroupKey("ns", "hi"), Priority: 1000}, env.NodeInfos(t))
	if c != nil {
		t.Logf("%s: %v", c.describe(), victimNamesOf(c))
	} else {
		t.Logf("no preemption: %s", why)
	}
	return c, why
}

func victimNamesOf(c *preemptionChoice) []string {
	var out []string
	for _, p := range c.pods() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// The domain chosen is the cheapest: lowest highest victim priority, then fewest gangs
// broken, then fewest pods.
func TestPreemptionChoosesTheCheapestRack(t *testing.T) {
	tests := []struct {
		name    string
		running []*v1.Pod
		groups  []runtime.Object
		want    string
		pods    int
	}{
		{
			name:    "the rack whose victims have the lowest priority",
			running: append(append(runningRack("z0-r0", 100), runningRack("z0-r1", 50)...), append(runningRack("z1-r0", 100), runningRack("z1-r1", 100)...)...),
			want:    "rack z0-r1",
			pods:    8,
		},
		{
			name:    "at equal priority, the rack with the fewest victims",
			running: append(append(runningRack("z0-r0", 10), runningRack("z0-r1", 10)...), append(runningRack("z1-r0", 10), fill("z1-r1-h0", 4, 10)...)...),
			want:    "rack z1-r1",
			pods:    4,
		},
		{
			name: "at equal priority, a rack that breaks no gang before one that breaks one",
			running: append(append(runningRack("z0-r0", 10), runningRack("z1-r0", 10)...), append(fill("z1-r1-h0", 4, 10),
				running("old-0", "z0-r1-h0", "2", 10, "old"), running("old-1", "z0-r1-h0", "2", 10, "old"),
				running("old-2", "z0-r1-h1", "2", 10, "old"))...),
			groups: []runtime.Object{podgrouptest.Gang("old", 3, "")},
			want:   "rack z1-r1",
			pods:   4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, why := choose(t, 4, "2", tc.groups, tc.running)
			if c == nil {
				t.Fatalf("no choice: %s", why)
			}
			if c.domain != tc.want || c.cost.pods != tc.pods || len(c.pods()) != tc.pods {
				t.Errorf("chose %s evicting %d pods (%v), want %s evicting %d", c.domain, c.cost.pods, victimNamesOf(c), tc.want, tc.pods)
			}
			for uid, pp := range c.plan.Pods {
				if rackOf(pp.Node) != tc.want[len("rack "):] {
					t.Errorf("member %s planned on %s, outside %s", uid, pp.Node, tc.want)
				}
			}
		})
	}
}

// A running gang is evicted with every bound member, wherever they are, or not at all.
func TestPreemptionTakesVictimGangsWhole(t *testing.T) {
	var pods []*v1.Pod
	for _, rack := range []string{"z0-r0", "z1-r0", "z1-r1"} {
		pods = append(pods, runningRack(rack, 2000)...) // not evictable
	}
	pods = append(pods, fill("z0-r1-h1", 4, 2000)...)
	// Gang "wide": two members on z0-r1-h0, the only room to be had, and two in rack z1-r0
	// next to pods of higher priority (z1-r0 is full: its two members replace two of them).
	pods = append(pods, running("wide-0", "z0-r1-h0", "2", 10, "wide"), running("wide-1", "z0-r1-h0", "2", 10, "wide"))
	pods = append(pods, running("wide-2", "z1-r0-h0", "0", 10, "wide"), running("wide-3", "z1-r0-h1", "0", 10, "wide"))
	c, why := choose(t, 2, "2", []runtime.Object{podgrouptest.Gang("wide", 4, "")}, pods)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	got := victimNamesOf(c)
	if fmt.Sprint(got) != "[wide-0 wide-1 wide-2 wide-3]" || c.cost.gangs != 1 || c.domain != "rack z0-r1" {
		t.Errorf("chose %s evicting %v (%d gangs), want rack z0-r1 evicting the whole gang wide", c.domain, got, c.cost.gangs)
	}
}

// Where a choice exists, victims a PodDisruptionBudget protects are spared.
func TestPreemptionRespectsPDBsWhereItCan(t *testing.T) {
	var pods []*v1.Pod
	for _, rack := range []string{"z0-r1", "z1-r0", "z1-r1"} {
		pods = append(pods, runningRack(rack, 2000)...)
	}
	// Rack z0-r0: four 2-cpu pods of priority 10; evicting any one makes room for the one
	// 2-cpu member. Pod "a" is protected by a budget that allows no disruption.
	// (Listed after the others on its node, so that without the budget it would be the one
	// not given back.)
	pods = append(pods, running("b", "z0-r0-h0", "2", 10, ""), running("a", "z0-r0-h0", "2", 10, ""),
		running("d", "z0-r0-h1", "2", 10, ""), running("c", "z0-r0-h1", "2", 10, ""))
	pdb := &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
		Spec:       policy.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
	c, why := choose(t, 1, "2", nil, pods, pdb)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	got := victimNamesOf(c)
	if len(got) != 1 || got[0] == "a" || c.cost.pdb != 0 {
		t.Errorf("evicting %v (%d budget violations), want one unprotected pod", got, c.cost.pdb)
	}
}

// Nothing is chosen when no domain can be freed enough, or when no pod has a lower priority.
func TestPreemptionChoosesNothingInvain(t *testing.T) {
	halfHigh := func(rack string) []*v1.Pod {
		return append(fill(rack+"-h0", 4, 2000), fill(rack+"-h1", 4, 10)...)
	}
	var pods []*v1.Pod
	for _, rack := range []string{"z0-r0", "z0-r1", "z1-r0", "z1-r1"} {
		pods = append(pods, halfHigh(rack)...)
	}
	if c, _ := choose(t, 4, "2", nil, pods); c != nil {
		t.Errorf("chose %s evicting %v; no rack can be freed of 8 cpu", c.domain, victimNamesOf(c))
	}
	var equal []*v1.Pod
	for _, rack := range []string{"z0-r0", "z0-r1", "z1-r0", "z1-r1"} {
		equal = append(equal, runningRack(rack, 1000)...)
	}
	if c, _ := choose(t, 4, "2", nil, equal); c != nil {
		t.Errorf("chose %s evicting %v; pods of equal priority are not victims", c.domain, victimNamesOf(c))
	}
	if c, _ := choose(t, 9, "2", nil, runningRack("z0-r0", 10)); c != nil {
		t.Errorf("chose %s evicting %v; 9 × 2 cpu fit no rack even empty", c.domain, victimNamesOf(c))
	}
}
