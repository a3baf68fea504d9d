package kueue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/internal/kueuecontroller"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The shape of the test's TrainJobs: trainJobNodes trainer nodes of one pod of 2 cpu.
const trainJobNodes = 2

// Kueue's TrainJob integration decides when a Kubeflow TrainJob starts, lockstep where its
// pods go, together: a ClusterQueue with quota for one TrainJob at a time (4 cpu), on two
// racks of two 4-cpu nodes. Two TrainJobs (2 trainer nodes x 1 pod of 2 cpu, on a runtime
// without initializers whose pods are lockstep's) are submitted not suspended: Kueue's
// webhook suspends both on create; Kueue admits one, whose pods all bind and whose lockstep
// groups are Scheduled, while the other waits in Kueue, suspended, with no pods and nothing
// in lockstep (its JobSet, if Trainer made one, is suspended); once the first is deleted, the
// second is admitted and binds whole too.
func TestKueueAdmitsATrainJobLockstepBindsItWhole(t *testing.T) {
	// StartKueueWith installs the JobSet, Trainer and scheduler-plugins PodGroup CRDs before
	// Kueue starts: Kueue sets its TrainJob controller up at start only if the kind is served.
	e := startWith(t, kueuecontroller.Options{Frameworks: []string{kueuecontroller.FrameworkTrainJob}},
		"trainjobs", lt.TopologyNodes(1, 1, 2, 2, "4")...)
	e.StartJobSetController(t)
	e.StartTrainerController(t)

	e.CreateResourceFlavor(t, "default")
	e.CreateClusterQueue(t, "research", "default", "4")
	e.CreateLocalQueue(t, e.ns, "team-a", "research")

	e.CreateClusterTrainingRuntime(t, "torch", trainJobRuntime())
	jobs := []*unstructured.Unstructured{e.submitTrainJob("train-a", "torch", "team-a"), e.submitTrainJob("train-b", "torch", "team-a")}

	e.oneAtATime(e.unstructuredKind(e.trainJobs(), e.assertTrainJobHeld, func(u *unstructured.Unstructured) { e.assertTrainJobBoundWhole(u, e.waitTrainJobStarted(u)) }), jobs[0], jobs[1])
}

// trainJobRuntime is a ClusterTrainingRuntime spec without initializers: the torch mlPolicy
// of trainJobNodes nodes and a JobSet template of the node (trainer) step, one pod of 2 cpu
// per node (cpu only: the ClusterQueue covers no other resource), lockstep's, with what
// JobSet's webhook would default. The step's Job template says trainJobNodes pods
// (parallelism, completions) too: Kueue v0.15.0 computes a TrainJob's pod sets from the
// JobSet Trainer v2.1.0's builder makes of the runtime's template, which leaves the
// template's parallelism as it is (Trainer's controller sets it from numNodes), so a
// template of 1 pod is admitted for 1 pod whatever numNodes says.
func trainJobRuntime() map[string]any {
	node := map[string]any{
		"name": "node",
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
			"spec": map[string]any{
				"parallelism": int64(trainJobNodes),
				"completions": int64(trainJobNodes),
				"template": map[string]any{"spec": map[string]any{
					"schedulerName": lt.SchedulerName,
					"containers": []any{map[string]any{
						"name":      "node",
						"image":     "busybox",
						"command":   []any{"sh", "-c", "sleep 3600"},
						"resources": map[string]any{"requests": map[string]any{"cpu": "2"}},
					}},
				}},
			},
		},
	}
	template := map[string]any{"spec": map[string]any{"replicatedJobs": []any{node}}}
	testenv.DefaultJobSet(template)
	return map[string]any{
		"mlPolicy": map[string]any{"numNodes": int64(trainJobNodes), "torch": map[string]any{}},
		"template": template,
	}
}

// trainJobs is the TrainJob resource of the test's namespace.
func (e *kueueEnv) trainJobs() dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(e.Config).Resource(testenv.TrainJobGVR).Namespace(e.ns)
}

// submitTrainJob creates TrainJob ns/name of trainJobNodes nodes on ClusterTrainingRuntime
// runtime in LocalQueue queue, not suspended (spec.suspend false); it checks that Kueue's
// webhook suspended it on create, in the answer and read back. Kueue's webhook resolves the
// runtime from its informer cache, which may not hold a runtime just created: the TrainJob is
// created once a dry run of it passes the webhooks (a denial for a runtime not found is
// retried, as a user re-applying would; any other error fails the test).
func (e *kueueEnv) submitTrainJob(name, runtime, queue string) *unstructured.Unstructured {
	e.t.Helper()
	tj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": testenv.TrainJobGVR.GroupVersion().String(),
		"kind":       "TrainJob",
		"metadata": map[string]any{
			"name":      name,
			"namespace": e.ns,
			"labels":    map[string]any{testenv.KueueQueueLabel: queue},
		},
		"spec": map[string]any{
			"suspend": false,
			"runtimeRef": map[string]any{
				"apiGroup": "trainer.kubeflow.org",
				"kind":     "ClusterTrainingRuntime",
				"name":     runtime,
			},
			"trainer": map[string]any{"numNodes": int64(trainJobNodes)},
		},
	}}
	testenv.Eventually(e.t, 30*time.Second, fmt.Sprintf("Kueue's webhook to resolve runtime %s", runtime), func() (bool, string) {
		_, err := e.trainJobs().Create(context.Background(), tj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && !strings.Contains(err.Error(), "not found") {
			e.t.Fatalf("dry run of TrainJob %s: %v", name, err)
		}
		return err == nil, fmt.Sprint(err)
	})
	return e.submitSuspended("TrainJob", e.trainJobs(), tj)
}

