package raycluster

import (
	"context"
	"fmt"
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
	for i, w := range workers {
		rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, workerGroupSpec{
			GroupName: fmt.Sprintf("gpu%d", i), MinReplicas: ptr.To(w[0]), Replicas: ptr.To(w[0]), NumOfHosts: w[1], Template: template(lt.SchedulerName)})
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

// The gang is a tree: the head, and each lockstep worker group's minimum (minReplicas ×
// numOfHosts, not its replicas) counted apart, so that no group's surplus stands in for
// another's (or the head's) shortfall; worker groups without a minimum are not in it; a
// suspended cluster (queued in Kueue) and one whose pods name a group of their own get none;
// one whose head uses another scheduler is left alone.
func TestGroups(t *testing.T) {
	root := GroupName("ray", "uid-ray")
	for _, tc := range []struct {
		name        string
		rc          func() *rayCluster
		wantWorkers map[string]int32 // worker group -> minCount
		wantNone    bool             // NoGroups
		wantNil     bool             // left alone
		wantTopo    []v1alpha1.TopologyConstraint
		wantPrio    string
	}{
		{name: "head only", rc: func() *rayCluster { return cluster() }, wantWorkers: map[string]int32{}},
		{name: "head and minReplicas of each group", rc: func() *rayCluster { return cluster([2]int32{2, 1}, [2]int32{3, 0}) },
			wantWorkers: map[string]int32{"gpu0": 2, "gpu1": 3}},
		{name: "multi-host workers", rc: func() *rayCluster { return cluster([2]int32{2, 4}) }, wantWorkers: map[string]int32{"gpu0": 8}},
		{name: "replicas above minReplicas (autoscaled) do not count", rc: func() *rayCluster {
			rc := cluster([2]int32{1, 1})
			rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](5)
			return rc
		}, wantWorkers: map[string]int32{"gpu0": 1}},
		{name: "a group without a minimum is not in the gang", rc: func() *rayCluster { return cluster([2]int32{2, 1}, [2]int32{0, 1}) },
			wantWorkers: map[string]int32{"gpu0": 2}},
		{name: "a suspended worker group does not count", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1}, [2]int32{3, 1})
			rc.Spec.WorkerGroupSpecs[1].Suspend = ptr.To(true)
			return rc
		}, wantWorkers: map[string]int32{"gpu0": 2}},
		{name: "a worker group of another scheduler does not count", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1}, [2]int32{3, 1})
			rc.Spec.WorkerGroupSpecs[1].Template.Spec.SchedulerName = "default-scheduler"
			return rc
		}, wantWorkers: map[string]int32{"gpu0": 2}},
		{name: "rack required, priority from the head", rc: func() *rayCluster {
			rc := cluster([2]int32{3, 1})
			rc.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lt.RackKey}
			rc.Spec.HeadGroupSpec.Template.Spec.PriorityClassName = "high"
			return rc
		}, wantWorkers: map[string]int32{"gpu0": 3}, wantTopo: []v1alpha1.TopologyConstraint{{Key: lt.RackKey, Mode: v1alpha1.TopologyRequired}}, wantPrio: "high"},
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
		{name: "pods name a native PodGroup", rc: func() *rayCluster {
			rc := cluster([2]int32{2, 1})
			rc.Spec.HeadGroupSpec.Template.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("native")}
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
			want := []jobframework.Group{{Name: root, Template: TemplateName, Min: int32(1 + len(tc.wantWorkers)), Topology: tc.wantTopo, PriorityClassName: tc.wantPrio}}
			if got == nil || got.Workload != root || !cmp.Equal(got.Composites, want) {
				t.Fatalf("Groups = %+v, want the root %+v", got, want)
			}
			pgs := map[string]int32{}
			for _, g := range got.PodGroups {
				if g.Parent != root || g.PriorityClassName != tc.wantPrio {
					t.Errorf("PodGroup %+v: want parent %s, priority %q", g, root, tc.wantPrio)
				}
				pgs[g.Name] = g.Min
			}
			wantPGs := map[string]int32{HeadGroup(root): 1}
			for group, n := range tc.wantWorkers {
				wantPGs[WorkerGroup(root, group)] = n
			}
			if !cmp.Equal(pgs, wantPGs) {
				t.Errorf("PodGroups %v, want %v", pgs, wantPGs)
			}
			tmpl := got.Spec.CompositePodGroupTemplates
			if len(tmpl) != 1 || tmpl[0].SchedulingPolicy.Gang == nil || tmpl[0].SchedulingPolicy.Gang.MinGroupCount != want[0].Min ||
				len(tmpl[0].PodGroupTemplates) != len(wantPGs) {
				t.Errorf("templates %+v, want one composite of %d and %d PodGroup templates", tmpl, want[0].Min, len(wantPGs))
			}
		})
	}
}

