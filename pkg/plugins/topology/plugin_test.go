package topology

import (
	"context"
	"strings"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

type testEnv struct {
	*podgrouptest.Env
	plugin *Topology
	plans  *Plans
}

func newTestEnv(t *testing.T, groups []runtime.Object, pods []*v1.Pod, nodes []*v1.Node) *testEnv {
	return newTestEnvWith(t, groups, pods, nodes, false)
}

// newTestEnvWith runs the plugin with the upstream Filter plugins too, when filters is set.
func newTestEnvWith(t *testing.T, groups []runtime.Object, pods []*v1.Pod, nodes []*v1.Node, filters bool) *testEnv {
	return newTestEnvOpts(t, groups, pods, nodes, podgrouptest.Options{Filters: filters})
}

// newTestEnvOpts runs the plugin in a test framework shaped by opts.
func newTestEnvOpts(t testing.TB, groups []runtime.Object, pods []*v1.Pod, nodes []*v1.Node, opts podgrouptest.Options) *testEnv {
	t.Helper()
	env := &testEnv{plans: NewPlans()}
	opts.Observer = env.plans
	env.Env = podgrouptest.NewEnv(t, groups, pods, nodes, opts, podgrouptest.Plugin{
		Name: Name,
		Factory: func(ctx context.Context, fh fwk.Handle, c *podgroup.Components) (fwk.Plugin, error) {
			nominations, err := NewNominations(fh.SharedInformerFactory().Core().V1().Pods().Informer())
			if err != nil {
				return nil, err
			}
			// Told of changed nodes as in a scheduler (pkg/scheduler): a plan reads only those.
			changes, err := NewNodeChanges(fh.SharedInformerFactory().Core().V1().Pods().Informer(), fh.SharedInformerFactory().Core().V1().Nodes().Informer())
			if err != nil {
				return nil, err
			}
			pl, err := New(ctx, nil, fh, Shared{Trees: c.Model.Gate(), Notes: c.Model.Permits(), Plans: env.plans, Nominations: nominations,
				Changes: changes, Guard: func(h fwk.Handle) fwk.Handle { return podgroup.Guard(h, c.Model.Permits(), "") }})
			if err != nil {
				return nil, err
			}
			env.plugin = pl.(*Topology)
			return pl, nil
		},
		Points: []string{"PreFilter", "PostFilter", "PreScore", "Score"},
	})
	return env
}

// labeledNodes returns 2 zones × 1 block × 2 racks × 2 hosts of cpu cores: z0-r0-h0 ...
func labeledNodes(cpu string) []*v1.Node { return rackedNodes(2, 2, cpu) }

func rackOf(name string) string { return name[:len("z0-r0")] }

func TestPreFilterPlansTheTreeOnceAndNarrowsEachMember(t *testing.T) {
	pods := lt.Members("ns", "g", 3, lt.CPU("2"))
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(3).Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	nodes := env.NodeInfos(t)

	racks := sets.New[string]()
	used := map[string]int{}
	var plan *Plan
	for i, p := range pods {
		res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), p, nodes)
		if !s.IsSuccess() {
			t.Fatalf("%s: %v", p.Name, s)
		}
		if res == nil || res.NodeNames.Len() != 1 {
			t.Fatalf("%s narrowed to %v, want one node", p.Name, res)
		}
		n := res.NodeNames.UnsortedList()[0]
		racks.Insert(rackOf(n))
		used[n]++
		got := env.plans.Get(podgroup.PodGroupKey("ns", "g"))
		if i > 0 && got != plan {
			t.Errorf("%s planned the tree again", p.Name)
		}
		plan = got
	}
	if racks.Len() != 1 {
		t.Errorf("members spread over racks %v", sets.List(racks))
	}
	for n, k := range used {
		if k > 2 {
			t.Errorf("%d × 2 cpu planned on 4-cpu node %s", k, n)
		}
	}
	if plan.Chosen[podgroup.PodGroupKey("ns", "g")] == "" {
		t.Error("plan does not name the chosen rack")
	}
}