// trainJobSet returns the JobSet Trainer made for a TrainJob (named as it, controlled by
// it), nil while there is none.
func (e *kueueEnv) trainJobSet(tj *unstructured.Unstructured) *unstructured.Unstructured {
	e.t.Helper()
	js, err := e.jobSets().Get(context.Background(), tj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(js); ref == nil || ref.UID != tj.GetUID() {
		e.t.Fatalf("JobSet %s is not controlled by TrainJob %s: %v", js.GetName(), tj.GetName(), ref)
	}
	return js
}

// trainJobPodNodes maps the name of each pod of a TrainJob (of its JobSet, named as it) to
// its node ("" while unbound).
func (e *kueueEnv) trainJobPodNodes(tj *unstructured.Unstructured) map[string]string {
	e.t.Helper()
	return e.podNodes(jobSetNameLabel + "=" + tj.GetName())
}

// trainJobOwners are the UIDs of a TrainJob, its JobSet and the JobSet's child Jobs, and
// a description of the JobSet and Jobs.
func (e *kueueEnv) trainJobOwners(tj *unstructured.Unstructured) (map[types.UID]bool, string) {
	e.t.Helper()
	owners := map[types.UID]bool{tj.GetUID(): true}
	js := e.trainJobSet(tj)
	if js == nil {
		return owners, "no JobSet"
	}
	owners[js.GetUID()] = true
	suspend, _, _ := unstructured.NestedBool(js.Object, "spec", "suspend")
	desc := fmt.Sprintf("JobSet %s (suspend %v), child Jobs", js.GetName(), suspend)
	for _, j := range e.childJobs(js) {
		owners[j.UID] = true
		desc += fmt.Sprintf(" %s (suspend %v)", j.Name, ptr.Deref(j.Spec.Suspend, false))
	}
	return owners, desc
}

// waitTrainJobStarted waits until Kueue has unsuspended the TrainJob and all its pods are
// bound; it returns their nodes.
func (e *kueueEnv) waitTrainJobStarted(tj *unstructured.Unstructured) map[string]string {
	e.t.Helper()
	return e.waitResumedAndBound("TrainJob "+tj.GetName(), trainJobNodes,
		func() (bool, error) { return e.suspended(e.trainJobs(), tj), nil },
		func() map[string]string { return e.trainJobPodNodes(tj) })
}

// assertTrainJobHeld fails unless the TrainJob waits in Kueue as a queued workload should:
// still suspended, pending for quota, without pods, its JobSet (if any) suspended, and
// nothing in lockstep controlled by it, its JobSet or the JobSet's child Jobs.
func (e *kueueEnv) assertTrainJobHeld(tj *unstructured.Unstructured) {
	e.t.Helper()
	if !e.suspended(e.trainJobs(), tj) {
		e.t.Errorf("TrainJob %s runs without quota: spec.suspend false", tj.GetName())
	}
	if state, msg := e.admission(tj); state != "pending" {
		e.t.Errorf("TrainJob %s's Kueue Workload: %q %s, want pending for quota", tj.GetName(), state, msg)
	}
	if pods := e.trainJobPodNodes(tj); len(pods) != 0 {
		e.t.Errorf("TrainJob %s has pods without quota: %v", tj.GetName(), pods)
	}
	if js := e.trainJobSet(tj); js != nil {
		if s, _, _ := unstructured.NestedBool(js.Object, "spec", "suspend"); !s {
			e.t.Errorf("queued TrainJob %s has an unsuspended JobSet", tj.GetName())
		}
		for _, j := range e.childJobs(js) {
			if !ptr.Deref(j.Spec.Suspend, false) {
				e.t.Errorf("queued TrainJob %s has an unsuspended Job %s", tj.GetName(), j.Name)
			}
		}
	}
	owners, desc := e.trainJobOwners(tj)
	e.t.Logf("queued TrainJob %s: %s", tj.GetName(), desc)
	if objs := e.lockstepObjects(owners); len(objs) != 0 {
		e.t.Errorf("queued TrainJob %s has lockstep objects: %v", tj.GetName(), objs)
	}
}

// assertTrainJobBoundWhole checks that all a TrainJob's pods are bound (pods) and that
// lockstep placed them together: it has lockstep groups (controlled by the TrainJob, its
// JobSet or a child Job; the trainer Job's PodGroup a gang of all trainJobNodes pods), and
// every one says its members were placed together.
func (e *kueueEnv) assertTrainJobBoundWhole(tj *unstructured.Unstructured, pods map[string]string) {
	e.t.Helper()
	owners, desc := e.trainJobOwners(tj)
	objs := e.lockstepObjects(owners)
	var groups []string
	for _, o := range objs {
		kind, name, _ := strings.Cut(o, " ")
		if kind == "Workload" {
			continue
		}
		groups = append(groups, o)
		if kind == "PodGroup" {
			pg, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				e.t.Fatal(err)
			}
			if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != trainJobNodes {
				e.t.Errorf("PodGroup %s: policy %+v, want a gang of %d (the trainer Job's pods)", name, pg.Spec.SchedulingPolicy, trainJobNodes)
			}
		}
		e.WaitCondition(e.t, kind, e.ns, name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	}
	if len(groups) == 0 {
		e.t.Fatalf("TrainJob %s bound without lockstep groups (%s): lockstep objects %v", tj.GetName(), desc, objs)
	}
	e.t.Logf("TrainJob %s bound (%s) as %v: %v", tj.GetName(), desc, objs, pods)
}
