package jobframework_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/coscheduling"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/job"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// schedulerPluginsPodGroup is a scheduler-plugins PodGroup as the dynamic client serves it.
func schedulerPluginsPodGroup(name string, minMember int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": coscheduling.GVK.GroupVersion().String(),
		"kind":       coscheduling.GVK.Kind,
		"metadata":   map[string]any{"namespace": ns, "name": name, "uid": "uid-" + name},
		"spec":       map[string]any{"minMember": minMember},
	}}
}

// workloadKinds returns the adapters in the scheduler's order (pkg/scheduler WorkloadKinds:
// JobSets, scheduler-plugins PodGroups, Jobs), as the scheduler watches them (no enqueue),
// the scheduler-plugins PodGroups pgs served (not served at all when served is false).
func workloadKinds(t *testing.T, served bool, pgs ...*unstructured.Unstructured) []jobframework.Adapter {
	t.Helper()
	var objs []runtime.Object
	for _, pg := range pgs {
		objs = append(objs, pg)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{coscheduling.GVR: "PodGroupList", jobset.GVR: "JobSetList"}, objs...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var servedAPIs []schema.GroupVersionResource
	if served {
		servedAPIs = append(servedAPIs, coscheduling.GVR)
	}
	f := jobframework.Informers{
		Kube:    informers.NewSharedInformerFactory(kubefake.NewClientset(), 0),
		Dynamic: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		APIs:    jobframework.ServedAPIs(ctx, servedAPIs...),
	}
	jobSets := jobset.New()
	adapters := []jobframework.Adapter{jobSets, coscheduling.New(dyn, jobSets), job.New()}
	for _, a := range adapters {
		if _, err := a.Watch(f, nil); err != nil {
			t.Fatalf("Watch(%v): %v", a.GVK(), err)
		}
	}
	f.Dynamic.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		f.Dynamic.Shutdown()
	})
	for gvr, ok := range f.Dynamic.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", gvr)
		}
	}
	return adapters
}

