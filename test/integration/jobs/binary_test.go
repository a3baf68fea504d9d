package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The binary run as docs/install.md says, with no flag but its configuration, runs the workload
// controller: an Indexed Job gets its gang (on room for 3 of its 4 pods, none binds; with a
// fourth node, all 4 bind together).
func TestBinaryGivesJobsTheirGangByDefault(t *testing.T) {
	e := &env{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, "binary")
	e.CreateNodes(t, lt.MakeNode("n1", "3").Obj())
	e.StartKubeControllers(t)
	e.StartProcess(t, "scheduler", testenv.ProcessOptions{Args: fastArgs})
	e.createJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(4).Req(lt.CPU("1")).Obj())
	_, pgs := e.waitGroups(1, 1)
	if g := pgs[0].Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
		t.Fatalf("PodGroup %s policy %+v, want a gang of 4", pgs[0].Name, pgs[0].Spec.SchedulingPolicy)
	}
	testenv.Eventually(t, 60*time.Second, "the gang refused for lack of room", func() (bool, string) {
		pg, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), pgs[0].Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range pg.Status.Conditions {
			if c.Type == v1alpha1.PodGroupInitiallyScheduled && c.Status == metav1.ConditionFalse {
				return true, c.Message
			}
		}
		return false, "no condition yet"
	})
	e.waitPods("train", 4, 0)
	e.CreateNodes(t, lt.MakeNode("n2", "1").Obj())
	e.waitPods("train", 4, 4)
}

// With --workload-controller=false nobody creates the groups, and the scheduler does not
// hold the Job's pods for them: they are scheduled as they come.
func TestBinaryWithoutWorkloadControllerHoldsNoJobPods(t *testing.T) {
	e := &env{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, "nocontroller")
	e.CreateNodes(t, lt.MakeNode("n1", "3").Obj())
	e.StartKubeControllers(t)
	e.StartProcess(t, "scheduler", testenv.ProcessOptions{Args: fastArgs, NoWorkloadController: true})
	e.createJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(4).Req(lt.CPU("1")).Obj())
	e.waitPods("train", 4, 3)
	if wls, pgs := e.groups(); len(wls)+len(pgs) != 0 {
		t.Errorf("%d Workloads and %d PodGroups created with the workload controller off", len(wls), len(pgs))
	}
}

// On a cluster that serves the native kinds, its Job controller with WorkloadWithJob on: a Job
// with spec.scheduling (a gang of 4) is scheduled from the native PodGroup the Job controller
// makes, by the binary as deployed (its gates off). On room for 3 none binds and the native
// PodGroup says why; lockstep's workload controller makes no group of its own; with room, all
// 4 bind together. An Indexed Job without spec.scheduling, which the Job controller gives a
// basic native group, keeps lockstep's gang, as on a cluster without the gates.
func TestNativeJobIsScheduledFromItsPodGroup(t *testing.T) {
	e := &env{Env: testenv.StartServingNative(t), t: t}
	e.ns = e.Namespace(t, "native")
	e.CreateNodes(t, lt.MakeNode("n1", "3").Obj())
	e.StartKubeControllers(t)
	e.StartProcess(t, "scheduler", testenv.ProcessOptions{Args: fastArgs})
	job := lt.MakeJob().Namespace(e.ns).Name("train").Indexed(4).Req(lt.CPU("1")).Obj()
	job.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: ptr.To[int32](4)}}}
	e.createJob(job)

	var name string
	testenv.Eventually(t, 60*time.Second, "the native PodGroup of Job train refused for lack of room", func() (bool, string) {
		list, err := e.Client.SchedulingV1beta1().PodGroups(e.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%v %v", list, err)
		}
		name = list.Items[0].Name
		c := meta.FindStatusCondition(list.Items[0].Status.Conditions, v1alpha1.PodGroupInitiallyScheduled)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonUnschedulable, fmt.Sprint(c)
	})
	e.waitPods("train", 4, 0)
	if _, pgs := e.groups(); len(pgs) != 0 {
		t.Errorf("lockstep made %d PodGroups for a Job the Job controller gives a native one", len(pgs))
	}
	e.CreateNodes(t, lt.MakeNode("n2", "1").Obj())
	e.waitPods("train", 4, 4)
	e.WaitCondition(t, "PodGroup", e.ns, name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed")

	// Without spec.scheduling: lockstep's gang, although its pods name a basic native group.
	e.CreateNodes(t, lt.MakeNode("n3", "1").Obj())
	plain := e.createJob(lt.MakeJob().Namespace(e.ns).Name("indexed").Indexed(2).Req(lt.CPU("1")).Obj())
	_, pgs := e.waitGroups(1, 1)
	if want := filing.JobGroupName("indexed", plain.UID); pgs[0].Name != want {
		t.Errorf("lockstep PodGroup %s, want %s", pgs[0].Name, want)
	}
	e.waitPods("indexed", 2, 0) // room for one of its two pods: a gang, none binds
	e.CreateNodes(t, lt.MakeNode("n4", "1").Obj())
	e.waitPods("indexed", 2, 2)
	pods, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=indexed"})
	if err != nil {
		t.Fatal(err)
	}
	if sg := pods.Items[0].Spec.SchedulingGroup; sg == nil || sg.PodGroupName == nil {
		t.Errorf("the Job controller gave pod %s no native group (spec.schedulingGroup %v): the case is not exercised", pods.Items[0].Name, sg)
	}
	e.GroupAPI = podgroup.APILockstep // the Job's gang is lockstep's own PodGroup
	e.WaitCondition(t, "PodGroup", e.ns, pgs[0].Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
}
