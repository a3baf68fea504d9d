package jobset

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// childJob returns the Job the JobSet controller runs for index of rj: controller-owned by
// js, labelled with the ReplicatedJob, index and restart attempt, with rj's Job spec.
func childJob(js *jobSet, rj replicatedJob, index, attempt int) *batchv1.Job {
	j := lt.MakeJob().Namespace(js.Namespace).Name(js.Name+"-"+rj.Name+"-"+strconv.Itoa(index)).
		Label(LabelJobSetName, js.Name).Label(LabelReplicatedJob, rj.Name).
		Label(LabelJobIndex, strconv.Itoa(index)).Label(LabelRestartAttempt, strconv.Itoa(attempt)).
		Owner("jobset.x-k8s.io/v1alpha2", "JobSet", js.Name, string(js.UID))
	j.Spec = *rj.Template.Spec.DeepCopy() // the JobSet controller's copy of the template
	return j.Obj()
}

// toUnstructured is the JobSet as the dynamic client serves it.
func toUnstructured(t *testing.T, js *jobSet) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(js)
	if err != nil {
		t.Fatalf("converting JobSet %s: %v", js.Name, err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// adapterWith returns an Adapter watching a fake API that serves jobSets, its informer synced.
func adapterWith(t *testing.T, jobSets ...*jobSet) *Adapter {
	t.Helper()
	var objs []runtime.Object
	for _, js := range jobSets {
		objs = append(objs, toUnstructured(t, js))
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "JobSetList"}, objs...)
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	a := New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if _, err := a.Watch(jobframework.Informers{Dynamic: f, APIs: jobframework.ServedAPIs(ctx, GVR)}, nil); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	f.Start(ctx.Done())
	t.Cleanup(func() {
		cancel() // stops the informers; Shutdown waits for them
		f.Shutdown()
	})
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", gvr)
		}
	}
	return a
}

// TestGroupOfJobIsTreesPodGroup proves the invariant that files pods: for every child Job of
// a JobSet, at every restart attempt, GroupOfJob names exactly the PodGroup treeOf makes for
// that Job (the k-th PodGroup under its ReplicatedJob's CompositePodGroup for job-index k),
// whether the JobSet is in the lister or not yet seen.
func TestGroupOfJobIsTreesPodGroup(t *testing.T) {
	tests := []struct {
		name string
		js   func() *jobSet
	}{
		{name: "2 rjobs x 2 replicas", js: func() *jobSet { return newJobSet("train", rjob("driver", 2, 4), rjob("workers", 2, 4)) }},
		{name: "staged, 12 replicas (two-digit indices)", js: func() *jobSet {
			js := newJobSet("staged", rjob("init", 1, 1), rjob("workers", 12, 2), rjob("w", 2, 2))
			js.Spec.StartupPolicy = &startupPolicy{StartupPolicyOrder: InOrder}
			return js
		}},
		{name: "dependsOn", js: func() *jobSet {
			return newJobSet("deps", rjob("driver", 1, 1), dependsOnAll(rjob("workers", 3, 4), DependencyReady, "driver"))
		}},
		{name: "long names", js: func() *jobSet {
			return newJobSet(strings.Repeat("j", 63), rjob(strings.Repeat("r", 60)+"a", 3, 2), rjob(strings.Repeat("r", 60)+"b", 3, 2))
		}},
		{name: "exclusive topology", js: func() *jobSet {
			return annotate(newJobSet("excl", rjob("a", 4, 2)), AnnotationExclusiveTopology, rackKey)
		}},
	}
	for _, tc := range tests {
		for _, seen := range []bool{false, true} {
			for _, attempt := range []int{0, 1, 2} {
				t.Run(tc.name+"/seen="+strconv.FormatBool(seen)+"/attempt="+strconv.Itoa(attempt), func(t *testing.T) {
					js := tc.js()
					js.Status.Restarts = int32(attempt)
					tree, _ := treeOf(js, ours)
					if tree == nil {
						t.Fatalf("treeOf = nil")
					}
					a := New()
					if seen {
						a = adapterWith(t, js)
					}
					rjobCPG := map[string]string{} // ReplicatedJob -> its CompositePodGroup
					for _, c := range tree.Composites {
						if c.Parent != "" {
							rjobCPG[c.Template] = c.Name
						}
					}
					filed := sets.New[string]()
					for _, rj := range js.Spec.ReplicatedJobs {
						pgs := childrenOf(tree.PodGroups, rjobCPG[rj.Name])
						if len(pgs) != int(max(rj.Replicas, 1)) {
							t.Fatalf("rjob %s: %d PodGroups under %q, want %d", rj.Name, len(pgs), rjobCPG[rj.Name], rj.Replicas)
						}
						for i := range pgs {
							job := childJob(js, rj, i, attempt)
							name, ok := a.GroupOfJob(job, ours)
							if !ok || name != pgs[i].Name {
								t.Errorf("GroupOfJob(Job %s, attempt %d) = %q, %v; treeOf's PodGroup for it is %q", job.Name, attempt, name, ok, pgs[i].Name)
							}
							filed.Insert(name)
							// A reader of pods alone (kubectl lockstep) finds the same PodGroup.
							pod := lt.MakePod().Labels(job.Labels).Label(LabelJobSetUID, string(js.UID)).Obj()
							if got, ok := PodGroupOfPod(pod); !ok || got != pgs[i].Name {
								t.Errorf("PodGroupOfPod(pod of Job %s, attempt %d) = %q, %v; want %q", job.Name, attempt, got, ok, pgs[i].Name)
							}
						}
					}
					if want := sets.New(groupNames(tree.PodGroups)...); !filed.Equal(want) {
						t.Errorf("the child Jobs are filed under %v, the tree's PodGroups are %v", sets.List(filed), sets.List(want))
					}
				})
			}
		}
	}
}

