// Package kuberay runs the real KubeRay operator (v1.4.0, built from tools/lws-kuberay) next to the
// upstream Job controller and garbage collector, lockstep's workload controller and the
// lockstep scheduler, and checks how lockstep places what the operator makes of RayClusters
// and RayJobs whose pod templates ask for lockstep-scheduler: a RayCluster's head and the
// minimum of its worker groups bind whole or not at all, workers the Ray autoscaler adds join
// one by one, a topology annotation keeps the cluster in one domain, a RayJob's submitter is
// no part of the gang, and KubeRay's scheduler-plugins integration does not make a second
// gang. The invariants are read from pods and nodes (a pod watch sees every bind in the
// apiserver's order); lockstep's own PodGroups and their conditions are checked in addition.
package kuberay

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/lockstep-sched/lockstep/internal/kuberaycontroller"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/raycluster"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// rayEnv is a test's control plane with the KubeRay operator and lockstep running, its
// namespace, and a watch of the namespace's pods started before any RayCluster exists.
type rayEnv struct {
	*testenv.Env
	t     *testing.T
	ns    string
	dyn   dynamic.Interface
	watch *podWatch
	// controller is lockstep's workload controller.
	controller *testenv.JobController
}

// start runs the control plane with the upstream Job controller and garbage collector (a
// RayJob's submitter is a batch/v1 Job), the KubeRay operator configured by opts, lockstep's
// scheduler and workload controller, kubelets that end deleted pods, and nodes; it starts
// watching the namespace's pods.
func start(t *testing.T, opts []testenv.KubeRayOption, nodes ...*v1.Node) *rayEnv {
	e := &rayEnv{Env: testenv.Start(t), t: t}
	e.dyn = dynamic.NewForConfigOrDie(e.Config)
	e.StartKubeControllers(t)
	e.StartKubeRayOperator(t, opts...)
	e.ns = e.Namespace(t, "ray")
	e.StartKubelets(t, e.ns)
	e.CreateNodes(t, nodes...)
	e.StartScheduler(t, nil)
	e.controller = e.StartJobController(t)
	e.watch = e.watchPods()
	return e
}

// rayContainer is a Ray container asking for cpu and 1Gi; the image is never pulled.
func rayContainer(name, cpu string) map[string]any {
	res := map[string]any{"cpu": cpu, "memory": "1Gi"}
	return map[string]any{
		"name":      name,
		"image":     "rayproject/ray:2.46.0",
		"resources": map[string]any{"requests": res, "limits": res},
	}
}

// group is a worker group "workers" of a RayCluster spec.
type group struct {
	replicas, minReplicas, maxReplicas int64
}

// clusterSpec is a RayCluster spec: a head and one worker group "workers", every pod asking
// for cpu, both templates with schedulerName lockstep-scheduler.
func clusterSpec(cpu string, g group) map[string]any {
	template := func(container string) map[string]any {
		return map[string]any{"spec": map[string]any{
			"schedulerName": lt.SchedulerName,
			"containers":    []any{rayContainer(container, cpu)},
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
			"replicas":       g.replicas,
			"minReplicas":    g.minReplicas,
			"maxReplicas":    g.maxReplicas,
			"rayStartParams": map[string]any{},
			"template":       template("ray-worker"),
		}},
	}
}

