package topology

import (
	"context"
	"slices"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// nominate records pod as nominated to node in memory, as the scheduler's queue does after a
// preemption decided in this process (whose PostFilter result Nominations notes).
func nominate(t *testing.T, env *testEnv, pod *v1.Pod, node string) {
	t.Helper()
	logger := klog.FromContext(env.Ctx)
	env.Queue.Add(env.Ctx, pod)
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	env.Framework.AddNominatedPod(logger, pi, &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node})
	env.plugin.nominations.Note(pod, node)
}

// The scheduler's Filter counts pods nominated to a node (of at least the pod's priority) as
// if they ran there; a plan that does not would be refused on every such node. The tree's
// own members and pods of lower priority do not count.
func TestPlanCountsPodsNominatedToNodes(t *testing.T) {
	nodes := labeledNodes("4")
	for _, tc := range []struct {
		name string
		// priority of the 4-cpu pods nominated to every node but the last
		priority int32
		// the tree's own members are nominated to the first node
		ownNominated bool
		wantOnly     string // the node the gang must be planned on; "" for any
	}{
		{name: "nominated pods of equal priority take their nodes", priority: 0, wantOnly: "z1-r1-h1"},
		{name: "pods of lower priority do not count", priority: -10},
		{name: "the tree's own nominations do not count against it", priority: 0, ownNominated: true, wantOnly: "z1-r1-h1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := lt.Members("ns", "g", 2, lt.CPU("2"))
			group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(hostKey)).Obj()
			others := lt.Members("ns", "other", len(nodes)-1, lt.CPU("4"))
			for _, o := range others {
				o.Spec.Priority = ptr.To(tc.priority)
			}
			env := newTestEnv(t, []runtime.Object{group}, append(append([]*v1.Pod{}, pods...), others...), nodes)
			for i, o := range others {
				nominate(t, env, o, nodes[i].Name)
			}
			if got := env.Framework.NominatedPodsForNode(nodes[0].Name); len(got) != 1 {
				t.Fatalf("nominated to %s: %d pods, want 1", nodes[0].Name, len(got))
			}
			if tc.ownNominated {
				for _, p := range pods {
					nominate(t, env, p, nodes[len(nodes)-1].Name)
				}
			}
			res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
			if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 {
				t.Fatalf("PreFilter = %v %v, want one node", res, s)
			}
			if got := sets.List(res.NodeNames)[0]; tc.wantOnly != "" && got != tc.wantOnly {
				t.Errorf("planned on %s, want %s (the only node no other pod is nominated to)", got, tc.wantOnly)
			}
		})
	}
}

// A gang member that failed keeps no nomination: a stale one (written while it waited at
// Permit before a restart) would hold its node against every other pod for as long as the
// gang stays pending. A member of a tree waiting for the victims it preempted keeps its
// planned node.
func TestFailedMemberKeepsNoNominationUnlessItsTreePreempts(t *testing.T) {
	pods := lt.Members("ns", "g", 2, lt.CPU("1"))
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(hostKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, labeledNodes("4"))
	root := podgroup.PodGroupKey("ns", "g")
	held := func() fwk.CycleState {
		s := framework.NewCycleState()
		podgroup.MarkRefused(s)
		return s
	}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "gang g backs off"))

	res, s := env.plugin.PostFilter(env.Ctx, held(), pods[0], statuses)
	if s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("PostFilter of a held gang member = %v, want UnschedulableAndUnresolvable", s)
	}
	if res == nil || res.Mode() != fwk.ModeOverride || res.NominatedNodeName != "" {
		t.Errorf("held member without a preempting plan: result %+v, want its nomination cleared", res)
	}

	env.plans.Store(&Plan{Root: root, Expires: time.Now().Add(time.Hour), Freed: "host z0-r0-h1",
		Victims: map[types.UID]types.NamespacedName{"victim": {Namespace: "ns", Name: "victim"}},
		Pods:    map[types.UID]PlannedPod{pods[0].UID: {Node: "z0-r0-h1"}, pods[1].UID: {Node: "z0-r0-h1"}}})
	res, _ = env.plugin.PostFilter(env.Ctx, held(), pods[0], statuses)
	if res == nil || res.Mode() != fwk.ModeOverride || res.NominatedNodeName != "z0-r0-h1" {
		t.Errorf("held member of a preempting tree: result %+v, want nominated to its planned node z0-r0-h1", res)
	}
}

