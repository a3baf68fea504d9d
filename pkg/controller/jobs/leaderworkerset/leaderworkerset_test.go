package leaderworkerset

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

var ours = sets.New(lt.SchedulerName)

// set is a LeaderWorkerSet "serve" (uid "uid-serve") of replicas of size pods using lockstep.
func set(size int32) *leaderWorkerSet {
	return &leaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: GVK.GroupVersion().String(), Kind: GVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "serve", UID: "uid-serve"},
		Spec: leaderWorkerSetSpec{Replicas: ptr.To[int32](2), LeaderWorkerTemplate: leaderWorkerTemplate{
			Size: ptr.To(size), WorkerTemplate: v1.PodTemplateSpec{Spec: v1.PodSpec{SchedulerName: lt.SchedulerName}}}},
	}
}

func withSubgroups(lws *leaderWorkerSet, n int32, policy string) *leaderWorkerSet {
	lws.Spec.LeaderWorkerTemplate.SubGroupPolicy = &subGroupPolicy{Type: policy, SubGroupSize: ptr.To(n)}
	lws.Annotations = map[string]string{AnnotationSubGroupExclusiveTopology: lt.HostKey}
	return lws
}

// pod is an LWS pod of replica index, worker w, revision rev; a worker names leader.
func pod(index string, w int, uid types.UID, rev string) *v1.Pod {
	name := "serve-" + index
	if w > 0 {
		name += "-" + string(rune('0'+w))
	}
	p := lt.MakePod().Namespace("ns").Name(name).UID(string(uid)).SchedulerName(lt.SchedulerName).
		Label(LabelName, "serve").Label(LabelGroupIndex, index).Label(LabelWorkerIndex, string(rune('0'+w))).Label(LabelRevision, rev).Obj()
	if w > 0 {
		p.Annotations = map[string]string{AnnotationLeaderName: "serve-" + index}
	}
	return p
}

// LWS's subgroup assignment (v0.7.0 pod webhook): the sizes lockstep expects per subgroup.
func TestSubgroups(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lws      *leaderWorkerSet
		want     []int32
		excluded bool
	}{
		{"no subgroups", set(4), nil, false},
		{"subGroupSize without the exclusive annotation", func() *leaderWorkerSet {
			l := withSubgroups(set(4), 2, "")
			l.Annotations = nil
			return l
		}(), nil, false},
		{"size 4 by 2: leader and w1, w2 and w3", withSubgroups(set(4), 2, ""), []int32{2, 2}, false},
		{"size 5 by 2, leader excluded: w1 w2, w3 w4", withSubgroups(set(5), 2, LeaderExcluded), []int32{2, 2}, true},
		{"size 5 by 2, leader in: leader w1 w2, w3 w4", withSubgroups(set(5), 2, ""), []int32{3, 2}, false},
		{"size 8 by 4", withSubgroups(set(8), 4, ""), []int32{4, 4}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, excluded := subgroups(tc.lws)
			if !cmp.Equal(got, tc.want) || excluded != tc.excluded {
				t.Errorf("subgroups = %v, %v; want %v, %v", got, excluded, tc.want, tc.excluded)
			}
		})
	}
}

