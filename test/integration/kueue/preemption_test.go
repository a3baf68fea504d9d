package kueue

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Kueue preempts for quota, lockstep releases the victim whole: a ClusterQueue with quota
// for one gang (4 pods x 2 cpu) and preemption of lower priorities within it, on 16 cpu of
// nodes (room is not the limit, quota is). A low-priority gang is admitted and bound; a
// high-priority gang of the same shape is then submitted, and Kueue preempts the low one:
// its Job is suspended, all its pods deleted and lockstep drops its groups, and the high
// gang's pods bind together. The low Job then waits in Kueue, suspended without pods or
// groups, and is not re-admitted while the high one runs; once the high Job is deleted, the
// low one is re-admitted and bound whole, as a fresh gang.
func TestKueuePreemptsForQuotaLockstepReleasesTheVictimWhole(t *testing.T) {
	e := start(t, "preempt", lt.TopologyNodes(1, 1, 2, 2, "4")...)
	e.CreatePriorityClass(t, "low", 10, false)
	e.CreatePriorityClass(t, "high", 1000, false)
	e.CreateResourceFlavor(t, "default")
	e.CreateClusterQueueWithPreemption(t, "research", "default", "8", "LowerPriority")
	e.CreateLocalQueue(t, e.ns, "team-a", "research")
	gang := func(name, priorityClass string) *batchv1.Job {
		job := lt.MakeJob().Namespace(e.ns).Name(name).Indexed(4).Req(lt.CPU("2")).Label(testenv.KueueQueueLabel, "team-a").Obj()
		job.Spec.Template.Spec.PriorityClassName = priorityClass // Kueue's Workload priority
		return job
	}

	// The low-priority gang is admitted and bound whole.
	low := e.submitJob(gang("low", "low"))
	e.waitAdmitted(low)
	e.waitStarted(low)
	lowGroup := filing.JobGroupName(low.Name, low.UID)
	e.WaitCondition(t, "PodGroup", e.ns, lowGroup, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")
	firstGroup, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), lowGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The high-priority gang needs the whole quota: Kueue preempts the low one for it.
	high := e.submitJob(gang("high", "high"))
	testenv.Eventually(t, 90*time.Second, "Kueue preempts "+low.Name+" in its ClusterQueue", func() (bool, string) {
		wl := e.KueueWorkload(t, low)
		if wl == nil {
			return false, "no Workload"
		}
		c := testenv.WorkloadCondition(wl, "Preempted")
		if c == nil {
			return false, "not preempted"
		}
		return c.Status == metav1.ConditionTrue && c.Reason == "InClusterQueue", string(c.Status) + " " + c.Reason + " " + c.Message
	})
	// Released whole: suspended, every pod gone, and lockstep's groups for it dropped.
	testenv.Eventually(t, 60*time.Second, "the preempted "+low.Name+" suspended without pods or groups", func() (bool, string) {
		held, state := e.held(low)
		return held, state
	})
	highNodes := e.waitStarted(high)
	highGroup := filing.JobGroupName(high.Name, high.UID)
	e.WaitCondition(t, "PodGroup", e.ns, highGroup, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")

	// The low Job waits in Kueue while the high one runs: not re-admitted, no pods, no groups,
	// and the high gang's pods stay where they are (no preemption loop). Checked once Kueue has
	// tried the low one again with the high one holding the quota, and lockstep is idle.
	testenv.Eventually(t, 60*time.Second, "Kueue tries "+low.Name+" again while "+high.Name+" holds the quota", func() (bool, string) {
		wl := e.KueueWorkload(t, low)
		if wl == nil {
			return false, "no Workload"
		}
		c := testenv.WorkloadCondition(wl, "QuotaReserved")
		if c == nil {
			return false, "no QuotaReserved condition"
		}
		return c.Status == metav1.ConditionFalse && c.Reason == "Pending" && strings.Contains(c.Message, "couldn't assign flavors"), string(c.Status) + " " + c.Reason + " " + c.Message
	})
	e.Settled(t, low.Name+" held in Kueue while "+high.Name+" runs", func() (bool, string) {
		if state, msg := e.admission(low); state != "pending" {
			return false, fmt.Sprintf("%s's admission %q %s", low.Name, state, msg)
		}
		if held, state := e.held(low); !held {
			return false, state
		}
		if state, msg := e.admission(high); state != "admitted" {
			return false, fmt.Sprintf("%s's admission %q %s", high.Name, state, msg)
		}
		if now := e.pods(high); fmt.Sprint(now) != fmt.Sprint(highNodes) {
			return false, fmt.Sprintf("%s's pods were %v, now %v", high.Name, highNodes, now)
		}
		return true, ""
	})

	// Once the high Job is gone, the low one is re-admitted and bound whole, a fresh gang.
	if err := e.Client.BatchV1().Jobs(e.ns).Delete(context.Background(), high.Name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	e.waitAdmitted(low)
	e.waitStarted(low)
	e.WaitCondition(t, "PodGroup", e.ns, lowGroup, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")
	again, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), lowGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.UID == firstGroup.UID {
		t.Errorf("PodGroup %s of the re-admitted %s is the one from before its preemption (UID %s)", lowGroup, low.Name, again.UID)
	}
}

// waitAdmitted waits until Kueue has admitted the Workload of obj.
func (e *kueueEnv) waitAdmitted(obj metav1.Object) {
	e.t.Helper()
	testenv.Eventually(e.t, 90*time.Second, obj.GetName()+" admitted", func() (bool, string) {
		state, msg := e.admission(obj)
		return state == "admitted", state + " " + msg
	})
}

// held reports whether the Job is suspended with no pods and no lockstep PodGroup it
// controls, and what it has otherwise.
func (e *kueueEnv) held(job *batchv1.Job) (bool, string) {
	e.t.Helper()
	got, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	pods := e.pods(job)
	groups := e.groupsOf(job.UID)
	suspended := ptr.Deref(got.Spec.Suspend, false)
	return suspended && len(pods) == 0 && len(groups) == 0,
		fmt.Sprintf("suspend %v, pods %v, PodGroups %v", suspended, pods, groups)
}

// groupsOf returns the names of the lockstep PodGroups of the test's namespace controlled by
// the object with UID uid.
func (e *kueueEnv) groupsOf(uid types.UID) []string {
	e.t.Helper()
	pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for i := range pgs.Items {
		if ref := metav1.GetControllerOf(&pgs.Items[i]); ref != nil && ref.UID == uid {
			names = append(names, pgs.Items[i].Name)
		}
	}
	sort.Strings(names)
	return names
}
