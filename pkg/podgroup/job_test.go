package podgroup

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-sched/lockstep/pkg/filing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// Pods controlled by a Job that gets a gang join its PodGroup through the owner reference,
// wait for it, and after jobGroupTimeout without it are scheduled without gang semantics;
// a PodGroup that appears later still takes them back (a late PodGroup strands nobody).
func TestJobPodsJoinTheJobsPodGroup(t *testing.T) {
	m, clk, rec := testModel(t)
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).Obj()
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
		t.Fatal(err)
	}
	ownedBy := func(job *batchv1.Job, i int) *v1.Pod {
		p := lt.Member("ns", job.Name, i).Obj()
		p.Labels = nil
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
		return p
	}
	pods := []*v1.Pod{ownedBy(job, 0), ownedBy(job, 1)}
	for _, p := range pods {
		m.OnPod(nil, p)
	}
	want := PodGroupKey("ns", filing.JobGroupName("train", job.UID))
	v := m.Gate().Admit(klog.Background(), pods[0])
	if v.Code != MissingGroup || v.Group != want || !strings.Contains(v.Message, `workload controller to create PodGroup`) {
		t.Fatalf("Admit = %+v, want MissingGroup for %s", v, want)
	}
	// The PodGroup appears: the pods are members and may proceed.
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(want.Name).Gang(2).Obj())
	if v := m.Gate().Admit(klog.Background(), pods[0]); v.Code != Proceed {
		t.Fatalf("Admit with the PodGroup = %+v, want Proceed", v)
	}
	if activated, _, _ := rec.take(); len(activated) < 2 {
		t.Errorf("activated %v, want both pods once their PodGroup appeared", activated)
	}

	// Another Job whose PodGroup comes late: its pods are released after the timeout, and
	// join the PodGroup when it appears after all.
	late := lt.MakeJob().Namespace("ns").Name("late").Indexed(2).Obj()
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(late); err != nil {
		t.Fatal(err)
	}
	lp := []*v1.Pod{ownedBy(late, 0), ownedBy(late, 1)}
	for _, p := range lp {
		m.OnPod(nil, p)
	}
	if v := m.Gate().Admit(klog.Background(), lp[0]); v.Code != MissingGroup {
		t.Fatalf("Admit = %+v, want MissingGroup", v)
	}
	clk.Step(3 * time.Minute)
	if activated, _, _ := rec.take(); !slices.Contains(activated, "late-0") {
		t.Fatalf("the late Job's pod was not activated: %v", activated)
	}
	if v := m.Gate().Admit(klog.Background(), lp[0]); v.Code != NotMember {
		t.Errorf("Admit after the timeout = %+v, want NotMember", v)
	}
	// One pod ran without a gang meanwhile; the PodGroup appears: both are members again,
	// the bound one counting, and the pending one may proceed.
	bound := lp[0].DeepCopy()
	bound.Spec.NodeName = "n1"
	m.OnPod(lp[0], bound)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(filing.JobGroupName("late", late.UID)).Gang(2).Obj())
	if v := m.Gate().Admit(klog.Background(), lp[1]); v.Code != Proceed {
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
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
		t.Fatal(err)
	}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(filing.JobGroupName("train", job.UID)).Gang(4).Obj())
	retry := lt.Member("ns", "train", 3).Obj()
	retry.Labels = nil
	retry.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	m.OnPod(nil, retry)
	if v := m.Gate().Admit(klog.Background(), retry); v.Code != WaitingForPods || !strings.Contains(v.Message, "1 of 4 pods exist") {
		t.Fatalf("Admit = %+v, want waiting for pods", v)
	}
	done := job.DeepCopy()
	done.Status.Succeeded = 3
	m.OnJob(done)
	if v := m.Gate().Admit(klog.Background(), retry); v.Code != Proceed {
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
	m.book = filing.NewBook(filing.JobGangs{Created: false})
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).Obj()
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
		t.Fatal(err)
	}
	p := lt.Member("ns", job.Name, 0).Obj()
	p.Labels = nil
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	m.OnPod(nil, p)
	if v := m.Gate().Admit(klog.Background(), p); v.Code != NotMember {
		t.Fatalf("Admit = %+v, want NotMember: nobody creates the Job's PodGroup", v)
	}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(filing.JobGroupName("train", job.UID)).Gang(1).Obj())
	if v := m.Gate().Admit(klog.Background(), p); v.Code != Proceed || v.Group.Name != filing.JobGroupName("train", job.UID) {
		t.Errorf("Admit with the PodGroup created = %+v, want Proceed as its member", v)
	}
}

// typedEvents is an EventRecorder that keeps "<object name> <type> <reason>" of each event.
type typedEvents struct {
	mu     sync.Mutex
	events []string
}

