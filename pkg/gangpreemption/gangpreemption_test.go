package gangpreemption

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

func TestCostOrder(t *testing.T) {
	tests := []struct {
		name         string
		a, b         Cost
		less, sooner bool
	}{
		{name: "budgets first", a: Cost{PDB: 0, Priority: 90, Pods: 9}, b: Cost{PDB: 1, Priority: 1, Pods: 1}, less: true, sooner: false},
		{name: "then the highest victim priority", a: Cost{Priority: 1, Gangs: 3, Pods: 9}, b: Cost{Priority: 2, Pods: 1}, less: true, sooner: false},
		{name: "then gangs broken", a: Cost{Priority: 1, Gangs: 0, Pods: 9}, b: Cost{Priority: 1, Gangs: 1, Pods: 2}, less: true, sooner: false},
		{name: "then pods", a: Cost{Priority: 1, Pods: 2}, b: Cost{Priority: 1, Pods: 3}, less: true, sooner: true},
		{name: "a reservation waits for fewer lasting pods first", a: Cost{Lasting: 0, Pods: 9, Priority: 9}, b: Cost{Lasting: 1, Pods: 1}, less: false, sooner: true},
		{name: "equal costs order neither way", a: Cost{Priority: 1, Pods: 1}, b: Cost{Priority: 1, Pods: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Less(tc.b); got != tc.less {
				t.Errorf("Less = %v, want %v", got, tc.less)
			}
			if got := tc.a.Sooner(tc.b); got != tc.sooner {
				t.Errorf("Sooner = %v, want %v", got, tc.sooner)
			}
		})
	}
}

func TestPriorityTiers(t *testing.T) {
	units := func(prios ...int32) []*Unit {
		var out []*Unit
		for i, p := range prios {
			pod := st.MakePod().Name(fmt.Sprint(i)).UID(fmt.Sprint(i)).Priority(p).Obj()
			pi, _ := framework.NewPodInfo(pod)
			v, err := preemption.NewVictim([]fwk.PodInfo{pi}, p, fwk.PodKeyType)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, &Unit{Victim: v, Key: pod.Name})
		}
		return out
	}
	tests := []struct {
		name  string
		prios []int32
		want  []int32
	}{
		{name: "none: one tier that takes everything", want: []int32{math.MaxInt32}},
		{name: "each distinct priority, lowest first", prios: []int32{5, 1, 5, 3}, want: []int32{1, 3, 5}},
		{name: "at most six, the highest last", prios: []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, want: []int32{2, 4, 6, 8, 10, 12}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := priorityTiers(units(tc.prios...)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("tiers %v, want %v", got, tc.want)
			}
		})
	}
}

func TestModeTakes(t *testing.T) {
	tests := []struct {
		mode      Mode
		prio, of  int32
		wantTaken bool
	}{
		{Preempt, 9, 10, true}, {Preempt, 10, 10, false},
		{Reserve, 10, 10, true}, {Reserve, 11, 10, false},
	}
	for _, tc := range tests {
		if got := tc.mode.takes(tc.prio, tc.of); got != tc.wantTaken {
			t.Errorf("mode %d takes priority %d for %d: %v, want %v", tc.mode, tc.prio, tc.of, got, tc.wantTaken)
		}
	}
}

func TestPodNames(t *testing.T) {
	var pods []*v1.Pod
	for i := range 12 {
		pods = append(pods, st.MakePod().Namespace("ns").Name(fmt.Sprintf("p%d", i)).Obj())
	}
	if got, want := PodNames(pods[:2]), "ns/p0, ns/p1"; got != want {
		t.Errorf("PodNames = %q, want %q", got, want)
	}
	if got, want := PodNames(pods), "ns/p0, ns/p1, ns/p2, ns/p3, ns/p4, ns/p5, ns/p6, ns/p7, ns/p8, ns/p9, and 2 more"; got != want {
		t.Errorf("PodNames = %q, want %q", got, want)
	}
}

