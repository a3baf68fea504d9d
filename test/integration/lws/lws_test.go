// Package lws runs the real LeaderWorkerSet controller manager (v0.7.0, built from tools/lws-kuberay)
// with its admission webhooks live, next to the upstream StatefulSet controller, the garbage
// collector, lockstep's workload controller and the lockstep scheduler. It pins down what LWS
// makes (StatefulSets, pods, their labels, annotations and owners) and when, and checks that
// each replica group of a LeaderWorkerSet whose pods use lockstep is a gang: it binds whole
// or not at all, in one domain when the LeaderWorkerSet's topology annotation asks, and a
// new leader (rolling update, scale-up, RecreateGroupOnPodRestart) is a fresh gang. The
// invariants are read from pods, StatefulSets and nodes as the apiserver recorded them (a
// watch sees every bind in order, watch_test.go); lockstep's PodGroups and their conditions
// are checked in addition.
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
	"k8s.io/utils/ptr"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// lwsEnv is a test's control plane with the LWS controller running, its namespace, and a
// watch of the namespace's pods and StatefulSets started before any pod exists.
type lwsEnv struct {
	*testenv.Env
	t     *testing.T
	ns    string
	watch *podWatch
}

// start runs the control plane with the garbage collector, the StatefulSet controller and the
// LWS controller, kubelets that remove deleted pods, and nodes; ns is the test's namespace.
// lockstep is not started (startLockstep).
func start(t *testing.T, ns string, nodes ...*v1.Node) *lwsEnv {
	e := &lwsEnv{Env: testenv.Start(t), t: t}
	e.StartKubeControllers(t)
	e.StartStatefulSetController(t)
	e.StartLWSController(t)
	e.ns = e.Namespace(t, ns)
	e.StartKubelets(t, e.ns)
	e.CreateNodes(t, nodes...)
	e.watch = e.watchPods()
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpState()
		}
	})
	return e
}

// dumpState logs the namespace's pods (node, why unscheduled, LWS labels) and lockstep
// groups (with their conditions), for a failed test.
func (e *lwsEnv) dumpState() {
	ctx := context.Background()
	if list, err := e.Client.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range list.Items {
			why := ""
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status != v1.ConditionTrue {
					why = c.Reason + ": " + c.Message
				}
			}
			e.t.Logf("pod %s uid=%s node=%q terminating=%v rev=%s subgroup=%s leader=%s controller=%s %s", p.Name, p.UID, p.Spec.NodeName,
				p.DeletionTimestamp != nil, p.Labels[testenv.LWSRevisionLabel], p.Labels[subGroupIndexLabel],
				p.Annotations[testenv.LWSLeaderAnnotation], controller(&p), why)
		}
	}
	if list, err := e.Lockstep.SchedulingV1alpha1().CompositePodGroups(e.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, g := range list.Items {
			e.t.Logf("CompositePodGroup %s parent=%q spec=%v conditions=%+v", g.Name, ptr.Deref(g.Spec.ParentCompositePodGroupName, ""), g.Spec.SchedulingPolicy, g.Status.Conditions)
		}
	}
	if list, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, g := range list.Items {
			e.t.Logf("PodGroup %s parent=%q spec=%v topology=%+v conditions=%+v", g.Name, ptr.Deref(g.Spec.ParentCompositePodGroupName, ""), g.Spec.SchedulingPolicy, g.Spec.SchedulingConstraints, g.Status.Conditions)
		}
	}
}

// startLockstep runs lockstep's scheduler and workload controller.
func (e *lwsEnv) startLockstep() {
	e.StartScheduler(e.t, nil)
	e.StartJobController(e.t)
}

// startAll is start, then startLockstep.
func startAll(t *testing.T, ns string, nodes ...*v1.Node) *lwsEnv {
	e := start(t, ns, nodes...)
	e.startLockstep()
	return e
}

// createLWS creates newLWS's LeaderWorkerSet with the spec fields extra set, through LWS's
// webhooks.
func (e *lwsEnv) createLWS(name string, replicas, size int64, extra map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	obj := newLWS(e.ns, name, replicas, size)
	spec := obj.Object["spec"].(map[string]any)
	for k, v := range extra {
		spec[k] = v
	}
	return e.create(obj)
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
// which the leader pod controls. Then lockstep binds all 6, each group whole as the gang of its
// leader (a PodGroup named after the leader's UID, minCount 3), and once they run ready, the
// LWS counts 2 ready groups.
func TestLeaderWorkerSetMakesGroupsOfLabelledPods(t *testing.T) {
	e := start(t, "lws", lt.MakeNode("node-a", "8").Obj())
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

	e.startLockstep()
	e.WaitBound(t, e.ns, sortedKeys(pods)...)
	e.checkBoundWhole("train", 3)
	e.waitGroups(e.getLWS("train"), 3, "train-0", "train-1")
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