// TestGroupOfJobLeavesOtherJobsAlone proves GroupOfJob claims only Jobs a JobSet that gets
// groups runs: not Jobs of another owner, of another scheduler, without the JobSet's labels,
// or of a JobSet that opted out.
func TestGroupOfJobLeavesOtherJobsAlone(t *testing.T) {
	base := func() *jobSet { return newJobSet("train", rjob("workers", 2, 4)) }
	tests := []struct {
		name   string
		lister []*jobSet // the JobSets the adapter sees; nil: no lister at all
		job    func(js *jobSet) *batchv1.Job
		wantOK bool
	}{
		{name: "the JobSet's Job, JobSet not seen", wantOK: true},
		{name: "the JobSet's Job, JobSet seen", lister: []*jobSet{base()}, wantOK: true},
		{name: "JobSet with gang=maybe still gets groups", lister: []*jobSet{annotate(base(), v1alpha1.JobGangAnnotation, "maybe")}, wantOK: true},
		{name: "a recreated JobSet's opt-out is not its predecessor's", lister: []*jobSet{func() *jobSet {
			js := annotate(base(), v1alpha1.JobGangAnnotation, "false")
			js.UID = "other"
			return js
		}()}, wantOK: true},
		{name: "JobSet opted out", lister: []*jobSet{annotate(base(), v1alpha1.JobGangAnnotation, "false")}},
		{name: "owned by a CronJob", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			j.OwnerReferences[0].APIVersion, j.OwnerReferences[0].Kind = "batch/v1", "CronJob"
			return j
		}},
		{name: "another kind of the JobSet group", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			j.OwnerReferences[0].Kind = "ReplicatedJob"
			return j
		}},
		{name: "a JobSet kind of another group", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			j.OwnerReferences[0].APIVersion = "example.com/v1"
			return j
		}},
		{name: "owner reference that is not the controller", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			j.OwnerReferences[0].Controller = nil
			return j
		}},
		{name: "no owner", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			j.OwnerReferences = nil
			return j
		}},
		{name: "pods of another scheduler", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			j.Spec.Template.Spec.SchedulerName = otherScheduler
			return j
		}},
		{name: "no replicatedjob-name label", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			delete(j.Labels, LabelReplicatedJob)
			return j
		}},
		{name: "no job-index label", job: func(js *jobSet) *batchv1.Job {
			j := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			delete(j.Labels, LabelJobIndex)
			return j
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js := base()
			job := childJob(js, js.Spec.ReplicatedJobs[0], 0, 0)
			if tc.job != nil {
				job = tc.job(js)
			}
			a := New()
			if tc.lister != nil {
				a = adapterWith(t, tc.lister...)
			}
			name, ok := a.GroupOfJob(job, ours)
			if ok != tc.wantOK {
				t.Fatalf("GroupOfJob = %q, %v; want ok %v", name, ok, tc.wantOK)
			}
			if ok {
				tree, _ := treeOf(js, ours)
				if want := tree.PodGroups[0].Name; name != want {
					t.Errorf("GroupOfJob = %q, want treeOf's first PodGroup %q", name, want)
				}
			}
		})
	}
}

