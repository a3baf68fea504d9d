package topology

import (
	"strings"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

func TestAnywhere(t *testing.T) {
	tests := []struct {
		name  string
		nodes []testNode
		tree  func() *podgroup.GroupView
		// want is the set of nodes the pods land on, or fail a substring of the explanation.
		want sets.Set[string]
		fail string
	}{
		{
			name:  "packs the gang onto the fullest node with room",
			nodes: withUsed(grid(1, 1, 1, 4, 4), map[string]int64{"z0-b0-r0-h2": 1}),
			tree:  func() *podgroup.GroupView { return gang("g", 3, 1) },
			want:  sets.New("z0-b0-r0-h2"),
		},
		{
			name:  "spills over when one node is not enough",
			nodes: withUsed(grid(1, 1, 1, 3, 4), map[string]int64{"z0-b0-r0-h1": 2, "z0-b0-r0-h2": 1}),
			tree:  func() *podgroup.GroupView { return gang("g", 4, 1) },
			want:  sets.New("z0-b0-r0-h1", "z0-b0-r0-h2"),
		},
		{
			name:  "a composite is ready with minGroupCount children",
			nodes: grid(1, 1, 1, 2, 4),
			tree: func() *podgroup.GroupView {
				return composite("job", 1, []*podgroup.GroupView{gang("a", 2, 4), gang("b", 2, 2)})
			},
			want: sets.New("z0-b0-r0-h0", "z0-b0-r0-h1"),
		},
		{
			name:  "explains a gang that does not fit",
			nodes: grid(1, 1, 1, 2, 4),
			tree:  func() *podgroup.GroupView { return gang("big", 3, 4) },
			fail:  "PodGroup big: not enough free capacity for 3 pods × 4 cpu on the nodes the pods may use; they could take 2",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.tree()
			var a anywhere
			infos := nodeInfos(tc.nodes)
			topo := buildTopology(levels, infos)
			plan, why := a.plan(root, topo, infos, nil, newSpecFitter(newEligibility(topo.nodes)))
			if tc.fail != "" {
				if plan != nil || !strings.Contains(why, tc.fail) {
					t.Fatalf("plan %v, explanation %q; want failure %q", plan, why, tc.fail)
				}
				return
			}
			if plan == nil {
				t.Fatalf("not placed: %s", why)
			}
			got := sets.New[string]()
			for _, pp := range plan.Pods {
				got.Insert(pp.Node)
			}
			if !got.Equal(tc.want) {
				t.Errorf("pods on %v, want %v", sets.List(got), sets.List(tc.want))
			}
		})
	}
}

func TestPlannable(t *testing.T) {
	tests := []struct {
		name     string
		affinity *v1.Affinity
		spread   bool
		want     bool
	}{
		{name: "no preferences", want: true},
		{name: "required node affinity is honored by the plan", affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}}}, want: true},
		{name: "preferred node affinity", affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 1}}}}},
		{name: "pod anti-affinity", affinity: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}}},
		{name: "pod affinity", affinity: &v1.Affinity{PodAffinity: &v1.PodAffinity{}}},
		{name: "topology spread", spread: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gang("g", 2, 1)
			g.Pending[1].Spec.Affinity = tc.affinity
			if tc.spread {
				g.Pending[1].Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1}}
			}
			if got := plannable(g); got != tc.want {
				t.Errorf("plannable = %v, want %v", got, tc.want)
			}
		})
	}
}

// A gang without topology constraints is planned and each member narrowed to one node; one
// whose pods carry preferences is left to the scheduler's scoring.
func TestPreFilterPlansUnconstrainedGangs(t *testing.T) {
	pods := lt.Members("ns", "g", 2, lt.CPU("1"))
	scored := lt.Members("ns", "s", 2, lt.CPU("1"))
	for _, p := range scored {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}}
	}
	env := newTestEnv(t, []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj(), lt.MakePodGroup().Namespace("ns").Name("s").Gang(2).Obj()},
		append(pods, scored...), labeledNodes("4"))
	nodes := env.NodeInfos(t)
	res, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], nodes)
	if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 {
		t.Errorf("PreFilter = %v, %v; want one planned node", res, s)
	}
	if _, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), scored[0], nodes); !s.IsSkip() {
		t.Errorf("PreFilter of a gang with anti-affinity = %v, want Skip", s)
	}
	if plan := env.plans.Get(podgroup.PodGroupKey("ns", "s")); plan == nil || !plan.Unplanned {
		t.Errorf("plan %+v, want the tree remembered as unplanned", plan)
	}
}
