package topology

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

// running is a bound pod of cpu cores and priority on node, in gang g if g is not "".
func running(name, node, cpu string, priority int32, g string) *v1.Pod {
	w := st.MakePod().Namespace("ns").Name(name).UID(name).Node(node).Priority(priority).
		SchedulerName(lt.SchedulerName).Label("app", name).Container("main").
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
func choose(t *testing.T, members int, cpu string, groups []runtime.Object, running []*v1.Pod, objects ...runtime.Object) (*gangpreemption.Choice, string) {
	t.Helper()
	pending := gangPods("hi", members, func(w *st.PodWrapper) *st.PodWrapper {
		return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Priority(1000)
	})
	groups = append(groups, lt.MakePodGroup().Namespace("ns").Name("hi").Gang(int32(members)).Topology(lt.Required(rackKey)).Obj())
	env := newTestEnvOpts(t, groups, append(pending, running...), labeledNodes("4"), podgrouptest.Options{Filters: true, Objects: objects})
	tree, ok := env.Components.Model.Gate().Tree(pending[0])
	if !ok {
		t.Fatal("no tree for the preemptor")
	}
	c, why := env.plugin.selectVictims(env.Ctx, tree, podgroup.Preemptor{Root: podgroup.PodGroupKey("ns", "hi"), Priority: 1000}, env.NodeInfos(t), nil)
	if c != nil {
		t.Logf("%s: %v", c.Describe(), victimNamesOf(c))
	} else {
		t.Logf("no preemption: %s", why)
	}
	return c, why
}

func victimNamesOf(c *gangpreemption.Choice) []string {
	var out []string
	for _, p := range c.Pods() {
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
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("old").Gang(3).Obj()},
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
			if c.Domain.Name != tc.want || c.Cost.Pods != tc.pods || len(c.Pods()) != tc.pods {
				t.Errorf("chose %s evicting %d pods (%v), want %s evicting %d", c.Domain.Name, c.Cost.Pods, victimNamesOf(c), tc.want, tc.pods)
			}
			for uid, pp := range planOf(c).Pods {
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
	c, why := choose(t, 2, "2", []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("wide").Gang(4).Obj()}, pods)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	got := victimNamesOf(c)
	if fmt.Sprint(got) != "[wide-0 wide-1 wide-2 wide-3]" || c.Cost.Gangs != 1 || c.Domain.Name != "rack z0-r1" {
		t.Errorf("chose %s evicting %v (%d gangs), want rack z0-r1 evicting the whole gang wide", c.Domain.Name, got, c.Cost.Gangs)
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
	pdb := protecting("a")
	c, why := choose(t, 1, "2", nil, pods, pdb)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	got := victimNamesOf(c)
	if len(got) != 1 || got[0] == "a" || c.Cost.PDB != 0 {
		t.Errorf("evicting %v (%d budget violations), want one unprotected pod", got, c.Cost.PDB)
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
		t.Errorf("chose %s evicting %v; no rack can be freed of 8 cpu", c.Domain.Name, victimNamesOf(c))
	}
	var equal []*v1.Pod
	for _, rack := range []string{"z0-r0", "z0-r1", "z1-r0", "z1-r1"} {
		equal = append(equal, runningRack(rack, 1000)...)
	}
	if c, _ := choose(t, 4, "2", nil, equal); c != nil {
		t.Errorf("chose %s evicting %v; pods of equal priority are not victims", c.Domain.Name, victimNamesOf(c))
	}
	if c, _ := choose(t, 9, "2", nil, runningRack("z0-r0", 10)); c != nil {
		t.Errorf("chose %s evicting %v; 9 × 2 cpu fit no rack even empty", c.Domain.Name, victimNamesOf(c))
	}
}

// Issue #18 item 2: preemption sees every blocker. Low-priority pods whose required
// anti-affinity repels the gang's pods sit on every node; every node has the cpu. Evicting
// the blockers of one rack makes room: the dry runs take them out through the profile's
// PreFilter extensions (InterPodAffinity forgets their anti-affinity), and the reprieve gives
// back every blocker the plan does not need gone, checking every planned member again.
func TestPreemptionSeesAntiAffinityBlockers(t *testing.T) {
	var pods []*v1.Pod
	for _, n := range labeledNodes("4") {
		// One blocker per node, repelling pods labelled app=hi from its host.
		pods = append(pods, st.MakePod().Namespace("ns").Name("block-"+n.Name).UID("block-"+n.Name).Node(n.Name).Priority(10).
			SchedulerName(lt.SchedulerName).Label("app", "blocker").Req(lt.CPU("1")).
			PodAntiAffinityExists("app", hostKey, st.PodAntiAffinityWithRequiredReq).Obj())
	}
	// Two members of 3 cpu: one per node, in one rack: the two blockers of that rack must go,
	// and no other.
	c, why := choose(t, 2, "3", nil, pods)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	got := victimNamesOf(c)
	rack := c.Domain.Name[len("rack "):]
	if len(got) != 2 || c.Cost.Pods != 2 {
		t.Fatalf("evicting %v in %s, want the 2 blockers of one rack", got, c.Domain.Name)
	}
	for _, v := range got {
		if rackOf(v[len("block-"):]) != rack {
			t.Errorf("victim %s is outside %s", v, c.Domain.Name)
		}
	}
}

// The same for topology spread: the gang's pods spread over hosts (maxSkew 1,
// DoNotSchedule, counting app=hi pods). Every node but one runs a low-priority app=hi pod;
// the last one, full with a high-priority pod, counts none: the skew refuses every node.
// Evicting the two counted pods of one rack levels it for the two members.
func TestPreemptionSeesSpreadBlockers(t *testing.T) {
	nodes := labeledNodes("4")
	last := nodes[len(nodes)-1].Name
	var pods []*v1.Pod
	for _, n := range nodes[:len(nodes)-1] {
		pods = append(pods, st.MakePod().Namespace("ns").Name("low-"+n.Name).UID("low-"+n.Name).Node(n.Name).Priority(10).
			SchedulerName(lt.SchedulerName).Label("app", "hi").Req(lt.CPU("1")).Obj())
	}
	pods = append(pods, st.MakePod().Namespace("ns").Name("high").UID("high").Node(last).Priority(5000).
		SchedulerName(lt.SchedulerName).Req(lt.CPU("4")).Obj())
	spread := func(w *st.PodWrapper) *st.PodWrapper {
		return w.Req(lt.CPU("1")).Priority(1000).
			SpreadConstraint(1, hostKey, v1.DoNotSchedule, st.MakeLabelSelector().Exists("app").Obj(), nil, nil, nil, nil)
	}
	c := victimsOn(t, nodes, gangPods("hi", 2, spread), pods)
	got := victimNamesOf(c)
	t.Logf("%s: %v", c.Describe(), got)
	rack := c.Domain.Name[len("rack "):]
	if len(got) != 2 || rack == rackOf(last) {
		t.Fatalf("evicting %v in %s, want the 2 counted pods of a rack whose nodes can hold the members", got, c.Domain.Name)
	}
	for _, v := range got {
		if rackOf(v[len("low-"):]) != rack {
			t.Errorf("victim %s is outside %s", v, c.Domain.Name)
		}
	}
}

// Giving a victim back re-checks every planned member it can refuse, not only those on its
// own node: a blocker whose required anti-affinity spans its rack refuses the members on the
// rack's other nodes. With it back, the plan would not hold: it stays a victim.
func TestReprieveChecksTheWholeDomain(t *testing.T) {
	nodes := lt.TopologyNodes(1, 1, 2, 3, "4") // 2 racks of 3 nodes
	var pods []*v1.Pod
	for _, rack := range []string{"z0-b0-r0", "z0-b0-r1"} {
		// A blocker on the rack's last node repels app=hi from the whole rack.
		pods = append(pods, st.MakePod().Namespace("ns").Name("block-"+rack).UID("block-"+rack).Node(rack+"-h2").Priority(10).
			SchedulerName(lt.SchedulerName).Label("app", "blocker").Req(lt.CPU("1")).
			PodAntiAffinityExists("app", rackKey, st.PodAntiAffinityWithRequiredReq).Obj())
	}
	c := victimsOn(t, nodes, gangPods("hi", 2, func(w *st.PodWrapper) *st.PodWrapper { return w.Req(lt.CPU("3")).Priority(1000) }), pods)
	got := victimNamesOf(c)
	if len(got) != 1 || got[0] != "block-"+c.Domain.Name[len("rack "):] {
		t.Fatalf("%s evicting %v, want the rack's blocker", c.Domain.Name, got)
	}
	for _, pp := range planOf(c).Pods {
		if strings.HasSuffix(pp.Node, "-h2") {
			t.Errorf("a member planned on the blocker's node %s; the test wants them on its neighbours", pp.Node)
		}
	}
}

// victimsOn runs victim selection on nodes for the rack-required gang "hi" of the pending
// pods (priority 1000), with the running pods, and fails the test when nothing is chosen.
func victimsOn(t *testing.T, nodes []*v1.Node, pending, running []*v1.Pod) *gangpreemption.Choice {
	t.Helper()
	groups := []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("hi").Gang(int32(len(pending))).Topology(lt.Required(rackKey)).Obj()}
	env := newTestEnvOpts(t, groups, append(pending, running...), nodes, podgrouptest.Options{Filters: true})
	tree, ok := env.Components.Model.Gate().Tree(pending[0])
	if !ok {
		t.Fatal("no tree for the preemptor")
	}
	c, why := env.plugin.selectVictims(env.Ctx, tree, podgroup.Preemptor{Root: podgroup.PodGroupKey("ns", "hi"), Priority: 1000}, env.NodeInfos(t), nil)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	return c
}

// Inside a domain the victims are the lowest-priority pods that make room: the tree is
// planned as if the lowest tier of victims were gone first, so a pod of priority 90 is not
// evicted where four of priority 1 would do, even though it is one pod against four.
func TestPreemptionPrefersLowerPriorityVictimsInADomain(t *testing.T) {
	var pods []*v1.Pod
	for _, rack := range []string{"z0-r1", "z1-r0", "z1-r1"} {
		pods = append(pods, runningRack(rack, 2000)...) // not evictable
	}
	pods = append(pods, running("ninety", "z0-r0-h0", "4", 90, ""))
	pods = append(pods, fill("z0-r0-h1", 4, 1)...)
	c, why := choose(t, 1, "4", nil, pods)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	if got := victimNamesOf(c); fmt.Sprint(got) != "[z0-r0-h1-p0 z0-r0-h1-p1 z0-r0-h1-p2 z0-r0-h1-p3]" || c.Cost.Priority != 1 {
		t.Errorf("evicting %v (highest priority %d), want the four pods of priority 1", got, c.Cost.Priority)
	}
}

// Across domains PodDisruptionBudgets count first, as upstream ranks candidates: a rack whose
// victims have a higher priority but violate no budget wins over one whose victim a budget
// protects.
func TestPreemptionCountsBudgetsFirst(t *testing.T) {
	var pods []*v1.Pod
	for _, rack := range []string{"z1-r0", "z1-r1"} {
		pods = append(pods, runningRack(rack, 2000)...)
	}
	// Rack z0-r0: victims of priority 5, one protected; rack z0-r1: priority 50, free.
	pods = append(pods, running("a", "z0-r0-h0", "4", 5, ""))
	pods = append(pods, fill("z0-r0-h1", 4, 2000)...)
	pods = append(pods, running("b", "z0-r1-h0", "4", 50, ""))
	pods = append(pods, fill("z0-r1-h1", 4, 2000)...)
	pdb := protecting("a")
	c, why := choose(t, 1, "4", nil, pods, pdb)
	if c == nil {
		t.Fatalf("no choice: %s", why)
	}
	if got := victimNamesOf(c); fmt.Sprint(got) != "[b]" || c.Domain.Name != "rack z0-r1" {
		t.Errorf("chose %s evicting %v, want rack z0-r1 evicting b (no budget violated)", c.Domain.Name, got)
	}
}

// protecting is a PodDisruptionBudget that allows no disruption of the pods labelled app=app.
func protecting(app string) *policy.PodDisruptionBudget {
	return &policy.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: app},
		Spec:       policy.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policy.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	}
}

