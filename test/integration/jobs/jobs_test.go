package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

var fastArgs = testenv.GangArgs{"backoffSeconds": 1}

type env struct {
	*testenv.Env
	t  *testing.T
	ns string
}

func start(t *testing.T, ns string, nodes ...*v1.Node) *env {
	e := &env{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, ns)
	e.CreateNodes(t, nodes...)
	e.StartKubeControllers(t)
	e.StartScheduler(t, fastArgs)
	return e
}

func (e *env) createJob(job *batchv1.Job) *batchv1.Job {
	e.t.Helper()
	created, err := e.Client.BatchV1().Jobs(e.ns).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

// jobPods returns the pods of a Job, by name, with their node ("" while unbound).
func (e *env) jobPods(job string) map[string]string {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

func bound(pods map[string]string) int {
	n := 0
	for _, node := range pods {
		if node != "" {
			n++
		}
	}
	return n
}

// waitPods waits until the Job has n pods of which b are bound.
func (e *env) waitPods(job string, n, b int) map[string]string {
	e.t.Helper()
	var pods map[string]string
	testenv.Eventually(e.t, 60*time.Second, fmt.Sprintf("Job %s with %d pods, %d bound", job, n, b), func() (bool, string) {
		pods = e.jobPods(job)
		return len(pods) == n && bound(pods) == b, fmt.Sprint(pods)
	})
	return pods
}

// groups returns the Workloads and PodGroups of the namespace.
func (e *env) groups() ([]v1alpha1.Workload, []v1alpha1.PodGroup) {
	e.t.Helper()
	ctx := context.Background()
	wls, err := e.Lockstep.SchedulingV1alpha1().Workloads(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return wls.Items, pgs.Items
}

// waitGroups waits until the namespace holds exactly nw Workloads and np PodGroups.
func (e *env) waitGroups(nw, np int) ([]v1alpha1.Workload, []v1alpha1.PodGroup) {
	e.t.Helper()
	var wls []v1alpha1.Workload
	var pgs []v1alpha1.PodGroup
	testenv.Eventually(e.t, 60*time.Second, fmt.Sprintf("%d Workloads and %d PodGroups", nw, np), func() (bool, string) {
		wls, pgs = e.groups()
		return len(wls) == nw && len(pgs) == np, fmt.Sprintf("%d Workloads, %d PodGroups", len(wls), len(pgs))
	})
	return wls, pgs
}

// An Indexed Job with parallelism = completions = 4 on room for 3: the controller creates a
// Workload and a PodGroup owned by the Job, no pod binds; with room for all 4, they bind
// together.
func TestIndexedJobIsAGang(t *testing.T) {
	e := start(t, "indexed", lt.MakeNode("n1", "3").Obj())
	e.StartJobController(t)
	job := e.createJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(4).Req(lt.CPU("1")).Obj())

	wls, pgs := e.waitGroups(1, 1)
	name := filing.JobGroupName("train", job.UID)
	wl, pg := wls[0], pgs[0]
	if wl.Name != name || pg.Name != name {
		t.Errorf("groups %s and %s, want both named %s", wl.Name, pg.Name, name)
	}
	if ref := metav1.GetControllerOf(&pg); ref == nil || ref.UID != job.UID {
		t.Errorf("PodGroup controller %v, want the Job", ref)
	}
	if ref := metav1.GetControllerOf(&wl); ref == nil || ref.UID != job.UID {
		t.Errorf("Workload controller %v, want the Job", ref)
	}
	ownsWorkload := false
	for _, r := range pg.OwnerReferences {
		ownsWorkload = ownsWorkload || (r.Kind == "Workload" && r.UID == wl.UID)
	}
	if !ownsWorkload || pg.Spec.WorkloadRef == nil || pg.Spec.WorkloadRef.WorkloadName != wl.Name {
		t.Errorf("PodGroup %+v does not point at Workload %s", pg.ObjectMeta.OwnerReferences, wl.Name)
	}
	if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
		t.Errorf("policy %+v, want gang minCount 4", pg.Spec.SchedulingPolicy)
	}
	if wl.Spec.ControllerRef == nil || wl.Spec.ControllerRef.Kind != "Job" || wl.Spec.ControllerRef.Name != "train" {
		t.Errorf("Workload controllerRef %+v", wl.Spec.ControllerRef)
	}

	e.WaitCondition(t, "PodGroup", e.ns, name, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	e.waitPods("train", 4, 0)

	e.CreateNodes(t, lt.MakeNode("n2", "1").Obj())
	e.waitPods("train", 4, 4)
	e.WaitCondition(t, "PodGroup", e.ns, name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed")
}

// A non-indexed Job gets no group: its pods schedule one by one. A Job owned by another
// object and a Job that brings its own group are left alone.
func TestJobsLeftAlone(t *testing.T) {
	e := start(t, "alone", lt.MakeNode("n1", "2").Obj())
	e.StartJobController(t)

	e.createJob(lt.MakeJob().Namespace(e.ns).Name("plain").Parallelism(3).Completions(3).Req(lt.CPU("1")).Obj())
	e.waitPods("plain", 3, 2) // room for two: one by one, no gang

	owner := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "owner"}}
	owner, err := e.Client.CoreV1().ConfigMaps(e.ns).Create(context.Background(), owner, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.createJob(lt.MakeJob().Namespace(e.ns).Name("owned").Indexed(2).Req(lt.CPU("0")).
		Owner("v1", "ConfigMap", owner.Name, string(owner.UID)).Obj())

	e.CreatePodGroups(t, lt.MakePodGroup().Namespace(e.ns).Name("mine").Gang(2).Obj())
	e.createJob(lt.MakeJob().Namespace(e.ns).Name("byo").Indexed(2).Req(lt.CPU("0")).TemplateLabel(v1alpha1.PodGroupLabel, "mine").Obj())

	e.waitPods("owned", 2, 2)
	e.waitPods("byo", 2, 2)
	e.WaitCondition(t, "PodGroup", e.ns, "mine", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	wls, pgs := e.groups()
	if len(wls) != 0 || len(pgs) != 1 {
		t.Errorf("%d Workloads and %d PodGroups, want none created by the controller (only the user's \"mine\")", len(wls), len(pgs))
	}
}

// A suspended Job (queued in Kueue, or by its owner) gets no groups: nothing says it waits for
// pods. Resumed (here resized too), it gets its gang and its pods bind together. Running, then
// suspended, it loses its groups; resumed again, its pods are a fresh gang: on room for 2 of
// its 3 pods none binds (a group kept from its first run, already scheduled, would let them
// bind one by one), and all 3 bind once there is room. Deleting the Job deletes its groups.
func TestSuspendResizeDelete(t *testing.T) {
	e := start(t, "lifecycle", lt.MakeNode("n1", "8").Obj())
	controller := e.StartJobController(t)
	e.StartKubelets(t, e.ns) // the suspended Job's pods end
	e.createJob(lt.MakeJob().Namespace(e.ns).Name("elastic").Indexed(4).Req(lt.CPU("1")).Suspend(true).Obj())
	controller.Settled(t, testenv.JobGVR, e.ns, "elastic", "no groups for the suspended Job", func() (bool, string) {
		wls, pgs := e.groups()
		return len(wls)+len(pgs) == 0, fmt.Sprintf("%d Workloads, %d PodGroups", len(wls), len(pgs))
	})
	if n := len(e.jobPods("elastic")); n != 0 {
		t.Fatalf("suspended Job has %d pods", n)
	}

	// Resize while suspended (elastic Indexed Job: completions follow parallelism), resume.
	setSuspend := func(suspend bool, parallelism int32) {
		t.Helper()
		ctx := context.Background()
		testenv.OnLatest(t, func() error {
			cur, err := e.Client.BatchV1().Jobs(e.ns).Get(ctx, "elastic", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Parallelism, cur.Spec.Completions, cur.Spec.Suspend = ptr.To(parallelism), ptr.To(parallelism), ptr.To(suspend)
			_, err = e.Client.BatchV1().Jobs(e.ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
	}
	setSuspend(false, 3)
	_, pgs := e.waitGroups(1, 1)
	if got := pgs[0].Spec.SchedulingPolicy.Gang.MinCount; got != 3 {
		t.Errorf("minCount %d, want 3 (the parallelism it was resumed with)", got)
	}
	e.waitPods("elastic", 3, 3)

	// Suspended while running: its pods and groups go.
	setSuspend(true, 3)
	e.waitGroups(0, 0)
	e.waitPods("elastic", 0, 0)
	e.WaitEvent(t, e.ns, "elastic", "PodGroupDeleted", "")

	// Room for 2 of its 3 pods: resumed, none binds.
	filler := lt.GroupPod(e.ns, "filler", "").Req(lt.CPU("6")).Obj()
	e.CreatePods(t, filler)
	e.WaitBound(t, e.ns, "filler")
	setSuspend(false, 3)
	e.waitGroups(1, 1)
	e.waitPods("elastic", 3, 0)
	e.Settled(t, "no pod of the resumed gang binds on room for 2 of 3", func() (bool, string) {
		n := bound(e.jobPods("elastic"))
		return n == 0, fmt.Sprintf("%d bound", n)
	})
	e.DeletePods(t, e.ns, "filler")
	e.waitPods("elastic", 3, 3)

	ctx := context.Background()
	if err := e.Client.BatchV1().Jobs(e.ns).Delete(ctx, "elastic", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	e.waitGroups(0, 0)
}

// A restarted controller reuses the groups it created: no duplicates. Invalid annotations
// get an event and are not acted on.
func TestControllerRestartAndAnnotations(t *testing.T) {
	e := start(t, "restart", lt.MakeNode("n1", "8").Obj())
	first := e.StartJobController(t)
	e.createJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(2).Req(lt.CPU("1")).Annotation(v1alpha1.JobMinCountAnnotation, "many").Obj())
	e.waitGroups(1, 1)
	e.WaitEvent(t, e.ns, "train", "InvalidAnnotation", `min-count="many" is not a positive integer`)
	first.Stop()

	e.StartJobController(t)
	// A second Job makes the new controller sync; the first Job's groups must stay single.
	e.createJob(lt.MakeJob().Namespace(e.ns).Name("other").Indexed(2).Req(lt.CPU("1")).Obj())
	e.waitGroups(2, 2)
	wls, pgs := e.groups()
	for _, list := range [][]string{names(wls), pgNames(pgs)} {
		seen := map[string]bool{}
		for _, n := range list {
			if seen[n] {
				t.Errorf("duplicate %s", n)
			}
			seen[n] = true
		}
	}
	e.waitPods("train", 2, 2)
}

// An annotation opts a non-indexed Job in: it becomes a gang of parallelism pods.
func TestAnnotationOptsANonIndexedJobIn(t *testing.T) {
	e := start(t, "optin", lt.MakeNode("n1", "2").Obj())
	e.StartJobController(t)
	job := e.createJob(lt.MakeJob().Namespace(e.ns).Name("together").Parallelism(3).Completions(3).Req(lt.CPU("1")).
		Annotation(v1alpha1.JobGangAnnotation, "true").Obj())
	name := filing.JobGroupName("together", job.UID)
	e.waitGroups(1, 1)
	e.WaitCondition(t, "PodGroup", e.ns, name, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	e.waitPods("together", 3, 0)
	e.CreateNodes(t, lt.MakeNode("n2", "1").Obj())
	e.waitPods("together", 3, 3)
}

// Without lockstep's Job controller, the scheduler holds a gang Job's pods, says why on the
// pod (a Normal event while the controller should be creating the group, a Warning once
// the wait passes a quarter of jobGroupTimeoutSeconds), and (here with a short
// jobGroupTimeoutSeconds) schedules them without gang semantics rather than block the Job
// forever.
func TestPodsWaitForTheJobsPodGroupThenFallBack(t *testing.T) {
	e := &env{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, "nocontroller")
	e.CreateNodes(t, lt.MakeNode("n1", "8").Obj())
	e.StartKubeControllers(t)
	e.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 1, "jobGroupTimeoutSeconds": 8})
	job := e.createJob(lt.MakeJob().Namespace(e.ns).Name("orphan").Indexed(2).Req(lt.CPU("1")).Obj())
	name := filing.JobGroupName("orphan", job.UID)
	pods := e.waitPods("orphan", 2, 0)
	for p := range pods {
		waiting := fmt.Sprintf("waiting for lockstep's workload controller to create PodGroup %q", name)
		e.WaitEvent(t, e.ns, p, "WaitingForPodGroup", waiting)
		e.WaitEvent(t, e.ns, p, "PodGroupNotFound", waiting+` for Job "orphan": still missing after`)
		break
	}
	e.waitPods("orphan", 2, 2)
	e.WaitEvent(t, e.ns, "orphan", "PodGroupMissing", "scheduled without gang semantics")
}

func names(wls []v1alpha1.Workload) []string {
	var out []string
	for _, w := range wls {
		out = append(out, w.Name)
	}
	return out
}

func pgNames(pgs []v1alpha1.PodGroup) []string {
	var out []string
	for _, p := range pgs {
		out = append(out, p.Name)
	}
	return out
}

// A Job queued (suspended) for longer than jobGroupTimeoutSeconds is a gang once admitted
// like any other: its pods wait for the PodGroup lockstep's workload controller makes, from
// their own creation, and bind whole once it exists — none binds alone before it. (Kueue keeps
// Jobs suspended for as long as they queue; the timeout is 3 s here, 120 s as shipped.)
func TestJobQueuedPastTheGroupTimeoutIsAGang(t *testing.T) {
	e := &env{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, "queued")
	e.CreateNodes(t, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	e.StartKubeControllers(t)
	e.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 1, "jobGroupTimeoutSeconds": 3})
	job := e.createJob(lt.MakeJob().Namespace(e.ns).Name("queued").Indexed(4).Req(lt.CPU("1")).Suspend(true).Obj())
	time.Sleep(5 * time.Second) // queued past the timeout

	testenv.OnLatest(t, func() error {
		cur, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Suspend = ptr.To(false)
		_, err = e.Client.BatchV1().Jobs(e.ns).Update(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	// Admitted: the pods exist, the PodGroup not yet (the workload controller is slow to
	// come): they wait for it.
	e.waitPods(job.Name, 4, 0)
	e.Settled(t, "no pod of the admitted Job bound alone", func() (bool, string) {
		pods := e.jobPods(job.Name)
		return bound(pods) == 0, fmt.Sprint(pods)
	})
	e.StartJobController(t)
	e.waitPods(job.Name, 4, 4)
	e.WaitCondition(t, "PodGroup", e.ns, filing.JobGroupName(job.Name, job.UID), metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")
}
