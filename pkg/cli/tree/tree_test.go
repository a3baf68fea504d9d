package tree

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/coscheduling"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/leaderworkerset"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/raycluster"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

func inputs() Inputs {
	scheduled := metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", Message: "2 pods placed together (minCount 2)"}
	waiting := metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable", Message: "cannot fit: PodGroup big: no rack has room for 3 pods × 32 cpu; the roomiest rack could take 2"}
	preempting := metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPreempting, Message: "taking rack z0-b0-r1: evicting 8 pods of priority up to 10 (1 gang whole)"}
	reserving := metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonReserving, Message: "rack z0-b0-r0 held since 12:04:05 UTC for 4 pods × 2 cpu: 1 of 4 nodes free; waiting for 3 pods of priority up to 0 to end"}
	short := metav1.Condition{Type: v1alpha1.Short, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonMemberLost, Message: "running short: 1 of 2 pods bound since 2026-12-02T12:00:00Z: a member was lost; its replacement is placed in the gang's domain if it fits there, and the gang is released whole at 2026-12-02T12:05:00Z otherwise"}
	preempted := metav1.Condition{Type: v1alpha1.DisruptionTarget, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonPreemptionByScheduler, Message: "evicting its 2 running pods: preempted by gang PodGroup demo/urgent (priority 1000), which takes rack z0-b0-r1; now waiting for pods: minCount is 2"}
	return Inputs{
		Composites: []v1alpha1.CompositePodGroup{*lt.MakeCompositePodGroup().Namespace("demo").Name("llm").Gang(1).
			Topology(v1alpha1.TopologyConstraint{Key: lt.ZoneKey}, lt.Preferred(lt.RackKey)).Obj()},
		PodGroups: []v1alpha1.PodGroup{
			*lt.MakePodGroup().Namespace("demo").Name("shard-0").Gang(2).Parent("llm").Topology(lt.Required(lt.RackKey)).Conditions(scheduled).Obj(),
			*lt.MakePodGroup().Namespace("demo").Name("big").Gang(3).Conditions(waiting).Obj(),
			*lt.MakePodGroup().Namespace("demo").Name("lost").Gang(1).Parent("gone").Obj(),
			*lt.MakePodGroup().Namespace("demo").Name(filing.JobGroupName("train", "job-uid")).Gang(2).Owner("batch/v1", "Job", "train", "job-uid").Obj(),
			*lt.MakePodGroup().Namespace("demo").Name("urgent").Gang(1).Conditions(preempting).Obj(),
			*lt.MakePodGroup().Namespace("demo").Name("whale").Gang(4).Conditions(reserving).Obj(),
			*lt.MakePodGroup().Namespace("demo").Name("victim").Gang(2).Conditions(scheduled, preempted).Obj(),
			*lt.MakePodGroup().Namespace("demo").Name("worker").Gang(2).Conditions(scheduled, short).Obj(),
		},
		Pods: []v1.Pod{
			*lt.GroupPod("demo", "shard-0-0", "shard-0").Node("n1").Phase(v1.PodRunning).Obj(),
			*lt.GroupPod("demo", "shard-0-1", "shard-0").Node("n2").Phase(v1.PodRunning).Obj(),
			*lt.GroupPod("demo", "big-0", "big").Phase(v1.PodPending).Obj(),
			*lt.ControlledBy(lt.GroupPod("demo", "train-0-x", "").Node("n2").Phase(v1.PodRunning), "batch/v1", "Job", "train", "job-uid").Obj(),
			*lt.GroupPod("demo", "plain", "").Node("n1").Phase(v1.PodRunning).Obj(),
			*lt.GroupPod("demo", "urgent-0", "urgent").Phase(v1.PodPending).Obj(),
		},
		Nodes: []v1.Node{
			*lt.InTopology(lt.MakeNode("n1", "8"), "z0", "z0-b0", "z0-b0-r0").Obj(),
			*lt.InTopology(lt.MakeNode("n2", "8"), "z0", "z0-b0", "z0-b0-r1").Obj(),
		},
		Levels: configv1.DefaultTopologyLevels,
	}
}

