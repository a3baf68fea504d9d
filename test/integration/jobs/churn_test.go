package jobs

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// setPhase plays the kubelet: the pod of a Job's completion index finished with phase.
func (e *env) setPhase(job string, index int, phase v1.PodPhase) {
	e.t.Helper()
	ctx := context.Background()
	list, err := e.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] != strconv.Itoa(index) || p.Status.Phase == v1.PodFailed {
			continue
		}
		p.Status.Phase = phase
		if _, err := e.Client.CoreV1().Pods(e.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		return
	}
	e.t.Fatalf("no running pod of %s index %d", job, index)
}

// Issue #10 item 3: an Indexed Job whose indexes 0-2 succeeded and index 3 failed: the Job
// controller's replacement for index 3 binds alone (the gang was initially scheduled and its
// completed members count as having run), instead of waiting for pods that will never exist.
func TestIndexRetriedAfterSiblingsSucceeded(t *testing.T) {
	e := start(t, "retry", lt.MakeNode("n1", "4").Obj())
	e.StartJobController(t)
	job := e.createJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(4).Req(lt.CPU("1")).BackoffLimit(4).Obj())
	name := filing.JobGroupName("train", job.UID)
	e.waitPods("train", 4, 4)
	e.WaitCondition(t, "PodGroup", e.ns, name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")

	for i := 0; i < 3; i++ {
		e.setPhase("train", i, v1.PodSucceeded)
	}
	e.setPhase("train", 3, v1.PodFailed)
	testenv.Eventually(t, 90*time.Second, "the retry of index 3 bound", func() (bool, string) {
		list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=train"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, p := range list.Items {
			seen = append(seen, fmt.Sprintf("%s index %s %s node %q", p.Name, p.Annotations[batchv1.JobCompletionIndexAnnotation], p.Status.Phase, p.Spec.NodeName))
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "3" && p.Status.Phase == v1.PodPending && p.Spec.NodeName != "" {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
}

// Issue #10 item 4: a Job's PodGroup that appears after the pods fell back to scheduling
// without a gang (no room meanwhile) takes them back: they join it and bind together.
func TestLatePodGroupTakesTheJobsPodsBack(t *testing.T) {
	e := &env{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, "late")
	e.CreateNodes(t, lt.MakeNode("small", "500m").Obj()) // room for no pod: none binds meanwhile
	e.StartKubeControllers(t)
	e.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 1, "jobGroupTimeoutSeconds": 4})
	job := e.createJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(3).Req(lt.CPU("1")).Obj())
	e.WaitEvent(t, e.ns, "train", "PodGroupMissing", "scheduled without gang semantics")
	e.waitPods("train", 3, 0)

	e.StartJobController(t)
	e.waitGroups(1, 1)
	name := filing.JobGroupName("train", job.UID)
	e.WaitCondition(t, "PodGroup", e.ns, name, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	e.CreateNodes(t, lt.MakeNode("big", "4").Obj())
	e.waitPods("train", 3, 3)
	e.WaitCondition(t, "PodGroup", e.ns, name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed together")
}