// A dry run offers gang preemption the domains of the level the tree's root requires, each
// with its nodes and a version, and places every node in the one whose nodes hold it: a
// node in no rack, or no node at all, is in none. A tree that requires no level is offered
// the cluster, which holds every node.
func TestDryRunPlacesEachNodeInItsDomain(t *testing.T) {
	nodes := append(rackedNodes(2, 3, "4"), st.MakeNode().Name("unracked").Label(zoneKey, "z0").Label(hostKey, "unracked").Obj())
	racked := lt.MakePodGroup().Namespace("ns").Name("racked").Gang(1).Topology(lt.Required(rackKey)).Obj()
	free := lt.MakePodGroup().Namespace("ns").Name("free").Gang(1).Obj()
	pods := append(lt.Members("ns", "racked", 1, lt.CPU("1")), lt.Members("ns", "free", 1, lt.CPU("1"))...)
	env := newTestEnv(t, []runtime.Object{racked, free}, pods, nodes)
	infos := env.NodeInfos(t)
	racks := sets.New[string]()
	for _, n := range nodes {
		if r := n.Labels[rackKey]; r != "" {
			racks.Insert(r)
		}
	}
	for _, tc := range []struct {
		pod     *v1.Pod
		domains int
		outside []string
	}{
		{pods[0], racks.Len(), []string{"unracked", "no-such-node"}},
		{pods[1], 1, []string{"no-such-node"}},
	} {
		tree, ok := env.Components.Model.Gate().Tree(tc.pod)
		if !ok {
			t.Fatalf("no tree for %s", tc.pod.Name)
		}
		dry := env.plugin.newDryRun(tree, infos)
		domains := dry.Domains()
		if len(domains) != tc.domains {
			t.Fatalf("%s: %d domains offered, want %d", tree.Key, len(domains), tc.domains)
		}
		held := 0
		for i, d := range domains {
			if d.Version == 0 {
				t.Errorf("%s: %s offered without a version", tree.Key, d.Name)
			}
			for _, n := range d.Nodes {
				held++
				if at, ok := dry.DomainOf(n); !ok || at != i {
					t.Errorf("%s: node %s of %s (place %d) placed at %d, %v", tree.Key, n, d.Name, i, at, ok)
				}
			}
		}
		if want := len(nodes) - len(tc.outside) + 1; held != want {
			t.Errorf("%s: the domains hold %d nodes, want %d", tree.Key, held, want)
		}
		for _, n := range tc.outside {
			if at, ok := dry.DomainOf(n); ok {
				t.Errorf("%s: node %s placed in domain %d, want none", tree.Key, n, at)
			}
		}
	}
}

