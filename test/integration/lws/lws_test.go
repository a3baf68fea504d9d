// Package lws runs the real LeaderWorkerSet controller manager (v0.7.0, built from tools/lws)
// with its admission webhooks live, next to the upstream StatefulSet controller, the garbage
// collector and the lockstep scheduler: it pins down what LWS makes (StatefulSets, pods,
// their labels, annotations and owners) and when, which lockstep will file into groups. LWS
// is not a lockstep workload kind yet: its pods are scheduled one by one.
package lws

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// lwsEnv is a test's control plane with the LWS controller running, and its namespace.
type lwsEnv struct {
	*testenv.Env
	t  *testing.T
	ns string
}

// start runs the control plane with the garbage collector, the StatefulSet controller and the
// LWS controller, kubelets that remove deleted pods, and one 8-cpu node; ns is the test's
// namespace. The lockstep scheduler is not started: tests start it when they want pods bound.
func start(t *testing.T, ns string) *lwsEnv {
	e := &lwsEnv{Env: testenv.Start(t), t: t}
	e.StartKubeControllers(t)
	e.StartStatefulSetController(t)
	e.StartLWSController(t)
	e.ns = e.Namespace(t, ns)
	e.StartKubelets(t, e.ns)
	e.CreateNodes(t, lt.MakeNode("node-a", "8").Obj())
	return e
}

// createLWS creates buildLWS's LeaderWorkerSet with the spec fields extra set, through LWS's
// webhooks.
func (e *lwsEnv) createLWS(name string, replicas, size int64, extra map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	obj := e.buildLWS(name, replicas, size)
	spec := obj.Object["spec"].(map[string]any)
	for k, v := range extra {
		spec[k] = v
	}
	created, err := e.lwses().Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating LeaderWorkerSet %s: %v", name, err)
	}
	return created
}

// buildLWS is a LeaderWorkerSet name of replicas groups of size pods (a leader and size-1
// workers) of 1 cpu, lockstep's in both templates.
func (e *lwsEnv) buildLWS(name string, replicas, size int64) *unstructured.Unstructured {
	template := func(role string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"role": role}},
			"spec": map[string]any{
				"schedulerName": lt.SchedulerName,
				"containers": []any{map[string]any{
					"name":      "main",
					"image":     "busybox",
					"command":   []any{"sh", "-c", "sleep 3600"},
					"resources": map[string]any{"requests": map[string]any{"cpu": "1"}},
				}},
			},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": testenv.LeaderWorkerSetGVR.GroupVersion().String(),
		"kind":       "LeaderWorkerSet",
		"metadata":   map[string]any{"name": name, "namespace": e.ns},
		"spec": map[string]any{
			"replicas": replicas,
			"leaderWorkerTemplate": map[string]any{
				"size":           size,
				"leaderTemplate": template("leader"),
				"workerTemplate": template("worker"),
			},
		},
	}}
}

// lwses is the LeaderWorkerSet resource of the test's namespace.
func (e *lwsEnv) lwses() dynamic.ResourceInterface {
	return dynamic.NewForConfigOrDie(e.Config).Resource(testenv.LeaderWorkerSetGVR).Namespace(e.ns)
}

// pods returns the test namespace's pods by name.
func (e *lwsEnv) pods() map[string]*v1.Pod {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]*v1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// waitPods waits until the namespace's pods are exactly names, and returns them.
func (e *lwsEnv) waitPods(names ...string) map[string]*v1.Pod {
	e.t.Helper()
	want := append([]string(nil), names...)
	sort.Strings(want)
	var pods map[string]*v1.Pod
	testenv.Eventually(e.t, 60*time.Second, fmt.Sprintf("pods %v", want), func() (bool, string) {
		pods = e.pods()
		got := sortedKeys(pods)
		return strings.Join(got, ",") == strings.Join(want, ","), fmt.Sprint(got)
	})
	return pods
}

// statefulSet returns the namespace's StatefulSet name, nil if there is none.
func (e *lwsEnv) statefulSet(name string) *appsv1.StatefulSet {
	e.t.Helper()
	sts, err := e.Client.AppsV1().StatefulSets(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return sts
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// controller describes an object's controller reference as "Kind/name", "" if none.
func controller(obj metav1.Object) string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return ""
	}
	return ref.Kind + "/" + ref.Name
}

