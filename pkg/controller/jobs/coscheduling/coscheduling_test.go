package coscheduling

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

const otherScheduler = "default-scheduler"

// ours are the profiles whose pods lockstep files in these tests.
var ours = sets.New(lt.SchedulerName)

// newPodGroup returns the scheduler-plugins PodGroup name of minMember in namespace ns.
func newPodGroup(name string, minMember int32) *podGroup {
	return &podGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: GVK.GroupVersion().String(), Kind: GVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(lt.Epoch)},
		Spec:       podGroupSpec{MinMember: minMember},
	}
}

// toUnstructured is the PodGroup as the dynamic client serves it.
func toUnstructured(t *testing.T, pg *podGroup) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pg)
	if err != nil {
		t.Fatalf("converting PodGroup %s: %v", pg.Name, err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// fixture is an Adapter on a fake dynamic API holding scheduler-plugins PodGroups, with pods
// and Jobs in listers of their own.
type fixture struct {
	a   *Adapter
	dyn *dynamicfake.FakeDynamicClient
}

// newFixture returns an Adapter whose PodGroup informer has synced the PodGroups pgs (the
// API does not serve PodGroups at all when served is false), whose listers hold pods (every
// phase) and jobs, and whose clock says now is lt.Epoch plus an hour; ahead are the adapters
// before it.
func newFixture(t *testing.T, served bool, pgs []*podGroup, pods []*v1.Pod, jobs []*batchv1.Job, ahead ...jobframework.Adapter) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, pg := range pgs {
		objs = append(objs, toUnstructured(t, pg))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "PodGroupList"}, objs...)
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var servedAPIs []schema.GroupVersionResource
	if served {
		servedAPIs = append(servedAPIs, GVR)
	}
	a := New(dyn, ahead...)
	if _, err := a.Watch(jobframework.Informers{Kube: informers.NewSharedInformerFactory(kubefake.NewClientset(), 0), Dynamic: f,
		APIs: jobframework.ServedAPIs(ctx, servedAPIs...)}, nil); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", gvr)
		}
	}
	podIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := podIndexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	jobIndexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, j := range jobs {
		if err := jobIndexer.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	a.pods, a.jobs = corelisters.NewPodLister(podIndexer), batchlisters.NewJobLister(jobIndexer)
	a.now = func() metav1.Time { return metav1.NewTime(lt.Epoch.Add(time.Hour)) }
	dyn.ClearActions()
	return &fixture{a: a, dyn: dyn}
}

// get returns the PodGroup name as the adapter's informer has it.
func (f *fixture) get(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := f.a.Get(ns, name)
	if err != nil || obj == nil {
		t.Fatalf("Get(%s) = %v, %v; want the PodGroup", name, obj, err)
	}
	return obj.(*unstructured.Unstructured)
}

// jobSetChild returns child Job <jobSet>-workers-0 of JobSet jobSet, as the JobSet controller
// makes it (controlled by the JobSet, labelled with its ReplicatedJob, index and restart
// attempt), whose pods use lockstep and are labelled for PodGroup group (Kubeflow Trainer's
// coscheduling policy labels the template), and a pod of it.
func jobSetChild(jobSet, group string) (*batchv1.Job, *v1.Pod) {
	job := lt.MakeJob().Namespace(ns).Name(jobSet+"-workers-0").Indexed(2).
		Label(jobset.LabelJobSetName, jobSet).Label(jobset.LabelReplicatedJob, "workers").
		Label(jobset.LabelJobIndex, "0").Label(jobset.LabelRestartAttempt, "0").
		Owner(jobset.GVK.GroupVersion().String(), jobset.GVK.Kind, jobSet, "uid-"+jobSet).TemplateLabel(Label, group)
	return job.Obj(), job.Pod(0).Phase(v1.PodPending).Obj()
}

