package jobs

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
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
