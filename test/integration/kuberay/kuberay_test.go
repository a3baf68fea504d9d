// Package kuberay runs the real KubeRay operator (v1.4.0, built from tools/kuberay) next to the
// upstream Job controller and garbage collector, lockstep's workload controller and the
// lockstep scheduler, and checks what the operator makes of RayClusters and RayJobs whose pod
// templates ask for lockstep-scheduler: the pods, their labels and owners, the
// scheduler-plugins PodGroup of its batch-scheduler integration, scaling a worker group as
// the Ray autoscaler does, and a RayJob's submitter Job. How lockstep places these pods is
// not what is checked here: without a gang they may bind one by one.
package kuberay

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/lockstep-sched/lockstep/internal/kuberaycontroller"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// rayEnv is a test's control plane with the KubeRay operator and lockstep running, and its
// namespace.
type rayEnv struct {
	*testenv.Env
	t   *testing.T
	ns  string
	dyn dynamic.Interface
}

// start runs the control plane with the upstream Job controller and garbage collector (a
// RayJob's submitter is a batch/v1 Job), the KubeRay operator configured by opts, lockstep's
// scheduler and workload controller, kubelets that end deleted pods, and one node of 16 cpu.
func start(t *testing.T, opts ...testenv.KubeRayOption) *rayEnv {
	e := &rayEnv{Env: testenv.Start(t), t: t}
	e.dyn = dynamic.NewForConfigOrDie(e.Config)
	e.StartKubeControllers(t)
	e.StartKubeRayOperator(t, opts...)
	e.ns = e.Namespace(t, "ray")
	e.StartKubelets(t, e.ns)
	e.CreateNodes(t, lt.MakeNode("node-a", "16").Obj())
	e.StartScheduler(t, nil)
	e.StartJobController(t)
	return e
}

// rayContainer is a Ray container asking for 1 cpu and 1Gi; the image is never pulled.
func rayContainer(name string) map[string]any {
	res := map[string]any{"cpu": "1", "memory": "1Gi"}
	return map[string]any{
		"name":      name,
		"image":     "rayproject/ray:2.46.0",
		"resources": map[string]any{"requests": res, "limits": res},
	}
}

// clusterSpec is a RayCluster spec: a head and one worker group "workers" of replicas
// (minReplicas 2, maxReplicas 4), both templates with schedulerName lockstep-scheduler.
func clusterSpec(replicas int64) map[string]any {
	template := func(container string) map[string]any {
		return map[string]any{"spec": map[string]any{
			"schedulerName": lt.SchedulerName,
			"containers":    []any{rayContainer(container)},
		}}
	}
	return map[string]any{
		"rayVersion": "2.46.0",
		"headGroupSpec": map[string]any{
			"rayStartParams": map[string]any{},
			"template":       template("ray-head"),
		},
		"workerGroupSpecs": []any{map[string]any{
			"groupName":      "workers",
			"replicas":       replicas,
			"minReplicas":    int64(2),
			"maxReplicas":    int64(4),
			"rayStartParams": map[string]any{},
			"template":       template("ray-worker"),
		}},
	}
}

// create creates a KubeRay object (kind RayCluster or RayJob) named name in the test's
// namespace, with labels and spec.
func (e *rayEnv) create(kind, name string, objLabels map[string]string, spec map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	gvr := testenv.RayClusterGVR
	if kind == "RayJob" {
		gvr = testenv.RayJobGVR
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1",
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": e.ns},
		"spec":       spec,
	}}
	if objLabels != nil {
		obj.SetLabels(objLabels)
	}
	created, err := e.dyn.Resource(gvr).Namespace(e.ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	return created
}

