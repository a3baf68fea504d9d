package topology

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

// preemptFor runs LockstepTopology's PostFilter for a pod that fits nowhere (PreFilter of the
// profile run first, as the scheduler does) and returns the pods its preemption deleted,
// waiting for want of them (upstream's executor deletes in the background, one after the
// other), then a moment more for any beyond.
func preemptFor(t *testing.T, env *testEnv, pod *v1.Pod, all []*v1.Pod, want int) (*fwk.PostFilterResult, []string) {
	t.Helper()
	state := framework.NewCycleState()
	pre, s, _ := env.Framework.RunPreFilterPlugins(env.Ctx, state, pod)
	if !s.IsSuccess() {
		t.Fatalf("PreFilter: %v", s)
	}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	if pre != nil && !pre.AllNodes() {
		// As the scheduler does: nodes PreFilter left out cannot be helped by preemption.
		for _, ni := range env.NodeInfos(t) {
			if !pre.NodeNames.Has(ni.Node().Name) {
				statuses.Set(ni.Node().Name, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [LockstepTopology]"))
			}
		}
	}
	res, s := env.plugin.PostFilter(env.Ctx, state, pod, statuses)
	t.Logf("PostFilter: %v %v", res, s)
	var deleted []string
	look := func(ctx context.Context) (bool, error) {
		deleted = deleted[:0]
		for _, p := range all {
			if _, err := env.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				deleted = append(deleted, p.Name)
			}
		}
		return len(deleted) >= max(want, 1), nil
	}
	// The evictions run in the background: gang preemption's, and those of upstream's
	// executor for a pod alone. Once neither runs, what PostFilter decided to evict is gone.
	gangpreemption.WaitEvictions()
	if err := wait.PollUntilContextTimeout(env.Ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return !env.plugin.defaultPreemption.Executor.IsPodRunningPreemption(pod.UID), nil
	}); err != nil {
		t.Fatalf("upstream's executor still preempting for %s", pod.Name)
	}
	gangpreemption.WaitEvictions()
	_, _ = look(env.Ctx)
	sort.Strings(deleted)
	return res, deleted
}

// fullExcept fills every node of labeledNodes("4") with pods of priority 2000 (no preemptor
// of the tests may take them), but for the cores the test places itself.
func fullExcept(used map[string]int) []*v1.Pod {
	var out []*v1.Pod
	for _, n := range labeledNodes("4") {
		for i := used[n.Name]; i < 4; i++ {
			out = append(out, running(fmt.Sprintf("%s-busy%d", n.Name, i), n.Name, "1", 2000, ""))
		}
	}
	return out
}

// started sets when a running pod started, after lt.Epoch.
func started(p *v1.Pod, after time.Duration) *v1.Pod {
	p.Status.StartTime = &metav1.Time{Time: lt.Epoch.Add(after)}
	return p
}

func plainPod(name string, priority int32) *v1.Pod {
	return st.MakePod().Namespace("ns").Name(name).UID(name).Priority(priority).SchedulerName(lt.SchedulerName).
		Container("main").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
}

