package kueue

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
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

// Labels the JobSet controller puts on child Jobs and their pods.
const (
	jobSetNameLabel = "jobset.sigs.k8s.io/jobset-name"
	jobSetUIDLabel  = "jobset.sigs.k8s.io/jobset-uid"
)

// Kueue's JobSet integration decides when a JobSet starts, lockstep where its whole tree
// goes: two teams' LocalQueues share a ClusterQueue with quota for one JobSet at a time
// (8 cpu), on two racks of two 4-cpu nodes. Each team submits, not suspended, a JobSet of one
// ReplicatedJob of 2 Jobs x 2 pods x 2 cpu that requires one rack as a whole (lockstep's
// topology-required annotation on the JobSet): Kueue's webhook suspends both on create;
// Kueue admits one, whose 4 pods lockstep binds in one rack as one tree (its root
// CompositePodGroup is Scheduled), while the other waits in Kueue, suspended, with no pods and
// no lockstep group (a suspended JobSet has none); once the first is deleted, the second is
// admitted and binds whole in one rack too.
func TestKueueAdmitsAJobSetLockstepBindsItsTreeWhole(t *testing.T) {
	// StartKueueWith installs the JobSet CRD before Kueue starts: Kueue sets its JobSet
	// controller up at start only if the kind is served.
	e := startWith(t, kueuecontroller.Options{Frameworks: []string{kueuecontroller.FrameworkBatchJob, kueuecontroller.FrameworkJobSet}},
		"jobsets", lt.TopologyNodes(1, 1, 2, 2, "4")...)
	e.StartJobSetController(t)

	e.CreateResourceFlavor(t, "default")
	e.CreateClusterQueue(t, "research", "default", "8")
	e.CreateLocalQueue(t, e.ns, "team-a", "research")
	e.CreateLocalQueue(t, e.ns, "team-b", "research")

	jobsets := []*unstructured.Unstructured{e.submitJobSet("train-a", "team-a"), e.submitJobSet("train-b", "team-b")}

	e.oneAtATime(e.unstructuredKind(e.jobSets(), e.assertJobSetHeld, func(u *unstructured.Unstructured) { e.assertJobSetWholeInOneRack(u, e.waitJobSetStarted(u)) }), jobsets[0], jobsets[1])
}

// unstructuredKind is the queuedKind of a kind served by resource (JobSets, TrainJobs).
func (e *kueueEnv) unstructuredKind(resource dynamic.ResourceInterface, held, placed func(*unstructured.Unstructured)) queuedKind {
	return queuedKind{
		held:   func(o metav1.Object) { held(o.(*unstructured.Unstructured)) },
		placed: func(o metav1.Object) { placed(o.(*unstructured.Unstructured)) },
		remove: func(o metav1.Object) {
			if err := resource.Delete(context.Background(), o.GetName(),
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
				e.t.Fatal(err)
			}
		},
	}
}

// jobSets is the JobSet resource of the test's namespace.
func (e *kueueEnv) jobSets() dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(e.Config).Resource(testenv.JobSetGVR).Namespace(e.ns)
}

// The shape of the test's JobSets: 1 ReplicatedJob of jobSetReplicas Jobs of jobSetJobPods
// pods of 2 cpu.
const (
	jobSetReplicas = 2
	jobSetJobPods  = 2
	jobSetPods     = jobSetReplicas * jobSetJobPods
)

