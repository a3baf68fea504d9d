package tree

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/coscheduling"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

func gangPG(name string, min int32, parent string, cond *metav1.Condition) v1alpha1.PodGroup {
	pg := v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, UID: types.UID(name)},
		Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: min}}}}
	if parent != "" {
		pg.Spec.ParentCompositePodGroupName = ptr.To(parent)
	}
	if cond != nil {
		pg.Status.Conditions = []metav1.Condition{*cond}
	}
	return pg
}

func pod(name, group, node string) v1.Pod {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}, Spec: v1.PodSpec{NodeName: node},
		Status: v1.PodStatus{Phase: v1.PodPending}}
	if group != "" {
		p.Labels = map[string]string{v1alpha1.PodGroupLabel: group}
	}
	if node != "" {
		p.Status.Phase = v1.PodRunning
	}
	return p
}

func node(name, zone, block, rack string) v1.Node {
	return v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		configv1.DefaultTopologyLevels[0]: zone, configv1.DefaultTopologyLevels[1]: block,
		configv1.DefaultTopologyLevels[2]: rack, configv1.DefaultTopologyLevels[3]: name}}}
}

func inputs() Inputs {
	scheduled := &metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled", Message: "2 pods placed together (minCount 2)"}
	waiting := &metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable", Message: "cannot fit: PodGroup big: no rack has room for 3 pods × 32 cpu; the roomiest rack could take 2"}
	preempting := &metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPreempting, Message: "taking rack z0-b0-r1: evicting 8 pods of priority up to 10 (1 gang whole)"}
	job := gangPG("train-1a2b3c4d", 2, "", nil)
	job.Name = podgroup.JobGroupName("train", "job-uid")
	job.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job-uid", Controller: ptr.To(true)}}
	jobPod := pod("train-0-x", "", "n2")
	jobPod.OwnerReferences = job.OwnerReferences
	rack := gangPG("shard-0", 2, "llm", scheduled)
	rack.Spec.SchedulingConstraints = &v1alpha1.SchedulingConstraints{Topology: []v1alpha1.TopologyConstraint{{Key: "topology.kubernetes.io/rack", Mode: v1alpha1.TopologyRequired}}}
	return Inputs{
		Composites: []v1alpha1.CompositePodGroup{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "llm"},
			Spec: v1alpha1.CompositePodGroupSpec{
				SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: 1}},
				SchedulingConstraints: &v1alpha1.SchedulingConstraints{Topology: []v1alpha1.TopologyConstraint{{Key: "topology.kubernetes.io/zone"}, {Key: "topology.kubernetes.io/rack", Mode: v1alpha1.TopologyPreferred}}},
			},
		}},
		PodGroups: []v1alpha1.PodGroup{rack, gangPG("big", 3, "", waiting), gangPG("lost", 1, "gone", nil), job, gangPG("urgent", 1, "", preempting)},
		Pods:      []v1.Pod{pod("shard-0-0", "shard-0", "n1"), pod("shard-0-1", "shard-0", "n2"), pod("big-0", "big", ""), jobPod, pod("plain", "", "n1"), pod("urgent-0", "urgent", "")},
		Nodes:     []v1.Node{node("n1", "z0", "z0-b0", "z0-b0-r0"), node("n2", "z0", "z0-b0", "z0-b0-r1")},
		Levels:    configv1.DefaultTopologyLevels,
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
PodGroup demo/` + podgroup.JobGroupName("train", "job-uid") + `  gang minCount=2  pods 1/1 bound  (no condition yet)
└─ train-0-x  z0 / z0-b0 / z0-b0-r1 / n2
PodGroup demo/urgent  gang minCount=1  pods 0/1 bound  Preempting: taking rack z0-b0-r1: evicting 8 pods of priority up to 10 (1 gang whole)
└─ urgent-0  pending
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
	p := pod("train-workers-1-0", "", "n1")
	p.Labels = labels
	name, ok := jobset.PodGroupOfPod(&p)
	if !ok {
		t.Fatal("no PodGroup for a JobSet pod")
	}
	pg := gangPG(name, 1, "", nil)
	pg.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "train", UID: "js-uid", Controller: ptr.To(true)}}
	groups := Build(Inputs{PodGroups: []v1alpha1.PodGroup{pg}, Pods: []v1.Pod{p}, Nodes: []v1.Node{node("n1", "z0", "z0-b0", "z0-b0-r0")}, Levels: configv1.DefaultTopologyLevels})
	if len(groups) != 1 || groups[0].Pods == nil || groups[0].Pods.Bound != 1 {
		t.Errorf("tree %+v, want the PodGroup with its 1 pod bound", groups)
	}
}

// TestSchedulerPluginsPodsCountInTheirMirror: a pod labelled for a scheduler-plugins
// PodGroup counts in the lockstep PodGroup that mirrors it (same name, controlled by it),
// and a slice constraint is shown as slices.
func TestSchedulerPluginsPodsCountInTheirMirror(t *testing.T) {
	p := pod("pi-worker-0", "", "n1")
	p.Labels = map[string]string{coscheduling.Label: "pi"}
	mirror := gangPG("pi", 4, "", nil)
	mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "scheduling.x-k8s.io/v1alpha1", Kind: "PodGroup", Name: "pi", UID: "spg-uid", Controller: ptr.To(true)}}
	mirror.Spec.SchedulingConstraints = &v1alpha1.SchedulingConstraints{Topology: []v1alpha1.TopologyConstraint{
		{Key: "topology.kubernetes.io/block"}, {Key: "topology.kubernetes.io/rack", SliceSize: ptr.To[int32](2)}}}
	notMirror := gangPG("other", 1, "", nil)
	q := pod("other-0", "", "n1")
	q.Labels = map[string]string{coscheduling.Label: "other"}
	groups := Build(Inputs{PodGroups: []v1alpha1.PodGroup{mirror, notMirror}, Pods: []v1.Pod{p, q},
		Nodes: []v1.Node{node("n1", "z0", "z0-b0", "z0-b0-r0")}, Levels: configv1.DefaultTopologyLevels})
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
