package raycluster

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
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

var ours = sets.New(lt.SchedulerName)

// cluster is a RayCluster "ray" (uid "uid-ray") whose head and worker groups use lockstep;
// each worker group is (minReplicas, numOfHosts).
func cluster(workers ...[2]int32) *rayCluster {
	rc := &rayCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: GVK.GroupVersion().String(), Kind: GVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ray", UID: "uid-ray"},
		Spec:       rayClusterSpec{HeadGroupSpec: headGroupSpec{Template: template(lt.SchedulerName)}},
	}
	for _, w := range workers {
		rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, workerGroupSpec{
			GroupName: "gpu", MinReplicas: ptr.To(w[0]), Replicas: ptr.To(w[0]), NumOfHosts: w[1], Template: template(lt.SchedulerName)})
	}
	return rc
}

func template(schedulerName string) v1.PodTemplateSpec {
	return v1.PodTemplateSpec{Spec: v1.PodSpec{SchedulerName: schedulerName}}
}

func toUnstructured(t *testing.T, rc *rayCluster) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// The gang is the head and each lockstep worker group's minimum (minReplicas × numOfHosts),
// not its replicas; a suspended cluster (queued in Kueue) and one whose pods name a group of
// their own get none; one whose head uses another scheduler is left alone.
func TestGroups(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rc       func() *rayCluster
		wantMin  int32
		wantNone bool // NoGroups
		wantNil  bool // left alone
		wantTopo []v1alpha1.TopologyConstraint
		wantPrio string
	}{
		{name: "head only", rc: func() *rayCluster { return cluster() }, wantMin: 1},
		{name: "head and minReplicas of each group", rc: func() *rayCluster { return cluster([2]int32{2, 1}, [2]int32{3, 0}) }, wantMin: 6},
		{name: "multi-host workers", rc: func() *rayCluster { return cluster([2]int32{2, 4}) }, wantMin: 9},
		{name: "replicas above minReplicas (autoscaled) do not count", rc: func() *rayCluster {
			rc := cluster([2]int32{1, 1})
			rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](5)
			return rc
		}, wantMin: 2},
		{name: "a suspended worker group does not count", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1}, [2]int32{3, 1})
			rc.Spec.WorkerGroupSpecs[1].Suspend = ptr.To(true)
			return rc
		}, wantMin: 3},
		{name: "a worker group of another scheduler does not count", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1}, [2]int32{3, 1})
			rc.Spec.WorkerGroupSpecs[1].Template.Spec.SchedulerName = "default-scheduler"
			return rc
		}, wantMin: 3},
		{name: "rack required, priority from the head", rc: func() *rayCluster {
			rc := cluster([2]int32{3, 1})
			rc.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lt.RackKey}
			rc.Spec.HeadGroupSpec.Template.Spec.PriorityClassName = "high"
			return rc
		}, wantMin: 4, wantTopo: []v1alpha1.TopologyConstraint{{Key: lt.RackKey, Mode: v1alpha1.TopologyRequired}}, wantPrio: "high"},
		{name: "suspended (queued in Kueue)", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1})
			rc.Spec.Suspend = ptr.To(true)
			return rc
		}, wantNone: true},
		{name: "pods name a group of their own", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1})
			rc.Spec.HeadGroupSpec.Template.Labels = map[string]string{v1alpha1.PodGroupLabel: "mine"}
			return rc
		}, wantNone: true},
		{name: "head of another scheduler", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1})
			rc.Spec.HeadGroupSpec.Template.Spec.SchedulerName = "default-scheduler"
			return rc
		}, wantNil: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := New().Groups(toUnstructured(t, tc.rc()), nil, ours)
			if len(problems) > 0 {
				t.Errorf("problems: %v", problems)
			}
			switch {
			case tc.wantNil:
				if got != nil {
					t.Fatalf("Groups = %+v, want nil", got)
				}
				return
			case tc.wantNone:
				if got == nil || !got.None {
					t.Fatalf("Groups = %+v, want none", got)
				}
				return
			}
			want := GroupName("ray", "uid-ray")
			if got == nil || got.Workload != want || len(got.PodGroups) != 1 || len(got.Composites) != 0 {
				t.Fatalf("Groups = %+v, want one PodGroup %s", got, want)
			}
			g := got.PodGroups[0]
			if g.Name != want || g.Min != tc.wantMin || g.PriorityClassName != tc.wantPrio || !cmp.Equal(g.Topology, tc.wantTopo) {
				t.Errorf("PodGroup %+v, want min %d, topology %v, priority %q", g, tc.wantMin, tc.wantTopo, tc.wantPrio)
			}
			tmpl := got.Spec.PodGroupTemplates[0]
			if tmpl.Name != g.Template || tmpl.SchedulingPolicy.Gang == nil || tmpl.SchedulingPolicy.Gang.MinCount != tc.wantMin {
				t.Errorf("template %+v, want a gang of %d", tmpl, tc.wantMin)
			}
		})
	}
}

