package podgroup

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
