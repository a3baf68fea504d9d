package podgroup

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// indexedJob returns an Indexed Job with parallelism = completions = n.
func indexedJob(name string, n int32, annotations map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Annotations: annotations,
			CreationTimestamp: metav1.NewTime(epoch)},
		Spec: batchv1.JobSpec{
			Parallelism:    ptr.To(n),
			Completions:    ptr.To(n),
			CompletionMode: ptr.To(batchv1.IndexedCompletion),
			Template:       v1.PodTemplateSpec{Spec: v1.PodSpec{SchedulerName: testScheduler}},
		},
	}
}

func TestGangForJob(t *testing.T) {
	names := sets.New(testScheduler)
	name := JobGroupName("train", "uid-train")
	tests := []struct {
		name     string
		job      func() *batchv1.Job
		want     *JobGang
		problems []string
	}{
		{name: "indexed, completions == parallelism", job: func() *batchv1.Job { return indexedJob("train", 4, nil) },
			want: &JobGang{Name: name, MinCount: 4}},
		{name: "parallelism 1", job: func() *batchv1.Job { return indexedJob("train", 1, nil) }},
		{name: "non-indexed", job: func() *batchv1.Job {
			j := indexedJob("train", 4, nil)
			j.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
			return j
		}},
		{name: "completions != parallelism", job: func() *batchv1.Job {
			j := indexedJob("train", 4, nil)
			j.Spec.Completions = ptr.To[int32](8)
			return j
		}},
		{name: "another scheduler", job: func() *batchv1.Job {
			j := indexedJob("train", 4, nil)
			j.Spec.Template.Spec.SchedulerName = "default-scheduler"
			return j
		}},
		{name: "owned by a JobSet", job: func() *batchv1.Job {
			j := indexedJob("train", 4, nil)
			j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: "js", Controller: ptr.To(true)}}
			return j
		}},
		{name: "brings its own group", job: func() *batchv1.Job {
			j := indexedJob("train", 4, nil)
			j.Spec.Template.Labels = map[string]string{v1alpha1.PodGroupLabel: "mine"}
			return j
		}},
		{name: "opted in though not indexed", job: func() *batchv1.Job {
			j := indexedJob("train", 3, map[string]string{v1alpha1.JobGangAnnotation: "true"})
			j.Spec.CompletionMode = nil
			j.Spec.Completions = ptr.To[int32](10)
			return j
		}, want: &JobGang{Name: name, MinCount: 3}},
		{name: "opted out", job: func() *batchv1.Job {
			return indexedJob("train", 4, map[string]string{v1alpha1.JobGangAnnotation: "false"})
		}},
		{name: "min-count, topology", job: func() *batchv1.Job {
			return indexedJob("train", 4, map[string]string{
				v1alpha1.JobMinCountAnnotation:          "3",
				v1alpha1.JobTopologyRequiredAnnotation:  "topology.kubernetes.io/block",
				v1alpha1.JobTopologyPreferredAnnotation: "topology.kubernetes.io/rack",
			})
		}, want: &JobGang{Name: name, MinCount: 3, Topology: []v1alpha1.TopologyConstraint{
			{Key: "topology.kubernetes.io/block", Mode: v1alpha1.TopologyRequired},
			{Key: "topology.kubernetes.io/rack", Mode: v1alpha1.TopologyPreferred},
		}}},
		{name: "invalid annotations are reported and ignored", job: func() *batchv1.Job {
			return indexedJob("train", 4, map[string]string{
				v1alpha1.JobGangAnnotation:             "maybe",
				v1alpha1.JobMinCountAnnotation:         "five",
				v1alpha1.JobTopologyRequiredAnnotation: "not a key",
			})
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{
			`annotation scheduling.lockstep.dev/gang="maybe" is not true or false; ignored`,
			`annotation scheduling.lockstep.dev/min-count="five" is not a positive integer; minCount stays 4`,
			`annotation scheduling.lockstep.dev/topology-required="not a key" is not a label key; ignored`,
		}},
		{name: "min-count above parallelism", job: func() *batchv1.Job {
			return indexedJob("train", 4, map[string]string{v1alpha1.JobMinCountAnnotation: "5"})
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{
			`annotation scheduling.lockstep.dev/min-count="5" exceeds parallelism 4 and could never be met; minCount stays 4`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := GangForJob(tc.job(), names)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gang (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.problems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobGroupName(t *testing.T) {
	a, b := JobGroupName("train", "uid-1"), JobGroupName("train", "uid-2")
	if a == b || !strings.HasPrefix(a, "train-") {
		t.Errorf("names %q and %q: want distinct names per Job UID, starting with the Job's name", a, b)
	}
	long := JobGroupName(strings.Repeat("x", 200), "uid")
	if len(long) > 63 {
		t.Errorf("name of %d characters does not fit a label value", len(long))
	}
}

// Pods controlled by a Job that gets a gang join its PodGroup through the owner reference,
// wait for it, and after jobGroupTimeout without it are scheduled without gang semantics;
// a PodGroup that appears later still takes them back (a late PodGroup strands nobody).
func TestJobPodsJoinTheJobsPodGroup(t *testing.T) {
	m, clk, rec := testModel(t)
	job := indexedJob("train", 2, nil)
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
	m.jobLister = factory.Batch().V1().Jobs().Lister()
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
		t.Fatal(err)
	}
	ownedBy := func(job *batchv1.Job, i int) *v1.Pod {
		p := pod(job.Name, i, "")
		p.Labels = nil
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
		return p
	}
	pods := []*v1.Pod{ownedBy(job, 0), ownedBy(job, 1)}
	for _, p := range pods {
		m.OnPod(nil, p)
	}
	want := PodGroupKey("ns", JobGroupName("train", job.UID))
	v := m.Admit(klog.Background(), pods[0])
	if v.Code != MissingGroup || v.Group != want || !strings.Contains(v.Message, `workload controller to create PodGroup`) {
		t.Fatalf("Admit = %+v, want MissingGroup for %s", v, want)
	}
	// The PodGroup appears: the pods are members and may proceed.
	m.OnGroup(nil, pg(want.Name, 2, ""))
	if v := m.Admit(klog.Background(), pods[0]); v.Code != Proceed {
		t.Fatalf("Admit with the PodGroup = %+v, want Proceed", v)
	}
	if activated, _, _ := rec.take(); len(activated) < 2 {
		t.Errorf("activated %v, want both pods once their PodGroup appeared", activated)
	}

	// Another Job whose PodGroup comes late: its pods are released after the timeout, and
	// join the PodGroup when it appears after all.
	late := indexedJob("late", 2, nil)
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(late); err != nil {
		t.Fatal(err)
	}
	lp := []*v1.Pod{ownedBy(late, 0), ownedBy(late, 1)}
	for _, p := range lp {
		m.OnPod(nil, p)
	}
	if v := m.Admit(klog.Background(), lp[0]); v.Code != MissingGroup {
		t.Fatalf("Admit = %+v, want MissingGroup", v)
	}
	clk.Step(3 * time.Minute)
	if activated, _, _ := rec.take(); !slices.Contains(activated, "late-0") {
		t.Fatalf("the late Job's pod was not activated: %v", activated)
	}
	if v := m.Admit(klog.Background(), lp[0]); v.Code != NotMember {
		t.Errorf("Admit after the timeout = %+v, want NotMember", v)
	}
	// One pod ran without a gang meanwhile; the PodGroup appears: both are members again,
	// the bound one counting, and the pending one may proceed.
	bound := lp[0].DeepCopy()
	bound.Spec.NodeName = "n1"
	m.OnPod(lp[0], bound)
	m.OnGroup(nil, pg(JobGroupName("late", late.UID), 2, ""))
	if v := m.Admit(klog.Background(), lp[1]); v.Code != Proceed {
		t.Fatalf("Admit once the late PodGroup exists = %+v, want Proceed", v)
	}
	if d := reservePermit(m, lp[1]); !d.Allow {
		t.Errorf("Permit = %+v, want allowed: with the bound pod the gang of 2 is complete", d)
	}
}

// A Job's succeeded pods count as having run: an index retried after its siblings
// completed is not held for pods that will never exist again.
func TestJobSucceededPodsCount(t *testing.T) {
	m, _, _ := testModel(t)
	job := indexedJob("train", 4, nil)
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
	m.jobLister = factory.Batch().V1().Jobs().Lister()
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
		t.Fatal(err)
	}
	m.OnGroup(nil, pg(JobGroupName("train", job.UID), 4, ""))
	retry := pod("train", 3, "")
	retry.Labels = nil
	retry.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	m.OnPod(nil, retry)
	if v := m.Admit(klog.Background(), retry); v.Code != WaitingForPods || !strings.Contains(v.Message, "1 of 4 pods exist") {
		t.Fatalf("Admit = %+v, want waiting for pods", v)
	}
	done := job.DeepCopy()
	done.Status.Succeeded = 3
	m.OnJob(done)
	if v := m.Admit(klog.Background(), retry); v.Code != Proceed {
		t.Fatalf("Admit with 3 of 4 indexes succeeded = %+v, want Proceed", v)
	}
	if d := reservePermit(m, retry); !d.Allow {
		t.Errorf("Permit = %+v, want allowed", d)
	}
}

// When no workload controller creates the PodGroups (it is turned off), the pods of a Job
// that would get a gang wait for nothing: they are scheduled as they come, and join a
// PodGroup someone created for the Job all the same.
func TestJobPodsWaitForNoGroupNobodyCreates(t *testing.T) {
	m, _, _ := testModel(t)
	m.workloads = JobGangs{Created: false}
	job := indexedJob("train", 2, nil)
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
	m.jobLister = factory.Batch().V1().Jobs().Lister()
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
		t.Fatal(err)
	}
	p := pod(job.Name, 0, "")
	p.Labels = nil
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	m.OnPod(nil, p)
	if v := m.Admit(klog.Background(), p); v.Code != NotMember {
		t.Fatalf("Admit = %+v, want NotMember: nobody creates the Job's PodGroup", v)
	}
	m.OnGroup(nil, pg(JobGroupName("train", job.UID), 1, ""))
	if v := m.Admit(klog.Background(), p); v.Code != Proceed || v.Group.Name != JobGroupName("train", job.UID) {
		t.Errorf("Admit with the PodGroup created = %+v, want Proceed as its member", v)
	}
}