func (e *typedEvents) Eventf(regarding, _ runtime.Object, eventtype, reason, _, _ string, _ ...interface{}) {
	name := "?"
	if o, ok := regarding.(metav1.Object); ok {
		name = o.GetName()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, name+" "+eventtype+" "+reason)
}

// take returns and forgets the events recorded, sorted.
func (e *typedEvents) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.events
	e.events = nil
	slices.Sort(out)
	return out
}

// A pod whose PodGroup does not exist is told so by one event: Normal (WaitingForPodGroup)
// while lockstep's workload controller is creating the group (a Job's gang, as healthy Jobs'
// pods all wait a moment), Warning (PodGroupNotFound) once the wait is longer than a quarter
// of the profile's jobGroupTimeout (30 s of 120), or at once for a group the pod's label
// names, which no controller creates. Each pod is told once of each; nothing is kept of a
// pod that is gone.
func TestMissingGroupIsAWarningOnlyOnceTheWaitIsLong(t *testing.T) {
	const normal, warning = v1.EventTypeNormal, v1.EventTypeWarning
	tests := []struct {
		name string
		// labelled: the pods name PodGroup "g" by their label (else they are a Job's).
		labelled bool
		// steps: how long after the pods' creation the test looks, and the events then
		// (at 0 the pods are admitted); created: the PodGroup is created after the last.
		steps   []time.Duration
		want    [][]string
		created bool
		// readmit: the scheduler's queue looks at the pods again at every step (a retry, a
		// flush); otherwise only at 0, and the model's timer tells them.
		readmit bool
	}{
		{
			name:  "an auto-grouped Job's pods: Normal while its group is created",
			steps: []time.Duration{0, 10 * time.Second, 25 * time.Second},
			want: [][]string{{"train-0 Normal WaitingForPodGroup", "train-1 Normal WaitingForPodGroup"},
				nil, nil},
			created: true,
		},
		{
			name:  "an auto-grouped Job's pods: Warning once the wait passes the bound",
			steps: []time.Duration{0, 29 * time.Second, 31 * time.Second, 90 * time.Second},
			want: [][]string{{"train-0 Normal WaitingForPodGroup", "train-1 Normal WaitingForPodGroup"},
				nil, {"train-0 Warning PodGroupNotFound", "train-1 Warning PodGroupNotFound"}, nil},
		},
		{
			name:  "an auto-grouped Job's pods looked at again: each event once",
			steps: []time.Duration{0, 29 * time.Second, 31 * time.Second, 90 * time.Second},
			want: [][]string{{"train-0 Normal WaitingForPodGroup", "train-1 Normal WaitingForPodGroup"},
				nil, {"train-0 Warning PodGroupNotFound", "train-1 Warning PodGroupNotFound"}, nil},
			readmit: true,
		},
		{
			name:     "a group the pods' label names, which nobody creates: Warning at once",
			labelled: true,
			steps:    []time.Duration{0, time.Minute},
			want:     [][]string{{"g-0 Warning PodGroupNotFound", "g-1 Warning PodGroupNotFound"}, nil},
			readmit:  true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, _ := testModel(t)
			ev := &typedEvents{}
			m.recorder = ev
			job := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).Obj()
			factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
			m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
			if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
				t.Fatal(err)
			}
			var pods []*v1.Pod
			for i := range 2 {
				p := lt.Member("ns", "g", i).Obj()
				if !tc.labelled {
					p = lt.Member("ns", job.Name, i).Obj()
					p.Labels = nil
					p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
				}
				pods = append(pods, p)
				m.OnPod(nil, p)
			}
			for i, at := range tc.steps {
				clk.Step(epoch.Add(at).Sub(clk.Now()))
				for _, p := range pods {
					if at > 0 && !tc.readmit {
						break
					}
					if v := m.Gate().Admit(klog.Background(), p); v.Code != MissingGroup {
						t.Fatalf("Admit(%s) at %s = %+v, want MissingGroup", p.Name, at, v)
					}
				}
				if got := ev.take(); !slices.Equal(got, tc.want[i]) {
					t.Errorf("events at %s: %v, want %v", at, got, tc.want[i])
				}
			}
			if tc.created {
				name := filing.JobGroupName(job.Name, job.UID)
				m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(2).Obj())
				clk.Step(time.Minute)
				if got := ev.take(); len(got) != 0 {
					t.Errorf("events once the group exists: %v, want none", got)
				}
			}
			for _, p := range pods {
				m.OnPodDelete(p)
			}
			clk.Step(time.Hour)
			for _, kind := range []string{"noticed", "groupWarnings"} {
				if n := m.Sizes()[kind]; n != 0 {
					t.Errorf("the model keeps %d %s once the pods are gone", n, kind)
				}
			}
		})
	}
}
