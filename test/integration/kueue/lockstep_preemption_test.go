package kueue

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/internal/kueuecontroller"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Quota preemption is Kueue's, priority preemption inside admitted capacity is lockstep's, and
// neither re-places the other's victim into the same capacity in a loop (issue 21). A
// ClusterQueue whose quota (16 cpu, preemption of lower priorities allowed) admits two gangs of
// 2 pods x 4 cpu, on one rack of three 4-cpu nodes, room for one gang and half of another. A
// low-priority gang Job runs there; a high-priority one is submitted through the same queue
// and Kueue admits it too (quota suffices: Kueue preempts nothing). lockstep preempts for it:
// the low gang is evicted whole, once (2 pods, although evicting 1 would free the room), and
// the high gang binds whole. The Jobs are as docs/usage.md asks of gang Jobs: a
// podFailurePolicy that ignores DisruptionTarget. The low Job recreates its 2 pods (after the
// Job controller's backoff, 10 s doubled per failed pod, which the Ignore rule keeps out of
// backoffLimit but not out of the delay: 20 s), and they wait whole while the high gang
// holds the room: none binds although 1 would fit, the group's DisruptionTarget says why, no
// pod of the high gang is evicted, nothing is evicted again, and Kueue keeps both Workloads
// admitted, neither evicted nor preempted. Once the high Job is deleted, the same recreated
// pods bind whole.
func TestLockstepPreemptsInsideKueueAdmittedCapacityWithoutLoop(t *testing.T) {
	e, sched, kubelets := startFailingDeleted(t, "inside", lt.TopologyNodes(1, 1, 1, 3, "4")...)
	e.CreatePriorityClass(t, "low", 10, false)
	e.CreatePriorityClass(t, "high", 1000, false)
	e.CreateResourceFlavor(t, "default")
	e.CreateClusterQueueWithPreemption(t, "research", "default", "16", "LowerPriority")
	e.CreateLocalQueue(t, e.ns, "team-a", "research")
	gang := func(name, priorityClass string) *batchv1.Job {
		job := lt.MakeJob().Namespace(e.ns).Name(name).Indexed(2).Req(lt.CPU("4")).Label(testenv.KueueQueueLabel, "team-a").
			Annotation(v1alpha1.JobTopologyRequiredAnnotation, lt.RackKey).BackoffLimit(6).
			PodFailurePolicy(batchv1.PodFailurePolicyRule{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}},
			}).Obj()
		job.Spec.Template.Spec.PriorityClassName = priorityClass // Kueue's Workload priority, and lockstep's
		return job
	}
	victimGangs := func() float64 {
		v, _ := testenv.Sample(sched.Metrics(t), `lockstep_preemption_victim_gangs_total`)
		return v
	}

	// The low-priority gang is admitted and bound whole.
	low := e.submitJob(gang("low", "low"))
	e.waitAdmitted(low)
	e.waitStarted(low)
	lowGroup := filing.JobGroupName(low.Name, low.UID)
	e.WaitCondition(t, "PodGroup", e.ns, lowGroup, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 pods placed together")
	firstLow := e.podUIDs(low)
	gangsBefore := victimGangs()

	// The high-priority gang is admitted by Kueue beside it, and lockstep preempts for it.
	high := e.submitJob(gang("high", "high"))
	e.waitAdmitted(high)
	highNodes := e.waitStarted(high)
	highGroup := filing.JobGroupName(high.Name, high.UID)
	e.WaitCondition(t, "PodGroup", e.ns, highGroup, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 pods placed together")
	highUIDs := e.podUIDs(high)
	preempted := time.Now()

	// The low gang was evicted whole, by lockstep: its 2 pods, each told why, and its group.
	if got := e.removedOf(kubelets, low); fmt.Sprint(got) != fmt.Sprint(sortedUIDs(firstLow)) {
		t.Errorf("%s's evicted pods %v, want its 2 running pods %v", low.Name, got, sortedUIDs(firstLow))
	}
	for _, p := range kubelets.Removed() {
		if !hasPreemptionByScheduler(p) {
			t.Errorf("victim %s was deleted without the DisruptionTarget condition of a preemption: %+v", p.Name, p.Status.Conditions)
		}
	}
	preemptedBy := "evicting its 2 running pods: preempted by gang PodGroup " + e.ns + "/" + highGroup + " (priority 1000)"
	e.WaitConditionOfType(t, "PodGroup", e.ns, lowGroup, v1alpha1.DisruptionTarget, metav1.ConditionTrue, v1alpha1.ReasonPreemptionByScheduler, preemptedBy)
	e.WaitEvent(t, e.ns, lowGroup, v1alpha1.ReasonPreempted, preemptedBy)
	e.WaitEvent(t, e.ns, highGroup, v1alpha1.ReasonPreempting, "evicting 2 pods")
	// Kueue kept both admitted: it preempted nothing, its quota suffices.
	for _, j := range []*batchv1.Job{low, high} {
		if ok, state := e.admittedNeverEvicted(j); !ok {
			t.Fatalf("Kueue's Workload of %s: %s", j.Name, state)
		}
	}

	// The low Job recreates its 2 pods, as the Job controller does once its backoff for the 2
	// failed ones passes (10 s doubled per failure: 20 s); none counts against backoffLimit.
	var again map[types.UID]string
	testenv.Eventually(t, 3*time.Minute, low.Name+"'s 2 pods recreated", func() (bool, string) {
		again = e.podUIDs(low)
		state := fmt.Sprintf("pods %v; Job %s", again, e.jobStatus(low))
		if len(again) != 2 {
			return false, state
		}
		for uid := range again {
			if _, old := firstLow[uid]; old {
				return false, state
			}
		}
		return true, ""
	})
	t.Logf("%s's pods recreated %s after %s bound", low.Name, time.Since(preempted).Round(time.Second), high.Name)
	if j := e.job(low); j.Status.Failed != 0 {
		t.Errorf("Job %s counted %d failed pods, want 0: its podFailurePolicy ignores DisruptionTarget", low.Name, j.Status.Failed)
	}

	// They wait whole while the high gang holds the room: none binds (1 would fit), the high
	// gang stays where it is, nothing else is evicted, and Kueue keeps both admitted.
	e.Settled(t, low.Name+"'s recreated pods waiting whole beside "+high.Name, func() (bool, string) {
		if now := e.podUIDs(low); fmt.Sprint(now) != fmt.Sprint(again) {
			return false, fmt.Sprintf("%s's pods were %v, now %v", low.Name, again, now)
		}
		for uid, node := range again {
			if node != "" {
				return false, fmt.Sprintf("%s's pod %s bound to %s while %s holds the room: %v", low.Name, uid, node, high.Name, e.pods(low))
			}
		}
		if now := e.podUIDs(high); fmt.Sprint(now) != fmt.Sprint(highUIDs) {
			return false, fmt.Sprintf("%s's pods were %v, now %v", high.Name, highUIDs, now)
		}
		if now := e.pods(high); fmt.Sprint(now) != fmt.Sprint(highNodes) {
			return false, fmt.Sprintf("%s's pods were on %v, now %v", high.Name, highNodes, now)
		}
		if n := len(kubelets.Removed()); n != 2 {
			return false, fmt.Sprintf("%d pods evicted, want only %s's first 2: %v", n, low.Name, podNames(kubelets.Removed()))
		}
		for _, j := range []*batchv1.Job{low, high} {
			if ok, state := e.admittedNeverEvicted(j); !ok {
				return false, "Kueue's Workload of " + j.Name + ": " + state
			}
		}
		return true, ""
	})
	e.WaitConditionOfType(t, "PodGroup", e.ns, lowGroup, v1alpha1.DisruptionTarget, metav1.ConditionTrue, v1alpha1.ReasonPreemptionByScheduler,
		preemptedBy+", which takes rack ")
	// What it waits for now: room for both, where 1 would fit (so none binding is the gang's doing).
	waits := e.WaitConditionOfType(t, "PodGroup", e.ns, lowGroup, v1alpha1.DisruptionTarget, metav1.ConditionTrue, v1alpha1.ReasonPreemptionByScheduler, "; now cannot fit")
	if !strings.Contains(waits.Message, "could take 1") {
		t.Errorf("%s's DisruptionTarget %q, want it to say the rack could take 1 of its 2 pods", lowGroup, waits.Message)
	}
	t.Logf("%s's DisruptionTarget: %s", lowGroup, waits.Message)
	if got := victimGangs() - gangsBefore; got != 1 {
		t.Errorf("lockstep evicted %v gangs whole, want 1", got)
	}
	if got := e.preemptedPods(); fmt.Sprint(got) != fmt.Sprint(sortedUIDs(firstLow)) {
		t.Errorf("pods with a Preempted event %v, want %s's first 2 %v", got, low.Name, sortedUIDs(firstLow))
	}

	// Once the high Job is gone, the same recreated pods bind whole, and the low gang is told.
	if err := e.Client.BatchV1().Jobs(e.ns).Delete(context.Background(), high.Name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	e.waitStarted(low)
	if now := e.podUIDs(low); fmt.Sprint(sortedUIDs(now)) != fmt.Sprint(sortedUIDs(again)) {
		t.Errorf("%s's bound pods %v, want the 2 recreated while %s ran %v", low.Name, now, high.Name, again)
	}
	e.WaitConditionOfType(t, "PodGroup", e.ns, lowGroup, v1alpha1.DisruptionTarget, metav1.ConditionFalse, v1alpha1.ReasonRescheduled, "")
	if got := e.removedOf(kubelets, low); fmt.Sprint(got) != fmt.Sprint(sortedUIDs(firstLow)) {
		t.Errorf("%s's evicted pods %v, want only its first 2 %v", low.Name, got, sortedUIDs(firstLow))
	}
	if ok, state := e.admittedNeverEvicted(low); !ok {
		t.Errorf("Kueue's Workload of %s: %s", low.Name, state)
	}
	if got := victimGangs() - gangsBefore; got != 1 {
		t.Errorf("lockstep evicted %v gangs whole, want 1", got)
	}
	if j := e.job(low); j.Status.Failed != 0 || ptr.Deref(j.Spec.Suspend, false) {
		t.Errorf("Job %s: %s, want running with no failed pod counted", low.Name, e.jobStatus(low))
	}
}

// startFailingDeleted is start with kubelets that report a deleted pod Failed before it goes,
// as real ones do (a Job with a podFailurePolicy replaces only failed pods); it returns the
// scheduler and the kubelets too.
func startFailingDeleted(t *testing.T, ns string, nodes ...*v1.Node) (*kueueEnv, *testenv.Scheduler, *testenv.Kubelets) {
	e := &kueueEnv{Env: testenv.Start(t), t: t}
	e.StartKubeControllers(t)
	e.StartKueueWith(t, kueuecontroller.Options{})
	e.ns = e.Namespace(t, ns)
	kubelets := e.StartKubeletsFailingDeletedPods(t, e.ns)
	e.CreateNodes(t, nodes...)
	sched := e.StartScheduler(t, nil)
	e.StartJobController(t)
	return e, sched, kubelets
}

// podUIDs maps the UID of each live pod of the Job to its node ("" while unbound); a
// terminating pod is reported as "terminating:NODE".
func (e *kueueEnv) podUIDs(job *batchv1.Job) map[types.UID]string {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[types.UID]string{}
	for _, p := range list.Items {
		out[p.UID] = p.Spec.NodeName
		if p.DeletionTimestamp != nil {
			out[p.UID] = "terminating:" + p.Spec.NodeName
		}
	}
	return out
}

func sortedUIDs(m map[types.UID]string) []string {
	var out []string
	for uid := range m {
		out = append(out, string(uid))
	}
	sort.Strings(out)
	return out
}

// removedOf returns the sorted UIDs of the Job's pods the kubelets removed.
func (e *kueueEnv) removedOf(k *testenv.Kubelets, job *batchv1.Job) []string {
	var out []string
	for _, p := range k.Removed() {
		if p.Labels[batchv1.JobNameLabel] == job.Name {
			out = append(out, string(p.UID))
		}
	}
	sort.Strings(out)
	return out
}

func podNames(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func hasPreemptionByScheduler(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// preemptedPods returns the sorted UIDs of the pods of the test's namespace with a Preempted
// event.
func (e *kueueEnv) preemptedPods() []string {
	e.t.Helper()
	list, err := e.Client.EventsV1().Events(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	uids := map[string]bool{}
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "Pod" && ev.Reason == v1alpha1.ReasonPreempted {
			uids[string(ev.Regarding.UID)] = true
		}
	}
	var out []string
	for uid := range uids {
		out = append(out, uid)
	}
	sort.Strings(out)
	return out
}

// admittedNeverEvicted reports whether Kueue's Workload of obj is admitted and has never been
// evicted or preempted (Kueue keeps those conditions once set), and what it has otherwise.
func (e *kueueEnv) admittedNeverEvicted(obj metav1.Object) (bool, string) {
	e.t.Helper()
	wl := e.KueueWorkload(e.t, obj)
	if wl == nil {
		return false, "no Workload"
	}
	var state []string
	ok := true
	for _, c := range []string{"QuotaReserved", "Admitted", "Evicted", "Preempted"} {
		cond := testenv.WorkloadCondition(wl, c)
		want := c == "QuotaReserved" || c == "Admitted"
		switch {
		case cond == nil:
			ok = ok && !want
			state = append(state, c+": none")
		default:
			ok = ok && want && cond.Status == metav1.ConditionTrue
			state = append(state, fmt.Sprintf("%s: %s %s %q", c, cond.Status, cond.Reason, cond.Message))
		}
	}
	return ok, strings.Join(state, "; ")
}

// job reads the Job back.
func (e *kueueEnv) job(job *batchv1.Job) *batchv1.Job {
	e.t.Helper()
	got, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// jobStatus sums up a Job's state for failure messages.
func (e *kueueEnv) jobStatus(job *batchv1.Job) string {
	e.t.Helper()
	j := e.job(job)
	var conds []string
	for _, c := range j.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Reason))
	}
	return fmt.Sprintf("suspend %v, active %d, failed %d, terminating %v, conditions %v",
		ptr.Deref(j.Spec.Suspend, false), j.Status.Active, j.Status.Failed, ptr.Deref(j.Status.Terminating, -1), conds)
}