// TestLabelledAndGroupOfPod proves that a pod whose label names a scheduler-plugins PodGroup
// is filed under the lockstep PodGroup of the same name, which the controller creates; that
// it is filed as not seen (so that it waits a while, then goes without a gang, as
// scheduler-plugins schedules pods whose PodGroup does not exist) when that PodGroup is not
// in the informer, or PodGroups are not served (yet).
func TestLabelledAndGroupOfPod(t *testing.T) {
	labelled := func(ns, group string) *v1.Pod { return member(group, 0).Namespace(ns).Obj() }
	unlabelled := member("g", 0).Obj()
	unlabelled.Labels = map[string]string{"app": "g"}
	emptyLabel := member("g", 0).Label(Label, "").Obj()
	lockstepLabel := member("g", 0).Obj()
	lockstepLabel.Labels = map[string]string{v1alpha1.PodGroupLabel: "g"}
	tests := []struct {
		name         string
		served       bool
		pod          *v1.Pod
		wantLabelled string // "" for not labelled
		wantOK       bool
		want         filing.Filing
	}{
		{name: "unlabelled", served: true, pod: unlabelled},
		{name: "label with no value", served: true, pod: emptyLabel},
		{name: "lockstep's own label is not this kind's", served: true, pod: lockstepLabel},
		{name: "served, PodGroup seen", served: true, pod: labelled(ns, "g"), wantLabelled: "ns/g", wantOK: true,
			want: filing.Filing{Name: "g", Created: true, Labelled: true}},
		{name: "served, PodGroup not seen", served: true, pod: labelled(ns, "missing"), wantLabelled: "ns/missing", wantOK: true,
			want: filing.Filing{Name: "missing", Created: true, Labelled: true, Unseen: true}},
		{name: "served, PodGroup of that name in another namespace only", served: true, pod: labelled("other", "g"), wantLabelled: "other/g", wantOK: true,
			want: filing.Filing{Name: "g", Created: true, Labelled: true, Unseen: true}},
		{name: "not served: not seen", pod: labelled(ns, "g"), wantLabelled: "ns/g", wantOK: true,
			want: filing.Filing{Name: "g", Created: true, Labelled: true, Unseen: true}},
		{name: "not served, unlabelled", pod: unlabelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.served, []*podGroup{newPodGroup("g", 2)}, nil, nil)
			object, labelled := f.a.Labelled(tc.pod)
			if object != tc.wantLabelled || labelled != (tc.wantLabelled != "") {
				t.Errorf("Labelled = %q, %v; want %q", object, labelled, tc.wantLabelled)
			}
			got, ok := f.a.GroupOfPod(tc.pod, ours)
			if ok != tc.wantOK {
				t.Fatalf("GroupOfPod = %+v, %v; want ok %v", got, ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GroupOfPod (-want +got):\n%s", diff)
			}
			// Nothing to wait for while the kind is not served; its informer once it is.
			if !f.a.HasSynced() {
				t.Errorf("HasSynced = false, want true (served %v, informer synced)", tc.served)
			}
			if name, ok := f.a.GroupOfJob(&batchv1.Job{}, ours); ok || name != "" {
				t.Errorf("GroupOfJob = %q, %v; want no Job claimed", name, ok)
			}
		})
	}
}

