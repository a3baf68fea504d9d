package explain

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

var now = time.Date(2026, 11, 24, 12, 10, 0, 0, time.UTC)

// cluster is two racks of two 8-cpu nodes, each rack with 6 cpu taken by low-priority pods on
// its first node; the test's groups are added to it.
func cluster() Inputs {
	in := Inputs{Now: now, Inputs: tree.Inputs{Levels: configv1.DefaultTopologyLevels}}
	for _, n := range []*v1.Node{
		lt.InTopology(lt.MakeNode("r0-n0", "8"), "z0", "z0-b0", "z0-b0-r0").Obj(),
		lt.InTopology(lt.MakeNode("r0-n1", "8"), "z0", "z0-b0", "z0-b0-r0").Obj(),
		lt.InTopology(lt.MakeNode("r1-n0", "8"), "z0", "z0-b0", "z0-b0-r1").Obj(),
		lt.InTopology(lt.MakeNode("r1-n1", "8"), "z0", "z0-b0", "z0-b0-r1").Obj(),
	} {
		in.Nodes = append(in.Nodes, *n)
	}
	for _, f := range []*v1.Pod{
		lt.GroupPod("other", "fill-0", "").Req(lt.CPU("6")).Node("r0-n0").Priority(10).Phase(v1.PodRunning).Obj(),
		lt.GroupPod("other", "fill-1", "").Req(lt.CPU("6")).Node("r1-n0").Priority(10).Phase(v1.PodRunning).Obj(),
	} {
		in.Running = append(in.Running, *f)
	}
	return in
}

func addGroup(in *Inputs, pg *v1alpha1.PodGroup, pods ...*v1.Pod) {
	in.PodGroups = append(in.PodGroups, *pg)
	for _, p := range pods {
		in.Pods = append(in.Pods, *p)
		if p.Spec.NodeName != "" {
			in.Running = append(in.Running, *p)
		}
	}
}

func pendingPods(group string, n int, cpu string) []*v1.Pod {
	var out []*v1.Pod
	for i := range n {
		out = append(out, lt.Member("demo", group, i).Req(lt.CPU(cpu)).Priority(1000).Phase(v1.PodPending).
			Condition(v1.PodScheduled, v1.ConditionFalse, v1.PodReasonUnschedulable).Obj())
	}
	return out
}

// gpuPods are n pending members of group, each asking for 1 cpu and gpus nvidia.com/gpu.
func gpuPods(group string, n int, gpus string) []*v1.Pod {
	pods := pendingPods(group, n, "1")
	for _, p := range pods {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse(gpus)
	}
	return pods
}

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now.Add(-3 * time.Minute))}
}