// pods returns the live pods of the test's namespace matching selector (a label selector),
// by name.
func (e *rayEnv) pods(selector string) []v1.Pod {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// waitPods waits until exactly n live pods match selector and returns them.
func (e *rayEnv) waitPods(selector string, n int) []v1.Pod {
	e.t.Helper()
	var pods []v1.Pod
	testenv.Eventually(e.t, 60*time.Second, fmt.Sprintf("%d pods %s", n, selector), func() (bool, string) {
		pods = e.pods(selector)
		return len(pods) == n, fmt.Sprintf("%d pods: %v", len(pods), names(pods))
	})
	return pods
}

// names are the pods' names.
func names(pods []v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// clusterPods waits for the head and n worker pods of RayCluster cluster and returns them.
func (e *rayEnv) clusterPods(cluster string, workers int) (head v1.Pod, workerPods []v1.Pod) {
	e.t.Helper()
	sel := func(nodeType string) string {
		return labels.Set{kuberaycontroller.ClusterLabel: cluster, kuberaycontroller.NodeTypeLabel: nodeType}.String()
	}
	return e.waitPods(sel("head"), 1)[0], e.waitPods(sel("worker"), workers)
}

// logPod logs what KubeRay put on a pod: labels, annotations, owners, schedulerName and, if
// bound, its node.
func (e *rayEnv) logPod(role string, p *v1.Pod) {
	e.t.Helper()
	owners, _ := json.Marshal(p.OwnerReferences)
	e.t.Logf("%s pod %s: schedulerName=%s node=%q\n  labels=%v\n  annotations=%v\n  ownerReferences=%s",
		role, p.Name, p.Spec.SchedulerName, p.Spec.NodeName, p.Labels, p.Annotations, owners)
}

// checkRayPod checks the labels and owner KubeRay gives every pod of RayCluster cluster
// (uid): the ray.io labels of its node type and group, schedulerName lockstep-scheduler as
// the template says, the scheduler-plugins pod-group label (valued the cluster's name) if and
// only if gang, and the RayCluster as its controller.
func (e *rayEnv) checkRayPod(p *v1.Pod, cluster string, uid types.UID, nodeType, group string, gang bool) {
	e.t.Helper()
	e.logPod(nodeType, p)
	want := map[string]string{
		kuberaycontroller.ClusterLabel:   cluster,
		kuberaycontroller.NodeTypeLabel:  nodeType,
		kuberaycontroller.GroupLabel:     group,
		kuberaycontroller.IsRayNodeLabel: "yes",
		kuberaycontroller.CreatedByLabel: "kuberay-operator",
	}
	for k, v := range want {
		if got, ok := p.Labels[k]; !ok || got != v {
			e.t.Errorf("pod %s: label %s=%q (set %v), want %q", p.Name, k, got, ok, v)
		}
	}
	if got, ok := p.Labels[kuberaycontroller.PodGroupLabel]; ok != gang || (gang && got != cluster) {
		e.t.Errorf("pod %s: label %s=%q (set %v), want set %v to %q", p.Name, kuberaycontroller.PodGroupLabel, got, ok, gang, cluster)
	}
	if p.Spec.SchedulerName != lt.SchedulerName {
		e.t.Errorf("pod %s: schedulerName %q, want the template's %q", p.Name, p.Spec.SchedulerName, lt.SchedulerName)
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.UID != uid || ref.Kind != "RayCluster" || ref.APIVersion != "ray.io/v1" || len(p.OwnerReferences) != 1 {
		e.t.Errorf("pod %s: ownerReferences %+v, want the RayCluster %s alone as controller", p.Name, p.OwnerReferences, cluster)
	}
}

// setWorkers sets the replicas of RayCluster cluster's worker group, with workersToDelete
// (nil leaves the scale strategy alone), as the Ray autoscaler does (a merge patch of
// workerGroupSpecs, which replaces the list).
func (e *rayEnv) setWorkers(cluster string, replicas int64, workersToDelete []string) {
	e.t.Helper()
	rc, err := e.dyn.Resource(testenv.RayClusterGVR).Namespace(e.ns).Get(context.Background(), cluster, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
	group := groups[0].(map[string]any)
	group["replicas"] = replicas
	if workersToDelete != nil {
		var del []any
		for _, w := range workersToDelete {
			del = append(del, w)
		}
		group["scaleStrategy"] = map[string]any{"workersToDelete": del}
	}
	if err := unstructured.SetNestedSlice(rc.Object, groups, "spec", "workerGroupSpecs"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dyn.Resource(testenv.RayClusterGVR).Namespace(e.ns).Update(context.Background(), rc, metav1.UpdateOptions{}); err != nil {
		e.t.Fatalf("scaling RayCluster %s: %v", cluster, err)
	}
}

// podGroup returns the scheduler-plugins PodGroup ns/name, nil if there is none.
func (e *rayEnv) podGroup(name string) *unstructured.Unstructured {
	e.t.Helper()
	pg, err := e.dyn.Resource(testenv.SchedulerPluginsPodGroupGVR).Namespace(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return pg
}

// Without a batch scheduler KubeRay makes a head pod and replicas worker pods, each owned
// (controller) by the RayCluster, labelled with its cluster, node type and group, and with
// the template's schedulerName: lockstep-scheduler. Raising replicas (as the Ray autoscaler
// does) adds a worker; lowering them with workersToDelete removes exactly those workers.
func TestRayClusterPods(t *testing.T) {
	e := start(t)
	rc := e.create("RayCluster", "raycluster", nil, clusterSpec(2))

	head, workers := e.clusterPods("raycluster", 2)
	e.checkRayPod(&head, "raycluster", rc.GetUID(), "head", kuberaycontroller.HeadGroup, false)
	for i := range workers {
		e.checkRayPod(&workers[i], "raycluster", rc.GetUID(), "worker", "workers", false)
	}
	if pg := e.podGroup("raycluster"); pg != nil {
		t.Errorf("PodGroup %s made without a batch scheduler", pg.GetName())
	}

	// The autoscaler raises replicas to 3: a third worker, like the others.
	e.setWorkers("raycluster", 3, nil)
	_, workers = e.clusterPods("raycluster", 3)
	for i := range workers {
		e.checkRayPod(&workers[i], "raycluster", rc.GetUID(), "worker", "workers", false)
	}

	// The autoscaler scales down by naming the worker to remove: that one goes, the others
	// stay. (Had KubeRay ignored workersToDelete, this cluster, without in-tree autoscaling,
	// would delete the first worker of its cache's list instead: name the last by name, so
	// that the two rarely coincide.)
	victim := workers[2].Name
	e.setWorkers("raycluster", 2, []string{victim})
	_, left := e.clusterPods("raycluster", 2)
	for _, p := range left {
		if p.Name == victim {
			t.Errorf("worker %s named in workersToDelete is still there: %v", victim, names(left))
		}
	}
	rcNow, err := e.dyn.Resource(testenv.RayClusterGVR).Namespace(e.ns).Get(context.Background(), "raycluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups, _, _ := unstructured.NestedSlice(rcNow.Object, "spec", "workerGroupSpecs")
	t.Logf("scaleStrategy after the scale-down: %v (KubeRay does not clear it in the spec)", groups[0].(map[string]any)["scaleStrategy"])
}

// With the scheduler-plugins batch scheduler, a RayCluster labelled
// ray.io/gang-scheduling-enabled gets a scheduler-plugins PodGroup named after it, owned by
// it (not as controller), of minMember head + replicas and minResources the sum of the pods'
// requests, and its pods the label scheduling.x-k8s.io/pod-group=<cluster>, their
// schedulerName left as the template says. The PodGroup is created once: raising replicas
// adds a labelled worker but leaves minMember alone. A RayCluster without the label gets
// neither.
func TestRayClusterSchedulerPlugins(t *testing.T) {
	e := start(t, testenv.KubeRayBatchScheduler(kuberaycontroller.BatchSchedulerPlugins))
	rc := e.create("RayCluster", "gang", map[string]string{kuberaycontroller.GangSchedulingLabel: "true"}, clusterSpec(2))
	plain := e.create("RayCluster", "plain", nil, clusterSpec(2))

	head, workers := e.clusterPods("gang", 2)
	e.checkRayPod(&head, "gang", rc.GetUID(), "head", kuberaycontroller.HeadGroup, true)
	for i := range workers {
		e.checkRayPod(&workers[i], "gang", rc.GetUID(), "worker", "workers", true)
	}
	pg := e.podGroup("gang")
	if pg == nil {
		t.Fatal("no PodGroup gang")
	}
	e.checkPodGroup(pg, rc, 3, "3", "3Gi")

	plainHead, plainWorkers := e.clusterPods("plain", 2)
	for _, p := range append(plainWorkers, plainHead) {
		e.checkRayPod(&p, "plain", plain.GetUID(), p.Labels[kuberaycontroller.NodeTypeLabel], p.Labels[kuberaycontroller.GroupLabel], false)
	}
	if pg := e.podGroup("plain"); pg != nil {
		t.Errorf("PodGroup plain made for a RayCluster without %s", kuberaycontroller.GangSchedulingLabel)
	}

	e.setWorkers("gang", 3, nil)
	_, workers = e.clusterPods("gang", 3)
	for i := range workers {
		e.checkRayPod(&workers[i], "gang", rc.GetUID(), "worker", "workers", true)
	}
	testenv.Consistently(t, 3*time.Second, "PodGroup gang left as created", func() (bool, string) {
		pg := e.podGroup("gang")
		mm, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
		return mm == 3, fmt.Sprintf("minMember %d", mm)
	})
}

// checkPodGroup checks the PodGroup KubeRay made for RayCluster rc: minMember, minResources
// cpu and memory, and an owner reference to rc that is not a controller's.
func (e *rayEnv) checkPodGroup(pg, rc *unstructured.Unstructured, minMember int64, cpu, memory string) {
	e.t.Helper()
	spec, _ := json.Marshal(pg.Object["spec"])
	owners, _ := json.Marshal(pg.GetOwnerReferences())
	e.t.Logf("PodGroup %s: labels=%v annotations=%v spec=%s ownerReferences=%s", pg.GetName(), pg.GetLabels(), pg.GetAnnotations(), spec, owners)
	if mm, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); mm != minMember {
		e.t.Errorf("PodGroup %s: minMember %d, want %d", pg.GetName(), mm, minMember)
	}
	res, _, _ := unstructured.NestedStringMap(pg.Object, "spec", "minResources")
	for name, want := range map[string]string{"cpu": cpu, "memory": memory} {
		if got, err := resource.ParseQuantity(res[name]); err != nil || got.Cmp(resource.MustParse(want)) != 0 {
			e.t.Errorf("PodGroup %s: minResources %s %q, want %s", pg.GetName(), name, res[name], want)
		}
	}
	refs := pg.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != rc.GetUID() || refs[0].Kind != "RayCluster" || refs[0].Controller != nil && *refs[0].Controller {
		e.t.Errorf("PodGroup %s: ownerReferences %s, want the RayCluster %s, not as controller", pg.GetName(), owners, rc.GetName())
	}
}

// A RayJob in K8sJobMode (the gang label on it, with the scheduler-plugins batch scheduler)
// makes a RayCluster labelled with its origin (and the RayJob's labels) whose pods are as a
// RayCluster's; once they run (RunPods) and the cluster is Ready, KubeRay creates the
// submitter: a batch/v1 Job named after the RayJob, controlled by it, whose pod (made by the
// Job controller from KubeRay's default template) carries neither the ray.io labels nor the
// pod-group label and has the default schedulerName: it is not lockstep's, nor in the gang.
func TestRayJobSubmitter(t *testing.T) {
	e := start(t, testenv.KubeRayBatchScheduler(kuberaycontroller.BatchSchedulerPlugins))
	e.RunPods(t, e.ns, nil)
	job := e.create("RayJob", "rayjob", map[string]string{kuberaycontroller.GangSchedulingLabel: "true"}, map[string]any{
		"entrypoint":               `python -c "print(1)"`,
		"submissionMode":           "K8sJobMode",
		"shutdownAfterJobFinishes": false,
		"rayClusterSpec":           clusterSpec(2),
	})

	var cluster *unstructured.Unstructured
	testenv.Eventually(t, 60*time.Second, "the RayJob's RayCluster", func() (bool, string) {
		list, err := e.dyn.Resource(testenv.RayClusterGVR).Namespace(e.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%v %v", list, err)
		}
		cluster = &list.Items[0]
		return true, ""
	})
	owners, _ := json.Marshal(cluster.GetOwnerReferences())
	t.Logf("RayCluster %s of RayJob: labels=%v ownerReferences=%s", cluster.GetName(), cluster.GetLabels(), owners)
	if ref := metav1.GetControllerOf(cluster); ref == nil || ref.UID != job.GetUID() {
		t.Errorf("RayCluster %s: ownerReferences %s, want the RayJob as controller", cluster.GetName(), owners)
	}
	for k, v := range map[string]string{kuberaycontroller.OriginatedFromNameLabel: "rayjob", kuberaycontroller.OriginatedFromCRDLabel: "RayJob"} {
		if got := cluster.GetLabels()[k]; got != v {
			t.Errorf("RayCluster %s: label %s=%q, want %q", cluster.GetName(), k, got, v)
		}
	}

	head, workers := e.clusterPods(cluster.GetName(), 2)
	e.checkRayPod(&head, cluster.GetName(), cluster.GetUID(), "head", kuberaycontroller.HeadGroup, true)
	for i := range workers {
		e.checkRayPod(&workers[i], cluster.GetName(), cluster.GetUID(), "worker", "workers", true)
	}
	if pg := e.podGroup(cluster.GetName()); pg == nil {
		t.Errorf("no PodGroup %s for the RayJob's RayCluster", cluster.GetName())
	} else {
		e.checkPodGroup(pg, cluster, 3, "3", "3Gi")
	}

	testenv.Eventually(t, 90*time.Second, "the submitter Job", func() (bool, string) {
		_, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), "rayjob", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	submitter, err := e.Client.BatchV1().Jobs(e.ns).Get(context.Background(), "rayjob", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owners, _ = json.Marshal(submitter.OwnerReferences)
	t.Logf("submitter Job %s: labels=%v ownerReferences=%s backoffLimit=%v template labels=%v schedulerName=%q",
		submitter.Name, submitter.Labels, owners, *submitter.Spec.BackoffLimit, submitter.Spec.Template.Labels, submitter.Spec.Template.Spec.SchedulerName)
	if ref := metav1.GetControllerOf(submitter); ref == nil || ref.UID != job.GetUID() || ref.Kind != "RayJob" {
		t.Errorf("submitter Job: ownerReferences %s, want the RayJob as controller", owners)
	}
	if got := submitter.Labels[kuberaycontroller.CreatedByLabel]; got != "kuberay-operator" {
		t.Errorf("submitter Job: label %s=%q, want kuberay-operator", kuberaycontroller.CreatedByLabel, got)
	}

	pods := e.waitPods("job-name=rayjob", 1)
	p := pods[0]
	e.logPod("submitter", &p)
	for k := range p.Labels {
		if strings.HasPrefix(k, "ray.io/") || k == kuberaycontroller.PodGroupLabel {
			t.Errorf("submitter pod %s: label %s=%q, want no Ray or pod-group label", p.Name, k, p.Labels[k])
		}
	}
	if p.Spec.SchedulerName != v1.DefaultSchedulerName {
		t.Errorf("submitter pod %s: schedulerName %q, want %q (KubeRay's default template sets none)", p.Name, p.Spec.SchedulerName, v1.DefaultSchedulerName)
	}
}