// A preempting plan waits for every pod its dry run counted gone on the nodes it places
// members on: those it evicts, and those already leaving (terminating, or evicted by another
// tree's preemption). Were it to wait for its own victims only, its members would find their
// nodes still full once those left, and the tree would plan again and lose the room it was
// nominated to.
func TestPreemptingPlanAwaitsThePodsAlreadyLeavingItsNodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leaving marks going as leaving.
		leaving func(env *testEnv, going *v1.Pod)
	}{{
		name:    "a pod terminating",
		leaving: func(_ *testEnv, going *v1.Pod) { going.DeletionTimestamp = &metav1.Time{Time: time.Now()} },
	}, {
		name: "a pod another tree's preemption evicts",
		leaving: func(env *testEnv, going *v1.Pod) {
			env.plans.Store(&Plan{Root: podgroup.PodGroupKey("ns", "other"), Expires: time.Now().Add(time.Hour), Freed: "node z0-r0-h0",
				Victims: map[types.UID]types.NamespacedName{going.UID: {Namespace: "ns", Name: going.Name}}, VictimNodes: sets.New(going.Spec.NodeName)})
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*v1.Pod
			for _, r := range []string{"z0-r1", "z1-r0", "z1-r1"} {
				pods = append(pods, runningRack(r, 10)...)
			}
			going := running("going", "z0-r0-h0", "4", 10, "")
			pods = append(append(pods, going), fill("z0-r0-h1", 4, 10)...)
			members := gangPods("hi", 2, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).Priority(1000)
			})
			group := lt.MakePodGroup().Namespace("ns").Name("hi").Gang(2).Topology(lt.Required(rackKey)).Obj()
			env := newTestEnvOpts(t, []runtime.Object{group}, append(pods, members...), labeledNodes("4"), podgrouptest.Options{Filters: true})
			for _, ni := range env.NodeInfos(t) {
				for _, pi := range ni.GetPods() {
					if pi.GetPod().UID == going.UID {
						tc.leaving(env, pi.GetPod())
					}
				}
			}
			pol := podgroup.Policy{PermitTimeout: time.Minute, Backoff: 10 * time.Second}
			env.Components.Model.Permits().Fail(klog.Background(), members[0], "0/8 nodes are available", pol)
			statuses := framework.NewDefaultNodeToStatus()
			statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
			_, s := env.plugin.PostFilter(env.Ctx, framework.NewCycleState(), members[0], statuses)
			t.Logf("PostFilter: %v", s)
			plan := env.plans.Get(podgroup.PodGroupKey("ns", "hi"))
			if plan == nil || plan.Freed != "rack z0-r0" {
				t.Fatalf("plan %+v, want rack z0-r0 freed (4 victims, the rest leaving)", plan)
			}
			var awaited []string
			for _, ref := range plan.Victims {
				awaited = append(awaited, ref.Name)
			}
			sort.Strings(awaited)
			want := []string{"going", "z0-r0-h1-p0", "z0-r0-h1-p1", "z0-r0-h1-p2", "z0-r0-h1-p3"}
			if !slices.Equal(awaited, want) || !plan.VictimNodes.Equal(sets.New("z0-r0-h0", "z0-r0-h1")) {
				t.Errorf("the plan awaits %v on %v, want %v on both nodes", awaited, sets.List(plan.VictimNodes), want)
			}
		})
	}
}