func TestPreFilterExplainsWhyNoDomainFits(t *testing.T) {
	pods := lt.Members("ns", "g", 3, lt.CPU("4"))
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(3).Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	want := "cannot place the gang: PodGroup g: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2"
	if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != want {
		t.Errorf("PreFilter = %v %q, want %q", s.Code(), s.Message(), want)
	}
}

func TestPreFilterPlansAgainWhenThePlannedNodeIsFull(t *testing.T) {
	pods := lt.Members("ns", "g", 2, lt.CPU("2"))
	full := []*v1.Pod{lt.Member("ns", "", 9).Req(lt.CPU("4")).Obj()}[0]
	full.Spec.NodeName = "z0-r0-h0"
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, append(pods, full), labeledNodes("4"))
	root := podgroup.PodGroupKey("ns", "g")
	env.plans.Store(&Plan{Root: root, Expires: time.Now().Add(time.Hour),
		Pods: map[types.UID]PlannedPod{pods[0].UID: {Node: "z0-r0-h0", Request: capacity.PodRequests(pods[0])}}})
	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || res.NodeNames.Has("z0-r0-h0") {
		t.Errorf("PreFilter = %v, %v; want a new node, not the full one", res, s)
	}
}

// A victim of the tree's preemption that the API has deleted but the scheduler's snapshot
// still holds (its cache hears of deletions through a handler of its own, behind the news
// that retried the tree) is still waited for: the tree is not planned again around it, which
// would take more victims.
func TestPreFilterWaitsForVictimsTheCacheStillHolds(t *testing.T) {
	pods := lt.Members("ns", "g", 2, lt.CPU("4"))
	victim := lt.MakePod().Namespace("ns").Name("victim").UID("victim").Req(lt.CPU("4")).Priority(0).Obj()
	victim.Spec.NodeName = "z0-r0-h1"
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, append(pods, victim), labeledNodes("4"))
	root := podgroup.PodGroupKey("ns", "g")
	storeRackPreemption(env, root, pods, time.Now().Add(time.Hour), victim.UID)
	// Deleted in the API (the informer), not yet in the snapshot.
	if err := env.Framework.SharedInformerFactory().Core().V1().Pods().Informer().GetStore().Delete(victim); err != nil {
		t.Fatal(err)
	}
	_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if s.IsSuccess() || !strings.Contains(s.Message(), "waiting for 1 preempted pods to leave rack z0-r0") {
		t.Errorf("PreFilter with the victim still in the snapshot = %v, want it waited for", s)
	}
	if plan := env.plans.Get(root); plan == nil || len(plan.Victims) != 1 || plan.Pods[pods[0].UID].Node != "z0-r0-h1" {
		t.Errorf("plan %+v, want the preempting plan kept as it was", plan)
	}
}

// storeRackPreemption stores for root the plan a preemption of rack z0-r0 made: pods[0] on
// z0-r0-h1, where its victim ns/victim (uid victim) runs, pods[1] on z0-r0-h0.
func storeRackPreemption(env *testEnv, root podgroup.Key, pods []*v1.Pod, expires time.Time, victim types.UID) {
	env.plans.Store(&Plan{Root: root, Expires: expires, Freed: "rack z0-r0",
		Victims:     map[types.UID]types.NamespacedName{victim: {Namespace: "ns", Name: "victim"}},
		VictimNodes: sets.New("z0-r0-h1"),
		Pods: map[types.UID]PlannedPod{pods[0].UID: {Node: "z0-r0-h1", Request: capacity.PodRequests(pods[0])},
			pods[1].UID: {Node: "z0-r0-h0", Request: capacity.PodRequests(pods[1])}}})
}