// TestFilerFilesLabelledPods proves the precedence of the scheduler's adapters over a pod
// (JobSet, scheduler-plugins PodGroup, Job): a pod of a JobSet's child Job belongs to the
// JobSet's PodGroup even when labelled for a scheduler-plugins PodGroup (Kubeflow Trainer
// labels them); any other labelled pod, a gang Job's (an MPI launcher's) too, to the PodGroup
// that mirrors the scheduler-plugins one, waiting while that one is not seen; an unlabelled
// pod to its Job's gang. While scheduler-plugins PodGroups are not served (yet), a labelled
// pod waits for its PodGroup as for one not seen. Created false (no workload controller)
// carries into every filing.
func TestFilerFilesLabelledPods(t *testing.T) {
	names := sets.New(lt.SchedulerName)
	child := lt.MakeJob().Namespace(ns).Name("js-workers-0").Indexed(2).
		Label(jobset.LabelReplicatedJob, "workers").Label(jobset.LabelJobIndex, "0").Label(jobset.LabelRestartAttempt, "0").
		Owner(jobset.GVK.GroupVersion().String(), jobset.GVK.Kind, "js", "uid-js").Obj()
	jobSetGroup, ok := jobset.New().GroupOfJob(child, names)
	if !ok {
		t.Fatal("the JobSet adapter does not claim the JobSet's child Job")
	}
	launcher := lt.MakeJob().Namespace(ns).Name("launcher").Indexed(2).Obj() // a gang by its own spec
	jobGroup := filing.JobGroupName(launcher.Name, launcher.UID)
	podOf := func(j *batchv1.Job, group string) *v1.Pod {
		p := lt.MakePod().Namespace(ns).Name("pod").UID("uid-pod")
		if j != nil {
			p = lt.ControlledBy(p, "batch/v1", "Job", j.Name, string(j.UID))
		}
		if group != "" {
			p = p.Label(coscheduling.Label, group)
		}
		return p.Obj()
	}
	tests := []struct {
		name         string
		notServed    bool
		job          *batchv1.Job // the pod's, nil for none
		label        string       // the scheduler-plugins PodGroup the pod names, "" for none
		want         filing.Filing
		wantLabelled string
	}{
		{name: "labelled pod of a JobSet's child Job: the JobSet's", job: child, label: "trainer",
			want: filing.Filing{Name: jobSetGroup, Created: true}, wantLabelled: "ns/trainer"},
		{name: "labelled pod of a gang Job: the mirror", job: launcher, label: "mpi",
			want: filing.Filing{Name: "mpi", Created: true, Labelled: true}, wantLabelled: "ns/mpi"},
		{name: "labelled pod without a Job: the mirror", label: "mpi",
			want: filing.Filing{Name: "mpi", Created: true, Labelled: true}, wantLabelled: "ns/mpi"},
		{name: "labelled pod, its PodGroup not seen: the mirror, unseen", job: launcher, label: "missing",
			want: filing.Filing{Name: "missing", Created: true, Labelled: true, Unseen: true}, wantLabelled: "ns/missing"},
		{name: "unlabelled pod of a gang Job: the Job's", job: launcher,
			want: filing.Filing{Name: jobGroup, Created: true}},
		{name: "unlabelled pod of a JobSet's child Job: the JobSet's", job: child,
			want: filing.Filing{Name: jobSetGroup, Created: true}},
		{name: "unlabelled pod of a Job of parallelism 1: none", job: lt.MakeJob().Namespace(ns).Name("one").Indexed(1).Obj()},
		{name: "unlabelled pod without a Job: none"},
		{name: "not served: labelled pod of a gang Job, the mirror, unseen", notServed: true, job: launcher, label: "mpi",
			want: filing.Filing{Name: "mpi", Created: true, Labelled: true, Unseen: true}, wantLabelled: "ns/mpi"},
		{name: "not served: labelled pod of a JobSet's child Job, the JobSet's", notServed: true, job: child, label: "trainer",
			want: filing.Filing{Name: jobSetGroup, Created: true}, wantLabelled: "ns/trainer"},
		{name: "not served: labelled pod without a Job, the mirror, unseen", notServed: true, label: "mpi",
			want: filing.Filing{Name: "mpi", Created: true, Labelled: true, Unseen: true}, wantLabelled: "ns/mpi"},
		{name: "not served: unlabelled pod of a gang Job, the Job's", notServed: true, job: launcher,
			want: filing.Filing{Name: jobGroup, Created: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			adapters := workloadKinds(t, !tc.notServed, schedulerPluginsPodGroup("mpi", 2), schedulerPluginsPodGroup("trainer", 3))
			for _, created := range []bool{true, false} {
				f := jobframework.Filer{Adapters: adapters, Created: created}
				if !f.HasSynced() {
					t.Errorf("HasSynced = false with every informer synced")
				}
				want := tc.want
				want.Created = want.Created && created
				got := f.GroupOfPod(podOf(tc.job, tc.label), tc.job, names)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("created %v: GroupOfPod (-want +got):\n%s", created, diff)
				}
				object, labelled := f.Labelled(podOf(tc.job, tc.label))
				if object != tc.wantLabelled || labelled != (tc.wantLabelled != "") {
					t.Errorf("Labelled = %q, %v; want %q", object, labelled, tc.wantLabelled)
				}
				// GroupOfJob (a Job's succeeded pods) is the Job adapters' alone.
				if tc.job != nil {
					name, gotCreated := f.GroupOfJob(tc.job, names)
					wantName := ""
					if !tc.want.Labelled {
						wantName = tc.want.Name
					} else if tc.job == launcher {
						wantName = jobGroup
					}
					if name != wantName || gotCreated != (wantName != "" && created) {
						t.Errorf("GroupOfJob = %q, %v; want %q, %v", name, gotCreated, wantName, wantName != "" && created)
					}
				}
			}
		})
	}
}