// create creates a KubeRay object (kind RayCluster or RayJob) named name in the test's
// namespace, with labels, annotations and spec.
func (e *rayEnv) create(kind, name string, objLabels, annotations map[string]string, spec map[string]any) *unstructured.Unstructured {
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
	obj.SetLabels(objLabels)
	obj.SetAnnotations(annotations)
	created, err := e.dyn.Resource(gvr).Namespace(e.ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	return created
}

// getCluster reads RayCluster name.
func (e *rayEnv) getCluster(name string) *unstructured.Unstructured {
	e.t.Helper()
	rc, err := e.dyn.Resource(testenv.RayClusterGVR).Namespace(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return rc
}

// updateCluster changes RayCluster name with change and writes it back.
func (e *rayEnv) updateCluster(name string, change func(rc *unstructured.Unstructured)) {
	e.t.Helper()
	testenv.OnLatest(e.t, func() error {
		rc := e.getCluster(name)
		change(rc)
		_, err := e.dyn.Resource(testenv.RayClusterGVR).Namespace(e.ns).Update(context.Background(), rc, metav1.UpdateOptions{})
		return err
	})
}

// setWorkers sets the replicas of RayCluster cluster's worker group, with workersToDelete
// (nil leaves the scale strategy alone), as the Ray autoscaler does (it writes
// workerGroupSpecs whole).
func (e *rayEnv) setWorkers(cluster string, replicas int64, workersToDelete []string) {
	e.t.Helper()
	e.updateCluster(cluster, func(rc *unstructured.Unstructured) {
		groups, _, _ := unstructured.NestedSlice(rc.Object, "spec", "workerGroupSpecs")
		g := groups[0].(map[string]any)
		g["replicas"] = replicas
		if workersToDelete != nil {
			del := []any{}
			for _, w := range workersToDelete {
				del = append(del, w)
			}
			g["scaleStrategy"] = map[string]any{"workersToDelete": del}
		}
		if err := unstructured.SetNestedSlice(rc.Object, groups, "spec", "workerGroupSpecs"); err != nil {
			e.t.Fatal(err)
		}
	})
}

// clusterSelector selects the pods of RayCluster cluster, of nodeType if not "".
func clusterSelector(cluster, nodeType string) string {
	set := labels.Set{kuberaycontroller.ClusterLabel: cluster}
	if nodeType != "" {
		set[kuberaycontroller.NodeTypeLabel] = nodeType
	}
	return set.String()
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

// placement maps each pod to its node ("" while unbound).
func placement(pods []v1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

// bound counts the bound pods.
func bound(pods []v1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// waitCluster waits until RayCluster cluster has a head and workers live worker pods, of
// which bound are bound, and returns all its pods.
func (e *rayEnv) waitCluster(cluster string, workers, boundPods int) []v1.Pod {
	e.t.Helper()
	var pods []v1.Pod
	testenv.Eventually(e.t, 90*time.Second, fmt.Sprintf("RayCluster %s: a head and %d workers, %d bound", cluster, workers, boundPods), func() (bool, string) {
		pods = e.pods(clusterSelector(cluster, ""))
		heads := 0
		for _, p := range pods {
			if p.Labels[kuberaycontroller.NodeTypeLabel] == "head" {
				heads++
			}
		}
		return heads == 1 && len(pods) == 1+workers && bound(pods) == boundPods, fmt.Sprint(placement(pods))
	})
	return pods
}

// checkRayPod checks what KubeRay and lockstep's filing rely on in a pod of RayCluster rc:
// the ray.io cluster and node-type labels, schedulerName lockstep-scheduler as the template
// says, the RayCluster alone as its controller, and no lockstep pod-group label (the pod is
// filed from KubeRay's labels, not from one of lockstep's).
func (e *rayEnv) checkRayPod(p *v1.Pod, rc *unstructured.Unstructured) {
	e.t.Helper()
	if p.Labels[kuberaycontroller.ClusterLabel] != rc.GetName() {
		e.t.Errorf("pod %s: label %s=%q, want %q", p.Name, kuberaycontroller.ClusterLabel, p.Labels[kuberaycontroller.ClusterLabel], rc.GetName())
	}
	if nt := p.Labels[kuberaycontroller.NodeTypeLabel]; nt != "head" && nt != "worker" {
		e.t.Errorf("pod %s: label %s=%q, want head or worker", p.Name, kuberaycontroller.NodeTypeLabel, nt)
	}
	if p.Spec.SchedulerName != lt.SchedulerName {
		e.t.Errorf("pod %s: schedulerName %q, want the template's %q", p.Name, p.Spec.SchedulerName, lt.SchedulerName)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != rc.GetUID() || ref.Kind != "RayCluster" || len(p.OwnerReferences) != 1 {
		e.t.Errorf("pod %s: ownerReferences %+v, want the RayCluster %s alone as controller", p.Name, p.OwnerReferences, rc.GetName())
	}
	if v, ok := p.Labels[v1alpha1.PodGroupLabel]; ok {
		e.t.Errorf("pod %s: label %s=%q, want none", p.Name, v1alpha1.PodGroupLabel, v)
	}
}

// groups returns the lockstep Workloads and groups of the test's namespace.
func (e *rayEnv) groups() ([]v1alpha1.Workload, []v1alpha1.CompositePodGroup, []v1alpha1.PodGroup) {
	e.t.Helper()
	ctx := context.Background()
	wls, err := e.Lockstep.SchedulingV1alpha1().Workloads(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	cpgs, err := e.Lockstep.SchedulingV1alpha1().CompositePodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return wls.Items, cpgs.Items, pgs.Items
}

// describeGroups says which lockstep groups the namespace holds and who controls them.
func describeGroups(wls []v1alpha1.Workload, cpgs []v1alpha1.CompositePodGroup, pgs []v1alpha1.PodGroup) string {
	var out []string
	for i := range wls {
		out = append(out, fmt.Sprintf("Workload %s (owners %s)", wls[i].Name, owners(wls[i].OwnerReferences)))
	}
	for i := range cpgs {
		out = append(out, fmt.Sprintf("CompositePodGroup %s minGroupCount %d (owners %s)", cpgs[i].Name, minGroupCount(&cpgs[i]), owners(cpgs[i].OwnerReferences)))
	}
	for i := range pgs {
		out = append(out, fmt.Sprintf("PodGroup %s minCount %d (owners %s)", pgs[i].Name, minCount(&pgs[i]), owners(pgs[i].OwnerReferences)))
	}
	return strings.Join(out, "; ")
}

func owners(refs []metav1.OwnerReference) string {
	b, _ := json.Marshal(refs)
	return string(b)
}

func minCount(pg *v1alpha1.PodGroup) int32 {
	if pg.Spec.SchedulingPolicy.Gang == nil {
		return 0
	}
	return pg.Spec.SchedulingPolicy.Gang.MinCount
}

func minGroupCount(cpg *v1alpha1.CompositePodGroup) int32 {
	if cpg.Spec.SchedulingPolicy.Gang == nil {
		return 0
	}
	return cpg.Spec.SchedulingPolicy.Gang.MinGroupCount
}

// treeOf reports whether the namespace's only lockstep groups are RayCluster rc's tree: one
// Workload and one root CompositePodGroup named for it, whose minGroupCount is its children,
// PodGroups under it — the head's of minCount 1, one per worker group with a minimum — whose
// minCounts add up to min, all controlled by rc; and it says what the namespace holds.
func (e *rayEnv) treeOf(rc *unstructured.Unstructured, min int32) (*v1alpha1.CompositePodGroup, bool, string) {
	e.t.Helper()
	root := raycluster.GroupName(rc.GetName(), rc.GetUID())
	wls, cpgs, pgs := e.groups()
	state := describeGroups(wls, cpgs, pgs)
	if len(wls) != 1 || len(cpgs) != 1 || len(pgs) < 1 || wls[0].Name != root || cpgs[0].Name != root || minGroupCount(&cpgs[0]) != int32(len(pgs)) {
		return nil, false, state
	}
	objs := []metav1.Object{&wls[0], &cpgs[0]}
	sum, head := int32(0), false
	for i := range pgs {
		objs = append(objs, &pgs[i])
		if p := pgs[i].Spec.ParentCompositePodGroupName; p == nil || *p != root {
			return nil, false, state
		}
		sum += minCount(&pgs[i])
		head = head || (pgs[i].Name == raycluster.HeadGroup(root) && minCount(&pgs[i]) == 1)
	}
	for _, obj := range objs {
		if ref := metav1.GetControllerOf(obj); ref == nil || ref.UID != rc.GetUID() || ref.Kind != "RayCluster" {
			return nil, false, state
		}
	}
	return &cpgs[0], head && sum == min, state
}

// clusterGroup waits until the namespace's only lockstep groups are RayCluster rc's tree of
// min pods (treeOf), and returns its root.
func (e *rayEnv) clusterGroup(rc *unstructured.Unstructured, min int32) *v1alpha1.CompositePodGroup {
	e.t.Helper()
	var root *v1alpha1.CompositePodGroup
	testenv.Eventually(e.t, 60*time.Second, fmt.Sprintf("RayCluster %s's tree of %d pods, alone", rc.GetName(), min), func() (bool, string) {
		r, ok, state := e.treeOf(rc, min)
		root = r
		return ok, state
	})
	return root
}

// noGroups checks that the namespace holds no lockstep Workload or group once lockstep's
// controller has synced obj (of resource gvr) as it is now.
func (e *rayEnv) noGroups(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, why string) {
	e.t.Helper()
	e.controller.Settled(e.t, gvr, obj.GetNamespace(), obj.GetName(), "no lockstep groups: "+why, func() (bool, string) {
		wls, cpgs, pgs := e.groups()
		return len(wls)+len(cpgs)+len(pgs) == 0, describeGroups(wls, cpgs, pgs)
	})
}

// checkPending checks that pod name is unbound and that its PodScheduled condition says why.
func (e *rayEnv) checkPending(name string) {
	e.t.Helper()
	var c *v1.PodCondition
	testenv.Eventually(e.t, 30*time.Second, "pod "+name+" pending with a reason", func() (bool, string) {
		p, err := e.Client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != "" {
			e.t.Fatalf("pod %s bound to %s, want it pending", name, p.Spec.NodeName)
		}
		c = podCondition(p, v1.PodScheduled)
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable && c.Message != "", fmt.Sprintf("%+v", c)
	})
	e.t.Logf("pod %s pending: %s %q", name, c.Reason, c.Message)
}

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podSeen is what the watch last saw of a pod.
type podSeen struct {
	uid      types.UID
	cluster  string // its ray.io/cluster label
	nodeType string // its ray.io/node-type label
	node     string
}

func (s podSeen) String() string {
	return fmt.Sprintf("{%s/%s node:%q}", s.cluster, s.nodeType, s.node)
}

// bindSnapshot is the state of every live pod the watch had seen when it saw pod bound.
type bindSnapshot struct {
	pod  string
	node string
	pods map[string]podSeen
}

// podWatch follows the pods of a namespace in the apiserver's order of writes: each bind
// with the state of every other pod at that moment, and every deletion (a bound pod that
// moves fails the test in testenv.FollowPods).
type podWatch struct {
	mu      sync.Mutex
	state   map[string]podSeen
	binds   []bindSnapshot
	deleted map[string]podSeen
}

func (w *podWatch) see(p *v1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted {
		if s, ok := w.state[p.Name]; ok && s.uid == p.UID {
			w.deleted[p.Name] = s
			delete(w.state, p.Name)
		}
		return
	}
	prev, seen := w.state[p.Name]
	if seen && prev.uid != p.UID {
		seen = false
	}
	s := podSeen{uid: p.UID, cluster: p.Labels[kuberaycontroller.ClusterLabel], nodeType: p.Labels[kuberaycontroller.NodeTypeLabel], node: p.Spec.NodeName}
	w.state[p.Name] = s
	switch {
	case s.node != "" && (!seen || prev.node == ""):
		snap := bindSnapshot{pod: p.Name, node: s.node, pods: map[string]podSeen{}}
		for k, v := range w.state {
			snap.pods[k] = v
		}
		w.binds = append(w.binds, snap)
	}
}

// bindsOf returns the binds of RayCluster cluster's pods, in order.
func (w *podWatch) bindsOf(cluster string) []bindSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []bindSnapshot
	for _, b := range w.binds {
		if b.pods[b.pod].cluster == cluster {
			out = append(out, b)
		}
	}
	return out
}

// allBinds returns every bind seen so far.
func (w *podWatch) allBinds() []bindSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]bindSnapshot(nil), w.binds...)
}

// deletedPods returns the pods seen deleted, as last seen.
func (w *podWatch) deletedPods() map[string]podSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]podSeen{}
	for k, v := range w.deleted {
		out[k] = v
	}
	return out
}

// watchPods starts following the pods of the test's namespace (none yet) from now until the
// test ends, in the apiserver's order of writes (testenv.FollowPods, which fails the test if a
// bound pod moves).
func (e *rayEnv) watchPods() *podWatch {
	e.t.Helper()
	w := &podWatch{state: map[string]podSeen{}, deleted: map[string]podSeen{}}
	e.FollowPods(e.t, e.ns, w.see)
	return w
}

// checkBoundWhole checks from the pod watch that RayCluster cluster's gang bound whole: when
// the first of its pods bound, its head and at least min-1 workers existed, and the watch sees
// at least min binds (the gang's binds all came).
func (e *rayEnv) checkBoundWhole(cluster string, min int) {
	e.t.Helper()
	// A list may see binds before the watch delivers them: wait for the watch to see min.
	var binds []bindSnapshot
	testenv.Eventually(e.t, 30*time.Second, fmt.Sprintf("RayCluster %s: the pod watch sees the gang's %d binds", cluster, min), func() (bool, string) {
		binds = e.watch.bindsOf(cluster)
		return len(binds) >= min, fmt.Sprint(binds)
	})
	first := binds[0]
	heads, members := 0, 0
	for _, s := range first.pods {
		if s.cluster != cluster {
			continue
		}
		members++
		if s.nodeType == "head" {
			heads++
		}
	}
	e.t.Logf("RayCluster %s: at its first bind (%s on %s) the watch saw %v", cluster, first.pod, first.node, first.pods)
	if heads != 1 || members < min {
		e.t.Errorf("RayCluster %s: pod %s bound while %d pods of the cluster existed (%d heads), want its gang of %d with the head: %v",
			cluster, first.pod, members, heads, min, first.pods)
	}
}