// Nominations lists every node the scheduler's queue may hold a nominated pod for: the node
// in a pod's status and the node this process nominated it to, until the pod is bound,
// deleted or nominated elsewhere.
func TestNominationsListTheNodesThatMayHaveNominatedPods(t *testing.T) {
	unbound := func(uid, node string) *v1.Pod {
		p := lt.MakePod().Namespace("ns").Name(uid).UID(uid).Obj()
		p.Status.NominatedNodeName = node
		return p
	}
	bound := func(uid, node string) *v1.Pod {
		p := unbound(uid, "")
		p.Spec.NodeName = node
		return p
	}
	override := func(node string) *fwk.PostFilterResult {
		return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node}}
	}
	for _, tc := range []struct {
		name  string
		steps []func(n *Nominations)
		want  []string
	}{
		{name: "status", steps: []func(*Nominations){
			func(n *Nominations) { n.observe(unbound("a", "n1")) },
			func(n *Nominations) { n.observe(unbound("b", "n2")) },
		}, want: []string{"n1", "n2"}},
		{name: "status moves", steps: []func(*Nominations){
			func(n *Nominations) { n.observe(unbound("a", "n1")) },
			func(n *Nominations) { n.observe(unbound("a", "n2")) },
		}, want: []string{"n2"}},
		{name: "bound pods are nominated nowhere", steps: []func(*Nominations){
			func(n *Nominations) { n.observe(unbound("a", "n1")) },
			func(n *Nominations) { n.Note(unbound("a", ""), "n3") },
			func(n *Nominations) { n.observe(bound("a", "n1")) },
		}, want: nil},
		{name: "deleted pods are nominated nowhere", steps: []func(*Nominations){
			func(n *Nominations) { n.observe(unbound("a", "n1")) },
			func(n *Nominations) { n.forget("a") },
		}, want: nil},
		{name: "in memory before the status", steps: []func(*Nominations){
			func(n *Nominations) { n.NoteResult(unbound("a", ""), override("n1")) },
		}, want: []string{"n1"}},
		{name: "in memory and status both count until cleared", steps: []func(*Nominations){
			func(n *Nominations) { n.observe(unbound("a", "n1")) },
			func(n *Nominations) { n.Note(unbound("a", ""), "n2") },
		}, want: []string{"n1", "n2"}},
		{name: "an override to no node clears what this process nominated", steps: []func(*Nominations){
			func(n *Nominations) { n.Note(unbound("a", ""), "n2") },
			func(n *Nominations) { n.NoteResult(unbound("a", ""), override("")) },
		}, want: nil},
		{name: "a result that keeps the nomination changes nothing", steps: []func(*Nominations){
			func(n *Nominations) { n.Note(unbound("a", ""), "n2") },
			func(n *Nominations) {
				n.NoteResult(unbound("a", ""), &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeNoop}})
			},
			func(n *Nominations) { n.NoteResult(unbound("a", ""), nil) },
		}, want: []string{"n2"}},
		{name: "two pods on a node", steps: []func(*Nominations){
			func(n *Nominations) { n.observe(unbound("a", "n1")) },
			func(n *Nominations) { n.Note(unbound("b", ""), "n1") },
			func(n *Nominations) { n.forget("a") },
		}, want: []string{"n1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := NewNominations(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range tc.steps {
				step(n)
			}
			if got := sets.List(sets.New(n.Nodes()...)); !slices.Equal(got, tc.want) && (len(got) > 0 || len(tc.want) > 0) {
				t.Errorf("nodes %v, want %v", got, tc.want)
			}
		})
	}
}

