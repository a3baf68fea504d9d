package podgroup

import (
	"fmt"
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
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// otherLabel is the label by which a pod names a group object of another scheduler's API
// (scheduler-plugins' PodGroup).
const otherLabel = "scheduling.x-k8s.io/pod-group"

// labelWorkloads is a Workloads that files a pod labelled otherLabel under the PodGroup of
// the name the label gives, which mirrors the object (as the scheduler-plugins adapter
// does): unseen while the object is not in seen. When jobFirst, the pods of a Job that gets
// a gang are filed by their Job first (as the JobSet adapter outranks the scheduler-plugins
// one). Other pods are filed as JobGangs files them.
type labelWorkloads struct {
	seen     sets.Set[string] // namespace/name
	jobFirst bool
}

var _ filing.Workloads = &labelWorkloads{}

func (w *labelWorkloads) GroupOfJob(job *batchv1.Job, names sets.Set[string]) (string, bool) {
	return filing.JobGangs{Created: true}.GroupOfJob(job, names)
}

func (w *labelWorkloads) GroupOfPod(pod *v1.Pod, job *batchv1.Job, names sets.Set[string]) filing.Filing {
	if job != nil && w.jobFirst {
		if name, created := w.GroupOfJob(job, names); name != "" {
			return filing.Filing{Name: name, Created: created}
		}
	}
	if object, ok := w.Labelled(pod); ok {
		return filing.Filing{Name: pod.Labels[otherLabel], Created: true, Labelled: true, Unseen: !w.seen.Has(object)}
	}
	return filing.JobGangs{Created: true}.GroupOfPod(pod, job, names)
}

func (w *labelWorkloads) Labelled(pod *v1.Pod) (string, bool) {
	name := pod.Labels[otherLabel]
	if name == "" {
		return "", false
	}
	return pod.Namespace + "/" + name, true
}

// eventLog is an EventRecorder that keeps "<object name> <reason>" of each event.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Eventf(regarding, _ runtime.Object, _, reason, _, _ string, _ ...interface{}) {
	name := "?"
	if o, ok := regarding.(metav1.Object); ok {
		name = o.GetName()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, name+" "+reason)
}

// take returns and forgets the events recorded.
func (e *eventLog) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.events
	e.events = nil
	return out
}

// labelModel returns a model (testModel's) whose Workloads is a labelWorkloads and whose
// events are logged.
func labelModel(t *testing.T) (*Model, *simClock, *recorder, *labelWorkloads, *eventLog) {
	t.Helper()
	m, clk, rec := testModel(t)
	w := &labelWorkloads{seen: sets.New[string]()}
	ev := &eventLog{}
	m.book, m.recorder = filing.NewBook(w), ev
	return m, clk, rec, w, ev
}

// labelled returns pod <object>-<i> of the lockstep profile, labelled for the object of
// another scheduler's API named object, created at created.
func labelled(object string, i int, created time.Time) *v1.Pod {
	p := lt.Member("ns", object, i).Obj()
	p.Labels = map[string]string{otherLabel: object}
	p.CreationTimestamp = metav1.NewTime(created)
	return p
}

// A labelled pod whose object is not seen waits for it (Unseen before the model saw the
// pod, MissingGroup after) until its profile's jobGroupTimeout from its creation; then it is
// no member (it is activated, and gets a PodGroupMissing event). Once the object is seen
// (OnLabelled), the pod is filed under its mirror again, and proceeds when the mirror exists.
func TestLabelledPodWaitsForItsObject(t *testing.T) {
	m, clk, rec, w, ev := labelModel(t)
	pods := []*v1.Pod{labelled("mpi", 0, epoch), labelled("mpi", 1, epoch)}
	mirror := PodGroupKey("ns", "mpi")
	if v := m.Gate().Admit(klog.Background(), pods[0]); v.Code != Unseen || v.Group != mirror {
		t.Fatalf("Admit before the model saw the pod = %+v, want Unseen for %s", v, mirror)
	}
	for _, p := range pods {
		m.OnPod(nil, p)
	}
	v := m.Gate().Admit(klog.Background(), pods[0])
	if v.Code != MissingGroup || v.Group != mirror || !strings.Contains(v.Message, `"ns/mpi", named by the pod's labels`) {
		t.Fatalf("Admit = %+v, want MissingGroup for %s, naming the object", v, mirror)
	}
	if got := ev.take(); !slices.Equal(got, []string{"mpi-0 WaitingForPodGroup"}) {
		t.Errorf("events %v, want WaitingForPodGroup on mpi-0 (its mirror is the workload controller's to make)", got)
	}
	rec.take()

	// Within the timeout: still waiting.
	clk.Step(time.Minute)
	if v := m.Gate().Admit(klog.Background(), pods[1]); v.Code != MissingGroup {
		t.Fatalf("Admit a minute later = %+v, want MissingGroup", v)
	}
	if activated, _, _ := rec.take(); len(activated) != 0 {
		t.Errorf("activated %v within the timeout, want none", activated)
	}
	// Past it: no member, activated, and told why.
	clk.Step(2 * time.Minute)
	if activated, _, _ := rec.take(); !slices.Equal(activated, []string{"mpi-0", "mpi-1"}) {
		t.Errorf("activated %v after the timeout, want both pods", activated)
	}
	for _, p := range pods {
		if v := m.Gate().Admit(klog.Background(), p); v.Code != NotMember {
			t.Errorf("Admit(%s) after the timeout = %+v, want NotMember", p.Name, v)
		}
	}
	if got := ev.take(); !slices.Contains(got, "mpi-0 PodGroupMissing") {
		t.Errorf("events %v, want PodGroupMissing on a pod", got)
	}

	// The object appears: the pods wait for its mirror again.
	w.seen.Insert("ns/mpi")
	m.OnLabelled("ns", "mpi", 0)
	if activated, _, _ := rec.take(); !slices.Equal(activated, []string{"mpi-0", "mpi-1"}) {
		t.Errorf("activated %v once the object is seen, want both pods", activated)
	}
	if v := m.Gate().Admit(klog.Background(), pods[0]); v.Code != MissingGroup || v.Group != mirror || !strings.Contains(v.Message, "mirror it as PodGroup") {
		t.Fatalf("Admit once the object is seen = %+v, want MissingGroup for the mirror %s", v, mirror)
	}
	// Its mirror appears: they proceed, a gang.
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("mpi").Gang(2).Obj())
	for _, p := range pods {
		if v := m.Gate().Admit(klog.Background(), p); !admittedOrScouted(v) || v.Group != mirror {
			t.Fatalf("Admit(%s) with the mirror = %+v, want Proceed (or its scout's)", p.Name, v)
		}
	}
	if d := reservePermit(m, pods[0]); d.Allow {
		t.Errorf("Permit of the first of 2 = %+v, want it to wait for the other", d)
	}
	if d := reservePermit(m, pods[1]); !d.Allow {
		t.Errorf("Permit of the second of 2 = %+v, want allowed", d)
	}
}