func TestExplain(t *testing.T) {
	unschedulable := cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2")
	tests := []struct {
		name  string
		group *v1alpha1.PodGroup
		pods  []*v1.Pod
		ref   string
		// want: the explanation's room (rack: pods it takes) and what it says to do.
		wantRoom map[string]int
		wantNext []string
	}{
		{
			name:     "a rack-required gang one pod short in every rack",
			group:    lt.MakePodGroup().Namespace("demo").Name("big").Gang(3).Topology(lt.Required(lt.RackKey)).Conditions(unschedulable).Obj(),
			pods:     pendingPods("big", 3, "4"),
			ref:      "pod/big-1",
			wantRoom: map[string]int{"z0-b0-r0": 2, "z0-b0-r1": 2},
			wantNext: []string{
				"Room for 1 pod more, 4 cpu each, in rack z0-b0-r0: end or move pods there (1 pod runs there, 1 of lower priority: a higher priority for the gang lets it preempt them), or add nodes labelled topology.kubernetes.io/rack=z0-b0-r0.",
				"Or a minCount of 2: what the roomiest rack takes.",
				"Or a Preferred (not Required) rack constraint: the cluster as a whole has room for all 3.",
			},
		},
		{
			name:     "a gang no node can take one pod of",
			group:    lt.MakePodGroup().Namespace("demo").Name("huge").Gang(2).Conditions(unschedulable).Obj(),
			pods:     pendingPods("huge", 2, "16"),
			ref:      "huge",
			wantRoom: map[string]int{"cluster": 0},
			wantNext: []string{
				"No node the pods may use can take even one of them with nothing else on it: they ask for 16 cpu (the most a node the pods may use has is 8). Ask for less per pod, or add nodes with more.",
			},
		},
		{
			name:     "a gang the nodes have room for: another filter refuses it",
			group:    lt.MakePodGroup().Namespace("demo").Name("fits").Gang(2).Topology(lt.Required(lt.RackKey)).Conditions(unschedulable).Obj(),
			pods:     pendingPods("fits", 2, "2"),
			ref:      "lspg/fits",
			wantRoom: map[string]int{"z0-b0-r0": 2, "z0-b0-r1": 2},
			wantNext: []string{
				"By requests, taints and node affinity the room is there (rack z0-b0-r0 takes 2 of the 2 that must fit): another filter refuses it (pod affinity, topology spread, volumes, DRA; the pods' events say which), or it was freed since the last attempt and the gang is retried when the cluster changes.",
			},
		},
		{
			name:  "a gang waiting for its pods",
			group: lt.MakePodGroup().Namespace("demo").Name("few").Gang(4).Conditions(cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "waiting for pods: minCount is 4")).Obj(),
			pods:  pendingPods("few", 2, "1"),
			ref:   "few",
			wantNext: []string{
				"It waits for its pods: 2 of minCount 4 exist. Check the controller that creates its pods, or lower minCount.",
			},
		},
		{
			name:     "a preempted gang, its pods recreated",
			group:    lt.MakePodGroup().Namespace("demo").Name("victim").Gang(2).Conditions(cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 pods placed together (minCount 2)"), cond(v1alpha1.DisruptionTarget, metav1.ConditionTrue, v1alpha1.ReasonPreemptionByScheduler, "evicting its 2 running pods: preempted by gang PodGroup demo/urgent (priority 1000), which takes rack z0-b0-r1; now cannot fit: ...")).Obj(),
			pods:     pendingPods("victim", 2, "8"),
			ref:      "victim",
			wantRoom: map[string]int{"cluster": 2},
			wantNext: []string{
				"By requests, taints and node affinity the room is there (the cluster takes 2 of the 2 that must fit): another filter refuses it (pod affinity, topology spread, volumes, DRA; the pods' events say which), or it was freed since the last attempt and the gang is retried when the cluster changes.",
			},
		},
		{
			name: "an invalid group",
			group: lt.MakePodGroup().Namespace("demo").Name("bad").Gang(1).Conditions(cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionFalse, v1alpha1.ReasonInvalid,
				"invalid: unknown topology key example.com/row")).Obj(),
			pods:     pendingPods("bad", 1, "1"),
			ref:      "bad",
			wantNext: []string{"Fix the group as its condition says; it is never tried as written."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := cluster()
			addGroup(&in, tc.group, tc.pods...)
			ref, err := tree.ParseRef(tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			es := Explain(in, []tree.Ref{ref})
			if len(es) != 1 {
				t.Fatalf("%d explanations, want 1: %+v", len(es), es)
			}
			e := es[0]
			if e.Placed {
				t.Errorf("explained as placed")
			}
			var room map[string]int
			if e.Room != nil {
				room = map[string]int{}
				for _, d := range e.Room.Domains {
					room[d.Name] = d.Fits
				}
			}
			if diff := cmp.Diff(tc.wantRoom, room); diff != "" {
				t.Errorf("room (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNext, e.Next); diff != "" {
				t.Errorf("next (-want +got):\n%s", diff)
			}
		})
	}
}

// Racks of the same name in two zones are two racks, as the scheduler counts them, each
// named with its zone; nodes without a block label are still in their zone's racks.
func TestRoomCountsDomainsByPath(t *testing.T) {
	in := Inputs{Now: now, Inputs: tree.Inputs{Levels: configv1.DefaultTopologyLevels}, Running: []v1.Pod{}}
	for _, n := range []*v1.Node{
		lt.InTopology(lt.MakeNode("a-n0", "8"), "za", "", "r0").Obj(),
		lt.InTopology(lt.MakeNode("a-n1", "8"), "za", "", "r0").Obj(),
		lt.InTopology(lt.MakeNode("b-n0", "8"), "zb", "", "r0").Obj(),
		lt.InTopology(lt.MakeNode("c-n0", "8"), "zb", "", "r1").Obj(),
	} {
		in.Nodes = append(in.Nodes, *n)
	}
	addGroup(&in, lt.MakePodGroup().Namespace("demo").Name("g").Gang(3).Topology(lt.Required(lt.RackKey)).Obj(), pendingPods("g", 3, "8")...)
	es := Explain(in, []tree.Ref{{Name: "g"}})
	if len(es) != 1 || es[0].Room == nil {
		t.Fatalf("explanations %+v, want one with room", es)
	}
	var got []string
	for _, d := range es[0].Room.Domains {
		got = append(got, fmt.Sprintf("%s/%s:%d", d.In, d.Name, d.Fits))
	}
	if want := []string{"za/r0:2", "zb/r0:1", "/r1:1"}; !slices.Equal(got, want) {
		t.Errorf("domains %q, want %q", got, want)
	}
	var out strings.Builder
	Render(&out, es, now)
	if !strings.Contains(out.String(), "rack r0 (in za): 2 nodes") {
		t.Errorf("rendered:\n%s\nwant rack r0 (in za) named with its zone", out.String())
	}
}

// Taints, cordons and node selectors leave nodes out of the room; a group with a bound pod
// is counted only in the domain that pod holds.
func TestRoomHonorsNodesAndPinnedDomain(t *testing.T) {
	in := cluster()
	in.Nodes[1].Spec.Unschedulable = true                                                               // r0-n1
	in.Nodes[3].Spec.Taints = []v1.Taint{{Key: "gpu", Value: "true", Effect: v1.TaintEffectNoSchedule}} // r1-n1
	pods := pendingPods("g", 2, "2")
	pods = append(pods, lt.Member("demo", "g", 2).Req(lt.CPU("2")).Node("r1-n0").Phase(v1.PodRunning).Obj())
	addGroup(&in, lt.MakePodGroup().Namespace("demo").Name("g").Gang(3).Topology(lt.Required(lt.RackKey)).Obj(), pods...)
	es := Explain(in, []tree.Ref{{Name: "g"}})
	if len(es) != 1 || es[0].Room == nil {
		t.Fatalf("explanations %+v, want one with room", es)
	}
	r := es[0].Room
	if !r.Pinned || len(r.Domains) != 1 || r.Domains[0].Name != "z0-b0-r1" {
		t.Fatalf("room %+v, want only rack z0-b0-r1, where its bound pod is", r)
	}
	// r1-n0 has 8 - 6 - 2 = 0 cpu left; r1-n1 is tainted.
	if got := r.Domains[0].Fits; got != 0 {
		t.Errorf("rack z0-b0-r1 takes %d, want 0", got)
	}
	if r.Need != 2 {
		t.Errorf("need %d, want 2 (minCount 3 less 1 bound)", r.Need)
	}
	for _, n := range es[0].Next {
		if strings.Contains(n, "Preferred") {
			t.Errorf("suggests %q for a group whose bound pods hold its domain", n)
		}
	}
}

// A tree whose groups are all placed is explained by its root, as placed.
func TestExplainPlaced(t *testing.T) {
	in := cluster()
	addGroup(&in, lt.MakePodGroup().Namespace("demo").Name("done").Gang(1).Conditions(cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "1 pods placed together (minCount 1)")).Obj(),
		lt.Member("demo", "done", 0).Node("r0-n1").Phase(v1.PodRunning).Obj())
	es := Explain(in, []tree.Ref{{Name: "done"}})
	if len(es) != 1 || !es[0].Placed || es[0].Room != nil || len(es[0].Next) != 0 {
		t.Fatalf("explanations %+v, want the group placed, with nothing to do", es)
	}
	var out bytes.Buffer
	Render(&out, es, now)
	if !strings.Contains(out.String(), "Placed: nothing of it is pending.") {
		t.Errorf("rendered %q, want it to say the group is placed", out.String())
	}
}