func TestRender(t *testing.T) {
	var out bytes.Buffer
	Render(&out, Build(inputs()))
	want := `CompositePodGroup demo/llm  gang minGroupCount=1  topology: required zone, preferred rack  (no condition yet)
└─ PodGroup demo/shard-0  gang minCount=2  topology: required rack  pods 2/2 bound  Scheduled: 2 pods placed together (minCount 2)
   ├─ shard-0-0  z0 / z0-b0 / z0-b0-r0 / n1
   └─ shard-0-1  z0 / z0-b0 / z0-b0-r1 / n2
PodGroup demo/big  gang minCount=3  pods 0/1 bound  Unschedulable: cannot fit: PodGroup big: no rack has room for 3 pods × 32 cpu; the roomiest rack could take 2
└─ big-0  pending
PodGroup demo/lost  gang minCount=1  pods 0/0 bound  Invalid: parent CompositePodGroup gone not found
PodGroup demo/` + filing.JobGroupName("train", "job-uid") + ` (Job train)  gang minCount=2  pods 1/1 bound  (no condition yet)
└─ train-0-x  z0 / z0-b0 / z0-b0-r1 / n2
PodGroup demo/urgent  gang minCount=1  pods 0/1 bound  Preempting: taking rack z0-b0-r1: evicting 8 pods of priority up to 10 (1 gang whole)
└─ urgent-0  pending
PodGroup demo/victim  gang minCount=2  pods 0/0 bound  PreemptionByScheduler: evicting its 2 running pods: preempted by gang PodGroup demo/urgent (priority 1000), which takes rack z0-b0-r1; now waiting for pods: minCount is 2
PodGroup demo/whale  gang minCount=4  pods 0/0 bound  Reserving: rack z0-b0-r0 held since 12:04:05 UTC for 4 pods × 2 cpu: 1 of 4 nodes free; waiting for 3 pods of priority up to 0 to end
PodGroup demo/worker  gang minCount=2  pods 0/0 bound  MemberLost: running short: 1 of 2 pods bound since 2026-12-02T12:00:00Z: a member was lost; its replacement is placed in the gang's domain if it fits there, and the gang is released whole at 2026-12-02T12:05:00Z otherwise
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

func TestJSON(t *testing.T) {
	roots := Build(inputs())
	data, err := json.Marshal(roots)
	if err != nil {
		t.Fatal(err)
	}
	var back []*Group
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	shard := back[0].Children[0]
	if shard.Name != "shard-0" || shard.Pods.Bound != 2 || shard.Members[0].Path[2] != "z0-b0-r0" || shard.Members[0].Via != "label" {
		t.Errorf("shard in JSON: %+v", shard)
	}
	if m := back[3].Members[0]; m.Via != "job" {
		t.Errorf("Job pod joined via %q, want job", m.Via)
	}
}

// A pod of a JobSet's child Job is counted in the PodGroup lockstep's workload controller
// made for that Job, found from the JobSet controller's labels.
func TestJobSetPodsCountInTheirJobsPodGroup(t *testing.T) {
	labels := map[string]string{"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/jobset-uid": "js-uid",
		"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/job-index": "1", "jobset.sigs.k8s.io/restart-attempt": "0"}
	p := lt.GroupPod("demo", "train-workers-1-0", "").Labels(labels).Node("n1").Phase(v1.PodRunning).Obj()
	name, ok := jobset.PodGroupOfPod(p)
	if !ok {
		t.Fatal("no PodGroup for a JobSet pod")
	}
	pg := lt.MakePodGroup().Namespace("demo").Name(name).Gang(1).Owner("jobset.x-k8s.io/v1alpha2", "JobSet", "train", "js-uid").Obj()
	groups := Build(Inputs{PodGroups: []v1alpha1.PodGroup{*pg}, Pods: []v1.Pod{*p},
		Nodes: []v1.Node{*lt.InTopology(lt.MakeNode("n1", "8"), "z0", "z0-b0", "z0-b0-r0").Obj()}, Levels: configv1.DefaultTopologyLevels})
	if len(groups) != 1 || groups[0].Pods == nil || groups[0].Pods.Bound != 1 {
		t.Errorf("tree %+v, want the PodGroup with its 1 pod bound", groups)
	}
}

// TestSchedulerPluginsPodsCountInTheirMirror: a pod labelled for a scheduler-plugins
// PodGroup counts in the lockstep PodGroup that mirrors it (same name, controlled by it),
// and a slice constraint is shown as slices.
func TestSchedulerPluginsPodsCountInTheirMirror(t *testing.T) {
	p := lt.GroupPod("demo", "pi-worker-0", "").Label(coscheduling.Label, "pi").Node("n1").Phase(v1.PodRunning).Obj()
	mirror := lt.MakePodGroup().Namespace("demo").Name("pi").Gang(4).Owner("scheduling.x-k8s.io/v1alpha1", "PodGroup", "pi", "spg-uid").
		Topology(v1alpha1.TopologyConstraint{Key: lt.BlockKey}, v1alpha1.TopologyConstraint{Key: lt.RackKey, SliceSize: ptr.To[int32](2)}).Obj()
	notMirror := lt.MakePodGroup().Namespace("demo").Name("other").Gang(1).Obj()
	q := lt.GroupPod("demo", "other-0", "").Label(coscheduling.Label, "other").Node("n1").Phase(v1.PodRunning).Obj()
	groups := Build(Inputs{PodGroups: []v1alpha1.PodGroup{*mirror, *notMirror}, Pods: []v1.Pod{*p, *q},
		Nodes: []v1.Node{*lt.InTopology(lt.MakeNode("n1", "8"), "z0", "z0-b0", "z0-b0-r0").Obj()}, Levels: configv1.DefaultTopologyLevels})
	counts := map[string]int{}
	for _, g := range groups {
		if g.Pods != nil {
			counts[g.Name] = g.Pods.Bound
		}
	}
	if counts["pi"] != 1 || counts["other"] != 0 {
		t.Errorf("bound pods per group %v, want pi 1 (its mirror) and other 0 (not controlled by a scheduler-plugins PodGroup)", counts)
	}
	var out bytes.Buffer
	Render(&out, groups)
	if !bytes.Contains(out.Bytes(), []byte("topology: required block, slices of 2 per rack")) {
		t.Errorf("rendered:\n%s\nwant the slice constraint shown", out.String())
	}
}

func TestFilter(t *testing.T) {
	job := filing.JobGroupName("train", "job-uid")
	tests := []struct {
		args []string
		want []string // root names
	}{
		{args: nil, want: []string{"llm", "big", "lost", job, "urgent", "victim", "whale", "worker"}},
		{args: []string{"big"}, want: []string{"big"}},
		{args: []string{"train"}, want: []string{job}},
		{args: []string{"job/train"}, want: []string{job}},
		{args: []string{"jobs.batch/train"}, want: []string{job}},
		{args: []string{"jobset/train"}, want: nil},
		{args: []string{"podgroup/shard-0"}, want: []string{"llm"}},
		{args: []string{"lscpg/llm"}, want: []string{"llm"}},
		{args: []string{"compositepodgroup/shard-0"}, want: nil},
		{args: []string{"pod/shard-0-1"}, want: []string{"llm"}},
		{args: []string{"pod/plain"}, want: nil},
		{args: []string{"big", "pod/urgent-0"}, want: []string{"big", "urgent"}},
	}
	for _, tt := range tests {
		var refs []Ref
		for _, a := range tt.args {
			r, err := ParseRef(a)
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			refs = append(refs, r)
		}
		var got []string
		for _, g := range Filter(Build(inputs()), refs) {
			got = append(got, g.Name)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.args, diff)
		}
	}
}

func TestFilterByWorkload(t *testing.T) {
	pg := lt.MakePodGroup().Namespace("demo").Name("w-0").Gang(1).Obj()
	pg.Spec.WorkloadRef = &v1alpha1.WorkloadReference{WorkloadName: "w", TemplateName: "t"}
	roots := Build(Inputs{PodGroups: []v1alpha1.PodGroup{*pg, *lt.MakePodGroup().Namespace("demo").Name("x").Gang(1).Obj()}})
	r, err := ParseRef("lswl/w")
	if err != nil {
		t.Fatal(err)
	}
	if got := Filter(roots, []Ref{r}); len(got) != 1 || got[0].Name != "w-0" {
		t.Errorf("workload/w: %+v", got)
	}
}

func TestRenderWide(t *testing.T) {
	var out bytes.Buffer
	RenderWide(&out, Build(inputs())[:2])
	want := `CompositePodGroup demo/llm  gang minGroupCount=1  topology: required zone, preferred rack  (no condition yet)
└─ PodGroup demo/shard-0  gang minCount=2  topology: required rack  pods 2/2 bound  Scheduled: 2 pods placed together (minCount 2)
   ├─ shard-0-0  z0 / z0-b0 / z0-b0-r0 / n1  Running, via label
   └─ shard-0-1  z0 / z0-b0 / z0-b0-r1 / n2  Running, via label
PodGroup demo/big  gang minCount=3  pods 0/1 bound  Unschedulable: cannot fit: PodGroup big: no rack has room for 3 pods × 32 cpu; the roomiest rack could take 2
└─ big-0  pending  Pending, via label
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

// The pods of a RayCluster count in the PodGroup it controls, and those of a LeaderWorkerSet
// replica in the group named after its leader (a worker found through its leader-name
// annotation, of its revision); a worker of another revision counts nowhere.
func TestRayAndLWSPodsCountInTheirGroups(t *testing.T) {
	ctl := []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: "tune", UID: "rc-uid", Controller: ptr.To(true)}}
	head := lt.GroupPod("demo", "tune-head", "").Label(raycluster.LabelCluster, "tune").Label(raycluster.LabelNodeType, raycluster.NodeTypeHead).
		Node("n1").Phase(v1.PodRunning).Obj()
	head.OwnerReferences = ctl
	rayGroup := lt.MakePodGroup().Namespace("demo").Name(raycluster.HeadGroup(raycluster.GroupName("tune", "rc-uid"))).Gang(1).Owner("ray.io/v1", "RayCluster", "tune", "rc-uid").Obj()

	lwsPod := func(name, worker, rev string) *v1.Pod {
		p := lt.GroupPod("demo", name, "").Labels(map[string]string{leaderworkerset.LabelName: "serve", leaderworkerset.LabelGroupIndex: "0",
			leaderworkerset.LabelWorkerIndex: worker, leaderworkerset.LabelRevision: rev}).Node("n1").Phase(v1.PodRunning).Obj()
		if worker != "0" {
			p.Annotations = map[string]string{leaderworkerset.AnnotationLeaderName: "serve-0"}
		}
		return p
	}
	leader, worker, stale := lwsPod("serve-0", "0", "r2"), lwsPod("serve-0-1", "1", "r2"), lwsPod("serve-0-2", "2", "r1")
	leader.UID = "leader-uid"
	lwsGroup := lt.MakePodGroup().Namespace("demo").Name(leaderworkerset.GroupName("serve", "0", "leader-uid")).Gang(3).
		Owner("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "serve", "lws-uid").Obj()

	groups := Build(Inputs{PodGroups: []v1alpha1.PodGroup{*rayGroup, *lwsGroup}, Pods: []v1.Pod{*head, *leader, *worker, *stale},
		Nodes: []v1.Node{*lt.InTopology(lt.MakeNode("n1", "8"), "z0", "z0-b0", "z0-b0-r0").Obj()}, Levels: configv1.DefaultTopologyLevels})
	counts := map[string]int{}
	for _, g := range groups {
		counts[g.Owner.Kind] = g.Pods.Bound
	}
	if counts["RayCluster"] != 1 || counts["LeaderWorkerSet"] != 2 {
		t.Errorf("bound pods per owner kind %v, want RayCluster 1, LeaderWorkerSet 2 (not the worker of the old revision)", counts)
	}
}