// fakeTrees puts pods in gangs by their PodGroup label: a labelled pod is a member of a gang
// of its own root, the group named, and the gang's priority is gangPriority.
type fakeTrees struct {
	pods         []*v1.Pod
	gangPriority map[string]int32
	// bound are the bound pods by root, indexed on first use.
	bound map[podgroup.Key][]*v1.Pod
	// dissolved are groups deleted while their pods run: the pods are in no gang.
	dissolved map[string]bool
	// regroupings are the nodes of each change of what Summary and UnitOf answer (Regrouped).
	regroupings [][]string
	// asked counts the pods Summary was asked of: the pods a decision read.
	asked int
}

func (f *fakeTrees) Summary(pod *v1.Pod) (podgroup.Summary, bool) {
	f.asked++
	return f.summary(pod)
}

func (f *fakeTrees) summary(pod *v1.Pod) (podgroup.Summary, bool) {
	g, ok := pod.Labels[v1alpha1.PodGroupLabel]
	if !ok || f.dissolved[g] {
		return podgroup.Summary{}, false
	}
	k := podgroup.PodGroupKey(pod.Namespace, g)
	return podgroup.Summary{Root: k, Group: k, Gang: true, Unit: k}, true
}

func (f *fakeTrees) UnitOf(pod *v1.Pod) (podgroup.Unit, bool) {
	sum, ok := f.summary(pod)
	if !ok {
		return podgroup.Unit{}, false
	}
	if f.bound == nil {
		f.bound = map[podgroup.Key][]*v1.Pod{}
		for _, p := range f.pods {
			if s, ok := f.summary(p); ok && p.Spec.NodeName != "" {
				f.bound[s.Root] = append(f.bound[s.Root], p)
			}
		}
	}
	return podgroup.Unit{Root: sum.Root, Priority: f.gangPriority[sum.Root.Name], Pods: f.bound[sum.Root]}, true
}

// dissolve deletes group g while its pods run, and logs their nodes as the model does.
func (f *fakeTrees) dissolve(g string) {
	if f.dissolved == nil {
		f.dissolved = map[string]bool{}
	}
	f.dissolved[g] = true
	f.bound = nil
	var nodes []string
	for _, p := range f.pods {
		if p.Labels[v1alpha1.PodGroupLabel] == g && p.Spec.NodeName != "" {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	f.regroupings = append(f.regroupings, nodes)
}

func (f *fakeTrees) Regrouped(since uint64) ([]string, bool, uint64) {
	var nodes []string
	for _, e := range f.regroupings[since:] {
		nodes = append(nodes, e...)
	}
	return nodes, false, uint64(len(f.regroupings))
}

func (f *fakeTrees) MayFree(of int32, orEqual bool) bool {
	for _, p := range f.pods {
		prio := corev1helpers.PodPriority(p)
		if p.Spec.NodeName != "" && (p.DeletionTimestamp != nil || prio < of || (orEqual && prio == of)) {
			return true
		}
	}
	return false
}

// firstFit is a planner that places each pending member, by name, on the first node of the
// domain with room for its requests. It reads the domain's nodes only, as the scheduler's
// planner does for a tree that requires the domain's level.
type firstFit struct {
	tree     *podgroup.GroupView
	domains  []Domain
	evicting Evictions
	// byName indexes the nodes of the infos planned on (the same list at every plan); at the
	// domains' nodes (which no test changes).
	byName map[string]int
	at     map[string]int
}

type placement map[types.UID]string

func (p placement) NodeOf(uid types.UID) (string, bool) { n, ok := p[uid]; return n, ok }

func (f *firstFit) Domains() []Domain { return f.domains }
func (f *firstFit) Exclusive() bool   { return false }

func (f *firstFit) DomainOf(node string) (int, bool) {
	if f.at == nil {
		f.at = map[string]int{}
		for i, d := range f.domains {
			for _, n := range d.Nodes {
				f.at[n] = i
			}
		}
	}
	i, ok := f.at[node]
	return i, ok
}

func (f *firstFit) Evicting() Evictions { return f.evicting }

func (f *firstFit) Plan(_ context.Context, infos []fwk.NodeInfo, d Domain, _ []fwk.PodInfo) (Placement, bool) {
	if len(f.byName) != len(infos) {
		f.byName = indexOf(infos)
	}
	free := map[string]capacity.Resources{}
	for _, n := range d.Nodes {
		free[n] = capacity.FreeOn(infos[f.byName[n]])
	}
	members := append([]*v1.Pod(nil), f.tree.Pending...)
	sort.Slice(members, func(i, j int) bool { return members[i].Name < members[j].Name })
	out := placement{}
	for _, m := range members {
		need := capacity.PodRequests(m)
		placed := false
		for _, n := range d.Nodes {
			if r := free[n]; r.Fits(need) {
				r.Sub(need)
				free[n] = r
				out[m.UID] = n
				placed = true
				break
			}
		}
		if !placed {
			return nil, false
		}
	}
	return out, true
}

// noPlugins runs no plugins: the reprieve checks resources alone.
type noPlugins struct{ fwk.PluginsRunner }

func (noPlugins) RunPreFilterExtensionAddPod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}
func (noPlugins) RunPreFilterExtensionRemovePod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}