func TestRender(t *testing.T) {
	in := cluster()
	pods := pendingPods("big", 3, "4")
	pods[0].Status.Conditions[0].Message = "gang big did not fit; the Scheduled condition of PodGroup big says why (retried when the cluster changes)"
	addGroup(&in, lt.MakePodGroup().Namespace("demo").Name("big").Gang(3).Topology(lt.Required(lt.RackKey)).
		Conditions(cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2")).Obj(), pods...)
	in.Events = []eventsv1.Event{
		{Regarding: v1.ObjectReference{Kind: "PodGroup", Namespace: "demo", Name: "big"}, Type: v1.EventTypeWarning, Reason: "Unschedulable",
			Note: "cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2", EventTime: metav1.NewMicroTime(now.Add(-time.Minute)),
			Series: &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(now.Add(-20 * time.Second))}},
		{Regarding: v1.ObjectReference{Kind: "PodGroup", Namespace: "demo", Name: "other"}, Type: v1.EventTypeNormal, Reason: "Scheduled", Note: "not about big"},
	}
	var out bytes.Buffer
	Render(&out, Explain(in, []tree.Ref{{Name: "big"}}), now)
	want := `PodGroup demo/big  gang minCount=3  topology: required rack  pods 0/3 bound  Unschedulable: cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2
  PodGroupInitiallyScheduled False (Unschedulable, since 3m ago): cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2
  Pending pod big-0: gang big did not fit; the Scheduled condition of PodGroup big says why (retried when the cluster changes)
  Events, newest first:
    20s ago  Warning  Unschedulable  PodGroup big: cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2 (×4)
  Room, from nodes' allocatable less their pods' requests on the nodes the pods may use (cordons, taints, node selectors and affinity applied):
    3 pods pending, each asking for 4 cpu; 3 must fit in one rack
    rack z0-b0-r0: 2 nodes, free 10 cpu: takes 2 of 3; 1 pod of lower priority there
    rack z0-b0-r1: 2 nodes, free 10 cpu: takes 2 of 3; 1 pod of lower priority there
  What would make it fit:
    - Room for 1 pod more, 4 cpu each, in rack z0-b0-r0: end or move pods there (1 pod runs there, 1 of lower priority: a higher priority for the gang lets it preempt them), or add nodes labelled topology.kubernetes.io/rack=z0-b0-r0.
    - Or a minCount of 2: what the roomiest rack takes.
    - Or a Preferred (not Required) rack constraint: the cluster as a whole has room for all 3.
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

// Each case is advice explain once gave that would not have helped: the room counts only
// nodes the pods may use, and what it says to do must change the answer.
func TestExplainNeverAdvisesWhatWouldNotHelp(t *testing.T) {
	unschedulable := cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	selected := func(group string, n int, cpu string, selector map[string]string) []*v1.Pod {
		pods := pendingPods(group, n, cpu)
		for _, p := range pods {
			p.Spec.NodeSelector = selector
		}
		return pods
	}
	tests := []struct {
		name string
		// nodes changes the cluster's nodes before the group is added.
		nodes    func(nodes []v1.Node)
		group    *v1alpha1.PodGroup
		pods     []*v1.Pod
		wantRoom map[string]int
		wantNext []string
		// wantRefused: nodes not counted, by why.
		wantRefused []Refusal
		// never are words no advice may contain.
		never []string
		// empty: no pod runs on the cluster's nodes.
		empty bool
	}{
		{
			name:        "a node selector that matches no node: no rack is room, no cpu is blamed, no rack is to grow",
			group:       lt.MakePodGroup().Namespace("demo").Name("ssd").Gang(2).Topology(lt.Required(lt.RackKey)).Conditions(unschedulable).Obj(),
			pods:        selected("ssd", 2, "1", map[string]string{"disktype": "ssd"}),
			wantRoom:    map[string]int{},
			wantRefused: []Refusal{{Why: whyAffinity, Nodes: 4}},
			wantNext:    []string{"4 nodes do not match the pods' node selector disktype=ssd: label the nodes they should run on, or change the pods' selector."},
			never:       []string{"cpu", "add nodes labelled", "Preferred", "minCount"},
		},
		{
			name: "a node selector that matches one full rack: only that rack is counted, and nodes added must match",
			nodes: func(nodes []v1.Node) {
				for _, i := range []int{2, 3} { // rack z0-b0-r1
					nodes[i].Labels["disktype"] = "ssd"
				}
			},
			group:       lt.MakePodGroup().Namespace("demo").Name("ssd").Gang(3).Topology(lt.Required(lt.RackKey)).Conditions(unschedulable).Obj(),
			pods:        selected("ssd", 3, "4", map[string]string{"disktype": "ssd"}),
			wantRoom:    map[string]int{"z0-b0-r1": 2},
			wantRefused: []Refusal{{Why: whyAffinity, Nodes: 2}},
			wantNext: []string{
				"Room for 1 pod more, 4 cpu each, in rack z0-b0-r1: end or move pods there (1 pod runs there, 1 of lower priority: a higher priority for the gang lets it preempt them), or add nodes labelled topology.kubernetes.io/rack=z0-b0-r1 that match the pods' node selector disktype=ssd.",
				"Or a minCount of 2: what the roomiest rack takes.",
			},
			never: []string{"z0-b0-r0", "Preferred"},
		},
		{
			name: "every node tainted: the taint, not the room",
			nodes: func(nodes []v1.Node) {
				for i := range nodes {
					nodes[i].Spec.Taints = []v1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: v1.TaintEffectNoSchedule}}
				}
			},
			group:       lt.MakePodGroup().Namespace("demo").Name("t").Gang(2).Conditions(unschedulable).Obj(),
			pods:        pendingPods("t", 2, "1"),
			wantRoom:    map[string]int{},
			wantRefused: []Refusal{{Why: whyTaint + ": nvidia.com/gpu=present:NoSchedule", Nodes: 4}},
			wantNext:    []string{"4 nodes carry a taint the pods do not tolerate (nvidia.com/gpu=present:NoSchedule): add a toleration for nvidia.com/gpu=present:NoSchedule to the pods or remove the taint."},
			never:       []string{"cpu", "add nodes"},
		},
		{
			name:     "GPUs no node has: the GPUs are named, not the cpu, and ending pods is not advised",
			group:    lt.MakePodGroup().Namespace("demo").Name("gpu").Gang(2).Conditions(unschedulable).Obj(),
			pods:     gpuPods("gpu", 2, "8"),
			wantRoom: map[string]int{"cluster": 0},
			wantNext: []string{"No node of the cluster has any nvidia.com/gpu (none of its 4 nodes lists it in its allocatable): check the resource's name for a typo, and that the device plugin that advertises it runs on the nodes that have the devices."},
			never:    []string{"end or move", "preempt", "minCount", "Ask for less"},
		},
		{
			name: "more GPUs than any node has: ask for less, or nodes with more",
			nodes: func(nodes []v1.Node) {
				nodes[0].Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("4")
			},
			group:    lt.MakePodGroup().Namespace("demo").Name("gpu").Gang(2).Conditions(unschedulable).Obj(),
			pods:     gpuPods("gpu", 2, "8"),
			wantRoom: map[string]int{"cluster": 0},
			wantNext: []string{"No node the pods may use can take even one of them with nothing else on it: they ask for 8 nvidia.com/gpu (the most a node the pods may use has is 4). Ask for less per pod, or add nodes with more."},
			never:    []string{"typo", "end or move"},
		},
		{
			name: "a node selector with cordons and taints: the nodes it selects are advised on first, every change they need named",
			nodes: func(nodes []v1.Node) {
				nodes[0].Spec.Unschedulable = true // r0: not ssd, cordoned
				nodes[1].Spec.Unschedulable = true
				for _, i := range []int{2, 3} { // r1: ssd
					nodes[i].Labels["disktype"] = "ssd"
				}
				nodes[2].Spec.Unschedulable = true
				nodes[3].Spec.Taints = []v1.Taint{{Key: "gpu", Value: "true", Effect: v1.TaintEffectNoSchedule}}
			},
			group:    lt.MakePodGroup().Namespace("demo").Name("ssd").Gang(2).Conditions(unschedulable).Obj(),
			pods:     selected("ssd", 2, "1", map[string]string{"disktype": "ssd"}),
			wantRoom: map[string]int{},
			wantRefused: []Refusal{
				{Why: whyTaint + ": gpu=true:NoSchedule", Nodes: 1},
				{Why: whyCordoned, Nodes: 1},
				{Why: whyAffinity, Also: []string{whyCordoned}, Nodes: 2},
			},
			wantNext: []string{
				"1 node that matches the pods' node selector disktype=ssd carries a taint the pods do not tolerate (gpu=true:NoSchedule): add a toleration for gpu=true:NoSchedule to the pods or remove the taint.",
				"1 node that matches the pods' node selector disktype=ssd is cordoned: uncordon it (kubectl uncordon).",
				"2 nodes do not match the pods' node selector disktype=ssd and are cordoned: for the pods to use them, label them, and uncordon them (kubectl uncordon).",
			},
			never: []string{"4 nodes", "cpu"},
		},
		{
			name:     "a rack where nothing runs: no pods to end there, its nodes are too few",
			empty:    true,
			group:    lt.MakePodGroup().Namespace("demo").Name("wide").Gang(3).Topology(lt.Required(lt.RackKey)).Conditions(unschedulable).Obj(),
			pods:     pendingPods("wide", 3, "8"),
			wantRoom: map[string]int{"z0-b0-r0": 2, "z0-b0-r1": 2},
			wantNext: []string{
				"Room for 1 pod more, 8 cpu each, in rack z0-b0-r0: nothing runs there, so its nodes are too few or too small: add nodes labelled topology.kubernetes.io/rack=z0-b0-r0.",
				"Or a minCount of 2: what the roomiest rack takes.",
				"Or a Preferred (not Required) rack constraint: the cluster as a whole has room for all 3.",
			},
			never: []string{"end or move", "preempt"},
		},
		{
			name:     "preempting the lower-priority pods would not be enough: it is not suggested",
			group:    lt.MakePodGroup().Namespace("demo").Name("wide").Gang(3).Topology(lt.Required(lt.RackKey)).Conditions(unschedulable).Obj(),
			pods:     pendingPods("wide", 3, "8"),
			wantRoom: map[string]int{"z0-b0-r0": 1, "z0-b0-r1": 1},
			wantNext: []string{
				"Room for 2 pods more, 8 cpu each, in rack z0-b0-r0: end or move pods there (1 pod runs there), or add nodes labelled topology.kubernetes.io/rack=z0-b0-r0.",
				"Or a minCount of 1: what the roomiest rack takes.",
			},
			never: []string{"preempt", "Preferred"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := cluster()
			if tc.empty {
				in.Running = []v1.Pod{}
			}
			if tc.nodes != nil {
				tc.nodes(in.Nodes)
			}
			addGroup(&in, tc.group, tc.pods...)
			es := Explain(in, []tree.Ref{{Name: tc.group.Name}})
			if len(es) != 1 || es[0].Room == nil {
				t.Fatalf("explanations %+v, want one with room", es)
			}
			e := es[0]
			room := map[string]int{}
			for _, d := range e.Room.Domains {
				room[d.Name] = d.Fits
			}
			if diff := cmp.Diff(tc.wantRoom, room); diff != "" {
				t.Errorf("room (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRefused, e.Room.Refused); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNext, e.Next); diff != "" {
				t.Errorf("next (-want +got):\n%s", diff)
			}
			for _, n := range e.Next {
				for _, w := range tc.never {
					if strings.Contains(n, w) {
						t.Errorf("advice %q mentions %q", n, w)
					}
				}
			}
			var out strings.Builder
			Render(&out, es, now)
			for _, f := range tc.wantRefused {
				if !strings.Contains(out.String(), "not counted: "+f.Why) {
					t.Errorf("rendered:\n%s\nwant the refused nodes named (%s)", out.String(), f.Why)
				}
			}
		})
	}
}

// The filters explain cannot run are named, and the advice for room that is there names them.
func TestExplainNamesTheFiltersItCannotRun(t *testing.T) {
	in := cluster()
	pods := pendingPods("spread", 2, "1")
	for _, p := range pods {
		p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: lt.HostKey, WhenUnsatisfiable: v1.DoNotSchedule}}
	}
	addGroup(&in, lt.MakePodGroup().Namespace("demo").Name("spread").Gang(2).Conditions(cond(v1alpha1.PodGroupInitiallyScheduled, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")).Obj(), pods...)
	es := Explain(in, []tree.Ref{{Name: "spread"}})
	if len(es) != 1 || es[0].Room == nil {
		t.Fatalf("explanations %+v, want one with room", es)
	}
	if got := es[0].Room.Unchecked; !slices.Equal(got, []string{"topology spread"}) {
		t.Errorf("unchecked %v, want [topology spread]", got)
	}
	want := "By requests, taints and node affinity the room is there (the cluster takes 2 of the 2 that must fit): a filter not run here refuses it (the pods use topology spread; their events say which), or it was freed since the last attempt and the gang is retried when the cluster changes."
	if diff := cmp.Diff([]string{want}, es[0].Next); diff != "" {
		t.Errorf("next (-want +got):\n%s", diff)
	}
}

// A pod that names a PodGroup that does not exist, and a group whose parents form a cycle,
// are explained: what is wrong, and what to do.
func TestExplainWhatTheSchedulerNeverTries(t *testing.T) {
	in := cluster()
	in.Pods = append(in.Pods, *pendingPods("nowhere", 1, "1")[0])
	in.Composites = append(in.Composites,
		*lt.MakeCompositePodGroup().Namespace("demo").Name("a").Gang(1).Parent("b").Obj(),
		*lt.MakeCompositePodGroup().Namespace("demo").Name("b").Gang(1).Parent("a").Obj())
	in.PodGroups = append(in.PodGroups, *lt.MakePodGroup().Namespace("demo").Name("orphan").Gang(1).Parent("gone").Obj())
	for _, tc := range []struct {
		ref  string
		want []string
	}{
		{"pod/nowhere-0", []string{"Create PodGroup nowhere in namespace demo (its pods wait for it and are never scheduled alone), or take the label scheduling.lockstep.dev/pod-group off the pods' template."}},
		{"lscpg/a", []string{
			"Fix the group: its parents form a cycle: a → b → a.",
			"A group's parentCompositePodGroupName cannot be changed: delete one group of the cycle (a, say) and create it again with another parent, or none.",
		}},
		{"lspg/orphan", []string{
			"Fix the group: parent CompositePodGroup gone not found.",
			"Create CompositePodGroup gone in namespace demo; or, as parentCompositePodGroupName cannot be changed, delete PodGroup orphan and create it again with another parent, or none.",
		}},
	} {
		ref, err := tree.ParseRef(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		es := Explain(in, []tree.Ref{ref})
		if len(es) != 1 {
			t.Fatalf("explain %s: %d explanations, want 1: %+v", tc.ref, len(es), es)
		}
		if diff := cmp.Diff(tc.want, es[0].Next); diff != "" {
			t.Errorf("explain %s: next (-want +got):\n%s", tc.ref, diff)
		}
	}
}
