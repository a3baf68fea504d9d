package gang

import (
	"strings"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

const gpu v1.ResourceName = "nvidia.com/gpu"

// resources parses name=quantity pairs.
func resources(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// gpuNode returns lt.MakeNode(name, cpu).Obj() with gpus nvidia.com/gpu and the given pod slots ("" for
// the default 110).
func gpuNode(name, cpu, gpus, podSlots string) *v1.Node {
	n := lt.MakeNode(name, cpu).Obj()
	alloc := n.Status.Allocatable.DeepCopy()
	if gpus != "" {
		alloc[gpu] = resource.MustParse(gpus)
	}
	if podSlots != "" {
		alloc[v1.ResourcePods] = resource.MustParse(podSlots)
	}
	n.Status.Allocatable, n.Status.Capacity = alloc, alloc.DeepCopy()
	return n
}

// requesting sets a pod's requests (one container) and returns it.
func requesting(p *v1.Pod, reqs v1.ResourceList) *v1.Pod {
	p.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: reqs}}}
	return p
}

// on binds a pod to a node.
func on(p *v1.Pod, node string) *v1.Pod {
	p.Spec.NodeName = node
	return p
}

// withMinResources sets a PodGroup's minResources.
func withMinResources(pg *v1alpha1.PodGroup, min v1.ResourceList) *v1alpha1.PodGroup {
	pg.Spec.MinResources = min
	return pg
}