// TestCheapestTakesGangsWholeAndGivesBackTheRest: two racks of two 4-cpu nodes; a tree of
// two 2-cpu members of priority 100. Rack a holds a gang of priority 1 (one member per node),
// a 1-cpu pod of priority 1 and a pod of priority 5; rack b holds two pods of priority 10.
// Rack a is cheaper. The plan is made without the lowest tier (the gang and the 1-cpu pod),
// so the pod of priority 5 stays; the gang goes whole, and the 1-cpu pod, which the plan
// does without, is given back.
func TestCheapestTakesGangsWholeAndGivesBackTheRest(t *testing.T) {
	nodes := []*v1.Node{lt.MakeNode("a0", "4").Obj(), lt.MakeNode("a1", "4").Obj(), lt.MakeNode("b0", "4").Obj(), lt.MakeNode("b1", "4").Obj()}
	running := []*v1.Pod{
		lt.Member("ns", "low", 0).Req(lt.CPU("2")).Priority(1).Node("a0").Obj(),
		lt.Member("ns", "low", 1).Req(lt.CPU("2")).Priority(1).Node("a1").Obj(),
		lt.GroupPod("ns", "mid", "").Req(lt.CPU("2")).Priority(5).Node("a0").Obj(),
		lt.GroupPod("ns", "spare", "").Req(lt.CPU("1")).Priority(1).Node("a1").Obj(),
		lt.GroupPod("ns", "b0-pod", "").Req(lt.CPU("4")).Priority(10).Node("b0").Obj(),
		lt.GroupPod("ns", "b1-pod", "").Req(lt.CPU("4")).Priority(10).Node("b1").Obj(),
	}
	infos := nodeInfos(nodes, running)
	trees := &fakeTrees{pods: running, gangPriority: map[string]int32{"low": 1}}
	tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 2, Pending: lt.Members("ns", "hi", 2, lt.CPU("2"))}
	dry := &firstFit{tree: tree, domains: []Domain{{Name: "rack b", Nodes: []string{"b0", "b1"}}, {Name: "rack a", Nodes: []string{"a0", "a1"}}}}
	e := New(noPlugins{}, trees, nil, nil)

	for _, tc := range []struct {
		name        string
		mode        Mode
		priority    int32
		wantDomain  string
		wantVictims string
		wantCost    Cost
	}{
		{name: "preempting", mode: Preempt, priority: 100, wantDomain: "rack a", wantVictims: "[low-0 low-1]", wantCost: Cost{Priority: 1, Gangs: 1, Pods: 2}},
		{name: "reserving behind pods at the tree's priority", mode: Reserve, priority: 1, wantDomain: "rack a", wantVictims: "[low-0 low-1]", wantCost: Cost{Priority: 1, Gangs: 1, Pods: 2}},
		{name: "no victim of the tree's priority when preempting", mode: Preempt, priority: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.Cheapest(context.Background(), dry, tree, podgroup.Preemptor{Root: tree.Key, Priority: tc.priority}, infos, tc.mode)
			if tc.wantDomain == "" {
				if c != nil {
					t.Fatalf("chose %s evicting %s, want nothing", c.Domain.Name, PodNames(c.Pods()))
				}
				return
			}
			if c == nil {
				t.Fatal("no choice")
			}
			names := victimNames(c)
			if c.Domain.Name != tc.wantDomain || fmt.Sprint(names) != tc.wantVictims || c.Cost != tc.wantCost {
				t.Errorf("chose %s evicting %v at %+v, want %s evicting %s at %+v", c.Domain.Name, names, c.Cost, tc.wantDomain, tc.wantVictims, tc.wantCost)
			}
			// The plan fits once the victims are gone: checked from the pods, not the plan's
			// own accounting.
			used := map[string]int64{}
			gone := map[types.UID]bool{}
			for _, p := range c.Pods() {
				gone[p.UID] = true
			}
			for _, p := range running {
				if !gone[p.UID] {
					used[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().Value()
				}
			}
			for _, m := range tree.Pending {
				n, ok := c.Plan.NodeOf(m.UID)
				if !ok {
					t.Fatalf("member %s not planned", m.Name)
				}
				used[n] += 2
				if used[n] > 4 {
					t.Errorf("node %s overcommitted: %d cpu", n, used[n])
				}
			}
		})
	}
}

