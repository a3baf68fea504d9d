package jobset

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// rjob is a ReplicatedJob of a test JobSet: replicas Jobs of pods pods of cpu each.
type rjob struct {
	name      string
	replicas  int
	pods      int
	cpu       string
	dependsOn string // "name=Complete" or "name=Ready"
}

// newJobSet returns a JobSet of the lockstep profile, with what JobSet's webhook defaults.
func newJobSet(ns, name string, rjobs ...rjob) *unstructured.Unstructured {
	var list []any
	for _, r := range rjobs {
		rj := map[string]any{
			"name":     r.name,
			"replicas": int64(r.replicas),
			"template": map[string]any{"spec": map[string]any{
				"parallelism":  int64(r.pods),
				"completions":  int64(r.pods),
				"backoffLimit": int64(0),
				"template": map[string]any{"spec": map[string]any{
					"schedulerName": lt.SchedulerName,
					"containers": []any{map[string]any{"name": "c", "image": "busybox",
						"resources": map[string]any{"requests": map[string]any{"cpu": r.cpu}}}},
				}},
			}},
		}
		if r.dependsOn != "" {
			dep := strings.SplitN(r.dependsOn, "=", 2)
			rj["dependsOn"] = []any{map[string]any{"name": dep[0], "status": dep[1]}}
		}
		list = append(list, rj)
	}
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2",
		"kind":       "JobSet",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"replicatedJobs": list},
	}}
	testenv.DefaultJobSet(js.Object)
	return js
}

type env struct {
	*testenv.Env
	t       *testing.T
	ns      string
	jobsets dynamic.ResourceInterface
	// controller is lockstep's workload controller.
	controller *testenv.JobController
}

// start runs the control plane with the Job and garbage collectors, the JobSet controller,
// lockstep's workload controller and the scheduler (in that order: lockstep sees the JobSet
// API served when it starts), and a stand-in for kubelets.
func start(t *testing.T, ns string, end func(*v1.Pod) v1.PodPhase, nodes ...*v1.Node) *env {
	e := &env{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, ns)
	e.CreateNodes(t, nodes...)
	e.StartKubeControllers(t)
	e.StartJobSetController(t)
	e.controller = e.StartJobController(t)
	e.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 1})
	e.StartKubelets(t, e.ns)
	e.RunPods(t, e.ns, end)
	e.jobsets = dynamic.NewForConfigOrDie(e.Config).Resource(testenv.JobSetGVR).Namespace(e.ns)
	return e
}