// quantity compares resource quantities by value.
var quantity = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// TestGroups proves which tree a scheduler-plugins PodGroup gets: none until a pod of a
// lockstep profile, whose Job no adapter ahead (the JobSet's) claims, is labelled for it;
// then a flat gang of the same name whose minCount is minMember (at least 1), with its
// scheduleTimeoutSeconds and minResources, the priority of its oldest such pod and the
// topology its lockstep annotations ask for; Finished once the PodGroup is Finished or
// Failed.
func TestGroups(t *testing.T) {
	child, childPod := jobSetChild("js", "g")
	full := func(pg *podGroup) *podGroup {
		pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](60)
		pg.Spec.MinResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("8")}
		return pg
	}
	// gang is the tree of PodGroup "g": minCount min, priority class, topology.
	gang := func(min int32, class string, topology []v1alpha1.TopologyConstraint, finished bool) *jobframework.Groups {
		var constraints *v1alpha1.SchedulingConstraints
		if len(topology) > 0 {
			constraints = &v1alpha1.SchedulingConstraints{Topology: topology}
		}
		return &jobframework.Groups{
			Workload: "g",
			Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
				Name:                  TemplateName,
				SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: min}},
				SchedulingConstraints: constraints,
				PriorityClassName:     class,
			}}},
			PodGroups: []jobframework.Group{{Name: "g", Template: TemplateName, Min: min, Topology: topology, PriorityClassName: class,
				ScheduleTimeoutSeconds: ptr.To[int32](60),
				MinResources:           v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("8")}}},
			Finished: finished,
		}
	}
	tests := []struct {
		name         string
		pg           *podGroup
		pods         []*v1.Pod
		jobs         []*batchv1.Job
		want         *jobframework.Groups
		wantProblems []string
	}{
		{name: "no pods yet", pg: full(newPodGroup("g", 3))},
		{name: "pods of another scheduler only", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{member("g", 0).SchedulerName(otherScheduler).Obj(), member("g", 1).SchedulerName(otherScheduler).Node("n1").Phase(v1.PodRunning).Obj()}},
		{name: "a lockstep pod of another namespace", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{member("g", 0).Namespace("other").Obj()}},
		{name: "a lockstep pod labelled for another PodGroup", pg: full(newPodGroup("g", 3)), pods: []*v1.Pod{member("h", 0).Obj()}},
		{name: "the pod's Job is a JobSet's (the adapter ahead claims it)", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{childPod}, jobs: []*batchv1.Job{child}},
		{name: "the pod's Job is not seen yet (the adapter ahead may claim it)", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{childPod}},
		{name: "flat gang", pg: full(newPodGroup("g", 3)), pods: members("g", "pending", "pending"),
			want: gang(3, "", nil, false)},
		{name: "flat gang of the pods beside a JobSet's", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{childPod, member("g", 1).Obj()}, jobs: []*batchv1.Job{child},
			want: gang(3, "", nil, false)},
		{name: "a pod whose Job is another than its owner reference says is not claimed", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{childPod}, jobs: []*batchv1.Job{func() *batchv1.Job { j := child.DeepCopy(); j.UID = "recreated"; return j }()},
			want: gang(3, "", nil, false)},
		{name: "minMember 0 is a gang of 1", pg: full(newPodGroup("g", 0)), pods: members("g", "pending"),
			want: gang(1, "", nil, false)},
		{name: "priority of the oldest lockstep pod", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{
				lt.InPriorityClass(member("g", 2), "low").Obj(),
				lt.InPriorityClass(member("g", 0).SchedulerName(otherScheduler), "other").Obj(),
				lt.InPriorityClass(member("g", 1), "high").Obj(),
				lt.InPriorityClass(member("g", 3), "lower").Obj(),
			},
			want: gang(3, "high", nil, false)},
		{name: "oldest by creation, not by name", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{
				lt.InPriorityClass(member("g", 1), "younger").Obj(),
				lt.InPriorityClass(member("g", 2).CreationTimestamp(metav1.NewTime(lt.Epoch)), "oldest").Obj(),
			},
			want: gang(3, "oldest", nil, false)},
		{name: "of pods created at once, the first by name", pg: full(newPodGroup("g", 3)),
			pods: []*v1.Pod{
				lt.InPriorityClass(member("g", 2).CreationTimestamp(metav1.NewTime(lt.Epoch)), "second").Obj(),
				lt.InPriorityClass(member("g", 0), "first").Obj(),
			},
			want: gang(3, "first", nil, false)},
		{name: "topology annotations", pg: func() *podGroup {
			pg := full(newPodGroup("g", 2))
			pg.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lt.ZoneKey, v1alpha1.JobTopologyPreferredAnnotation: lt.RackKey}
			return pg
		}(), pods: members("g", "pending"),
			want: gang(2, "", []v1alpha1.TopologyConstraint{{Key: lt.ZoneKey, Mode: v1alpha1.TopologyRequired}, {Key: lt.RackKey, Mode: v1alpha1.TopologyPreferred}}, false)},
		{name: "bad topology annotation is reported and ignored", pg: func() *podGroup {
			pg := full(newPodGroup("g", 2))
			pg.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: "not a key"}
			return pg
		}(), pods: members("g", "pending"),
			want:         gang(2, "", nil, false),
			wantProblems: []string{`annotation scheduling.lockstep.dev/topology-required="not a key" is not a label key; ignored`}},
		{name: "Running is not finished", pg: func() *podGroup {
			pg := full(newPodGroup("g", 2))
			pg.Status.Phase = PhaseRunning
			return pg
		}(), pods: members("g", "running", "running"), want: gang(2, "", nil, false)},
		{name: "Finished", pg: func() *podGroup {
			pg := full(newPodGroup("g", 2))
			pg.Status.Phase = PhaseFinished
			return pg
		}(), pods: members("g", "succeeded", "succeeded"), want: gang(2, "", nil, true)},
		{name: "Failed", pg: func() *podGroup {
			pg := full(newPodGroup("g", 2))
			pg.Status.Phase = PhaseFailed
			return pg
		}(), pods: members("g", "failed", "running"), want: gang(2, "", nil, true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true, []*podGroup{tc.pg}, tc.pods, append(tc.jobs, memberJob("g")), jobset.New())
			got, problems := f.a.Groups(f.get(t, tc.pg.Name), nil, ours)
			if diff := cmp.Diff(tc.want, got, quantity); diff != "" {
				t.Errorf("Groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGroupsWithoutAdaptersAhead proves that without the JobSet adapter ahead, the pods of
// a JobSet's Job are the PodGroup's like any other, their Job seen or not: what keeps them
// out is the adapter ahead, not the Job.
func TestGroupsWithoutAdaptersAhead(t *testing.T) {
	child, childPod := jobSetChild("js", "g")
	for name, jobs := range map[string][]*batchv1.Job{"Job seen": {child}, "Job not seen": nil} {
		f := newFixture(t, true, []*podGroup{newPodGroup("g", 1)}, []*v1.Pod{childPod}, jobs)
		if got, _ := f.a.Groups(f.get(t, "g"), nil, ours); got == nil || got.PodGroups[0].Min != 1 {
			t.Errorf("%s: Groups = %+v, want a gang of 1", name, got)
		}
	}
}

// statusWrites returns the status updates sent to the API since the last call, as the status
// each wrote.
func (f *fixture) statusWrites(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, a := range f.dyn.Actions() {
		u, ok := a.(clienttesting.UpdateAction)
		if !ok {
			if a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
				t.Errorf("unexpected %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
			}
			continue
		}
		if u.GetSubresource() != "status" || u.GetResource() != GVR || u.GetNamespace() != ns {
			t.Errorf("update of %v %s in %q, want the status of a PodGroup in %q", u.GetResource(), u.GetSubresource(), u.GetNamespace(), ns)
		}
		status, _, _ := unstructured.NestedMap(u.GetObject().(*unstructured.Unstructured).Object, "status")
		out = append(out, status)
	}
	f.dyn.ClearActions()
	return out
}

// schedulerPluginsStatusFields are the fields of a scheduler-plugins PodGroup's status
// (config/crd/bases/scheduling.x-k8s.io_podgroups.yaml); the API server prunes any other.
var schedulerPluginsStatusFields = sets.New("phase", "occupiedBy", "running", "succeeded", "failed", "scheduleStartTime")

// TestSyncStatus proves that SyncStatus keeps the status of a scheduler-plugins PodGroup as
// scheduler-plugins' controller would when a pod labelled for it uses lockstep, sets a new
// one (no phase) Pending whoever its pods are, and otherwise leaves it to scheduler-plugins'
// controller; that it writes the status subresource only when the status changes, only with
// the fields of scheduler-plugins' schema, and nothing more once what it wrote is read back.
func TestSyncStatus(t *testing.T) {
	now := metav1.NewTime(lt.Epoch.Add(time.Hour))
	start := metav1.NewTime(lt.Epoch.Add(time.Minute))
	withStatus := func(pg *podGroup, st podGroupStatus) *podGroup {
		pg.Status = st
		return pg
	}
	otherSched := func(pods []*v1.Pod) []*v1.Pod {
		for _, p := range pods {
			p.Spec.SchedulerName = otherScheduler
		}
		return pods
	}
	tests := []struct {
		name  string
		pg    *podGroup
		pods  []*v1.Pod
		want  *podGroupStatus // nil: nothing written
		other map[string]any  // a field of the PodGroup outside its status that must be kept
	}{
		{name: "new, no pods: Pending", pg: newPodGroup("g", 2),
			want: &podGroupStatus{Phase: PhasePending}},
		{name: "new, pods of another scheduler: Pending only", pg: newPodGroup("g", 2), pods: otherSched(members("g", "running", "running")),
			want: &podGroupStatus{Phase: PhasePending}},
		{name: "new, lockstep pods running", pg: newPodGroup("g", 2), pods: members("g", "running", "running"),
			want: &podGroupStatus{Phase: PhaseRunning, OccupiedBy: "ns/g-job", ScheduleStartTime: now, Running: 2}},
		{name: "Pending, lockstep pods exist: Scheduling", pg: withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhasePending}),
			pods: members("g", "pending", "pending"),
			want: &podGroupStatus{Phase: PhaseScheduling, OccupiedBy: "ns/g-job", ScheduleStartTime: now}},
		{name: "one pod of two uses lockstep", pg: withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhasePending}),
			pods: []*v1.Pod{member("g", 0).SchedulerName(otherScheduler).Obj(), member("g", 1).Obj()},
			want: &podGroupStatus{Phase: PhaseScheduling, OccupiedBy: "ns/g-job", ScheduleStartTime: now}},
		{name: "pods of another scheduler: scheduler-plugins' controller keeps it",
			pg:   withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhasePending}),
			pods: otherSched(members("g", "running", "running"))},
		{name: "no pods, not new: nothing to tell whose it is",
			pg: withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhaseRunning, OccupiedBy: "ns/g-job", ScheduleStartTime: start, Running: 2})},
		{name: "bound pods not running yet: still Scheduling, nothing written",
			pg:   withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhaseScheduling, OccupiedBy: "ns/g-job", ScheduleStartTime: start}),
			pods: members("g", "bound", "bound")},
		{name: "up to date: nothing written",
			pg:   withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhaseRunning, OccupiedBy: "ns/g-job", ScheduleStartTime: start, Running: 2}),
			pods: members("g", "running", "running")},
		{name: "Finished: nothing written",
			pg:   withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhaseFinished, OccupiedBy: "ns/g-job", ScheduleStartTime: start, Succeeded: 2}),
			pods: members("g", "failed", "failed")},
		{name: "succeeded: Finished, spec kept",
			pg: func() *podGroup {
				pg := withStatus(newPodGroup("g", 2), podGroupStatus{Phase: PhaseRunning, OccupiedBy: "ns/g-job", ScheduleStartTime: start, Running: 2})
				pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](30)
				return pg
			}(),
			pods:  members("g", "succeeded", "succeeded"),
			want:  &podGroupStatus{Phase: PhaseFinished, OccupiedBy: "ns/g-job", ScheduleStartTime: start, Succeeded: 2},
			other: map[string]any{"minMember": int64(2), "scheduleTimeoutSeconds": int64(30)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true, []*podGroup{tc.pg}, tc.pods, nil)
			if err := f.a.SyncStatus(context.Background(), f.get(t, "g"), ours); err != nil {
				t.Fatalf("SyncStatus: %v", err)
			}
			writes := f.statusWrites(t)
			if tc.want == nil {
				if len(writes) != 0 {
					t.Fatalf("wrote %v, want nothing", writes)
				}
				return
			}
			if len(writes) != 1 {
				t.Fatalf("wrote %d statuses %v, want 1", len(writes), writes)
			}
			for field := range writes[0] {
				if !schedulerPluginsStatusFields.Has(field) {
					t.Errorf("wrote status field %q, which scheduler-plugins' PodGroup does not have (the API server prunes it)", field)
				}
			}
			stored, err := f.dyn.Resource(GVR).Namespace(ns).Get(context.Background(), "g", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			pg, err := decode(stored)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(*tc.want, pg.Status, cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })); diff != "" {
				t.Errorf("stored status (-want +got):\n%s", diff)
			}
			if tc.other != nil {
				spec, _, _ := unstructured.NestedMap(stored.Object, "spec")
				if diff := cmp.Diff(tc.other, spec); diff != "" {
					t.Errorf("stored spec (-want +got):\n%s", diff)
				}
			}
			// Read back (as the API server stores it: times to the second), the status is what
			// SyncStatus would write again: nothing more is written, later either.
			pruned := stored.DeepCopy()
			pruneStatus(pruned)
			f.a.now = func() metav1.Time { return metav1.NewTime(lt.Epoch.Add(2 * time.Hour)) }
			if err := f.a.SyncStatus(context.Background(), pruned, ours); err != nil {
				t.Fatalf("SyncStatus again: %v", err)
			}
			if writes := f.statusWrites(t); len(writes) != 0 {
				t.Errorf("SyncStatus of the status it wrote wrote again: %v", writes)
			}
		})
	}
}

