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
		// want is the set of nodes the pods land on (nil: any), or fail a substring of the
		// explanation.
		want sets.Set[string]
		fail string
		// refused are the groups the plan refuses (a composite is ready without them).
		refused []string
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
			want:    sets.New("z0-b0-r0-h0", "z0-b0-r0-h1"),
			refused: []string{"b"},
		},
		{
			// Room for two of three shards: the third is refused, not left to race its
			// siblings for the room the plan gives them.
			name:  "a composite's child beyond minGroupCount with no room is refused",
			nodes: grid(1, 1, 1, 2, 2),
			tree: func() *podgroup.GroupView {
				return composite("job", 2, []*podgroup.GroupView{gang("s0", 2, 1), gang("s1", 2, 1), gang("s2", 2, 1)})
			},
			want:    sets.New("z0-b0-r0-h0", "z0-b0-r0-h1"),
			refused: []string{"s2"},
		},
		{
			// Placed largest first over the whole tree, two members of a (which needs three)
			// would fill both nodes and leave b no room: a gives its room back instead.
			name:  "a composite's child that cannot be ready gives its room back",
			nodes: grid(1, 1, 1, 2, 2),
			tree: func() *podgroup.GroupView {
				return composite("job", 1, []*podgroup.GroupView{gang("a", 3, 2), gang("b", 2, 1)})
			},
			refused: []string{"a"},
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
			topo := buildTopology(levels, infos, nil)
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
			if tc.want != nil && !got.Equal(tc.want) {
				t.Errorf("pods on %v, want %v", sets.List(got), sets.List(tc.want))
			}
			// Every group is placed whole (its members all planned, or the extras left),
			// or refused with nothing planned.
			refused := sets.New(tc.refused...)
			root.Walk(func(g *podgroup.GroupView) {
				if g.Key.Kind != podgroup.KindPodGroup {
					return
				}
				_, isRefused := plan.Refused[g.Key]
				if isRefused != refused.Has(g.Key.Name) {
					t.Errorf("group %s refused: %v (%q), want %v", g.Key.Name, isRefused, plan.Refused[g.Key], refused.Has(g.Key.Name))
				}
				for _, p := range g.Pending {
					_, planned := plan.Pods[p.UID]
					if isRefused && (planned || plan.Left.Has(p.UID)) {
						t.Errorf("member %s of refused group %s planned %v, left %v", p.Name, g.Key.Name, planned, plan.Left.Has(p.UID))
					}
					if !isRefused && !planned {
						t.Errorf("member %s of group %s not planned", p.Name, g.Key.Name)
					}
				}
			})
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