// A preemption plan that ended before its tree was tried again (it expired once its victims
// were gone) leaves nothing behind: the tree is planned afresh, and its condition no longer
// says it preempts, nor does the model treat it as preempting (it would hold no retry floor
// and never be released).
func TestEndedPreemptionPlanClearsPreempting(t *testing.T) {
	pods := lt.Members("ns", "g", 2, lt.CPU("4"))
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	root := podgroup.PodGroupKey("ns", "g")
	clock := time.Now()
	env.plans.now = func() time.Time { return clock }
	defer func() { env.plans.now = time.Now }()
	storeRackPreemption(env, root, pods, clock.Add(time.Second), "gone")
	gate := env.Components.Model.Gate()
	env.Components.Model.Permits().NotePreempting(root, "taking rack z0-r0: evicting 1 pod of priority 0 (0 gangs whole)")
	if c, _ := gate.Condition(root); c.Reason != v1alpha1.ReasonPreempting {
		t.Fatalf("condition %+v, want Preempting while the plan lives", c)
	}
	clock = clock.Add(2 * time.Second) // the plan expires, its victim long gone
	if _, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t)); !s.IsSuccess() {
		t.Fatalf("PreFilter after the plan ended: %v, want the tree planned afresh", s)
	}
	if plan := env.plans.Get(root); plan == nil || len(plan.Victims) != 0 {
		t.Errorf("plan %+v, want a fresh plan without victims", plan)
	}
	if c, _ := gate.Condition(root); c.Reason == v1alpha1.ReasonPreempting {
		t.Errorf("condition %+v after the preemption plan ended, want it no longer Preempting", c)
	}
}

// A member refused on its planned node: the plan is dropped and the tree planned again
// without that node, never the same refused plan twice; when no other node will do, the
// explanation says which node refused what. As in a scheduler, the gang's own PostFilter
// runs first and ends the attempt (and the plan with it): the refusal is read from the
// cycle. (It was read from the plan, so no node was ever refused, and a gang whose scout
// Filter refused on its planned node was planned there again at every attempt.)
func TestRefusedPlanIsNotMadeTwice(t *testing.T) {
	pods := lt.Members("ns", "g", 2, lt.CPU("1"))
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(hostKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	root := podgroup.PodGroupKey("ns", "g")
	pol := podgroup.Policy{PermitTimeout: time.Minute, Backoff: 10 * time.Second}
	refused := sets.New[string]()
	for i := 0; i < 8; i++ { // the 8 nodes, one after the other
		state := framework.NewCycleState()
		res, s := env.plugin.PreFilter(env.Ctx, state, pods[0], env.NodeInfos(t))
		if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 {
			t.Fatalf("plan %d: %v %v, want a node", i, res, s)
		}
		node := sets.List(res.NodeNames)[0]
		if refused.Has(node) {
			t.Fatalf("planned again on %s, refused before", node)
		}
		refused.Insert(node)
		statuses := framework.NewDefaultNodeToStatus()
		statuses.Set(node, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had volume node affinity conflict"))
		env.Components.Model.Permits().Fail(klog.Background(), pods[0], "0/8 nodes are available", pol)
		env.plugin.PostFilter(env.Ctx, state, pods[0], statuses)
		if env.plans.Get(root) != nil {
			t.Fatal("plan kept after its member was refused on its node")
		}
	}
	_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if s.IsSuccess() || !strings.Contains(s.Message(), "refused a planned member before: node(s) had volume node affinity conflict") {
		t.Errorf("every node refused: %v, want the refusals explained", s)
	}
}

// A member the gang held back before Filter (its tree backs off) says nothing about its
// planned node: the node is not refused, the plan is kept, and no plan is made while held.
func TestHeldMemberRefusesNoNode(t *testing.T) {
	pods := lt.Members("ns", "g", 2, lt.CPU("1"))
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(hostKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	root := podgroup.PodGroupKey("ns", "g")

	held := framework.NewCycleState()
	podgroup.MarkRefused(held)
	if _, s := env.plugin.PreFilter(env.Ctx, held, pods[0], env.NodeInfos(t)); !s.IsSkip() {
		t.Fatalf("PreFilter of a held member: %v, want Skip", s)
	}
	if env.plans.Get(root) != nil {
		t.Fatal("a held member's PreFilter made a plan")
	}

	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 {
		t.Fatalf("PreFilter: %v %v, want a node", res, s)
	}
	node := sets.List(res.NodeNames)[0]
	held = framework.NewCycleState()
	podgroup.MarkRefused(held)
	statuses := framework.NewDefaultNodeToStatus()
	statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "gang g backs off").WithPlugin("LockstepGang"))
	env.plugin.PostFilter(env.Ctx, held, pods[0], statuses)
	if env.plans.Get(root) == nil {
		t.Error("plan dropped after a held member's attempt")
	}
	if refusals := env.plans.Refusals(root); len(refusals) != 0 {
		t.Errorf("held member refused nodes %v", refusals)
	}
	res, s = env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || !res.NodeNames.Has(node) {
		t.Errorf("after a held attempt: %v %v, want the same planned node %s", res, s, node)
	}
}

// A member the gang held back before Filter says of preemption what its condition says of its
// gang's last attempt's, so that the scheduler does not rewrite the condition for the hold
// (podgroup.HeldPostFilter); a member whose condition says nothing of an attempt is told that
// the gang backs off.
func TestHeldMemberSaysWhatItsLastAttemptSaid(t *testing.T) {
	const preempted = "preemption: evicting every pod of priority below 0 would not make room in the cluster"
	tests := []struct {
		name      string
		condition string
		want      string
	}{
		{name: "no condition", want: podgroup.HeldPostFilterMessage},
		{name: "its gang's last attempt", condition: "0/4 nodes are available: cannot place the gang: PodGroup g: not enough free capacity. " + preempted, want: preempted},
		{name: "told by the Teller", condition: "gang g did not fit; the Scheduled condition of PodGroup g says why", want: podgroup.HeldPostFilterMessage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := lt.Members("ns", "g", 2, lt.CPU("1"))
			if tc.condition != "" {
				pods[0].Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: tc.condition}}
			}
			group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(hostKey)).Obj()
			env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
			held := framework.NewCycleState()
			podgroup.MarkRefused(held)
			statuses := framework.NewDefaultNodeToStatus()
			statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "gang g backs off").WithPlugin("LockstepGang"))
			if _, s := env.plugin.PostFilter(env.Ctx, held, pods[0], statuses); s.IsSuccess() || s.Message() != tc.want {
				t.Errorf("PostFilter = %v, want Unschedulable %q", s, tc.want)
			}
		})
	}
}

