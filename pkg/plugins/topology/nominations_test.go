package topology

import (
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// nominate records pod as nominated to node, as the scheduler's queue does after a
// preemption, or after a restart for a pod whose status names a node.
func nominate(t *testing.T, env *testEnv, pod *v1.Pod, node string) {
	t.Helper()
	logger := klog.FromContext(env.Ctx)
	env.Queue.Add(env.Ctx, pod)
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	env.Framework.AddNominatedPod(logger, pi, &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node})
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
		podgroup.MarkHeld(s)
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
