package kueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/internal/kueuecontroller"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Kueue's waitForPodsReady is the outer bound of an admission, lockstep acts inside it: a
// rack-required gang (4 pods x 2 cpu) that Kueue admits on quota but that fits no rack (other
// pods take half of each) never binds a pod; when its pods are not ready in time, Kueue evicts
// and suspends it, and lockstep drops its groups (nothing stays planned or held for it) — no
// pod of it is ever bound, and it is requeued, not stormed. Once a rack is emptied, the next
// admission binds the gang whole in that rack, as a fresh gang. Why the gang waits is told on
// the Job and on its Kueue Workload too, beside Kueue's own events.
func TestKueueEvictsAGangThatDoesNotFitAndLockstepHoldsNothing(t *testing.T) {
	e := startWith(t, kueuecontroller.Options{WaitForPodsReadyTimeout: 10 * time.Second, RequeueBackoffBaseSeconds: 1},
		"ready", lt.TopologyNodes(1, 1, 2, 2, "4")...)
	fill := e.Namespace(t, "fill")
	e.StartKubelets(t, fill)
	var fillers []*v1.Pod
	for _, n := range []string{"z0-b0-r0-h0", "z0-b0-r0-h1", "z0-b0-r1-h0", "z0-b0-r1-h1"} {
		fillers = append(fillers, lt.GroupPod(fill, "fill-"+n, "").Req(lt.CPU("2")).Node(n).Obj())
	}
	e.CreatePods(t, fillers...)

	e.CreateResourceFlavor(t, "default")
	e.CreateClusterQueue(t, "research", "default", "16")
	e.CreateLocalQueue(t, e.ns, "team-a", "research")
	pods := e.watchPods()
	job := e.submitJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(4).Req(lt.CPU("2")).
		Label(testenv.KueueQueueLabel, "team-a").Annotation(v1alpha1.JobTopologyRequiredAnnotation, lt.RackKey).Obj())
	group := filing.JobGroupName(job.Name, job.UID)

	// Admitted: its pods exist and its group says why they wait.
	testenv.Eventually(t, 90*time.Second, "the admitted gang's 4 pods", func() (bool, string) {
		n := len(pods.current())
		return n == 4, fmt.Sprintf("%d pods", n)
	})
	e.WaitCondition(t, "PodGroup", e.ns, group, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	// The Job, where Kueue tells of its admission and eviction, is told why its pods wait.
	e.WaitEvent(t, e.ns, job.Name, v1alpha1.ReasonUnschedulable, "PodGroup "+group+": cannot fit")
	// So is its Kueue Workload, where Kueue users follow a queued job (kubectl describe
	// workload finds the event by the Workload's UID).
	e.WaitEventOn(t, e.KueueWorkload(t, job), "Workload", v1alpha1.ReasonUnschedulable, "PodGroup "+group+" of Job train: cannot fit")

	// Evicted for want of ready pods: suspended, its pods and its groups gone.
	testenv.Eventually(t, 90*time.Second, "Kueue evicts the Job for PodsReadyTimeout", func() (bool, string) {
		wl := e.KueueWorkload(t, job)
		if wl == nil {
			return false, "no Workload"
		}
		c := testenv.WorkloadCondition(wl, "Evicted")
		if c == nil {
			return false, "not evicted"
		}
		return c.Reason == "PodsReadyTimeout", c.Reason + " " + c.Message
	})
	testenv.Eventually(t, 60*time.Second, "the evicted Job's groups dropped", func() (bool, string) {
		_, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), group, metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
	if _, snap := pods.observed(); snap != nil {
		t.Fatalf("pod %s of the gang that fits no rack was bound: %v", snap.pod, snap.pods)
	}

	// A rack emptied: the next admission binds the gang whole there.
	e.DeletePods(t, fill, "fill-z0-b0-r1-h0", "fill-z0-b0-r1-h1")
	testenv.Eventually(t, 120*time.Second, "re-admitted", func() (bool, string) {
		state, msg := e.admission(job)
		cur, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return state == "admitted" && !ptr.Deref(cur.Spec.Suspend, true), state + " " + msg
	})
	placed := e.waitStarted(job)
	for name, node := range placed {
		if r := e.NodeDomain(e.t, node, lt.RackKey); r != "z0-b0-r1" {
			t.Errorf("pod %s on %s, in rack %s; want all in the emptied rack z0-b0-r1", name, node, r)
		}
	}
	e.WaitCondition(t, "PodGroup", e.ns, group, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")
}