// pruneStatus removes the status fields scheduler-plugins' schema lacks, as the API server
// does when it stores a PodGroup.
func pruneStatus(u *unstructured.Unstructured) {
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		return
	}
	for field := range status {
		if !schedulerPluginsStatusFields.Has(field) {
			delete(status, field)
		}
	}
}

// TestSyncStatusWithoutPodLister proves that SyncStatus of an adapter that reads no pods (the
// scheduler's) sets a new PodGroup Pending and leaves the others alone.
func TestSyncStatusWithoutPodLister(t *testing.T) {
	running := newPodGroup("running", 2)
	running.Status = podGroupStatus{Phase: PhaseRunning, Running: 2}
	f := newFixture(t, true, []*podGroup{newPodGroup("new", 2), running}, nil, nil)
	f.a.pods = nil
	for _, name := range []string{"new", "running"} {
		if err := f.a.SyncStatus(context.Background(), f.get(t, name), ours); err != nil {
			t.Fatalf("SyncStatus(%s): %v", name, err)
		}
	}
	if writes := f.statusWrites(t); len(writes) != 1 || writes[0]["phase"] != PhasePending {
		t.Errorf("wrote %v, want one status: the new PodGroup's, Pending", writes)
	}
}

// TestNotify proves that the scheduler's model hears of every PodGroup added, changed or
// deleted, with its succeeded pods (none once deleted).
func TestNotify(t *testing.T) {
	done := newPodGroup("done", 3)
	done.Status = podGroupStatus{Phase: PhaseRunning, Succeeded: 2}
	f := newFixture(t, true, []*podGroup{newPodGroup("g", 2), done}, nil, nil)
	type note struct {
		key string
		ran int
	}
	notes := make(chan note, 10)
	f.a.Notify(func(namespace, name string, ran int) { notes <- note{namespace + "/" + name, ran} })
	next := func() note {
		t.Helper()
		select {
		case n := <-notes:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
			return note{}
		}
	}
	got := []note{next(), next()}
	slices.SortFunc(got, func(a, b note) int {
		if a.key < b.key {
			return -1
		}
		return 1
	})
	if diff := cmp.Diff([]note{{"ns/done", 2}, {"ns/g", 0}}, got, cmp.AllowUnexported(note{})); diff != "" {
		t.Errorf("notifications of the PodGroups that exist (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	u := toUnstructured(t, done)
	if err := unstructured.SetNestedField(u.Object, int64(3), "status", "succeeded"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.dyn.Resource(GVR).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := next(); n != (note{"ns/done", 3}) {
		t.Errorf("notification of the update = %+v, want ns/done with 3 succeeded", n)
	}
	if err := f.dyn.Resource(GVR).Namespace(ns).Delete(ctx, "done", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := next(); n != (note{"ns/done", 0}) {
		t.Errorf("notification of the deletion = %+v, want ns/done with none succeeded", n)
	}
}

// TestWatch proves what the controller's Watch enqueues: every scheduler-plugins PodGroup,
// and the PodGroup each labelled pod names (whether it exists or not) as the pod comes,
// changes or goes, so that a PodGroup gets its tree once its first lockstep pod appears;
// unlabelled pods enqueue nothing.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	unlabelled := member("x", 0).Obj()
	unlabelled.Labels = nil
	kube := kubefake.NewClientset(member("g", 0).Obj(), unlabelled)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "PodGroupList"},
		toUnstructured(t, newPodGroup("g", 2)), toUnstructured(t, newPodGroup("idle", 2)))
	f := jobframework.Informers{
		Kube:    informers.NewSharedInformerFactory(kube, 0),
		Pods:    informers.NewSharedInformerFactory(kube, 0),
		Dynamic: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		APIs:    jobframework.ServedAPIs(ctx, GVR),
	}
	defer func() {
		cancel()
		f.Kube.Shutdown()
		f.Pods.Shutdown()
		f.Dynamic.Shutdown()
	}()
	var mu sync.Mutex
	enqueued := map[string]int{}
	a := New(dyn)
	synced, err := a.Watch(f, func(key string) {
		mu.Lock()
		defer mu.Unlock()
		enqueued[key]++
	})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	f.Kube.Start(ctx.Done())
	f.Pods.Start(ctx.Done())
	f.Dynamic.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		t.Fatal("the adapter's informers did not sync")
	}
	snapshot := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(enqueued)
	}
	if diff := cmp.Diff(map[string]int{"ns/g": 2, "ns/idle": 1}, snapshot()); diff != "" {
		t.Errorf("enqueued at start, by key (-want +got):\n%s", diff)
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, member("new", 0).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Pods(ns).Delete(ctx, "g-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		e := snapshot()
		return e["ns/new"] == 1 && e["ns/g"] == 3, nil
	}); err != nil {
		t.Errorf("a labelled pod created and one deleted: enqueued %v, want ns/new once more and ns/g once more", snapshot())
	}
	if got, _ := a.Groups(func() jobframework.Object { o, _ := a.Get(ns, "g"); return o }(), nil, ours); got != nil {
		t.Errorf("Groups of a PodGroup whose pod is gone = %+v, want nil", got)
	}
	// A Job whose pods are labelled brings their PodGroup (its pods wait for it, takenAhead);
	// one whose pods are not brings nothing.
	labelled, _ := jobSetChild("js", "idle")
	plain := lt.MakeJob().Namespace(ns).Name("plain").Obj()
	for _, job := range []*batchv1.Job{labelled, plain} {
		if _, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return snapshot()["ns/idle"] == 2, nil
	}); err != nil {
		t.Errorf("a Job of pods labelled for idle created: enqueued %v, want ns/idle once more", snapshot())
	}
	if diff := cmp.Diff(map[string]int{"ns/g": 3, "ns/idle": 2, "ns/new": 1}, snapshot()); diff != "" {
		t.Errorf("enqueued after the Jobs, by key (-want +got):\n%s", diff)
	}
}