// A pod in no gang is preempted for by upstream's DefaultPreemption, made to see lockstep's
// gangs: a running gang is one victim, taken whole or not at all, and only when nothing that
// breaks no gang will do.
func TestPodPreemptionTakesRunningGangsWhole(t *testing.T) {
	tests := []struct {
		name    string
		running []*v1.Pod
		groups  []runtime.Object
		objects []runtime.Object
		// native are native groups the model reads.
		native []runtime.Object
		// want are the pods deleted; disrupted, the gang marked disrupted.
		want      []string
		disrupted string
	}{
		{
			// Upstream alone would give back the pod that started first (plain) and evict
			// the gang's member, which started later.
			name: "a plain victim before a gang member of the same priority",
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 2}),
				started(running("g-0", "z0-r0-h0", "2", 10, "g"), time.Hour), started(running("plain", "z0-r0-h0", "2", 10, ""), 0),
				started(running("g-1", "z0-r0-h1", "2", 10, "g"), time.Hour)),
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj()},
			want:   []string{"plain"},
		},
		{
			name: "a gang member only with its whole gang, wherever its members run",
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 2}),
				running("g-0", "z0-r0-h0", "4", 10, "g"), running("g-1", "z0-r0-h1", "2", 10, "g")),
			groups:    []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj()},
			want:      []string{"g-0", "g-1"},
			disrupted: "g",
		},
		{
			name: "a gang that says single gives one member",
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 1}),
				running("g-0", "z0-r0-h0", "4", 10, "g"), running("g-1", "z0-r0-h1", "1", 10, "g")),
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).DisruptedOneByOne().Obj()},
			want:   []string{"g-0"},
		},
		{
			// Issue #55, 2.2: the gang's tree is low (its class), but a member elsewhere runs at
			// a priority above the preemptor's: the gang goes whole or not at all, so not at all.
			name: "a gang with a member whose own priority is not below the preemptor's is no victim",
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 2}),
				running("g-0", "z0-r0-h0", "4", 10, "g"), running("g-1", "z0-r0-h1", "2", 2000, "g")),
			groups:  []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).PriorityClass("low").Obj()},
			objects: []runtime.Object{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10}},
		},
		{
			// Issue #55, 2.1: the node of the gang's member would take victims of a lower
			// priority than the other node's plain pod, but its gang brings along a member that
			// a PodDisruptionBudget protects: counted over every pod evicted, it breaks the budget,
			// and the plain pod, which breaks none, goes.
			name: "budgets count the gang's members on other nodes",
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 2, "z1-r0-h0": 4}),
				running("g-0", "z0-r0-h0", "4", 10, "g"), running("g-1", "z0-r0-h1", "2", 10, "g"),
				running("plain", "z1-r0-h0", "4", 20, "")),
			groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj()},
			objects: []runtime.Object{&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "keep-g-1"},
				Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "g-1"}}},
				Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}},
			want: []string{"plain"},
		},
		{
			// Issue #55, 1.5: a native gang another scheduler placed is one victim too.
			name: "a native gang of another scheduler goes whole",
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 2}),
				foreignMember("fg-0", "z0-r0-h0", "4", "fg"), foreignMember("fg-1", "z0-r0-h1", "2", "fg")),
			native:    []runtime.Object{podgroup.ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("fg").Gang(2).Obj())},
			want:      []string{"fg-0", "fg-1"},
			disrupted: "fg",
		},
		{
			name: "a gang whose tree's priority is not below the preemptor's is no victim",
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 2}),
				running("g-0", "z0-r0-h0", "4", 10, "g"), running("g-1", "z0-r0-h1", "2", 10, "g")),
			groups:  []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).PriorityClass("high").Obj()},
			objects: []runtime.Object{&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 5000}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			preemptor := plainPod("urgent", 1000)
			all := append([]*v1.Pod{preemptor}, tc.running...)
			env := newTestEnvOpts(t, tc.groups, all, labeledNodes("4"), podgrouptest.Options{Filters: true, Objects: tc.objects, Native: tc.native})
			_, deleted := preemptFor(t, env, preemptor, tc.running, len(tc.want))
			if fmt.Sprint(deleted) != fmt.Sprint(tc.want) {
				t.Errorf("deleted %v, want %v", deleted, tc.want)
			}
			if tc.disrupted != "" {
				k := podgroup.PodGroupKey("ns", tc.disrupted)
				if tc.native != nil {
					k.API = podgroup.APINative
				}
				if c, ok := env.Components.Model.Gate().Disruption(k); !ok || c.Status != metav1.ConditionTrue {
					t.Errorf("gang %s not marked disrupted: %+v %v", tc.disrupted, c, ok)
				}
			}
		})
	}
}