// After a restart the queue nominates pods whose status names a node (a preemption of the
// last leader); a plan that weighs whole domains sees them through the pod informer alone.
func TestPlanSeesPodsNominatedInTheirStatus(t *testing.T) {
	nodes := labeledNodes("4")
	pods := lt.Members("ns", "g", 2, lt.CPU("2"))
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(hostKey)).Obj()
	others := lt.Members("ns", "other", len(nodes)-1, lt.CPU("4"))
	for i, o := range others {
		o.Status.NominatedNodeName = nodes[i].Name
	}
	env := newTestEnv(t, []runtime.Object{group}, append(append([]*v1.Pod{}, pods...), others...), nodes)
	for _, o := range others {
		env.Queue.Add(env.Ctx, o)
	}
	if got := env.Framework.NominatedPodsForNode(nodes[0].Name); len(got) != 1 {
		t.Fatalf("nominated to %s: %d pods, want 1", nodes[0].Name, len(got))
	}
	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 {
		t.Fatalf("PreFilter = %v %v, want one node", res, s)
	}
	if got, want := sets.List(res.NodeNames)[0], nodes[len(nodes)-1].Name; got != want {
		t.Errorf("planned on %s, want %s (the only node no pod is nominated to)", got, want)
	}
}

// A tree planned afresh clears the nominations its other pending members still carry from a
// preemption plan that ended (in the scheduler's memory, and on the status of the member that
// was its scout): the planner does not count them against the tree, but the scheduler's
// Filter counts each one on its node against every pod of its priority, its siblings
// included, and refused the scout the node its fresh plan gave it.
func TestFreshPlanClearsItsMembersStaleNominations(t *testing.T) {
	nodes := rackedNodes(1, 2, "4")
	pods := lt.Members("ns", "g", 3, lt.CPU("4"))
	pods[2].Status.NominatedNodeName = nodes[1].Name // the scout when the tree preempted
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(rackKey)).Obj()
	env := newTestEnv(t, []runtime.Object{group}, pods, nodes)
	nominate(t, env, pods[1], nodes[0].Name) // nominated by that preemption, in memory
	nominate(t, env, pods[2], nodes[1].Name)
	nominate(t, env, pods[0], nodes[2].Name) // the scout's own: the scheduler settles it

	if _, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t)); !s.IsSuccess() {
		t.Fatalf("PreFilter = %v, want the tree planned", s)
	}
	for _, n := range nodes[:2] {
		if got := env.Framework.NominatedPodsForNode(n.Name); len(got) != 0 {
			t.Errorf("%d pods still nominated to %s, want the siblings' nominations cleared", len(got), n.Name)
		}
	}
	for _, p := range pods[1:] {
		if status, memory := env.plugin.nominations.Of(p.UID); memory != "" {
			t.Errorf("%s still listed as nominated to %q (status %q), want cleared", p.Name, memory, status)
		}
	}
	if got := env.Framework.NominatedPodsForNode(nodes[2].Name); len(got) != 1 {
		t.Errorf("%d pods nominated to %s, want the scout's own nomination left to the scheduler", len(got), nodes[2].Name)
	}
	// The status of the member that was the scout is written, off the cycle.
	err := wait.PollUntilContextTimeout(env.Ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods("ns").Get(ctx, pods[2].Name, metav1.GetOptions{})
		return err == nil && p.Status.NominatedNodeName == "", nil
	})
	if err != nil {
		t.Errorf("%s's status still names its nominated node: %v", pods[2].Name, err)
	}
}

// A pod deleted while its PostFilter ran (its deletion seen first) is nominated nowhere when
// the result comes: nothing is kept for it, and its node is no longer listed.
func TestNominationOfAPodDeletedMeanwhileIsForgotten(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	n := &Nominations{pods: store, byPod: map[types.UID]nominated{}, count: map[string]int{}}
	pod := lt.MakePod().Namespace("ns").Name("a").UID("a").Obj()
	if err := store.Add(pod); err != nil {
		t.Fatal(err)
	}
	n.Note(pod, "n1")
	if got := n.Nodes(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("nodes %v, want n1", got)
	}
	if err := store.Delete(pod); err != nil {
		t.Fatal(err)
	}
	n.forget(pod.UID) // the informer's delete handler
	n.NoteResult(pod, &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: "n2"}})
	if got := n.Nodes(); len(got) != 0 || len(n.byPod) != 0 {
		t.Errorf("after a deleted pod's late result: nodes %v, %d pods kept; want none", got, len(n.byPod))
	}
	// A pod of the same name made again is another pod.
	again := lt.MakePod().Namespace("ns").Name("a").UID("a2").Obj()
	if err := store.Add(again); err != nil {
		t.Fatal(err)
	}
	n.Note(pod, "n3")
	if got := n.Nodes(); len(got) != 0 {
		t.Errorf("nodes %v for a pod whose name another pod now has, want none", got)
	}
}