// describe is an object's labels, annotations and owner references, for the log: what LWS
// puts on its objects is what lockstep will file them by.
func describe(obj metav1.Object) string {
	var b strings.Builder
	for _, k := range sortedKeys(obj.GetLabels()) {
		fmt.Fprintf(&b, "\n  label %s=%s", k, obj.GetLabels()[k])
	}
	for _, k := range sortedKeys(obj.GetAnnotations()) {
		fmt.Fprintf(&b, "\n  annotation %s=%s", k, obj.GetAnnotations()[k])
	}
	for _, ref := range obj.GetOwnerReferences() {
		fmt.Fprintf(&b, "\n  owner %s %s/%s controller=%v blockOwnerDeletion=%v", ref.APIVersion, ref.Kind, ref.Name,
			ref.Controller != nil && *ref.Controller, ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion)
	}
	return b.String()
}

// env returns the value of a pod's first container's environment variable name.
func env(p *v1.Pod, name string) string {
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// A LeaderWorkerSet of 2 groups of 3 pods (startupPolicy defaulted to LeaderCreated): LWS
// makes the leader StatefulSet (named as the LWS, 2 replicas), whose 2 leader pods make its
// pod controller create, per leader, a worker StatefulSet (named as the leader pod, 2
// replicas, ordinals from 1) — before any leader is scheduled: the scheduler starts only once
// all 6 pods exist. Every pod carries the LWS's name, its group index, its worker index (0 for
// the leader), its group's key (one per group) and the template revision, the size
// annotation, workers the leader's name, and the LWS_* environment; leader pods are
// controlled by the leader StatefulSet, worker pods by their group's worker StatefulSet,
// which the leader pod controls. Then lockstep binds all 6 (one by one: LWS is not a
// lockstep kind yet), and once they run ready, the LWS counts 2 ready groups.
func TestLeaderWorkerSetMakesGroupsOfLabelledPods(t *testing.T) {
	e := start(t, "lws")
	e.createLWS("train", 2, 3, nil)

	pods := e.waitPods("train-0", "train-0-1", "train-0-2", "train-1", "train-1-1", "train-1-2")
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s bound to %s before the scheduler started", p.Name, p.Spec.NodeName)
		}
	}
	t.Logf("leader pod train-0:%s", describe(pods["train-0"]))
	t.Logf("worker pod train-0-1:%s\n  env %v", describe(pods["train-0-1"]), pods["train-0-1"].Spec.Containers[0].Env)

	leaderSts := e.statefulSet("train")
	if leaderSts == nil {
		t.Fatal("no leader StatefulSet train")
	}
	if got := controller(leaderSts); got != "LeaderWorkerSet/train" {
		t.Errorf("leader StatefulSet's controller %q, want LeaderWorkerSet/train", got)
	}
	if *leaderSts.Spec.Replicas != 2 || leaderSts.Annotations[testenv.LWSReplicasAnnotation] != "2" {
		t.Errorf("leader StatefulSet: %d replicas, annotations %v; want 2", *leaderSts.Spec.Replicas, leaderSts.Annotations)
	}
	t.Logf("leader StatefulSet train:%s\n  selector %v", describe(leaderSts), leaderSts.Spec.Selector.MatchLabels)

	revision := pods["train-0"].Labels[testenv.LWSRevisionLabel]
	groupKeys := map[string]bool{}
	for g := 0; g < 2; g++ {
		leader := fmt.Sprintf("train-%d", g)
		groupKey := pods[leader].Labels[testenv.LWSGroupKeyLabel]
		if groupKey == "" || groupKeys[groupKey] {
			t.Errorf("leader %s's group key %q: want one of its own", leader, groupKey)
		}
		groupKeys[groupKey] = true
		workerSts := e.statefulSet(leader)
		if workerSts == nil {
			t.Fatalf("no worker StatefulSet %s", leader)
		}
		if got := controller(workerSts); got != "Pod/"+leader {
			t.Errorf("worker StatefulSet %s's controller %q, want Pod/%s", leader, got, leader)
		}
		if *workerSts.Spec.Replicas != 2 || workerSts.Spec.Ordinals == nil || workerSts.Spec.Ordinals.Start != 1 {
			t.Errorf("worker StatefulSet %s: %d replicas, ordinals %+v; want 2 from 1", leader, *workerSts.Spec.Replicas, workerSts.Spec.Ordinals)
		}
		if g == 0 {
			t.Logf("worker StatefulSet %s:%s\n  selector %v", leader, describe(workerSts), workerSts.Spec.Selector.MatchLabels)
		}
		for w := 0; w < 3; w++ {
			name, owner := leader, "StatefulSet/train"
			if w > 0 {
				name, owner = fmt.Sprintf("%s-%d", leader, w), "StatefulSet/"+leader
			}
			p := pods[name]
			want := map[string]string{
				testenv.LWSNameLabel:        "train",
				testenv.LWSGroupIndexLabel:  fmt.Sprint(g),
				testenv.LWSWorkerIndexLabel: fmt.Sprint(w),
				testenv.LWSGroupKeyLabel:    groupKey,
				testenv.LWSRevisionLabel:    revision,
			}
			for k, v := range want {
				if p.Labels[k] != v || v == "" {
					t.Errorf("pod %s: label %s=%q, want %q", name, k, p.Labels[k], v)
				}
			}
			if p.Annotations[testenv.LWSSizeAnnotation] != "3" {
				t.Errorf("pod %s: size annotation %q, want 3", name, p.Annotations[testenv.LWSSizeAnnotation])
			}
			if w > 0 && p.Annotations[testenv.LWSLeaderAnnotation] != leader {
				t.Errorf("pod %s: leader-name annotation %q, want %s", name, p.Annotations[testenv.LWSLeaderAnnotation], leader)
			}
			if got := controller(p); got != owner {
				t.Errorf("pod %s's controller %q, want %s", name, got, owner)
			}
			wantEnv := map[string]string{
				"LWS_LEADER_ADDRESS": fmt.Sprintf("%s.train.%s", leader, e.ns),
				"LWS_GROUP_SIZE":     "3",
				"LWS_WORKER_INDEX":   fmt.Sprint(w),
			}
			for k, v := range wantEnv {
				if got := env(p, k); got != v {
					t.Errorf("pod %s: env %s=%q, want %q", name, k, got, v)
				}
			}
		}
	}
	if _, err := e.Client.CoreV1().Services(e.ns).Get(context.Background(), "train", metav1.GetOptions{}); err != nil {
		t.Errorf("headless Service train: %v", err)
	}

	e.StartScheduler(t, nil)
	e.WaitBound(t, e.ns, sortedKeys(pods)...)
	e.RunPods(t, e.ns, nil)
	testenv.Eventually(t, 60*time.Second, "LeaderWorkerSet train counts 2 ready groups", func() (bool, string) {
		lws, err := e.lwses().Get(context.Background(), "train", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, _, _ := unstructured.NestedInt64(lws.Object, "status", "readyReplicas")
		return ready == 2, fmt.Sprintf("status %v", lws.Object["status"])
	})
}