// A replacement member of a gang already running preempts for itself, as upstream would for
// the pod alone, inside its gang's domain, and never takes a pod of its own gang.
func TestReplacementPreemptsForItself(t *testing.T) {
	scheduled := lt.MakePodGroup().Namespace("ns").Name("g").Gang(3).Topology(lt.Required(rackKey)).
		Condition(metav1.ConditionTrue, "Scheduled").Obj()
	replacement := func(priority int32) *v1.Pod {
		return st.MakePod().Namespace("ns").Name("g-2").UID("g-2").Priority(priority).SchedulerName(lt.SchedulerName).
			Label("scheduling.lockstep.dev/pod-group", "g").Container("main").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
	}
	tests := []struct {
		name     string
		gangPrio int32
		running  []*v1.Pod
		want     []string
	}{
		{
			name:     "a lower-priority pod in the gang's rack, not one outside it",
			gangPrio: 1000,
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 2, "z1-r0-h0": 2}),
				running("g-0", "z0-r0-h0", "2", 1000, "g"), running("low", "z0-r0-h0", "2", 10, ""),
				running("g-1", "z0-r0-h1", "2", 1000, "g"), running("low-elsewhere", "z1-r0-h0", "2", 1, "")),
			want: []string{"low"},
		},
		{
			name:     "never its own gang",
			gangPrio: 10,
			running: append(fullExcept(map[string]int{"z0-r0-h0": 4, "z0-r0-h1": 4}),
				running("g-0", "z0-r0-h0", "4", 10, "g"), running("g-1", "z0-r0-h1", "4", 10, "g")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := replacement(1000)
			all := append([]*v1.Pod{pod}, tc.running...)
			env := newTestEnvOpts(t, []runtime.Object{scheduled}, all, labeledNodes("4"), podgrouptest.Options{Filters: true})
			if sum, ok := env.Components.Model.Gate().Summary(pod); !ok || !sum.Scheduled {
				t.Fatalf("summary %+v, want a replacement of a scheduled gang", sum)
			}
			_, deleted := preemptFor(t, env, pod, tc.running, len(tc.want))
			if fmt.Sprint(deleted) != fmt.Sprint(tc.want) {
				t.Errorf("deleted %v, want %v", deleted, tc.want)
			}
		})
	}
}

// A preemptor waits for its victims while they leave, however long their graceful
// termination takes, but not for one stuck terminating past its grace period (its node gone,
// a finalizer nobody removes): its tree then plans afresh, and its members are no longer
// refused for it.
func TestVictimsStuckTerminatingAreNotWaitedFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leavingStuck: the victim with a long grace period is stuck too.
		leavingStuck bool
	}{{name: "one victim still leaving"}, {name: "every victim stuck", leavingStuck: true}} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := labeledNodes("4")
			pods := lt.Members("ns", "g", 2, lt.CPU("2"))
			group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(rackKey)).Obj()
			now := time.Now()
			stuckSince := metav1.NewTime(now.Add(-gangpreemption.StuckMargin - time.Minute))
			leaving := lt.GroupPod("ns", "leaving", "").Req(lt.CPU("4")).Priority(1).Node(nodes[0].Name).Obj()
			leaving.DeletionTimestamp = &metav1.Time{Time: now.Add(10 * time.Minute)} // a checkpoint's long grace period
			if tc.leavingStuck {
				leaving.DeletionTimestamp = &stuckSince
			}
			stuck := lt.GroupPod("ns", "stuck", "").Req(lt.CPU("4")).Priority(1).Node(nodes[1].Name).Obj()
			stuck.DeletionTimestamp = &stuckSince
			env := newTestEnv(t, []runtime.Object{group}, append(append([]*v1.Pod{}, pods...), leaving, stuck), nodes)
			root := podgroup.PodGroupKey("ns", "g")
			plan := &Plan{Root: root, Expires: now.Add(time.Hour), Freed: "rack " + rackOf(nodes[0].Name),
				Victims:     map[types.UID]types.NamespacedName{leaving.UID: {Namespace: "ns", Name: "leaving"}, stuck.UID: {Namespace: "ns", Name: "stuck"}},
				VictimNodes: sets.New(nodes[0].Name, nodes[1].Name),
				Pods:        map[types.UID]PlannedPod{pods[0].UID: {Node: nodes[0].Name}, pods[1].UID: {Node: nodes[1].Name}}}
			env.plans.Store(plan)
			wantLeft := 1
			if tc.leavingStuck {
				wantLeft = 0
			}
			if left := env.plugin.victimsLeft(plan); left != wantLeft {
				t.Errorf("victims left %d, want %d: those still leaving, not the stuck ones", left, wantLeft)
			}
			if _, waiting := env.plans.AwaitsVictims(root); waiting != (wantLeft > 0) {
				t.Errorf("the tree waits for its victims: %v, want %v", waiting, wantLeft > 0)
			}
			_, s := env.plugin.PreFilter(env.Ctx, framework.NewCycleState(), pods[0], env.NodeInfos(t))
			if waits := s != nil && strings.Contains(s.Message(), "preempted pods to leave"); waits != (wantLeft > 0) {
				t.Errorf("PreFilter = %v: the member waits for victims: %v, want %v", s, waits, wantLeft > 0)
			}
		})
	}
}

// foreignMember is a running pod of another scheduler in native PodGroup group.
func foreignMember(name, node, cpu, group string) *v1.Pod {
	p := running(name, node, cpu, 10, "")
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}
