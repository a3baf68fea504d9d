package podgroup

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A pod belongs to the native PodGroup its spec.schedulingGroup names, never to the lockstep
// PodGroup of the same name (both may exist), and its gang is the native group's; the pods
// of a Job that the Job controller gave a basic native group, and that lockstep's rule makes
// a gang, keep their lockstep gang; a Job with spec.scheduling is the native group's.
func TestNativeMembership(t *testing.T) {
	m, _, _ := testModel(t)
	m.ReadNative(KindPodGroup)
	plain := lt.MakeJob().Namespace("ns").Name("plain").Indexed(2).Obj()
	scheduled := lt.MakeJob().Namespace("ns").Name("scheduled").Indexed(2).Obj()
	scheduled.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{}
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(plain, scheduled), 0)
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	for _, j := range []*batchv1.Job{plain, scheduled} {
		if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(j); err != nil {
			t.Fatal(err)
		}
	}
	native := func(name, group string, job *batchv1.Job) *v1.Pod {
		p := lt.MakePod().Namespace("ns").Name(name).UID(name).Obj()
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
		if job != nil {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
		}
		return p
	}
	nativeKey := Key{Kind: KindPodGroup, Namespace: "ns", Name: "train", API: APINative}
	// A lockstep PodGroup named train (min 1) and a native one (min 2): the native pods wait
	// for each other, as their own group says.
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("train").Gang(1).Obj())
	m.OnNativeGroup(nil, ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("train").Gang(2).Obj()))
	first := native("train-0", "train", nil)
	m.OnPod(nil, first)
	if k, ok := m.Gate().GroupOf(first); !ok || k != nativeKey {
		t.Fatalf("pod filed under %v, want %v", k, nativeKey)
	}
	if v := m.Gate().Admit(klog.Background(), first); v.Code == Proceed {
		t.Errorf("the first of a native gang of 2 proceeds alone: %+v", v)
	}
	second := native("train-1", "train", nil)
	m.OnPod(nil, second)
	if v := m.Gate().Admit(klog.Background(), first); v.Code != Proceed {
		t.Errorf("Admit with both native members = %+v, want Proceed", v)
	}

	for _, tc := range []struct {
		job  *batchv1.Job
		want Key
	}{
		{job: plain, want: PodGroupKey("ns", filing.JobGroupName("plain", plain.UID))},
		{job: scheduled, want: Key{Kind: KindPodGroup, Namespace: "ns", Name: "scheduled-pg", API: APINative}},
	} {
		p := native(tc.job.Name+"-0", tc.job.Name+"-pg", tc.job)
		m.OnPod(nil, p)
		if k, _ := m.Gate().GroupOf(p); k != tc.want {
			t.Errorf("pod of Job %s filed under %v, want %v", tc.job.Name, k, tc.want)
		}
	}
}

// A gated member holds its whole native group, as upstream's does; in a lockstep group (of
// the same name and shape) only itself, its siblings are placed and wait for it.
func TestGatedMemberHoldsItsNativeGroup(t *testing.T) {
	m, _, _ := testModel(t)
	m.ReadNative(KindPodGroup)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj())
	m.OnNativeGroup(nil, ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj()))
	var native, own []*v1.Pod
	for i := range 3 {
		n := lt.MakePod().Namespace("ns").Name(fmt.Sprintf("n-%d", i)).UID(fmt.Sprintf("n-%d", i)).PodGroupName("g").Obj()
		o := lt.Member("ns", "g", i).Obj()
		if i == 0 {
			n.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "foo-gate"}}
			o.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "foo-gate"}}
		}
		native, own = append(native, n), append(own, o)
		m.OnPod(nil, n)
		m.OnPod(nil, o)
	}
	if v := m.Gate().Admit(klog.Background(), native[1]); v.Code != AwaitingKueue || !strings.Contains(v.Message, "to lose their scheduling gates") {
		t.Errorf("native sibling of a gated member: %+v, want held for the gate", v)
	}
	if v := m.Gate().Admit(klog.Background(), own[1]); v.Code == AwaitingKueue {
		t.Errorf("lockstep sibling of a gated member held: %+v", v)
	}
	// The gate goes: the native group is tried.
	ungated := native[0].DeepCopy()
	ungated.Spec.SchedulingGates = nil
	m.OnPod(native[0], ungated)
	if v := m.Gate().Admit(klog.Background(), native[1]); v.Code == AwaitingKueue {
		t.Errorf("native sibling still held once the gate went: %+v", v)
	}
}