// Groups the scheduler never tries as they stand are shown, as roots, with what is wrong:
// a group that is its own parent, groups whose parents form a cycle (the group below them
// stays under its parent), and a PodGroup that does not exist, with the pods that name it.
func TestBuildShowsWhatTheSchedulerNeverTries(t *testing.T) {
	in := Inputs{
		Composites: []v1alpha1.CompositePodGroup{
			*lt.MakeCompositePodGroup().Namespace("demo").Name("self").Gang(1).Parent("self").Obj(),
			*lt.MakeCompositePodGroup().Namespace("demo").Name("a").Gang(1).Parent("b").Obj(),
			*lt.MakeCompositePodGroup().Namespace("demo").Name("b").Gang(1).Parent("a").Obj(),
		},
		PodGroups: []v1alpha1.PodGroup{*lt.MakePodGroup().Namespace("demo").Name("below").Gang(1).Parent("a").Obj()},
		Pods: []v1.Pod{
			*lt.GroupPod("demo", "orphan-0", "nowhere").Phase(v1.PodPending).Obj(),
			*lt.GroupPod("demo", "orphan-1", "nowhere").Phase(v1.PodPending).Obj(),
		},
	}
	var out bytes.Buffer
	Render(&out, Build(in))
	want := `CompositePodGroup demo/a  gang minGroupCount=1  Invalid: its parents form a cycle: a → b → a
└─ PodGroup demo/below  gang minCount=1  pods 0/0 bound  (no condition yet)
CompositePodGroup demo/b  gang minGroupCount=1  Invalid: its parents form a cycle: b → a → b
CompositePodGroup demo/self  gang minGroupCount=1  Invalid: its parent is itself (parentCompositePodGroupName: self)
PodGroup demo/nowhere  pods 0/2 bound  NotFound: PodGroup nowhere does not exist; 2 pods name it (label scheduling.lockstep.dev/pod-group): orphan-0, orphan-1
├─ orphan-0  pending
└─ orphan-1  pending
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
	for _, ref := range []Ref{{Kind: "Pod", Name: "orphan-1"}, {Name: "a"}, {Kind: "CompositePodGroup", Name: "self"}} {
		if got := Filter(Build(in), []Ref{ref}); len(got) != 1 {
			t.Errorf("Filter(%v) found %d trees, want 1", ref, len(got))
		}
	}
}

// Native groups (as the CLI reads them, podgroup.FromNative) sit next to lockstep's of the same
// name: each gets its own members (the native ones by spec.schedulingGroup) and its kind names
// its API.
func TestNativeGroupsNextToLockstepsOwn(t *testing.T) {
	native, _ := podgroup.FromNative(podgroup.ToNativePodGroup(lt.MakePodGroup().Namespace("demo").Name("train").Gang(2).Obj()))
	missing := lt.GroupPod("demo", "lost-0", "").Obj()
	missing.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("lost")}
	in := Inputs{
		PodGroups: []v1alpha1.PodGroup{*lt.MakePodGroup().Namespace("demo").Name("train").Gang(1).Obj(), *native.(*v1alpha1.PodGroup)},
		Pods:      []v1.Pod{*lt.GroupPod("demo", "mine-0", "train").Obj(), *missing},
	}
	for _, i := range []int{0, 1} {
		p := lt.GroupPod("demo", fmt.Sprintf("train-%d", i), "").Node("n1").Obj()
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
		in.Pods = append(in.Pods, *p)
	}
	var out bytes.Buffer
	Render(&out, Build(in))
	for _, want := range []string{
		"PodGroup demo/train  gang minCount=1  pods 0/1 bound",
		"PodGroup.scheduling.k8s.io demo/train  gang minCount=2  pods 2/2 bound",
		"PodGroup lost (scheduling.k8s.io) does not exist; 1 pod names it (spec.schedulingGroup): lost-0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("view lacks %q:\n%s", want, out.String())
		}
	}
}