// TestPreFilterMinResources proves the gang's early whole-cluster check: a member of a
// PodGroup with minResources is refused UnschedulableAndUnresolvable, naming what is short,
// when the nodes' free allocatable (allocatable less what their pods request), plus what
// the gang's own placed members hold, does not cover minResources; and allowed otherwise,
// for cpu (in millicores), memory, extended resources and pods.
func TestPreFilterMinResources(t *testing.T) {
	// busy is a pod of no gang, bound to a node, requesting reqs.
	busy := func(name, node string, reqs v1.ResourceList) *v1.Pod {
		p := requesting(lt.Member("ns", "", 0).Obj(), reqs)
		p.Name, p.UID = name, types.UID("uid-"+name)
		return on(p, node)
	}
	tests := []struct {
		name string
		// min is the PodGroup "a"'s minResources; the gang has minCount 2 and members a-0
		// (the pod checked) and a-1, pending unless pods says otherwise.
		min   v1.ResourceList
		nodes []*v1.Node
		// pods are more pods: bound pods of no gang, other gangs' or gang a's own.
		pods []*v1.Pod
		// ownBound binds a-1 to n1 with these requests.
		ownBound v1.ResourceList
		// refused: want UnschedulableAndUnresolvable with every substring of contains and
		// none of absent in the message.
		refused  bool
		contains []string
		absent   []string
	}{
		{name: "no minResources: no check, however full the cluster",
			nodes: []*v1.Node{lt.MakeNode("n1", "1").Obj()}, pods: []*v1.Pod{busy("x", "n1", resources("cpu", "1"))}},
		{name: "empty minResources: no check",
			min: v1.ResourceList{}, nodes: []*v1.Node{lt.MakeNode("n1", "1").Obj()}, pods: []*v1.Pod{busy("x", "n1", resources("cpu", "1"))}},

		// cpu, compared in millicores: 2 nodes of 4 cpu, 2500m and 4000m requested: 1500m free.
		{name: "cpu: exactly what is free", min: resources("cpu", "1500m"),
			nodes: []*v1.Node{lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj()},
			pods:  []*v1.Pod{busy("x", "n1", resources("cpu", "2500m")), busy("y", "n2", resources("cpu", "4"))}},
		{name: "cpu: 100m more than is free", min: resources("cpu", "1600m"),
			nodes:   []*v1.Node{lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj()},
			pods:    []*v1.Pod{busy("x", "n1", resources("cpu", "2500m")), busy("y", "n2", resources("cpu", "4"))},
			refused: true, contains: []string{"PodGroup a needs minResources cpu=1600m", "cpu 1500m"}},
		{name: "cpu: free allocatable summed over nodes", min: resources("cpu", "6"),
			nodes: []*v1.Node{lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj(), lt.MakeNode("n3", "4").Obj()},
			pods:  []*v1.Pod{busy("x", "n1", resources("cpu", "2")), busy("y", "n2", resources("cpu", "2")), busy("z", "n3", resources("cpu", "2"))}},
		{name: "cpu: an empty cluster too small", min: resources("cpu", "9"),
			nodes:   []*v1.Node{lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj()},
			refused: true, contains: []string{"cpu=9", "cpu 8000m"}},

		// memory: a node of 64Gi, 60Gi requested: 4Gi free.
		{name: "memory: enough", min: resources("memory", "4Gi"),
			nodes: []*v1.Node{lt.MakeNode("n1", "4").Obj()}, pods: []*v1.Pod{busy("x", "n1", resources("memory", "60Gi"))}},
		{name: "memory: short", min: resources("memory", "5Gi", "cpu", "1"),
			nodes: []*v1.Node{lt.MakeNode("n1", "4").Obj()}, pods: []*v1.Pod{busy("x", "n1", resources("memory", "60Gi"))},
			refused: true, contains: []string{"memory=5Gi", "memory 4294967296"}, absent: []string{"cpu="}},

		// extended resources: 2 nodes of 8 GPUs, 8 and 4 requested: 4 free.
		{name: "nvidia.com/gpu: enough", min: resources("nvidia.com/gpu", "4"),
			nodes: []*v1.Node{gpuNode("n1", "32", "8", ""), gpuNode("n2", "32", "8", "")},
			pods:  []*v1.Pod{busy("x", "n1", resources("nvidia.com/gpu", "8")), busy("y", "n2", resources("nvidia.com/gpu", "4"))}},
		{name: "nvidia.com/gpu: short", min: resources("nvidia.com/gpu", "5", "cpu", "1"),
			nodes:   []*v1.Node{gpuNode("n1", "32", "8", ""), gpuNode("n2", "32", "8", "")},
			pods:    []*v1.Pod{busy("x", "n1", resources("nvidia.com/gpu", "8")), busy("y", "n2", resources("nvidia.com/gpu", "4"))},
			refused: true, contains: []string{"nvidia.com/gpu=5", "nvidia.com/gpu 4"}, absent: []string{"cpu"}},
		{name: "nvidia.com/gpu: no node has any", min: resources("nvidia.com/gpu", "1"),
			nodes:   []*v1.Node{lt.MakeNode("n1", "32").Obj()},
			refused: true, contains: []string{"nvidia.com/gpu=1", "nvidia.com/gpu 0"}},

		// pods: a node of 3 slots, 1 taken by another pod: 2 free.
		{name: "pods: enough slots", min: resources("pods", "2"),
			nodes: []*v1.Node{gpuNode("n1", "4", "", "3")}, pods: []*v1.Pod{busy("x", "n1", nil)}},
		{name: "pods: too few slots", min: resources("pods", "3"),
			nodes: []*v1.Node{gpuNode("n1", "4", "", "3")}, pods: []*v1.Pod{busy("x", "n1", nil)},
			refused: true, contains: []string{"pods=3", "pods 2"}},

		{name: "several short: each named, sorted; the one that fits is not", min: resources("cpu", "2", "memory", "1Gi", "nvidia.com/gpu", "1"),
			nodes: []*v1.Node{lt.MakeNode("n1", "1").Obj()}, refused: true,
			contains: []string{"needs minResources cpu=2, nvidia.com/gpu=1, more than the cluster has free (cpu 1000m, nvidia.com/gpu 0)"},
			absent:   []string{"memory"}},

		// The gang's own placed members hold part of what it needs: 1 node of 4 cpu and 110
		// pod slots, 2 cpu taken by another pod, 1 by a-1.
		{name: "the gang's own bound member counts as available", min: resources("cpu", "2", "pods", "109"),
			nodes: []*v1.Node{lt.MakeNode("n1", "4").Obj()}, pods: []*v1.Pod{busy("x", "n1", resources("cpu", "2"))},
			ownBound: resources("cpu", "1")},
		{name: "what the gang's own members hold is not more than they request", min: resources("cpu", "2500m"),
			nodes: []*v1.Node{lt.MakeNode("n1", "4").Obj()}, pods: []*v1.Pod{busy("x", "n1", resources("cpu", "2"))},
			ownBound: resources("cpu", "1"), refused: true, contains: []string{"cpu=2500m", "cpu 2000m"}},
		{name: "the gang's own member's memory and GPUs count too", min: resources("memory", "8Gi", "nvidia.com/gpu", "8"),
			nodes:    []*v1.Node{gpuNode("n1", "32", "8", "")},
			pods:     []*v1.Pod{busy("x", "n1", resources("memory", "56Gi"))},
			ownBound: resources("memory", "4Gi", "nvidia.com/gpu", "8")},
		{name: "another gang's bound member does not count", min: resources("cpu", "2"),
			nodes: []*v1.Node{lt.MakeNode("n1", "4").Obj()},
			pods: []*v1.Pod{busy("x", "n1", resources("cpu", "2")),
				on(requesting(lt.Member("ns", "b", 0).Obj(), resources("cpu", "1")), "n1")},
			refused: true, contains: []string{"cpu=2", "cpu 1000m"}},
		{name: "a pod of no gang does not count, whatever its name", min: resources("cpu", "2"),
			nodes:   []*v1.Node{lt.MakeNode("n1", "4").Obj()},
			pods:    []*v1.Pod{busy("a-9", "n1", resources("cpu", "3"))},
			refused: true, contains: []string{"cpu 1000m"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := lt.Members("ns", "a", 2, nil)
			if tc.ownBound != nil {
				on(requesting(pods[1], tc.ownBound), "n1")
			}
			pods = append(pods, tc.pods...)
			env := newTestEnv(t, []runtime.Object{withMinResources(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), tc.min), lt.MakePodGroup().Namespace("ns").Name("b").Gang(5).Obj()}, pods, tc.nodes)
			_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], nil)
			if !tc.refused {
				if !s.IsSuccess() {
					t.Fatalf("PreFilter = %v %q, want success", s.Code(), s.Message())
				}
				return
			}
			if s.Code() != fwk.UnschedulableAndUnresolvable {
				t.Fatalf("PreFilter = %v %q, want UnschedulableAndUnresolvable", s.Code(), s.Message())
			}
			for _, want := range tc.contains {
				if !strings.Contains(s.Message(), want) {
					t.Errorf("message %q, want it to contain %q", s.Message(), want)
				}
			}
			for _, not := range tc.absent {
				if strings.Contains(s.Message(), not) {
					t.Errorf("message %q names %q, which is not short", s.Message(), not)
				}
			}
		})
	}
}