func TestUnknownTopologyKeyIsInvalid(t *testing.T) {
	pods := lt.Members("ns", "g", 1, nil)
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(1).Topology(lt.Required("example.com/pdu")).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	v := env.Components.Model.Gate().Admit(klog.Background(), pods[0])
	if v.Code != podgroup.Invalid || !strings.Contains(v.Message, `topology key "example.com/pdu" is not a configured level`) {
		t.Errorf("Check = %v %q, want Invalid naming the key", v.Code, v.Message)
	}
}

func TestBasicGroupStaysWithItsPlacedMembers(t *testing.T) {
	pods := lt.Members("ns", "web", 2, nil)
	pods[0].Spec.NodeName = "z1-r0-h1"
	group := lt.MakePodGroup().Namespace("ns").Name("web").Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[1], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || !res.NodeNames.Equal(sets.New("z1-r0-h0", "z1-r0-h1")) {
		t.Errorf("PreFilter = %v, %v; want rack z1-r0", res, s)
	}
}

func TestScoreDrawsUnplannedMembersToTheirSiblings(t *testing.T) {
	pods := lt.Members("ns", "web", 2, nil)
	pods[0].Spec.NodeName = "z0-r0-h0"
	group := lt.MakePodGroup().Namespace("ns").Name("web").Topology(lt.Preferred(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	state := framework.NewCycleState()
	nodes := env.NodeInfos(t)
	if s := env.plugin.PreScore(env.Ctx, state, pods[1], nodes); !s.IsSuccess() {
		t.Fatal(s)
	}
	want := map[string]int64{"z0-r0-h0": 100, "z0-r0-h1": 75, "z0-r1-h0": 50, "z1-r0-h0": 0}
	for _, ni := range nodes {
		w, ok := want[ni.Node().Name]
		if !ok {
			continue
		}
		if got, _ := env.plugin.Score(env.Ctx, state, pods[1], ni); got != w {
			t.Errorf("Score(%s) = %d, want %d", ni.Node().Name, got, w)
		}
	}
	// A pod in no group is not scored.
	if s := env.plugin.PreScore(env.Ctx, framework.NewCycleState(), lt.Member("ns", "", 0).Obj(), nodes); s.Code() != fwk.Skip {
		t.Errorf("PreScore of a plain pod = %v, want Skip", s.Code())
	}
}

// On nodes labelled only with a zone and a hostname (no block, no rack), a member is drawn
// to its sibling's host, then to its zone: levels neither node has are passed over.
func TestScoreOnNodesWithoutBlockOrRack(t *testing.T) {
	pods := lt.Members("ns", "web", 2, nil)
	pods[0].Spec.NodeName = "a0"
	group := lt.MakePodGroup().Namespace("ns").Name("web").Topology(lt.Preferred(hostKey)).Obj()
	var nodes []*v1.Node
	for _, n := range []struct{ name, zone string }{{"a0", "za"}, {"a1", "za"}, {"b0", "zb"}} {
		nodes = append(nodes, lt.MakeNode(n.name, "4").Label(zoneKey, n.zone).Label(hostKey, n.name).Obj())
	}
	nodes = append(nodes, lt.MakeNode("r0", "4").Label(zoneKey, "za").Label(rackKey, "r0").Label(hostKey, "r0").Obj())
	env := newTestEnv(t, []runtime.Object{group}, pods, nodes)
	state := framework.NewCycleState()
	infos := env.NodeInfos(t)
	if s := env.plugin.PreScore(env.Ctx, state, pods[1], infos); !s.IsSuccess() {
		t.Fatal(s)
	}
	want := map[string]int64{"a0": 100, "a1": 25, "r0": 25, "b0": 0}
	for _, ni := range infos {
		if got, _ := env.plugin.Score(env.Ctx, state, pods[1], ni); got != want[ni.Node().Name] {
			t.Errorf("Score(%s) = %d, want %d", ni.Node().Name, got, want[ni.Node().Name])
		}
	}
}

func TestNewValidatesArgs(t *testing.T) {
	tests := []struct {
		name string
		args *config.LockstepTopologyArgs
		want string
	}{
		{"no levels", &config.LockstepTopologyArgs{PlanTTLSeconds: 1, PlanTimeLimitMilliseconds: 1}, "levels: Required value"},
		{"duplicate level", &config.LockstepTopologyArgs{Levels: []string{rackKey, rackKey}, PlanTTLSeconds: 1, PlanTimeLimitMilliseconds: 1}, "levels[1]: Duplicate value"},
		{"not a label key", &config.LockstepTopologyArgs{Levels: []string{"a b"}, PlanTTLSeconds: 1, PlanTimeLimitMilliseconds: 1}, "levels[0]: Invalid value"},
		{"zero ttl", &config.LockstepTopologyArgs{Levels: []string{rackKey}, PlanTimeLimitMilliseconds: 1}, "planTTLSeconds: Invalid value: 0"},
		{"zero time limit", &config.LockstepTopologyArgs{Levels: []string{rackKey}, PlanTTLSeconds: 1}, "planTimeLimitMilliseconds: Invalid value: 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(t.Context(), tc.args, nil, Shared{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Replacements of a scheduled gang none of whose members is left (a node failure, a
// restart by its controller) are placed whole, as the gang was at its start: the first does
// not take the fullest rack for itself alone and pin the others there, where they do not fit.
// While fewer replacements than the minimum exist, they wait, told why.
func TestReplacementsOfAnEmptiedGangArePlannedWhole(t *testing.T) {
	tests := []struct {
		name         string
		replacements int
		planned      bool
	}{
		{name: "all replacements exist: planned whole", replacements: 3, planned: true},
		{name: "fewer than the minimum: they wait", replacements: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := lt.Members("ns", "train", tc.replacements, lt.CPU("2"))
			// Rack z0-r0 has room for one member only: the best fit for a pod on its own.
			for _, n := range []string{"z0-r0-h0", "z0-r0-h1"} {
				pods = append(pods, lt.MakePod().Namespace("other").Name("fill-"+n).UID("fill-"+n).Req(lt.CPU("3")).Node(n).Obj())
			}
			group := lt.MakePodGroup().Namespace("ns").Name("train").Gang(3).Topology(lt.Required(rackKey)).Obj()
			group.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue}}
			env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
			nodes := env.NodeInfos(t)
			racks := sets.New[string]()
			for _, p := range pods[:tc.replacements] {
				res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), p, nodes)
				switch {
				case !tc.planned && (s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "placed together once they meet its minimum (3)")):
					t.Fatalf("PreFilter(%s) = %v, %v; want the lone replacement to wait", p.Name, res, s)
				case !tc.planned:
				case !s.IsSuccess():
					t.Fatalf("PreFilter(%s) = %v", p.Name, s)
				case tc.planned && (res == nil || res.NodeNames.Len() != 1):
					t.Fatalf("PreFilter(%s) = %v; want one planned node", p.Name, res)
				case tc.planned:
					racks.Insert(rackOf(res.NodeNames.UnsortedList()[0]))
				}
			}
			if tc.planned && (racks.Len() != 1 || racks.Has("z0-r0")) {
				t.Errorf("replacements planned in racks %v, want one rack with room for all three", sets.List(racks))
			}
			if got := env.plans.Get(podgroup.PodGroupKey("ns", "train")) != nil; got != tc.planned {
				t.Errorf("tree planned: %v, want %v", got, tc.planned)
			}
		})
	}
}