// TestHasSyncedWaitsForPodGroups proves that, while PodGroups are served, the adapter tells
// the scheduler's model to wait until their informer has listed them.
func TestHasSyncedWaitsForPodGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "PodGroupList"},
		toUnstructured(t, newPodGroup("g", 2)))
	release, listing := make(chan struct{}), make(chan struct{})
	var once sync.Once
	dyn.PrependReactor("list", GVR.Resource, func(clienttesting.Action) (bool, runtime.Object, error) {
		once.Do(func() { close(listing) })
		<-release
		return false, nil, nil
	})
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	defer func() {
		cancel()
		f.Shutdown()
	}()
	a := New(dyn)
	if _, err := a.Watch(jobframework.Informers{Kube: informers.NewSharedInformerFactory(kubefake.NewClientset(), 0), Dynamic: f,
		APIs: jobframework.ServedAPIs(ctx, GVR)}, nil); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	select { // the informer is listing: the list has not returned
	case <-listing:
	case <-ctx.Done():
		t.Fatal("the PodGroups were never listed")
	}
	if a.HasSynced() {
		t.Error("HasSynced = true before the PodGroups were listed")
	}
	close(release)
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return a.HasSynced(), nil
	}); err != nil {
		t.Error("HasSynced = false after the PodGroups were listed")
	}
}