// The mirror of an object the scheduler has not seen yet (its informer is behind the
// controller's) takes the pods waiting for it at once.
func TestLabelledPodJoinsMirrorOfUnseenObject(t *testing.T) {
	m, _, rec, _, _ := labelModel(t)
	pods := []*v1.Pod{labelled("mpi", 0, epoch), labelled("mpi", 1, epoch)}
	for _, p := range pods {
		m.OnPod(nil, p)
	}
	if v := m.Gate().Admit(klog.Background(), pods[0]); v.Code != MissingGroup {
		t.Fatalf("Admit = %+v, want MissingGroup", v)
	}
	rec.take()
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("mpi").Gang(2).Obj())
	if activated, _, _ := rec.take(); len(activated) == 0 {
		t.Errorf("no pod activated when the mirror appeared")
	}
	for _, p := range pods {
		if v := m.Gate().Admit(klog.Background(), p); !admittedOrScouted(v) || v.Group != PodGroupKey("ns", "mpi") {
			t.Errorf("Admit(%s) = %+v, want Proceed (or its scout's) with the mirror", p.Name, v)
		}
	}
}

// Each pod of an unseen object waits its own jobGroupTimeout from its creation: a pod
// created after the first is not released with it, nor left waiting past its own timeout.
func TestLabelledPodsTimeOutEachInTurn(t *testing.T) {
	m, clk, rec, _, ev := labelModel(t)
	first := labelled("mpi", 0, epoch)
	clk.Step(30 * time.Second)
	second := labelled("mpi", 1, clk.Now())
	for _, p := range []*v1.Pod{first, second} {
		m.OnPod(nil, p)
		if v := m.Gate().Admit(klog.Background(), p); v.Code != MissingGroup {
			t.Fatalf("Admit(%s) = %+v, want MissingGroup", p.Name, v)
		}
	}
	rec.take()
	ev.take()
	clk.Step(2 * time.Minute) // the first's timeout is over, not the second's
	if activated, _, _ := rec.take(); !slices.Equal(activated, []string{"mpi-0"}) {
		t.Errorf("activated %v at the first pod's timeout, want mpi-0 alone", activated)
	}
	// (Peek: a pod held at PreEnqueue is asked again only when activated.)
	if v := m.Gate().Peek(second); v.Code != MissingGroup {
		t.Errorf("Peek(mpi-1) before its own timeout = %+v, want MissingGroup", v)
	}
	clk.Step(time.Minute) // the second's is over too
	if activated, _, _ := rec.take(); !slices.Contains(activated, "mpi-1") {
		t.Fatalf("activated %v after the second pod's timeout, want mpi-1: it would wait for nothing, forever", activated)
	}
	if v := m.Gate().Admit(klog.Background(), second); v.Code != NotMember {
		t.Errorf("Admit(mpi-1) after its timeout = %+v, want NotMember", v)
	}
	if got := ev.take(); !slices.Contains(got, "mpi-1 PodGroupMissing") {
		t.Errorf("events %v, want PodGroupMissing on mpi-1", got)
	}
}