// TestUnitsLeaveOutTheTreeAndCountLeavingPods: the tree's own bound members are never
// victims; pods being deleted, or being evicted by another tree's preemption, are leaving
// (room at no cost), but not one stuck terminating past its grace period (no victim either);
// pods at or above the tree's priority are not victims. A node lists a
// unit once, with what all its pods there request.
func TestUnitsLeaveOutTheTreeAndCountLeavingPods(t *testing.T) {
	now := metav1.Now()
	nodes := []*v1.Node{lt.MakeNode("n0", "8").Obj(), lt.MakeNode("n1", "8").Obj()}
	own := lt.Member("ns", "hi", 0).Req(lt.CPU("1")).Node("n0").Obj()
	running := []*v1.Pod{
		own,
		lt.GroupPod("ns", "deleting", "").Req(lt.CPU("1")).Priority(1).Node("n0").Obj(),
		lt.GroupPod("ns", "low", "").Req(lt.CPU("1")).Priority(1).Node("n0").Obj(),
		lt.GroupPod("ns", "high", "").Req(lt.CPU("1")).Priority(100).Node("n0").Obj(),
		lt.GroupPod("ns", "evicted", "").Req(lt.CPU("1")).Priority(1).Node("n0").Obj(),
		lt.Member("ns", "train", 0).Req(lt.CPU("2")).Priority(1).Node("n0").Obj(),
		lt.Member("ns", "train", 1).Req(lt.CPU("3")).Priority(1).Node("n0").Obj(),
		lt.Member("ns", "train", 2).Req(lt.CPU("1")).Priority(1).Node("n1").Obj(),
		lt.GroupPod("ns", "stuck", "").Req(lt.CPU("1")).Priority(1).Node("n0").Obj(),
	}
	running[1].DeletionTimestamp = &now
	// Deleted with its grace period past long ago (a finalizer nobody removes, its node
	// gone): it holds its room, it is not leaving, and no eviction frees it.
	stuck := metav1.NewTime(now.Add(-StuckMargin - time.Minute))
	running[len(running)-1].DeletionTimestamp = &stuck
	e := New(noPlugins{}, &fakeTrees{pods: running, gangPriority: map[string]int32{"train": 1}}, nil, nil)
	tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi")}
	dry := &firstFit{tree: tree, evicting: Evictions{Pods: sets.New[types.UID]("evicted"), Nodes: sets.New("n0")}}
	run := e.newDecision(dry, tree, podgroup.Preemptor{Root: tree.Key, Priority: 10}, nodeInfos(nodes, running), Preempt, newScratch(len(nodes)))
	got := map[string]string{}
	for _, node := range []string{"n0", "n1"} {
		var on []string
		for _, u := range run.on(node).units {
			on = append(on, fmt.Sprintf("%s:%dm", u.unit.Key, u.room.MilliCPU))
		}
		got[node] = strings.Join(on, " ")
	}
	low := string(running[2].UID)
	if want := map[string]string{"n0": low + ":1000m PodGroup ns/train:5000m", "n1": "PodGroup ns/train:1000m"}; !reflect.DeepEqual(got, want) {
		t.Errorf("units by node %v, want %v", got, want)
	}
	if n := len(run.on("n1").units[0].unit.Pods()); n != 3 {
		t.Errorf("the gang's unit has %d pods, want its three, wherever they are", n)
	}
	if run.on("n0").units[1].unit != run.on("n1").units[0].unit {
		t.Error("the gang is two units on its two nodes, want one")
	}
	if !run.on("n0").own || run.on("n1").own {
		t.Error("the tree's own member is on n0 only; want n0 alone to hold the tree's own")
	}
	var gone []string
	for _, p := range run.on("n0").leaving {
		gone = append(gone, p.Name)
	}
	if fmt.Sprint(gone) != "[deleting evicted]" {
		t.Errorf("leaving %v, want the pods being deleted and evicted", gone)
	}
}