// TestPreFilterMinResourcesAssumedMember proves that a member the scheduler assumed on a
// node (in the snapshot, not yet bound: the model still sees it pending) counts as the
// gang's own too.
func TestPreFilterMinResourcesAssumedMember(t *testing.T) {
	pods := lt.Members("ns", "a", 2, nil)
	requesting(pods[1], resources("cpu", "2"))
	other := on(requesting(lt.Member("ns", "", 7).Obj(), resources("cpu", "1")), "n1")
	env := newTestEnv(t, []runtime.Object{withMinResources(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), resources("cpu", "3"))},
		append(pods, other), []*v1.Node{lt.MakeNode("n1", "4").Obj()})
	state := framework.NewCycleState()
	if _, s := env.plugin.PreFilter(env.Ctx, state, pods[0], nil); !s.IsSuccess() {
		t.Fatalf("before a-1 is assumed: %v %q, want success (3 cpu free)", s.Code(), s.Message())
	}
	// The scheduler assumes a-1 on n1: its 2 cpu leave 1 free, but they are the gang's.
	assumed := on(pods[1].DeepCopy(), "n1")
	pi, err := framework.NewPodInfo(assumed)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range env.NodeInfos(t) {
		if n.Node().Name == "n1" {
			n.AddPodInfo(pi)
		}
	}
	if _, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], nil); !s.IsSuccess() {
		t.Errorf("with a-1 assumed: %v %q, want success (its 2 cpu are the gang's)", s.Code(), s.Message())
	}
}

