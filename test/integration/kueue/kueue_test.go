// Package kueue runs the real Kueue controller manager (v0.15.0, built from tools/kueue) with
// its admission webhooks live, next to the upstream Job controller, lockstep's workload
// controller and the lockstep scheduler: Kueue decides when a Job may start (quota),
// lockstep where and together its pods go.
package kueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/internal/kueuecontroller"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// kueueEnv is a test's control plane with Kueue and lockstep running, and its namespace.
type kueueEnv struct {
	*testenv.Env
	t  *testing.T
	ns string
}

// start runs the control plane with the upstream Job controller and garbage collector, Kueue,
// lockstep's scheduler and workload controller, kubelets that end deleted pods, and nodes; ns
// is the test's namespace.
func start(t *testing.T, ns string, nodes ...*v1.Node) *kueueEnv {
	return startWith(t, kueuecontroller.Options{}, ns, nodes...)
}

// startWith is start with Kueue configured with opts.
func startWith(t *testing.T, opts kueuecontroller.Options, ns string, nodes ...*v1.Node) *kueueEnv {
	e := &kueueEnv{Env: testenv.Start(t), t: t}
	e.StartKubeControllers(t)
	e.StartKueueWith(t, opts)
	e.ns = e.Namespace(t, ns)
	e.StartKubelets(t, e.ns)
	e.CreateNodes(t, nodes...)
	e.StartScheduler(t, nil)
	e.StartJobController(t)
	return e
}

// Two Jobs submitted to a LocalQueue whose ClusterQueue has quota for one: Kueue's webhook
// suspends both on create, Kueue admits one, which starts and whose pods lockstep binds, while
// the other waits suspended without pods for lack of quota; once the first is deleted, the
// second is admitted and its pods bind.
func TestKueueAdmitsJobsWithinQuota(t *testing.T) {
	e := start(t, "kueue", lt.MakeNode("node-a", "8").Obj())

	e.CreateResourceFlavor(t, "default")
	e.CreateClusterQueue(t, "cluster", "default", "2")
	e.CreateLocalQueue(t, e.ns, "team-a", "cluster")

	// Neither Job asks to be suspended; each needs the whole quota (2 pods x 1 cpu).
	jobs := []*batchv1.Job{e.submit("first"), e.submit("second")}

	e.oneAtATime(e.jobs(func(j *batchv1.Job) { e.waitStarted(j) }), jobs[0], jobs[1])
}

// submit creates an Indexed Job ns/name of 2 pods of 1 cpu in LocalQueue team-a, not
// suspended, and checks that Kueue's webhook suspended it on create.
func (e *kueueEnv) submit(name string) *batchv1.Job {
	e.t.Helper()
	return e.submitJob(lt.MakeJob().Namespace(e.ns).Name(name).Indexed(2).Req(lt.CPU("1")).Label(testenv.KueueQueueLabel, "team-a").Obj())
}

// submitJob creates a Job, not suspended, and checks that Kueue's webhook suspended it on
// create.
func (e *kueueEnv) submitJob(job *batchv1.Job) *batchv1.Job {
	e.t.Helper()
	created, err := e.Client.BatchV1().Jobs(job.Namespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating Job %s: %v", job.Name, err)
	}
	if !ptr.Deref(created.Spec.Suspend, false) {
		e.t.Fatalf("Job %s created with spec.suspend %v, want Kueue's webhook to suspend it", job.Name, created.Spec.Suspend)
	}
	return created
}

// queuedKind is what the one-at-a-time scenario needs of a kind of workload.
type queuedKind struct {
	// held checks that a workload waits in Kueue: suspended, no pods, no lockstep group.
	held func(obj metav1.Object)
	// placed waits until a workload runs and checks that it was placed as it asks.
	placed func(obj metav1.Object)
	// remove deletes a workload.
	remove func(obj metav1.Object)
}

// jobs is the queuedKind of batch/v1 Jobs, placed as placed checks.
func (e *kueueEnv) jobs(placed func(*batchv1.Job)) queuedKind {
	return queuedKind{
		held:   func(o metav1.Object) { e.assertHeld(o.(*batchv1.Job)) },
		placed: func(o metav1.Object) { placed(o.(*batchv1.Job)) },
		remove: func(o metav1.Object) {
			if err := e.Client.BatchV1().Jobs(e.ns).Delete(context.Background(), o.GetName(),
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
				e.t.Fatal(err)
			}
		},
	}
}