// Worker group names become valid object name parts.
func TestWorkerGroup(t *testing.T) {
	if got := WorkerGroup("ray-1a2b3c4d", "GPU_workers.A100"); got != "ray-1a2b3c4d-w-gpu-workers-a100" {
		t.Errorf("WorkerGroup = %q", got)
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

// rayPod is a pod KubeRay made for RayCluster cluster (uid) of nodeType (a worker of group).
func rayPod(cluster string, uid types.UID, nodeType, group string) *v1.Pod {
	w := lt.MakePod().Namespace("ns").Name(cluster+"-"+nodeType).SchedulerName(lt.SchedulerName).
		Label(LabelCluster, cluster).Label(LabelNodeType, nodeType)
	if group != "" {
		w = w.Label(LabelGroup, group)
	}
	p := w.Obj()
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: cluster, UID: uid, Controller: ptr.To(true)}}
	return p
}

// A RayCluster's head is filed under its head's PodGroup and its workers under their worker
// group's (and name it as labelled objects), waiting for the RayCluster while it is not seen;
// other pods are not its: a RayJob's submitter, a pod that only looks like one, the workers of
// a group without a minimum, the pods of a RayCluster that gets no group.
func TestGroupOfPod(t *testing.T) {
	other := cluster()
	other.Name, other.UID = "other", "uid-other"
	other.Spec.HeadGroupSpec.Template.Spec.SchedulerName = "default-scheduler"
	a := adapterWith(t, cluster([2]int32{2, 1}, [2]int32{0, 1}), other)
	root := GroupName("ray", "uid-ray")
	submitter := lt.MakePod().Namespace("ns").Name("job-submitter").SchedulerName(lt.SchedulerName).Obj()
	submitter.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "uid-job", Controller: ptr.To(true)}}
	lookalike := rayPod("ray", "uid-ray", NodeTypeWorker, "gpu0")
	lookalike.OwnerReferences = nil
	later := GroupName("later", "uid-later")
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want filing.Filing
		ok   bool
	}{
		{"head", rayPod("ray", "uid-ray", NodeTypeHead, ""), filing.Filing{Name: HeadGroup(root), Created: true, Labelled: true}, true},
		{"worker", rayPod("ray", "uid-ray", NodeTypeWorker, "gpu0"), filing.Filing{Name: WorkerGroup(root, "gpu0"), Created: true, Labelled: true}, true},
		{"worker of a group without a minimum", rayPod("ray", "uid-ray", NodeTypeWorker, "gpu1"), filing.Filing{}, false},
		{"RayCluster not seen yet", rayPod("later", "uid-later", NodeTypeWorker, "gpu0"),
			filing.Filing{Name: WorkerGroup(later, "gpu0"), Created: true, Labelled: true, Unseen: true}, true},
		{"a RayCluster made again under the same name", rayPod("ray", "uid-new", NodeTypeHead, ""),
			filing.Filing{Name: HeadGroup(GroupName("ray", "uid-new")), Created: true, Labelled: true, Unseen: true}, true},
		{"head of another scheduler: no group", rayPod("other", "uid-other", NodeTypeWorker, "gpu0"), filing.Filing{}, false},
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