// TestAdapterGroupsReadsTheServedJobSet proves Groups, fed the JobSet the dynamic informer
// serves (unstructured, through the lister), returns what treeOf makes of the typed JobSet:
// no field the tree depends on is lost in decoding. It also proves Get returns nil, not an
// error, for a JobSet that does not exist, and for any JobSet while the API is not served.
func TestAdapterGroupsReadsTheServedJobSet(t *testing.T) {
	js := annotate(newJobSet("train", rjob("init", 1, 1), dependsOnAll(rjob("workers", 3, 4), DependencyReady, "init")),
		v1alpha1.JobTopologyRequiredAnnotation, zoneKey, AnnotationExclusiveTopology, rackKey)
	js.Spec.ReplicatedJobs[1].Template.Annotations = map[string]string{v1alpha1.JobTopologyPreferredAnnotation: rackKey}
	js.Spec.ReplicatedJobs[1].Template.Spec.Completions = ptr.To[int32](2)
	js.Status.Restarts = 2
	js.Status.Conditions = []metav1.Condition{{Type: "Completed", Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now(), Reason: "AllJobsCompleted"}}

	a := adapterWith(t, js)
	obj, err := a.Get(js.Namespace, js.Name)
	if err != nil || obj == nil {
		t.Fatalf("Get(%s) = %v, %v; want the JobSet", js.Name, obj, err)
	}
	got, gotProblems := a.Groups(obj, nil, ours)
	want, wantProblems := treeOf(js, ours)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Groups of the served JobSet differ from treeOf of the typed one (-treeOf +Groups):\n%s", diff)
	}
	if diff := cmp.Diff(wantProblems, gotProblems); diff != "" {
		t.Errorf("problems (-treeOf +Groups):\n%s", diff)
	}
	if !got.Finished || len(childrenOf(got.Composites, "")) != 2 {
		t.Errorf("decoded JobSet lost its status or dependsOn: Finished %v, roots %v", got.Finished, groupNames(childrenOf(got.Composites, "")))
	}

	if obj, err := a.Get(js.Namespace, "missing"); err != nil || obj != nil {
		t.Errorf("Get(missing) = %v, %v; want nil, nil", obj, err)
	}
	unserved := New()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{GVR: "JobSetList"})
	synced, err := unserved.Watch(jobframework.Informers{Dynamic: dynamicinformer.NewDynamicSharedInformerFactory(client, 0),
		APIs: jobframework.ServedAPIs(context.Background())}, func(string) {})
	if err != nil || len(synced) != 0 {
		t.Errorf("Watch while JobSets are not served = %d synced, %v; want nothing to wait for", len(synced), err)
	}
	if obj, err := unserved.Get(js.Namespace, js.Name); err != nil || obj != nil {
		t.Errorf("Get while JobSets are not served = %v, %v; want nil, nil", obj, err)
	}
}