// A member refused while its emptied gang's replacements are short of the minimum is queued
// when a pod of its own tree is created, not for pods of other trees or namespaces.
func TestQueuedWhenAPodOfItsTreeIsCreated(t *testing.T) {
	pods := lt.Members("ns", "train", 1, nil)
	group := lt.MakePodGroup().Namespace("ns").Name("train").Gang(3).Topology(lt.Required(rackKey)).Obj()
	other := lt.MakePodGroup().Namespace("ns").Name("other").Gang(1).Obj()
	env := newTestEnv(t, []runtime.Object{group, other}, pods, labeledNodes("4"))
	tests := []struct {
		added *v1.Pod
		want  fwk.QueueingHint
	}{
		{added: lt.Member("ns", "train", 1).Obj(), want: fwk.Queue},
		{added: lt.Member("ns", "other", 0).Obj(), want: fwk.QueueSkip},
		{added: lt.Member("elsewhere", "train", 1).Obj(), want: fwk.QueueSkip},
		{added: lt.MakePod().Namespace("ns").Name("plain").Obj(), want: fwk.QueueSkip},
	}
	for _, tc := range tests {
		if got, err := env.plugin.isSchedulableAfterTreePodAdded(klog.Background(), pods[0], nil, tc.added); err != nil || got != tc.want {
			t.Errorf("hint for %s/%s added = %v, %v; want %v", tc.added.Namespace, tc.added.Name, got, err, tc.want)
		}
	}
}