// TestGangPreemptsForAsManyMembersAsItCan: a gang that cannot have room for every pending
// member takes room for the most it can, never fewer than its minimum (upstream's "schedule as
// many pods as possible without preempting higher priority pods, but still more than
// minCount"). Eight nodes of 4 cpu, lowNodes of them full of pods of priority 10 and the rest
// of pods of priority 2000; the gang's members take 4 cpu each, at priority 1000.
func TestGangPreemptsForAsManyMembersAsItCan(t *testing.T) {
	tests := []struct {
		name                  string
		min, members, lowFull int
		// freed is how many nodes the choice frees, 0 for no choice.
		freed int
	}{
		{name: "minimum 1 of 3, room for 2: takes 2", min: 1, members: 3, lowFull: 2, freed: 2},
		{name: "minimum 2 of 4, room for 3: takes 3", min: 2, members: 4, lowFull: 3, freed: 3},
		{name: "minimum 3 of 3, room for 2: none", min: 3, members: 3, lowFull: 2, freed: 0},
		{name: "minimum 1 of 3, no room: none", min: 1, members: 3, lowFull: 0, freed: 0},
		{name: "room for all: all", min: 1, members: 3, lowFull: 4, freed: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pending := gangPods("hi", tc.members, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "4"}).Priority(1000)
			})
			var pods []*v1.Pod
			for i, n := range labeledNodes("4") {
				priority := int32(2000)
				if i < tc.lowFull {
					priority = 10
				}
				pods = append(pods, fill(n.Name, 4, priority)...)
			}
			groups := []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("hi").Gang(int32(tc.min)).Obj()}
			env := newTestEnvOpts(t, groups, append(pending, pods...), labeledNodes("4"), podgrouptest.Options{Filters: true})
			tree, ok := env.Components.Model.Gate().Tree(pending[len(pending)-1])
			if !ok {
				t.Fatal("no tree for the preemptor")
			}
			c, why := env.plugin.selectVictims(env.Ctx, tree, podgroup.Preemptor{Root: podgroup.PodGroupKey("ns", "hi"), Priority: 1000},
				env.NodeInfos(t), pending[len(pending)-1])
			freed := sets.New[string]()
			if c != nil {
				for _, v := range c.Pods() {
					if v.Spec.Priority != nil && *v.Spec.Priority >= 1000 {
						t.Errorf("victim %s of priority %d", v.Name, *v.Spec.Priority)
					}
					freed.Insert(v.Spec.NodeName)
				}
				if _, ok := planOf(c).NodeOf(pending[len(pending)-1].UID); !ok {
					t.Errorf("the preemptor %s is not among the members planned", pending[len(pending)-1].Name)
				}
			}
			if freed.Len() != tc.freed {
				t.Errorf("freed nodes %v, want %d (%s)", sets.List(freed), tc.freed, why)
			}
		})
	}
}