// Issue #55, 1.1 and 1.3: a pod's own group label wins over the basic native group the Job
// controller gave its Job (the native group decides only as a gang, or when the Job asked
// for it); and where the model does not read the native groups (--native-groups=false, no
// RBAC to list them), spec.schedulingGroup files nothing: the pod is filed by its labels or
// its Job, never left waiting for a group lockstep cannot see.
func TestLabelWinsOverABasicNativeGroup(t *testing.T) {
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).TemplateLabel("scheduling.lockstep.dev/pod-group", "mine").Obj()
	pod := func(name string) *v1.Pod {
		p := lt.Member("ns", "mine", 0).Obj()
		p.Name, p.UID = name, types.UID(name)
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("train-workload-pg")}
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
		return p
	}
	basic := ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("train-workload-pg").Basic().Obj())
	gang := ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("train-workload-pg").Gang(2).Obj())
	nativeKey := Key{Kind: KindPodGroup, Namespace: "ns", Name: "train-workload-pg", API: APINative}
	for _, tc := range []struct {
		name   string
		reads  bool
		native any
		want   Key
	}{
		{name: "a basic native group: the label wins", reads: true, native: basic, want: PodGroupKey("ns", "mine")},
		{name: "a native gang decides", reads: true, native: gang, want: nativeKey},
		{name: "native groups not read: the label files it", native: basic, want: PodGroupKey("ns", "mine")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			if tc.reads {
				m.ReadNative(KindPodGroup)
			}
			factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
			m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
			if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
				t.Fatal(err)
			}
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("mine").Gang(2).Obj())
			if tc.reads {
				m.OnNativeGroup(nil, tc.native)
			}
			p := pod("train-0")
			m.OnPod(nil, p)
			if k, ok := m.Gate().GroupOf(p); !ok || k != tc.want {
				t.Errorf("pod filed under %v (%v), want %v", k, ok, tc.want)
			}
		})
	}
}

// Issue #55, 1.4: a native-named pod of a Job lockstep has not seen yet waits for the Job, as
// lockstep's pods do, rather than proceed alone as a member of a basic native group and be
// filed again, half bound, once the Job is seen.
func TestNativeNamedPodOfAnUnseenJobWaitsForIt(t *testing.T) {
	m, _, _ := testModel(t)
	m.ReadNative(KindPodGroup)
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).Obj()
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	m.OnNativeGroup(nil, ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("train-pg").Basic().Obj()))
	p := lt.MakePod().Namespace("ns").Name("train-0").UID("train-0").Obj()
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("train-pg")}
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	m.OnPod(nil, p)
	if v := m.Gate().Admit(klog.Background(), p); v.Code == Proceed {
		t.Errorf("a pod of a Job not seen yet proceeds as a member of a basic native group: %+v", v)
	}
}

// The status writer's native branch: a native group lockstep schedules (its pods are of a
// lockstep profile) gets its conditions written on the native object; one whose pods another
// scheduler places gets none of lockstep's (no "waiting for pods", no Warning); and what was
// written on a native group that is gone is forgotten by the native kind (issue #55, 1.2).
func TestStatusWriterOnNativeGroups(t *testing.T) {
	ours := ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("ours").Gang(2).Obj())
	theirs := ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("theirs").Gang(2).Obj())
	ours.UID, theirs.UID = "ours-uid", "theirs-uid"
	kube := kubefake.NewClientset(ours, theirs)
	factory := informers.NewSharedInformerFactory(kube, 0)
	source := NewNativeSource(kube, factory)
	source.podGroups = "v1beta1"
	for _, o := range []any{ours, theirs} {
		if err := factory.Scheduling().V1beta1().PodGroups().Informer().GetStore().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	m, _, _ := testModel(t)
	m.ReadNative(KindPodGroup)
	m.OnNativeGroup(nil, ours)
	m.OnNativeGroup(nil, theirs)
	member := func(name, group, scheduler string) *v1.Pod {
		p := lt.MakePod().Namespace("ns").Name(name).UID(name).PodGroupName(group).SchedulerName(scheduler).Obj()
		return p
	}
	m.OnPod(nil, member("ours-0", "ours", testScheduler))
	m.OnPod(nil, member("theirs-0", "theirs", "default-scheduler"))
	w := NewStatusWriter(nil, nil, nil, nil)
	w.native = source
	ctx := context.Background()
	for _, name := range []string{"ours", "theirs"} {
		if err := w.sync(ctx, m.Gate(), Key{Kind: KindPodGroup, Namespace: "ns", Name: name, API: APINative}); err != nil {
			t.Fatal(err)
		}
	}
	got := func(name string) []metav1.Condition {
		t.Helper()
		pg, err := kube.SchedulingV1beta1().PodGroups("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pg.Status.Conditions
	}
	if c := got("ours"); len(c) != 1 || !strings.Contains(c[0].Message, "waiting for pods") {
		t.Errorf("the native group lockstep schedules carries %+v, want what it waits for", c)
	}
	if c := got("theirs"); len(c) != 0 {
		t.Errorf("a native group another scheduler places carries %+v, want none of lockstep's", c)
	}
	if w.Remembered() != 1 {
		t.Fatalf("the writer remembers %d writes, want 1", w.Remembered())
	}
	// The group is deleted: the writer forgets it, found gone by its native kind.
	if err := factory.Scheduling().V1beta1().PodGroups().Informer().GetStore().Delete(ours); err != nil {
		t.Fatal(err)
	}
	m.OnNativeGroupDelete(ours)
	if err := w.sync(ctx, m.Gate(), Key{Kind: KindPodGroup, Namespace: "ns", Name: "ours", API: APINative}); err != nil {
		t.Fatal(err)
	}
	if n := w.Remembered(); n != 0 {
		t.Errorf("the writer remembers %d writes of a deleted native group, want 0", n)
	}
}