// submitJobSet creates JobSet ns/name in LocalQueue queue, not suspended (spec.suspend
// false), of the lockstep profile, with what JobSet's webhook would default (none is
// registered) and lockstep's topology-required rack annotation; it checks that Kueue's
// webhook suspended it on create, in the answer and read back.
func (e *kueueEnv) submitJobSet(name, queue string) *unstructured.Unstructured {
	e.t.Helper()
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": testenv.JobSetGVR.GroupVersion().String(),
		"kind":       "JobSet",
		"metadata": map[string]any{
			"name":        name,
			"namespace":   e.ns,
			"labels":      map[string]any{testenv.KueueQueueLabel: queue},
			"annotations": map[string]any{v1alpha1.JobTopologyRequiredAnnotation: lt.RackKey},
		},
		"spec": map[string]any{
			"suspend": false,
			"replicatedJobs": []any{map[string]any{
				"name":     "workers",
				"replicas": int64(jobSetReplicas),
				"template": map[string]any{"spec": map[string]any{
					"parallelism":  int64(jobSetJobPods),
					"completions":  int64(jobSetJobPods),
					"backoffLimit": int64(0),
					"template": map[string]any{"spec": map[string]any{
						"schedulerName": lt.SchedulerName,
						"containers": []any{map[string]any{"name": "c", "image": "busybox",
							"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}},
					}},
				}},
			}},
		},
	}}
	testenv.DefaultJobSet(js.Object)
	return e.submitSuspended("JobSet", e.jobSets(), js)
}

// jobSetPodNodes maps the name of each pod of a JobSet (this one, by UID) to its node (""
// while unbound).
func (e *kueueEnv) jobSetPodNodes(js *unstructured.Unstructured) map[string]string {
	e.t.Helper()
	return e.podNodes(jobSetNameLabel + "=" + js.GetName() + "," + jobSetUIDLabel + "=" + string(js.GetUID()))
}

// waitJobSetStarted waits until Kueue has unsuspended the JobSet and all its pods are bound;
// it returns their nodes.
func (e *kueueEnv) waitJobSetStarted(js *unstructured.Unstructured) map[string]string {
	e.t.Helper()
	return e.waitResumedAndBound("JobSet "+js.GetName(), jobSetPods,
		func() (bool, error) { return e.suspended(e.jobSets(), js), nil },
		func() map[string]string { return e.jobSetPodNodes(js) })
}