func (e *env) create(js *unstructured.Unstructured) {
	e.t.Helper()
	if _, err := e.jobsets.Create(context.Background(), js, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// pods returns the pods of a JobSet by name, with their node ("" while unbound).
func (e *env) pods(jobset string) map[string]*v1.Pod {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + jobset})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]*v1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func boundCount(pods map[string]*v1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// waitBound waits until a JobSet has n pods of which b are bound.
func (e *env) waitBound(jobset string, n, b int) map[string]*v1.Pod {
	e.t.Helper()
	var pods map[string]*v1.Pod
	testenv.Eventually(e.t, 90*time.Second, fmt.Sprintf("JobSet %s: %d pods, %d bound", jobset, n, b), func() (bool, string) {
		pods = e.pods(jobset)
		return len(pods) == n && boundCount(pods) == b, fmt.Sprintf("%d pods, %d bound", len(pods), boundCount(pods))
	})
	return pods
}

// A JobSet of 2 ReplicatedJobs × 2 Jobs × 4 pods on a cluster with room for it once: it gets
// a Workload and a tree (a root, a CompositePodGroup per ReplicatedJob, a PodGroup per child
// Job) and binds whole; a second one binds nothing while the first runs — no pod of it binds
// on the room that is left — and binds whole once the first is deleted.
func TestJobSetBindsWholeOrNotAtAll(t *testing.T) {
	e := start(t, "whole", nil, lt.MakeNode("n1", "8").Obj(), lt.MakeNode("n2", "8").Obj(), lt.MakeNode("n3", "2").Obj())
	shape := []rjob{{name: "leaders", replicas: 2, pods: 4, cpu: "1"}, {name: "workers", replicas: 2, pods: 4, cpu: "1"}}
	e.create(newJobSet(e.ns, "first", shape...))
	e.waitBound("first", 16, 16)

	ctx := context.Background()
	cpgs, err := e.Lockstep.SchedulingV1alpha1().CompositePodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cpgs.Items) != 3 || len(pgs.Items) != 4 {
		t.Fatalf("tree of %d CompositePodGroups and %d PodGroups, want 3 (root and one per ReplicatedJob) and 4 (one per child Job)", len(cpgs.Items), len(pgs.Items))
	}
	for _, pg := range pgs.Items {
		if g := pg.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 || pg.Spec.ParentCompositePodGroupName == nil {
			t.Errorf("PodGroup %s: policy %+v parent %v, want a gang of 4 under its ReplicatedJob", pg.Name, pg.Spec.SchedulingPolicy, pg.Spec.ParentCompositePodGroupName)
		}
	}

	e.create(newJobSet(e.ns, "second", shape...))
	pods := e.waitBound("second", 16, 0)
	// The gang is refused as a whole, and says so.
	testenv.Eventually(t, 60*time.Second, "the second JobSet's root explains why it waits", func() (bool, string) {
		list, err := e.Lockstep.SchedulingV1alpha1().CompositePodGroups(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range list.Items {
			if c.Spec.ParentCompositePodGroupName != nil || !strings.HasPrefix(c.Name, "second") {
				continue
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == v1alpha1.PodGroupInitiallyScheduled && cond.Status == metav1.ConditionFalse && cond.Message != "" {
					return true, cond.Message
				}
			}
		}
		return false, "no condition on the root yet"
	})
	e.Settled(t, "no pod of the second JobSet bound on the room left", func() (bool, string) {
		n := boundCount(e.pods("second"))
		return n == 0, fmt.Sprintf("%d bound", n)
	})
	if err := e.jobsets.Delete(ctx, "first", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	pods = e.waitBound("second", 16, 16)
	nodes := map[string]int{}
	for _, p := range pods {
		nodes[p.Spec.NodeName]++
	}
	if nodes["n1"] > 8 || nodes["n2"] > 8 || nodes["n3"] > 2 {
		t.Errorf("pods per node %v exceed the nodes' cpu", nodes)
	}
}

// A staged JobSet: an initializer, then trainers that start when it is Complete. Each stage
// is a root of its own, so the initializer runs alone (the trainers cannot exist yet) and
// the 2 trainer Jobs × 2 pods then bind together; both stages run to completion.
func TestStagedJobSetRunsBothStages(t *testing.T) {
	e := start(t, "staged", func(*v1.Pod) v1.PodPhase { return v1.PodSucceeded }, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	e.create(newJobSet(e.ns, "train", rjob{name: "init", replicas: 1, pods: 1, cpu: "1"},
		rjob{name: "trainer", replicas: 2, pods: 2, cpu: "2", dependsOn: "init=Complete"}))
	ctx := context.Background()
	testenv.Eventually(t, 120*time.Second, "the JobSet completes", func() (bool, string) {
		js, err := e.jobsets.Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(js.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "Completed" && m["status"] == "True" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v; pods %d", conds, len(e.pods("train")))
	})
	pods := e.pods("train")
	var trainers []string
	for name, p := range pods {
		if p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] == "trainer" {
			trainers = append(trainers, name+"@"+p.Spec.NodeName)
			if p.Spec.NodeName == "" {
				t.Errorf("trainer pod %s never bound", name)
			}
		}
	}
	sort.Strings(trainers)
	if len(trainers) != 4 {
		t.Errorf("trainer pods %v, want 4", trainers)
	}
	roots := 0
	cpgs, err := e.Lockstep.SchedulingV1alpha1().CompositePodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cpgs.Items {
		if c.Spec.ParentCompositePodGroupName == nil {
			roots++
		}
	}
	if roots != 2 {
		t.Errorf("%d roots, want 2: one per stage", roots)
	}
}

// A JobSet with exclusive-topology on racks, enforced by the planner with no webhook and no
// pod affinity: each of its 2 Jobs gets a rack of its own, although one rack could hold both;
// a pod of another workload created afterwards goes to the third rack, not into a held one.
func TestExclusiveTopologyGivesEachJobARack(t *testing.T) {
	e := start(t, "exclusive", nil, lt.TopologyNodes(1, 1, 3, 2, "4")...)
	// Rack r2 runs another workload (so the Jobs take r0 and r1) and is the more allocated:
	// without exclusivity, the pod created last would go to an empty node of a held rack.
	for _, h := range []string{"h0", "h1"} {
		e.CreatePods(t, lt.GroupPod(e.ns, "filler-"+h, "").Req(lt.CPU("2")).Node("z0-b0-r2-"+h).Obj())
	}
	js := newJobSet(e.ns, "train", rjob{name: "workers", replicas: 2, pods: 2, cpu: "1"})
	js.SetAnnotations(map[string]string{"alpha.jobset.sigs.k8s.io/exclusive-topology": lt.RackKey})
	e.create(js)
	pods := e.waitBound("train", 4, 4)
	rackOfJob := map[string]map[string]bool{}
	for _, p := range pods {
		job := p.Labels["jobset.sigs.k8s.io/job-index"]
		if rackOfJob[job] == nil {
			rackOfJob[job] = map[string]bool{}
		}
		rackOfJob[job][testenv.Domain(p.Spec.NodeName, lt.RackKey)] = true
	}
	held := map[string]bool{}
	for job, racks := range rackOfJob {
		if len(racks) != 1 {
			t.Errorf("Job %s spread over racks %v", job, racks)
		}
		for r := range racks {
			if held[r] {
				t.Errorf("two Jobs in rack %s", r)
			}
			held[r] = true
		}
	}
	e.CreatePods(t, lt.GroupPod(e.ns, "other", "").Req(lt.CPU("1")).Obj())
	testenv.Eventually(t, 60*time.Second, "the other pod bound", func() (bool, string) {
		p, err := e.Client.CoreV1().Pods(e.ns).Get(context.Background(), "other", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Spec.NodeName != "", "pending"
	})
	p, err := e.Client.CoreV1().Pods(e.ns).Get(context.Background(), "other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := testenv.Domain(p.Spec.NodeName, lt.RackKey); held[r] {
		t.Errorf("another workload's pod bound in rack %s, which a Job holds exclusively", r)
	}
}

// A JobSet that restarts (a pod failed, failurePolicy maxRestarts 1): the JobSet controller
// recreates its child Jobs under the same names; their pods get fresh groups (the previous
// attempt's are deleted), bind whole again, and the JobSet completes.
func TestRestartedJobSetGetsFreshGroups(t *testing.T) {
	end := func(p *v1.Pod) v1.PodPhase {
		if p.Labels["jobset.sigs.k8s.io/restart-attempt"] != "0" {
			return v1.PodSucceeded
		}
		if p.Labels["jobset.sigs.k8s.io/job-index"] == "0" && p.Annotations["batch.kubernetes.io/job-completion-index"] == "0" {
			return v1.PodFailed
		}
		return ""
	}
	e := start(t, "restart", end, lt.MakeNode("n1", "8").Obj())
	js := newJobSet(e.ns, "train", rjob{name: "workers", replicas: 2, pods: 2, cpu: "1"})
	if err := unstructured.SetNestedField(js.Object, int64(1), "spec", "failurePolicy", "maxRestarts"); err != nil {
		t.Fatal(err)
	}
	e.create(js)
	ctx := context.Background()
	podGroups := func() []string {
		list, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, pg := range list.Items {
			out = append(out, pg.Name)
		}
		sort.Strings(out)
		return out
	}
	var first []string
	testenv.Eventually(t, 60*time.Second, "the first attempt's 2 PodGroups", func() (bool, string) {
		first = podGroups()
		return len(first) == 2, fmt.Sprint(first)
	})
	testenv.Eventually(t, 120*time.Second, "the JobSet completes after its restart", func() (bool, string) {
		obj, err := e.jobsets.Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		restarts, _, _ := unstructured.NestedInt64(obj.Object, "status", "restarts")
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "Completed" && m["status"] == "True" {
				return restarts == 1, fmt.Sprintf("completed after %d restarts", restarts)
			}
		}
		return false, fmt.Sprintf("restarts %d, conditions %v", restarts, conds)
	})
	var second []string
	testenv.Eventually(t, 60*time.Second, "only the second attempt's PodGroups", func() (bool, string) {
		second = podGroups()
		if len(second) != 2 {
			return false, fmt.Sprint(second)
		}
		for _, n := range second {
			for _, f := range first {
				if n == f {
					return false, fmt.Sprintf("%v still has the first attempt's %s", second, f)
				}
			}
		}
		return true, ""
	})
}

// A JobSet created suspended (queued in Kueue, or by its owner) gets no groups and no pods;
// resumed, it gets its groups and its pods bind whole.
func TestSuspendedJobSetBindsWholeWhenResumed(t *testing.T) {
	e := start(t, "suspend", nil, lt.MakeNode("n1", "8").Obj())
	js := newJobSet(e.ns, "train", rjob{name: "workers", replicas: 2, pods: 3, cpu: "1"})
	if err := unstructured.SetNestedField(js.Object, true, "spec", "suspend"); err != nil {
		t.Fatal(err)
	}
	e.create(js)
	ctx := context.Background()
	e.controller.Settled(t, testenv.JobSetGVR, e.ns, "train", "no groups for the suspended JobSet", func() (bool, string) {
		list, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d PodGroups", len(list.Items))
	})
	if n := len(e.pods("train")); n != 0 {
		t.Fatalf("suspended JobSet has %d pods", n)
	}
	testenv.OnLatest(t, func() error {
		cur, err := e.jobsets.Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(cur.Object, false, "spec", "suspend"); err != nil {
			return err
		}
		_, err = e.jobsets.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	e.waitBound("train", 6, 6)
}