// TestPreFilterMinResourcesOnceScheduled proves that a PodGroup that was scheduled (a member
// replaced later) is not checked again: Model.MinResources is nil for it.
func TestPreFilterMinResourcesOnceScheduled(t *testing.T) {
	scheduled := func(pg *v1alpha1.PodGroup) *v1alpha1.PodGroup {
		pg.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			ObservedGeneration: pg.Generation, Reason: "Scheduled", LastTransitionTime: metav1.NewTime(epoch)}}
		return pg
	}
	min := resources("cpu", "8")
	tests := []struct {
		name    string
		pg      *v1alpha1.PodGroup
		wantMin v1.ResourceList
		refused bool
	}{
		{name: "waiting for its first scheduling: checked", pg: withMinResources(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), min), wantMin: min, refused: true},
		{name: "scheduled: not checked", pg: scheduled(withMinResources(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), min))},
		{name: "scheduled for an older generation: checked", pg: func() *v1alpha1.PodGroup {
			pg := scheduled(withMinResources(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), min))
			pg.Generation = 2
			return pg
		}(), wantMin: min, refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := lt.Members("ns", "a", 2, nil)
			env := newTestEnv(t, []runtime.Object{tc.pg}, pods, []*v1.Node{lt.MakeNode("n1", "1").Obj()})
			got := env.Components.Model.Gate().MinResources(podgroup.PodGroupKey("ns", "a"))
			if len(got) != len(tc.wantMin) || !got.Cpu().Equal(*tc.wantMin.Cpu()) {
				t.Errorf("Model.MinResources = %v, want %v", got, tc.wantMin)
			}
			_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], nil)
			if tc.refused != (s.Code() == fwk.UnschedulableAndUnresolvable) || (!tc.refused && !s.IsSuccess()) {
				t.Errorf("PreFilter = %v %q, refused want %v", s.Code(), s.Message(), tc.refused)
			}
		})
	}
}

// TestPostFilterAfterMinResourcesRefusal proves that the refusal is not a hold: PostFilter,
// given the PreFilter status for every node as the scheduler gives it, fails the gang with
// the minResources message.
func TestPostFilterAfterMinResourcesRefusal(t *testing.T) {
	pods := lt.Members("ns", "a", 2, nil)
	env := newTestEnv(t, []runtime.Object{withMinResources(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), resources("cpu", "4"))}, pods,
		[]*v1.Node{lt.MakeNode("n1", "1").Obj(), lt.MakeNode("n2", "1").Obj()})
	state := framework.NewCycleState()
	_, s := env.plugin.PreFilter(env.Ctx, state, pods[0], nil)
	if s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Fatalf("PreFilter = %v %q, want UnschedulableAndUnresolvable", s.Code(), s.Message())
	}
	if podgroup.Refused(state) {
		t.Errorf("the minResources refusal held the pod; want PostFilter to fail the gang")
	}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.SetAbsentNodesStatus(s)
	_, ps := env.plugin.PostFilter(env.Ctx, state, pods[0], statuses)
	if ps.Code() != fwk.Unschedulable || !strings.Contains(ps.Message(), "gang a did not fit") {
		t.Errorf("PostFilter = %v %q, want Unschedulable", ps.Code(), ps.Message())
	}
	if c, _ := env.Components.Model.Gate().Condition(podgroup.PodGroupKey("ns", "a")); !strings.Contains(c.Message, "needs minResources cpu=4") {
		t.Errorf("condition %q, want it naming minResources", c.Message)
	}
	// The gang backs off: the next attempt is turned away without a new check.
	_, s = env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[1], nil)
	if s.Code() != fwk.Unschedulable || !strings.Contains(s.Message(), "backs off") {
		t.Errorf("PreFilter after the failure = %v %q, want Unschedulable backing off", s.Code(), s.Message())
	}
}

// TestModelMinResourcesOfAnUnknownGroup proves that asking for the minResources of a group
// the model does not know (deleted between PreFilter's Check and its minResources lookup)
// answers nil rather than panicking.
func TestModelMinResourcesOfAnUnknownGroup(t *testing.T) {
	env := newTestEnv(t, []runtime.Object{withMinResources(lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Obj(), resources("cpu", "1"))}, lt.Members("ns", "a", 1, nil), nil)
	for _, k := range []podgroup.Key{podgroup.PodGroupKey("ns", "gone"), podgroup.PodGroupKey("other", "a"), podgroup.CompositePodGroupKey("ns", "a")} {
		if got := env.Components.Model.Gate().MinResources(k); got != nil {
			t.Errorf("MinResources(%v) = %v, want nil", k, got)
		}
	}
}