// lockstepObjects lists the lockstep Workloads, CompositePodGroups and PodGroups of the
// test's namespace controlled by one of owners (by UID), as "Kind name".
func (e *kueueEnv) lockstepObjects(owners map[types.UID]bool) []string {
	e.t.Helper()
	ctx := context.Background()
	c := e.Lockstep.SchedulingV1alpha1()
	var out []string
	add := func(kind string, m metav1.Object) {
		if ref := metav1.GetControllerOf(m); ref != nil && owners[ref.UID] {
			out = append(out, kind+" "+m.GetName())
		}
	}
	wls, err := c.Workloads(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range wls.Items {
		add("Workload", &wls.Items[i])
	}
	cpgs, err := c.CompositePodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range cpgs.Items {
		add("CompositePodGroup", &cpgs.Items[i])
	}
	pgs, err := c.PodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range pgs.Items {
		add("PodGroup", &pgs.Items[i])
	}
	sort.Strings(out)
	return out
}

// childJobs returns the Jobs the JobSet controller made for a JobSet.
func (e *kueueEnv) childJobs(js *unstructured.Unstructured) []batchv1.Job {
	e.t.Helper()
	list, err := e.Client.BatchV1().Jobs(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == js.GetUID() {
			out = append(out, j)
		}
	}
	return out
}

// assertJobSetHeld fails unless the JobSet waits in Kueue as a queued workload should: still
// suspended, pending for quota, without pods, and with nothing in lockstep — no Workload or
// group controlled by it or by any child Job the JobSet controller made for it (suspended).
func (e *kueueEnv) assertJobSetHeld(js *unstructured.Unstructured) {
	e.t.Helper()
	if !e.suspended(e.jobSets(), js) {
		e.t.Errorf("JobSet %s runs without quota: spec.suspend false", js.GetName())
	}
	if state, msg := e.admission(js); state != "pending" {
		e.t.Errorf("JobSet %s's Kueue Workload: %q %s, want pending for quota", js.GetName(), state, msg)
	}
	if pods := e.jobSetPodNodes(js); len(pods) != 0 {
		e.t.Errorf("JobSet %s has pods without quota: %v", js.GetName(), pods)
	}
	owners := map[types.UID]bool{js.GetUID(): true}
	var jobs []string
	for _, j := range e.childJobs(js) {
		owners[j.UID] = true
		jobs = append(jobs, fmt.Sprintf("%s (suspend %v)", j.Name, ptr.Deref(j.Spec.Suspend, false)))
		if !ptr.Deref(j.Spec.Suspend, false) {
			e.t.Errorf("queued JobSet %s has an unsuspended child Job %s", js.GetName(), j.Name)
		}
	}
	e.t.Logf("queued JobSet %s: child Jobs %v", js.GetName(), jobs)
	if objs := e.lockstepObjects(owners); len(objs) != 0 {
		e.t.Errorf("queued JobSet %s has lockstep objects: %v", js.GetName(), objs)
	}
}

// assertJobSetWholeInOneRack checks that a JobSet's pods are in one rack (their nodes, named
// for their place) and that lockstep placed them as one tree: its groups are a root
// CompositePodGroup, one for the ReplicatedJob and a PodGroup of 2 per child Job, all
// controlled by the JobSet, and each says its members were placed together.
func (e *kueueEnv) assertJobSetWholeInOneRack(js *unstructured.Unstructured, pods map[string]string) {
	e.t.Helper()
	racks := map[string]bool{}
	for _, node := range pods {
		racks[e.NodeDomain(e.t, node, lt.RackKey)] = true
	}
	if len(racks) != 1 {
		e.t.Errorf("JobSet %s's pods in racks %v, want one: %v", js.GetName(), racks, pods)
	}
	ctx := context.Background()
	cpgs, err := e.Lockstep.SchedulingV1alpha1().CompositePodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var roots, mids []string
	for i := range cpgs.Items {
		c := &cpgs.Items[i]
		if ref := metav1.GetControllerOf(c); ref == nil || ref.UID != js.GetUID() {
			continue
		}
		if c.Spec.ParentCompositePodGroupName == nil {
			roots = append(roots, c.Name)
			if tc := c.Spec.SchedulingConstraints; tc == nil || len(tc.Topology) != 1 || tc.Topology[0].Key != lt.RackKey || tc.Topology[0].Mode != v1alpha1.TopologyRequired {
				e.t.Errorf("JobSet %s's root CompositePodGroup %s has constraints %+v, want its rack required", js.GetName(), c.Name, tc)
			}
		} else {
			mids = append(mids, c.Name)
		}
	}
	pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var groups []string
	for i := range pgs.Items {
		pg := &pgs.Items[i]
		if ref := metav1.GetControllerOf(pg); ref == nil || ref.UID != js.GetUID() {
			continue
		}
		groups = append(groups, pg.Name)
		if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != jobSetJobPods {
			e.t.Errorf("PodGroup %s: policy %+v, want a gang of %d", pg.Name, pg.Spec.SchedulingPolicy, jobSetJobPods)
		}
	}
	if len(roots) != 1 || len(mids) != 1 || len(groups) != jobSetReplicas {
		e.t.Fatalf("JobSet %s's tree: roots %v, ReplicatedJob CompositePodGroups %v, PodGroups %v; want 1, 1 and %d",
			js.GetName(), roots, mids, groups, jobSetReplicas)
	}
	e.WaitCondition(e.t, "CompositePodGroup", e.ns, roots[0], metav1.ConditionTrue, v1alpha1.ReasonScheduled, "child groups placed together")
	e.WaitCondition(e.t, "CompositePodGroup", e.ns, mids[0], metav1.ConditionTrue, v1alpha1.ReasonScheduled, "child groups placed together")
	for _, g := range groups {
		e.WaitCondition(e.t, "PodGroup", e.ns, g, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "pods placed together")
	}
	e.t.Logf("JobSet %s bound in rack %v as root %s > %s > %s: %v", js.GetName(), keys(racks), roots[0], mids[0], strings.Join(groups, ", "), pods)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
