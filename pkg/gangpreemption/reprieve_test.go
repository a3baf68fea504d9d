package gangpreemption

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// blockingPlugins stands for a Filter that reaches across nodes, as InterPodAffinity's does:
// its PreFilter state counts the pods labelled blocks=true in the cluster (as the state's
// AddPod and RemovePod extensions keep it), and its Filter refuses every node while one is
// there. It counts the Filter runs.
type blockingPlugins struct {
	fwk.PluginsRunner
	// blockers is how many pods labelled blocks=true the cluster runs.
	blockers int
	filters  int
}

const blockingKey fwk.StateKey = "test/blockers"

type blockerCount struct{ n int }

func (c *blockerCount) Clone() fwk.StateData { return &blockerCount{n: c.n} }

func blocks(p *v1.Pod) bool { return p.Labels["blocks"] == "true" }

func (b *blockingPlugins) count(state fwk.CycleState, pi fwk.PodInfo, by int) {
	if !blocks(pi.GetPod()) {
		return
	}
	if c, err := state.Read(blockingKey); err == nil {
		c.(*blockerCount).n += by
	}
}

func (b *blockingPlugins) RunPreFilterPlugins(_ context.Context, state fwk.CycleState, _ *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	state.Write(blockingKey, &blockerCount{n: b.blockers})
	return nil, nil, nil
}

func (b *blockingPlugins) RunPreFilterExtensionAddPod(_ context.Context, state fwk.CycleState, _ *v1.Pod, pi fwk.PodInfo, _ fwk.NodeInfo) *fwk.Status {
	b.count(state, pi, 1)
	return nil
}

func (b *blockingPlugins) RunPreFilterExtensionRemovePod(_ context.Context, state fwk.CycleState, _ *v1.Pod, pi fwk.PodInfo, _ fwk.NodeInfo) *fwk.Status {
	b.count(state, pi, -1)
	return nil
}

func (b *blockingPlugins) RunFilterPlugins(_ context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	b.filters++
	if c, err := state.Read(blockingKey); err == nil && c.(*blockerCount).n > 0 {
		return fwk.NewStatus(fwk.Unschedulable, "a blocker runs")
	}
	if !capacity.FreeOn(ni).Fits(capacity.PodRequests(pod)) {
		return fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu")
	}
	return nil
}

// The reprieve gives back at once the victims on no node the plan uses, and checks the
// members once for them all, when the members' placement depends on other pods (required
// pod affinity here): one check, not one per victim. Where the plan does not hold with them
// all (a blocker among them, refusing every node as required anti-affinity would), it gives
// each back alone, most important first, and only the blocker stays a victim with those the
// plan's nodes must lose.
func TestReprieveGivesBackTheVictimsApartAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocker bool
		// maxFilters bounds the members' Filter runs the reprieve may make.
		maxFilters  int
		wantVictims []string
	}{{
		name:        "every victim apart from the plan goes back in one check",
		maxFilters:  2,
		wantVictims: []string{"n0-v0", "n0-v1", "n0-v2", "n0-v3", "n1-v0", "n1-v1", "n1-v2", "n1-v3"},
	}, {
		name:    "a blocker among them: each goes back alone, the blocker stays a victim",
		blocker: true,
		// The check of them all, then one per victim apart but the blocker, whose check
		// fails at the first member.
		maxFilters:  2 + 15*2 + 1,
		wantVictims: []string{"n0-v0", "n0-v1", "n0-v2", "n0-v3", "n1-v0", "n1-v1", "n1-v2", "n1-v3", "n5-v3"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*v1.Node
			var running []*v1.Pod
			for n := range 6 {
				name := fmt.Sprintf("n%d", n)
				nodes = append(nodes, lt.MakeNode(name, "4").Obj())
				for v := range 4 {
					w := lt.GroupPod("ns", fmt.Sprintf("%s-v%d", name, v), "").Req(lt.CPU("1")).Priority(1).Node(name)
					if tc.blocker && n == 5 && v == 3 {
						w = w.Label("blocks", "true")
					}
					running = append(running, w.Obj())
				}
			}
			members := lt.Members("ns", "hi", 2, lt.CPU("4"))
			for _, m := range members {
				m.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anchor"}}, TopologyKey: v1.LabelHostname,
				}}}}
			}
			tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 2, Pending: members}
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
			}
			dry := &firstFit{tree: tree, domains: []Domain{{Name: "the cluster", Nodes: names}}}
			plugins := &blockingPlugins{}
			if tc.blocker {
				plugins.blockers = 1
			}
			e := New(plugins, &fakeTrees{pods: running}, nil, nil)
			c := e.Cheapest(context.Background(), dry, tree, podgroup.Preemptor{Root: tree.Key, Priority: 100}, nodeInfos(nodes, running), Preempt)
			if c == nil {
				t.Fatal("no choice")
			}
			got := victimNames(c)
			if fmt.Sprint(got) != fmt.Sprint(tc.wantVictims) {
				t.Errorf("evicting %v, want %v", got, tc.wantVictims)
			}
			if plugins.filters > tc.maxFilters {
				t.Errorf("the reprieve ran %d Filters, want at most %d", plugins.filters, tc.maxFilters)
			}
		})
	}
}