// oneAtATime is the scenario of two workloads submitted to a ClusterQueue with quota for
// one: Kueue admits one, which is placed, while the other waits in Kueue with nothing in
// lockstep; once the first is deleted, the second is admitted and placed.
func (e *kueueEnv) oneAtATime(k queuedKind, first, second metav1.Object) {
	e.t.Helper()
	objs := []metav1.Object{first, second}
	a, p := e.oneAdmitted(first, second)
	admitted, pending := objs[a], objs[p]
	k.held(pending)
	k.placed(admitted)
	k.held(pending)
	k.remove(admitted)
	testenv.Eventually(e.t, 90*time.Second, pending.GetName()+" admitted once "+admitted.GetName()+" is gone", func() (bool, string) {
		state, msg := e.admission(pending)
		return state == "admitted", state + " " + msg
	})
	k.placed(pending)
}

// oneAdmitted waits until Kueue has admitted one of two workloads (a Job, a JobSet) and holds
// the other for quota; it returns their indexes.
func (e *kueueEnv) oneAdmitted(objs ...metav1.Object) (admitted, pending int) {
	e.t.Helper()
	testenv.Eventually(e.t, 90*time.Second, "one admitted, the other pending for quota", func() (bool, string) {
		admitted, pending = -1, -1
		var seen []string
		for i, o := range objs {
			state, msg := e.admission(o)
			seen = append(seen, fmt.Sprintf("%s: %s %s", o.GetName(), state, msg))
			switch state {
			case "admitted":
				admitted = i
			case "pending":
				pending = i
			}
		}
		return admitted >= 0 && pending >= 0, fmt.Sprint(seen)
	})
	return admitted, pending
}

// admission is the state of the Kueue Workload of a Job or JobSet: "admitted" (Admitted
// true), "pending" (QuotaReserved false: it waits for quota), or "" while undecided, with the
// condition's message.
func (e *kueueEnv) admission(obj metav1.Object) (string, string) {
	e.t.Helper()
	wl := e.KueueWorkload(e.t, obj)
	if wl == nil {
		return "", "no Workload yet"
	}
	if c := testenv.WorkloadCondition(wl, "Admitted"); c != nil && c.Status == metav1.ConditionTrue {
		return "admitted", c.Message
	}
	if c := testenv.WorkloadCondition(wl, "QuotaReserved"); c != nil && c.Status == metav1.ConditionFalse {
		return "pending", c.Message
	}
	return "", "Workload " + wl.GetName() + " without a decision"
}

// waitStarted waits until Kueue has unsuspended the Job and all its pods (its parallelism)
// are bound; it returns their nodes.
func (e *kueueEnv) waitStarted(job *batchv1.Job) map[string]string {
	e.t.Helper()
	suspended := func() (bool, error) {
		got, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ptr.Deref(got.Spec.Suspend, false), nil
	}
	return e.waitResumedAndBound(job.Name, int(ptr.Deref(job.Spec.Parallelism, 1)), suspended, func() map[string]string { return e.pods(job) })
}

// waitResumedAndBound waits until a workload (name) is no longer suspended and its n pods are
// all bound; it returns their nodes.
func (e *kueueEnv) waitResumedAndBound(name string, n int, suspended func() (bool, error), pods func() map[string]string) map[string]string {
	e.t.Helper()
	var nodes map[string]string
	testenv.Eventually(e.t, 90*time.Second, fmt.Sprintf("%s unsuspended and its %d pods bound", name, n), func() (bool, string) {
		if s, err := suspended(); err != nil || s {
			return false, fmt.Sprintf("still suspended (%v)", err)
		}
		nodes = pods()
		bound := 0
		for _, node := range nodes {
			if node != "" {
				bound++
			}
		}
		return len(nodes) == n && bound == n, fmt.Sprint(nodes)
	})
	return nodes
}

// assertHeld fails unless the Job is still suspended and has no pods, and lockstep made no
// group for it: a queued workload has nothing in lockstep's queue or API.
func (e *kueueEnv) assertHeld(job *batchv1.Job) {
	e.t.Helper()
	got, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if !ptr.Deref(got.Spec.Suspend, false) {
		e.t.Errorf("Job %s runs without quota: spec.suspend %v", job.Name, got.Spec.Suspend)
	}
	if pods := e.pods(job); len(pods) != 0 {
		e.t.Errorf("Job %s has pods without quota: %v", job.Name, pods)
	}
	pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, pg := range pgs.Items {
		if ref := metav1.GetControllerOf(&pg); ref != nil && ref.UID == job.UID {
			e.t.Errorf("queued Job %s has lockstep PodGroup %s (%v)", job.Name, pg.Name, pg.Status.Conditions)
		}
	}
}