// A gang of minimum 2 with three members on room for two: the plan places two (the first by
// name), and the third waits, told why, rather than take the room planned for a sibling (it
// would race them for it). With or without topology.
func TestMemberBeyondTheMinimumWaitsForRoom(t *testing.T) {
	for _, topo := range []bool{false, true} {
		pods := lt.Members("ns", "g", 3, lt.CPU("2"))
		w := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2)
		if topo {
			w = w.Topology(lt.Required(rackKey))
		}
		env := newTestEnv(t, []runtime.Object{w.Obj()}, pods, rackedNodes(1, 2, "2")[:2]) // one rack of two
		nodes := env.NodeInfos(t)
		for i, p := range pods {
			res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), p, nodes)
			if i < 2 && (!s.IsSuccess() || res == nil || res.NodeNames.Len() != 1) {
				t.Errorf("topology %v: PreFilter(%s) = %v, %v; want its planned node", topo, p.Name, res, s)
			}
			if i == 2 && (s.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "placed without it")) {
				t.Errorf("topology %v: PreFilter(%s) = %v, %v; want it to wait", topo, p.Name, res, s)
			}
		}
	}
}

// Two racks with as much free room (4 cpu) for a gang of three: the plan takes the one more of
// which is in use (three nodes, one full) and leaves the idle one whole, as upstream's
// placement scoring (most allocated) would.
func TestEqualRoomGoesToTheBusierRack(t *testing.T) {
	var nodes []*v1.Node
	for _, n := range []struct{ name, rack string }{{"a0", "z0-r0"}, {"a1", "z0-r0"}, {"b0", "z0-r1"}, {"b1", "z0-r1"}, {"b2", "z0-r1"}} {
		nodes = append(nodes, lt.InTopology(lt.MakeNode(n.name, "2"), "z0", "z0-b0", n.rack).Obj())
	}
	pods := append(lt.Members("ns", "g", 3, lt.CPU("1")), lt.MakePod().Namespace("other").Name("full").UID("full").Req(lt.CPU("2")).Node("b2").Obj())
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(3).Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, nodes)
	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 {
		t.Fatalf("PreFilter = %v, %v", res, s)
	}
	if n := res.NodeNames.UnsortedList()[0]; n[0] != 'b' {
		t.Errorf("planned on %s, want the busier rack z0-r1 (b0, b1)", n)
	}
}