// victimNames returns the names of the pods c evicts, sorted.
func victimNames(c *Choice) []string {
	var names []string
	for _, p := range c.Pods() {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

func nodeInfos(nodes []*v1.Node, pods []*v1.Pod) []fwk.NodeInfo {
	on := map[string][]*v1.Pod{}
	for _, p := range pods {
		on[p.Spec.NodeName] = append(on[p.Spec.NodeName], p)
	}
	var out []fwk.NodeInfo
	for _, n := range nodes {
		ni := framework.NewNodeInfo(on[n.Name]...)
		ni.SetNode(n)
		out = append(out, ni)
	}
	return out
}

// TestDecisionsLeaveNothingInTheScratch: a decision gives back the evaluator's scratch with
// no node's units and no simulated node in it (nothing of the snapshot kept alive, nothing
// the next decision could read as its own), free for the next one; a decision that finds it
// taken decides with a scratch of its own, as it would have with the shared one.
func TestDecisionsLeaveNothingInTheScratch(t *testing.T) {
	nodes := []*v1.Node{lt.MakeNode("n0", "4").Obj(), lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj()}
	running := []*v1.Pod{
		lt.GroupPod("ns", "low0", "").Req(lt.CPU("3")).Priority(1).Node("n0").Obj(),
		lt.GroupPod("ns", "low1", "").Req(lt.CPU("2")).Priority(1).Node("n1").Obj(),
		lt.GroupPod("ns", "low2", "").Req(lt.CPU("4")).Priority(2).Node("n2").Obj(),
	}
	infos := nodeInfos(nodes, running)
	e := New(noPlugins{}, &fakeTrees{pods: running}, nil, nil)
	tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 2, Pending: lt.Members("ns", "hi", 2, lt.CPU("3"))}
	dry := &firstFit{tree: tree, domains: []Domain{{Name: "rack a", Nodes: []string{"n0", "n1"}}, {Name: "rack b", Nodes: []string{"n2"}}}}
	p := podgroup.Preemptor{Root: tree.Key, Priority: 10}
	decide := func() *Choice {
		c := e.Cheapest(context.Background(), dry, tree, p, infos, Preempt)
		if c == nil {
			t.Fatal("no domain chosen")
		}
		return c
	}
	want := decide()
	for i, nu := range e.scratch.byNode {
		if nu != nil {
			t.Errorf("node %d's units are left in the scratch", i)
		}
	}
	if len(e.scratch.read) != 0 || len(e.scratch.sim) != 0 || slices.ContainsFunc(e.scratch.sim[:cap(e.scratch.sim)], func(ni fwk.NodeInfo) bool { return ni != nil }) {
		t.Errorf("the scratch keeps %d nodes read and %d simulated", len(e.scratch.read), len(e.scratch.sim))
	}
	if got := decide(); got.Domain.Name != want.Domain.Name || got.Cost != want.Cost {
		t.Errorf("the next decision chose %s at %+v, the first %s at %+v", got.Domain.Name, got.Cost, want.Domain.Name, want.Cost)
	}
	e.scratch.mu.Lock() // a decision runs elsewhere
	got := decide()
	e.scratch.mu.Unlock()
	if got.Domain.Name != want.Domain.Name || got.Cost != want.Cost {
		t.Errorf("with the scratch taken, chose %s at %+v, want %s at %+v", got.Domain.Name, got.Cost, want.Domain.Name, want.Cost)
	}
	if !e.scratch.mu.TryLock() {
		t.Error("the scratch is still taken after the decisions")
	}
}