// Each live leader is a replica's gang of size pods (or a tree of its subgroups, each in a
// domain of its own); in LeaderWorkerSets whose workers wait for their leader the leader binds
// first (leaders 1), exclusive-topology a Required exclusive domain; those of another
// scheduler are left alone.
func TestTreeOf(t *testing.T) {
	leaders := []*v1.Pod{pod("1", 0, "uid-l1", "r1"), pod("0", 0, "uid-l0", "r1")}
	g0, g1 := GroupName("serve", "0", "uid-l0"), GroupName("serve", "1", "uid-l1")
	host := []v1alpha1.TopologyConstraint{{Key: lt.HostKey, Mode: v1alpha1.TopologyRequired, Exclusive: true}}

	rack := set(4)
	rack.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lt.RackKey}
	got, problems := treeOf(rack, leaders)
	rackTopo := []v1alpha1.TopologyConstraint{{Key: lt.RackKey, Mode: v1alpha1.TopologyRequired}}
	want := []jobframework.Group{{Name: g0, Template: templateGroup, Min: 4, Topology: rackTopo}, {Name: g1, Template: templateGroup, Min: 4, Topology: rackTopo}}
	if len(problems) > 0 || !cmp.Equal(got.PodGroups, want) || len(got.Composites) != 0 {
		t.Errorf("flat: %+v %v\nwant PodGroups %+v", got, problems, want)
	}

	got, _ = treeOf(withSubgroups(set(5), 2, LeaderExcluded), leaders[1:])
	wantComposites := []jobframework.Group{{Name: g0, Template: templateGroup, Min: 3}}
	wantPodGroups := []jobframework.Group{
		{Name: g0 + "-leader", Parent: g0, Template: templateLeader, Min: 1},
		{Name: g0 + "-sg0", Parent: g0, Template: templateSubgroup, Min: 2, Topology: host},
		{Name: g0 + "-sg1", Parent: g0, Template: templateSubgroup, Min: 2, Topology: host},
	}
	if !cmp.Equal(got.Composites, wantComposites) || !cmp.Equal(got.PodGroups, wantPodGroups) {
		t.Errorf("subgroups: composites %+v\npodgroups %+v\nwant %+v\n%+v", got.Composites, got.PodGroups, wantComposites, wantPodGroups)
	}

	// Workers made only once the leader is ready or scheduled: the leader binds first.
	ready := set(4)
	ready.Spec.StartupPolicy = LeaderReady
	got, _ = treeOf(ready, leaders[1:])
	if want := []jobframework.Group{{Name: g0, Template: templateGroup, Min: 4, Leaders: 1}}; !cmp.Equal(got.PodGroups, want) ||
		got.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.Leaders != 1 {
		t.Errorf("LeaderReady: %+v, want %+v", got.PodGroups, want)
	}
	// A leader that loads a large model for longer than the default 10 minutes keeps its
	// workers' room as long as the LeaderWorkerSet says.
	slow := set(4)
	slow.Spec.StartupPolicy = LeaderReady
	slow.Annotations = map[string]string{v1alpha1.FollowersTimeoutAnnotation: "1800"}
	got, problems = treeOf(slow, leaders[1:])
	if want := []jobframework.Group{{Name: g0, Template: templateGroup, Min: 4, Leaders: 1, FollowersTimeoutSeconds: ptr.To[int32](1800)}}; len(problems) > 0 ||
		!cmp.Equal(got.PodGroups, want) || *got.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.FollowersTimeoutSeconds != 1800 {
		t.Errorf("followers timeout: %+v %v, want %+v", got.PodGroups, problems, want)
	}
	slow.Annotations[v1alpha1.FollowersTimeoutAnnotation] = "soon"
	if got, problems = treeOf(slow, leaders[1:]); len(problems) != 1 || got.PodGroups[0].FollowersTimeoutSeconds != nil {
		t.Errorf("an invalid followers timeout: %+v %v, want the default and a problem", got.PodGroups, problems)
	}
	exclusive := set(4)
	exclusive.Annotations = map[string]string{AnnotationExclusiveTopology: lt.RackKey}
	got, _ = treeOf(exclusive, leaders[1:])
	rackExclusive := []v1alpha1.TopologyConstraint{{Key: lt.RackKey, Mode: v1alpha1.TopologyRequired, Exclusive: true}}
	if want := []jobframework.Group{{Name: g0, Template: templateGroup, Min: 4, Leaders: 1, Topology: rackExclusive}}; !cmp.Equal(got.PodGroups, want) {
		t.Errorf("exclusive-topology: %+v, want %+v", got.PodGroups, want)
	}
	a := New()
	other := set(4)
	other.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.SchedulerName = "default-scheduler"
	if out, _ := a.Groups(toUnstructured(t, other), nil, ours); out != nil {
		t.Errorf("another scheduler's: Groups = %+v, want nil", out)
	}
}

func toUnstructured(t *testing.T, lws *leaderWorkerSet) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(lws)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// adapterWith returns an Adapter whose LeaderWorkerSets and pods are those given, synced.
func adapterWith(t *testing.T, sets []*leaderWorkerSet, pods ...*v1.Pod) *Adapter {
	t.Helper()
	var objs []runtime.Object
	for _, l := range sets {
		objs = append(objs, toUnstructured(t, l))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "LeaderWorkerSetList"}, objs...)
	var kobjs []runtime.Object
	for _, p := range pods {
		kobjs = append(kobjs, p)
	}
	df := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	kf := informers.NewSharedInformerFactory(fake.NewClientset(kobjs...), 0)
	a := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if _, err := a.Watch(jobframework.Informers{Kube: kf, Dynamic: df, APIs: jobframework.ServedAPIs(ctx, GVR)}, nil); err != nil {
		t.Fatal(err)
	}
	df.Start(ctx.Done())
	kf.Start(ctx.Done())
	t.Cleanup(func() { cancel(); df.Shutdown(); kf.Shutdown() })
	df.WaitForCacheSync(ctx.Done())
	kf.WaitForCacheSync(ctx.Done())
	return a
}