// A replacement in a gang that was initially scheduled binds alone, inside the rack its
// group's placed members occupy: no plan, no gang. A member bound to a node the cluster does
// not have (a bind that landed as the node was deleted) says nothing of the rack: the others
// pin it, and with none the replacement waits, told why.
func TestReplacementStaysInItsGroupsDomain(t *testing.T) {
	tests := []struct {
		name   string
		placed []string // nodes of members 0 and 1
		want   sets.Set[string]
		why    string
	}{
		{name: "placed members pin their rack", placed: []string{"z1-r0-h0", "z1-r0-h1"}, want: sets.New("z1-r0-h0", "z1-r0-h1")},
		{name: "a member on a deleted node does not unpin the others", placed: []string{"deleted", "z1-r0-h1"}, want: sets.New("z1-r0-h0", "z1-r0-h1")},
		{name: "members only on a deleted node hold the replacement back", placed: []string{"deleted", "deleted"},
			why: "PodGroup ns/train: member placed on node deleted, which is not in the cluster (deleted?): its rack is unknown until the member is removed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := lt.Members("ns", "train", 3, nil)
			pods[0].Spec.NodeName, pods[1].Spec.NodeName = tc.placed[0], tc.placed[1]
			group := lt.MakePodGroup().Namespace("ns").Name("train").Gang(3).Topology(lt.Required(rackKey)).Obj()
			group.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue}}
			env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
			res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[2], env.NodeInfos(t))
			if tc.why != "" {
				if s.Code() != fwk.UnschedulableAndUnresolvable || s.Message() != tc.why {
					t.Errorf("PreFilter = %v, %v; want unresolvable: %s", res, s, tc.why)
				}
			} else if !s.IsSuccess() || res == nil || !res.NodeNames.Equal(tc.want) {
				t.Errorf("PreFilter = %v, %v; want %v", res, s, sets.List(tc.want))
			}
			if env.plans.Get(podgroup.PodGroupKey("ns", "train")) != nil {
				t.Error("a replacement planned its whole tree")
			}
		})
	}
}