// pods maps the name of each pod of the Job to its node ("" while unbound).
func (e *kueueEnv) pods(job *batchv1.Job) map[string]string {
	e.t.Helper()
	return e.podNodes(batchv1.JobNameLabel + "=" + job.Name)
}

// podNodes maps the name of each pod of the test's namespace that selector selects to its
// node ("" while unbound).
func (e *kueueEnv) podNodes(selector string) map[string]string {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range list.Items {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

// submitSuspended creates obj (a JobSet, a TrainJob) of a kind, not suspended, through
// resource, and checks that Kueue's webhook suspended it on create, as created and as read
// back.
func (e *kueueEnv) submitSuspended(kind string, resource dynamic.ResourceInterface, obj *unstructured.Unstructured) *unstructured.Unstructured {
	e.t.Helper()
	created, err := resource.Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating %s %s: %v", kind, obj.GetName(), err)
	}
	if s, _, _ := unstructured.NestedBool(created.Object, "spec", "suspend"); !s {
		e.t.Fatalf("%s %s created with spec.suspend %v, want Kueue's webhook to suspend it", kind, obj.GetName(), created.Object["spec"].(map[string]any)["suspend"])
	}
	if !e.suspended(resource, created) {
		e.t.Fatalf("%s %s read back with spec.suspend false, want Kueue's webhook to have suspended it", kind, obj.GetName())
	}
	return created
}

// suspended reads the spec.suspend of an object served by resource.
func (e *kueueEnv) suspended(resource dynamic.ResourceInterface, obj *unstructured.Unstructured) bool {
	e.t.Helper()
	got, err := resource.Get(context.Background(), obj.GetName(), metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	s, _, _ := unstructured.NestedBool(got.Object, "spec", "suspend")
	return s
}

// Kueue decides whether, lockstep decides where: two teams' LocalQueues share a ClusterQueue
// with quota for one rack-required gang (4 pods x 2 cpu) at a time, on two racks of two 4-cpu
// nodes. Both teams submit one; Kueue admits one, whose pods lockstep binds whole in one rack
// as a gang (its PodGroup says so); the other waits in Kueue, suspended, with no pods and no
// lockstep group; when the first ends, the second is admitted and placed in one rack too.
func TestKueueQueuesLockstepPlacesWholeInOneRack(t *testing.T) {
	e := start(t, "teams", lt.TopologyNodes(1, 1, 2, 2, "4")...)

	e.CreateResourceFlavor(t, "default")
	e.CreateClusterQueue(t, "research", "default", "8")
	e.CreateLocalQueue(t, e.ns, "team-a", "research")
	e.CreateLocalQueue(t, e.ns, "team-b", "research")
	gang := func(name, queue string) *batchv1.Job {
		return lt.MakeJob().Namespace(e.ns).Name(name).Indexed(4).Req(lt.CPU("2")).Label(testenv.KueueQueueLabel, queue).
			Annotation(v1alpha1.JobTopologyRequiredAnnotation, lt.RackKey).Obj()
	}
	jobs := []*batchv1.Job{e.submitJob(gang("train-a", "team-a")), e.submitJob(gang("train-b", "team-b"))}

	e.oneAtATime(e.jobs(func(j *batchv1.Job) { e.assertOneRack(j, e.waitStarted(j)) }), jobs[0], jobs[1])
}

// assertOneRack checks that a Job's pods are in one rack (by their nodes' labels), and that
// they were placed as a gang: the Job's lockstep PodGroup (minCount 4) is scheduled.
func (e *kueueEnv) assertOneRack(job *batchv1.Job, pods map[string]string) {
	e.t.Helper()
	racks := map[string]bool{}
	for _, node := range pods {
		racks[e.NodeDomain(e.t, node, lt.RackKey)] = true
	}
	if len(racks) != 1 {
		e.t.Errorf("Job %s's pods in racks %v, want one: %v", job.Name, racks, pods)
	}
	name := filing.JobGroupName(job.Name, job.UID)
	e.WaitCondition(e.t, "PodGroup", e.ns, name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")
}