// adapterWith returns an Adapter watching a fake API that serves rayClusters, synced.
func adapterWith(t *testing.T, rayClusters ...*rayCluster) *Adapter {
	t.Helper()
	var objs []runtime.Object
	for _, rc := range rayClusters {
		objs = append(objs, toUnstructured(t, rc))
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "RayClusterList"}, objs...)
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	a := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if _, err := a.Watch(jobframework.Informers{Dynamic: f, APIs: jobframework.ServedAPIs(ctx, GVR)}, nil); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", gvr)
		}
	}
	return a
}

// rayPod is a pod KubeRay made for RayCluster cluster (uid) of nodeType.
func rayPod(cluster string, uid types.UID, nodeType string) *v1.Pod {
	p := lt.MakePod().Namespace("ns").Name(cluster+"-"+nodeType).SchedulerName(lt.SchedulerName).
		Label(LabelCluster, cluster).Label(LabelNodeType, nodeType).Obj()
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: cluster, UID: uid, Controller: ptr.To(true)}}
	return p
}

// A RayCluster's head and workers are filed under its PodGroup (and name it as labelled
// objects), waiting for the RayCluster while it is not seen; other pods are not its: a
// RayJob's submitter, a pod that only looks like one, the pods of a RayCluster that gets no
// group.
func TestGroupOfPod(t *testing.T) {
	other := cluster()
	other.Name, other.UID = "other", "uid-other"
	other.Spec.HeadGroupSpec.Template.Spec.SchedulerName = "default-scheduler"
	a := adapterWith(t, cluster([2]int32{2, 1}), other)
	group := GroupName("ray", "uid-ray")
	submitter := lt.MakePod().Namespace("ns").Name("job-submitter").SchedulerName(lt.SchedulerName).Obj()
	submitter.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "uid-job", Controller: ptr.To(true)}}
	lookalike := rayPod("ray", "uid-ray", NodeTypeWorker)
	lookalike.OwnerReferences = nil
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want filing.Filing
		ok   bool
	}{
		{"head", rayPod("ray", "uid-ray", NodeTypeHead), filing.Filing{Name: group, Created: true, Labelled: true}, true},
		{"worker", rayPod("ray", "uid-ray", NodeTypeWorker), filing.Filing{Name: group, Created: true, Labelled: true}, true},
		{"RayCluster not seen yet", rayPod("later", "uid-later", NodeTypeWorker),
			filing.Filing{Name: GroupName("later", "uid-later"), Created: true, Labelled: true, Unseen: true}, true},
		{"a RayCluster made again under the same name", rayPod("ray", "uid-new", NodeTypeWorker),
			filing.Filing{Name: GroupName("ray", "uid-new"), Created: true, Labelled: true, Unseen: true}, true},
		{"head of another scheduler: no group", rayPod("other", "uid-other", NodeTypeWorker), filing.Filing{}, false},
		{"RayJob submitter", submitter, filing.Filing{}, false},
		{"labels without the RayCluster as controller", lookalike, filing.Filing{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := a.GroupOfPod(tc.pod, ours)
			if ok != tc.ok || got != tc.want {
				t.Errorf("GroupOfPod = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			object, labelled := a.Labelled(tc.pod)
			if tc.ok && (!labelled || object != "ns/"+tc.want.Name) {
				t.Errorf("Labelled = %q, %v; want ns/%s (the PodGroup it is filed under)", object, labelled, tc.want.Name)
			}
		})
	}
}