// startupPolicy LeaderReady: LWS creates a group's worker StatefulSet only once its leader pod
// is Ready. The leaders are bound by lockstep but not running: no worker StatefulSet and no
// worker pod appears; once the leaders run ready, each group gets its worker StatefulSet and
// 2 workers, which lockstep binds.
func TestLeaderWorkerSetLeaderReadyCreatesWorkersAfterTheLeaderIsReady(t *testing.T) {
	e := start(t, "leader-ready")
	e.StartScheduler(t, nil)
	lws := e.createLWS("serve", 2, 3, map[string]any{"startupPolicy": "LeaderReady"})
	if got, _, _ := unstructured.NestedString(lws.Object, "spec", "startupPolicy"); got != "LeaderReady" {
		t.Fatalf("startupPolicy %q", got)
	}

	e.waitPods("serve-0", "serve-1")
	e.WaitBound(t, e.ns, "serve-0", "serve-1")
	testenv.Consistently(t, 3*time.Second, "no workers while the leaders are not ready", func() (bool, string) {
		pods := e.pods()
		if len(pods) != 2 {
			return false, fmt.Sprint(sortedKeys(pods))
		}
		for _, name := range []string{"serve-0", "serve-1"} {
			if e.statefulSet(name) != nil {
				return false, "worker StatefulSet " + name
			}
		}
		return true, ""
	})

	e.RunPods(t, e.ns, nil)
	workers := []string{"serve-0-1", "serve-0-2", "serve-1-1", "serve-1-2"}
	e.waitPods(append([]string{"serve-0", "serve-1"}, workers...)...)
	for _, name := range []string{"serve-0", "serve-1"} {
		if sts := e.statefulSet(name); sts == nil || controller(sts) != "Pod/"+name {
			t.Errorf("worker StatefulSet %s: %v", name, sts)
		}
	}
	e.WaitBound(t, e.ns, workers...)
}