// The pods of the object that completed count for the gang of its mirror (OnLabelled's ran,
// from the object's status): a gang of 3 of which 1 ran is complete with 2 pods.
func TestLabelledRanCountsForTheGang(t *testing.T) {
	tests := []struct {
		ran        int
		wantCode   VerdictCode
		wantPermit bool
	}{
		{ran: 0, wantCode: WaitingForPods},
		{ran: 1, wantCode: Proceed, wantPermit: true},
		{ran: 2, wantCode: Proceed, wantPermit: true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("ran %d", tc.ran), func(t *testing.T) {
			m, _, _, w, _ := labelModel(t)
			w.seen.Insert("ns/mpi")
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("mpi").Gang(3).Obj())
			pods := []*v1.Pod{labelled("mpi", 0, epoch), labelled("mpi", 1, epoch)}
			for _, p := range pods {
				m.OnPod(nil, p)
			}
			m.OnLabelled("ns", "mpi", tc.ran)
			v := m.Gate().Admit(klog.Background(), pods[0])
			if v.Code != tc.wantCode {
				t.Fatalf("Admit = %+v, want %v", v, tc.wantCode)
			}
			if tc.wantCode != Proceed {
				if !strings.Contains(v.Message, "2 of 3 pods exist") {
					t.Errorf("message %q, want 2 of 3 pods", v.Message)
				}
				return
			}
			reservePermit(m, pods[0])
			if d := reservePermit(m, pods[1]); d.Allow != tc.wantPermit {
				t.Errorf("Permit of the last pod = %+v, want allowed %v", d, tc.wantPermit)
			}
		})
	}
	// ran is the object's, not added up: told 0 again, the gang is short again.
	m, _, _, w, _ := labelModel(t)
	w.seen.Insert("ns/mpi")
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("mpi").Gang(3).Obj())
	p := labelled("mpi", 0, epoch)
	m.OnPod(nil, p)
	m.OnLabelled("ns", "mpi", 2)
	m.OnLabelled("ns", "mpi", 2)
	if v := m.Gate().Admit(klog.Background(), p); v.Code != Proceed {
		t.Fatalf("Admit with 2 ran = %+v, want Proceed", v)
	}
	m.OnLabelled("ns", "other", 5)
	m.OnLabelled("ns", "mpi", 0)
	fresh := labelled("mpi", 1, epoch)
	m.OnPod(nil, fresh)
	if v := m.Gate().Admit(klog.Background(), fresh); v.Code != WaitingForPods {
		t.Errorf("Admit with none ran = %+v, want WaitingForPods", v)
	}
}

// A pod that has both a Job and a label is filed as Workloads says: under its Job's gang
// when Workloads puts the Job first, else under the mirror; while its Job is not seen, under
// the mirror (not the Job's assumed PodGroup); and when the Job is seen, refiled.
func TestLabelledJobPodFollowsWorkloads(t *testing.T) {
	for _, jobFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("jobFirst=%v", jobFirst), func(t *testing.T) {
			m, _, rec, w, _ := labelModel(t)
			w.jobFirst = jobFirst
			w.seen.Insert("ns/mpi")
			job := lt.MakeJob().Namespace("ns").Name("launcher").Indexed(2).Obj()
			factory := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
			m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
			jobGroup := PodGroupKey("ns", filing.JobGroupName(job.Name, job.UID))
			mirror := PodGroupKey("ns", "mpi")
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(jobGroup.Name).Gang(2).Obj())
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(mirror.Name).Gang(2).Obj())
			p := labelled("mpi", 0, epoch)
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
			m.OnPod(nil, p)
			if v := m.Gate().Peek(p); v.Group != mirror {
				t.Errorf("filed under %v while its Job is not seen, want the mirror %v", v.Group, mirror)
			}
			rec.take()
			if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
				t.Fatal(err)
			}
			m.OnJob(job)
			want := mirror
			if jobFirst {
				want = jobGroup
			}
			if v := m.Gate().Peek(p); v.Group != want {
				t.Errorf("filed under %v once its Job is seen, want %v", v.Group, want)
			}
			activated, _, _ := rec.take()
			if moved := slices.Contains(activated, p.Name); moved != jobFirst {
				t.Errorf("activated %v; want the pod activated only if it moved (%v)", activated, jobFirst)
			}
		})
	}
}

// A pod filed by its label waits for the mirror of the object it names once the object is
// seen, however old the pod or its Job: the jobGroupTimeout of a Job's PodGroup is not its.
func TestLabelledPodOfOldJobWaitsForTheMirror(t *testing.T) {
	m, clk, _, w, _ := labelModel(t)
	w.seen.Insert("ns/mpi")
	job := lt.MakeJob().Namespace("ns").Name("launcher").Indexed(2).Obj()
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Hour)
	p := labelled("mpi", 0, epoch)
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	m.OnPod(nil, p)
	if v := m.Gate().Admit(klog.Background(), p); v.Code != MissingGroup || v.Group != PodGroupKey("ns", "mpi") {
		t.Fatalf("Admit = %+v, want MissingGroup for the mirror", v)
	}
	clk.Step(time.Hour)
	if v := m.Gate().Peek(p); v.Code != MissingGroup {
		t.Errorf("Peek an hour later = %+v, want still MissingGroup", v)
	}
}
