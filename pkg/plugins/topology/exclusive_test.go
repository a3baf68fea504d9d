package topology

import (
	"strings"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// jobSetLike returns a CompositePodGroup "js" of n exclusive-rack gangs "j<i>" of pods pods
// of cpu each, as the JobSet adapter makes them.
func jobSetLike(n, pods int, cpu string) ([]runtime.Object, []*v1.Pod) {
	objs := []runtime.Object{lt.MakeCompositePodGroup().Namespace("ns").Name("js").Gang(int32(n)).Obj()}
	var members []*v1.Pod
	for i := range n {
		name := "j" + string(rune('0'+i))
		objs = append(objs, lt.MakePodGroup().Namespace("ns").Name(name).Gang(int32(pods)).Parent("js").Topology(lt.Exclusive(rackKey)).Obj())
		members = append(members, lt.Members("ns", name, pods, lt.CPU(cpu))...)
	}
	return objs, members
}

// racksOf plans the tree of pods[0] and returns, per group, the racks its members were
// planned in.
func racksOf(t *testing.T, env *testEnv, pods []*v1.Pod) (map[string]sets.Set[string], string) {
	t.Helper()
	_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
	if !s.IsSuccess() {
		return nil, s.Message()
	}
	plan := env.plans.Get(podgroup.CompositePodGroupKey("ns", "js"))
	if plan == nil {
		t.Fatal("no plan stored")
	}
	out := map[string]sets.Set[string]{}
	for _, p := range pods {
		pp, ok := plan.Pods[p.UID]
		if !ok {
			t.Fatalf("%s not planned", p.Name)
		}
		g := p.Labels[v1alpha1.PodGroupLabel]
		if out[g] == nil {
			out[g] = sets.New[string]()
		}
		out[g].Insert(rackOf(pp.Node))
	}
	return out, ""
}

// Exclusive gangs of one tree each get a rack to themselves, even where one rack could hold
// both; a rack where another workload's pod runs is not taken, a DaemonSet's pod does not
// count; when no rack is free of others, the explanation says so.
func TestExclusiveGangsTakeARackEach(t *testing.T) {
	daemon := []*v1.Pod{lt.Member("ns", "", 90).Req(lt.CPU("1")).Obj()}[0]
	daemon.Spec.NodeName = "z0-r0-h0"
	daemon.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: ptr.To(true)}}
	other := []*v1.Pod{lt.Member("ns", "", 91).Req(lt.CPU("1")).Obj()}[0]
	other.Spec.NodeName = "z0-r1-h0"
	for _, tc := range []struct {
		name      string
		gangs     int
		running   []*v1.Pod
		wantRacks int    // distinct racks, one per gang
		avoid     string // a rack no gang may take
		wantFail  string
	}{
		{name: "two gangs, two racks", gangs: 2, wantRacks: 2},
		{name: "a DaemonSet pod does not make a rack busy", gangs: 4, running: []*v1.Pod{daemon}, wantRacks: 4},
		{name: "a rack with another workload's pod is not taken", gangs: 3, running: []*v1.Pod{other}, wantRacks: 3, avoid: "z0-r1"},
		{name: "no rack to itself", gangs: 4, running: []*v1.Pod{other}, wantFail: "exclusive: no rack to itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, pods := jobSetLike(tc.gangs, 2, "1")
			env := newTestEnv(t, objs, append(append([]*v1.Pod{}, pods...), tc.running...), labeledNodes("4"))
			racks, fail := racksOf(t, env, pods)
			if tc.wantFail != "" {
				if !strings.Contains(fail, tc.wantFail) {
					t.Fatalf("plan failure %q, want it to say %q", fail, tc.wantFail)
				}
				return
			}
			if fail != "" {
				t.Fatalf("no plan: %s", fail)
			}
			all := sets.New[string]()
			for g, rs := range racks {
				if rs.Len() != 1 {
					t.Errorf("gang %s spread over racks %v", g, sets.List(rs))
				}
				all = all.Union(rs)
			}
			if all.Len() != tc.wantRacks {
				t.Errorf("gangs in racks %v, want %d racks, one per gang", racks, tc.wantRacks)
			}
			if tc.avoid != "" && all.Has(tc.avoid) {
				t.Errorf("a gang took rack %s, where another workload runs", tc.avoid)
			}
		})
	}
}

// A rack an exclusive gang holds (its members bound there) is closed to other trees: a gang
// with room there goes elsewhere.
func TestHeldRackIsClosedToOthers(t *testing.T) {
	objs, held := jobSetLike(1, 1, "1")
	held[0].Spec.NodeName = "z0-r0-h0"
	gang := lt.Members("ns", "g", 2, lt.CPU("1"))
	objs = append(objs, lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(rackKey)).Obj())
	env := newTestEnv(t, objs, append(held, gang...), labeledNodes("4"))
	for range 3 { // whichever rack is tried first
		res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), gang[0], env.NodeInfos(t))
		if !s.IsSuccess() || res == nil {
			t.Fatalf("PreFilter = %v %v", res, s)
		}
		for n := range res.NodeNames {
			if rackOf(n) == "z0-r0" {
				t.Fatalf("gang planned on %s, in the rack an exclusive gang holds", n)
			}
		}
		env.plans.Drop(podgroup.PodGroupKey("ns", "g"))
	}
}

// A pod no plan places (here in no group) is refused the nodes of a rack an exclusive gang
// holds, by Filter, and may use the others; a member of that gang is not refused.
func TestFilterKeepsOthersOutOfHeldRacks(t *testing.T) {
	objs, held := jobSetLike(1, 2, "1")
	held[0].Spec.NodeName = "z0-r0-h0"
	plain := []*v1.Pod{lt.Member("ns", "", 7).Req(lt.CPU("1")).Obj()}[0]
	env := newTestEnv(t, objs, append(held, plain), labeledNodes("4"))
	nodes := env.NodeInfos(t)
	for _, tc := range []struct {
		pod        *v1.Pod
		wantClosed bool
	}{{plain, true}, {held[1], false}} {
		state := framework.NewCycleState()
		if _, s := env.plugin.PreFilter(env.Ctx, state, tc.pod, nodes); !s.IsSuccess() && !s.IsSkip() {
			t.Fatalf("%s: PreFilter = %v", tc.pod.Name, s)
		}
		for _, ni := range nodes {
			s := env.plugin.Filter(env.Ctx, state, tc.pod, ni)
			closed := !s.IsSuccess()
			want := tc.wantClosed && rackOf(ni.Node().Name) == "z0-r0"
			if closed != want {
				t.Errorf("%s on %s: Filter = %v, want refused %v", tc.pod.Name, ni.Node().Name, s, want)
			}
		}
	}
}