// A leader is filed under the group of its own UID, a worker under its leader's (of its
// revision), a subgroup member under its subgroup's; a worker whose leader is not seen, or of
// another revision (a rolling update's leftover), waits under a name no group has; the pods
// of a LeaderWorkerSet that gets no groups are not filed.
func TestGroupOfPod(t *testing.T) {
	leader := pod("0", 0, "uid-l0", "r2")
	leader.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC))
	a := adapterWith(t, []*leaderWorkerSet{set(3)}, leader)
	g0 := GroupName("serve", "0", "uid-l0")
	waiting := func(p *v1.Pod) filing.Filing {
		return filing.Filing{Name: waitingName(p), Created: true, Labelled: true, Unseen: true}
	}
	oldWorker := pod("0", 1, "uid-old", "r1")
	orphan := pod("1", 1, "uid-w", "r2")
	newWorker := pod("0", 2, "uid-w2", "r2")
	newWorker.CreationTimestamp = metav1.NewTime(leader.CreationTimestamp.Add(time.Second))
	leftover := pod("0", 1, "uid-leftover", "r2")
	leftover.CreationTimestamp = metav1.NewTime(leader.CreationTimestamp.Add(-time.Second))
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want filing.Filing
	}{
		{"leader", leader, filing.Filing{Name: g0, Created: true, Labelled: true}},
		{"worker", newWorker, filing.Filing{Name: g0, Created: true, Labelled: true}},
		{"worker of the old revision", oldWorker, waiting(oldWorker)},
		{"worker made before its leader (a recreated group's leftover)", leftover, waiting(leftover)},
		{"worker whose leader is not seen", orphan, waiting(orphan)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := a.GroupOfPod(tc.pod, ours)
			if !ok || got != tc.want {
				t.Errorf("GroupOfPod = %+v, %v; want %+v", got, ok, tc.want)
			}
			if object, ok := a.Labelled(tc.pod); !ok || object != "ns/"+tc.want.Name {
				t.Errorf("Labelled = %q, %v; want ns/%s", object, ok, tc.want.Name)
			}
		})
	}
	if waitingName(oldWorker) == g0 {
		t.Fatal("a worker of another revision waits under its leader's group")
	}

	sub := adapterWith(t, []*leaderWorkerSet{withSubgroups(set(4), 2, "")}, leader)
	w3 := pod("0", 3, "uid-w3", "r2")
	w3.Labels[LabelSubGroupIndex] = "1"
	w3.CreationTimestamp = newWorker.CreationTimestamp
	if got, _ := sub.GroupOfPod(w3, ours); got.Name != g0+"-sg1" {
		t.Errorf("subgroup member filed under %q, want %s-sg1", got.Name, g0)
	}

	ready := set(3)
	ready.Spec.StartupPolicy = LeaderReady
	ready.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers = []v1.Container{{Name: "worker", Image: "vllm"}}
	readyAdapter := adapterWith(t, []*leaderWorkerSet{ready}, leader)
	if got, ok := readyAdapter.GroupOfPod(leader, ours); !ok || got.Name != g0 {
		t.Errorf("a LeaderReady LeaderWorkerSet's leader filed under %+v, %v; want its replica's group %s", got, ok, g0)
	}
	if f := readyAdapter.FollowerOf(leader); f == nil || len(f.Spec.Containers) != 1 || f.Spec.Containers[0].Image != "vllm" {
		t.Errorf("FollowerOf = %+v, want the worker template's pod", f)
	}
	if f := readyAdapter.FollowerOf(newWorker); f != nil {
		t.Errorf("FollowerOf a worker = %+v, want nil", f)
	}
	notLWS := lt.MakePod().Namespace("ns").Name("plain").Obj()
	if _, ok := a.GroupOfPod(notLWS, ours); ok {
		t.Error("a pod LWS did not make is filed")
	}
}
