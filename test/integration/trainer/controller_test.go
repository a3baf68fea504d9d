// Package trainer runs the real Kubeflow Trainer v2 controller manager (v2.3.0, built from
// tools/controllers) next to the real JobSet controller against the test control plane,
// without webhooks: controller_test.go checks that a TrainJob on a coscheduling runtime
// becomes a JobSet and a scheduler-plugins PodGroup, and that the JobSet's pods carry the
// PodGroup's label. It is a controller smoke test: lockstep schedules nothing here.
package trainer

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
	"k8s.io/client-go/dynamic"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

const (
	// ancestorLabel tells Trainer which replicatedJob is which step.
	ancestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step"
	// podGroupLabel is the scheduler-plugins label Trainer's coscheduling plugin puts on
	// every pod template of the JobSet: the TrainJob's name, which is the PodGroup's.
	podGroupLabel = "scheduling.x-k8s.io/pod-group"
)

// torchRuntime is a ClusterTrainingRuntime modelled on Trainer's runtimes with
// initializers (manifests/base/runtimes/torchtune in v2.3.0, whose torch-distributed has only
// the node step): a dataset-initializer and a model-initializer replicatedJob and the node
// (trainer) replicatedJob that depends on both completing, with the coscheduling
// podGroupPolicy. Pods are lockstep's and request little; the initializers' shared volume
// is left out (no storage here). The JobSet template sets what JobSet's webhook would.
func torchRuntime() map[string]any {
	node := step("node", "trainer", "100m", "64Mi")
	node["dependsOn"] = []any{
		map[string]any{"name": "dataset-initializer", "status": "Complete"},
		map[string]any{"name": "model-initializer", "status": "Complete"},
	}
	return trainingRuntime(
		step("dataset-initializer", "dataset-initializer", "50m", "32Mi"),
		step("model-initializer", "model-initializer", "50m", "32Mi"),
		node)
}

// step is a replicatedJob of a runtime's JobSet template: one Job of lockstep's pods, the
// Trainer step ancestor names.
func step(name, ancestor, cpu, memory string) map[string]any {
	return map[string]any{
		"name": name,
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{ancestorLabel: ancestor}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"schedulerName": lt.SchedulerName,
				"containers": []any{map[string]any{
					"name":    name,
					"image":   "busybox",
					"command": []any{"sh", "-c", "echo " + name},
					"resources": map[string]any{"requests": map[string]any{
						"cpu": cpu, "memory": memory,
					}},
				}},
			}}},
		},
	}
}

// trainingRuntime is a runtime spec with the torch mlPolicy, the coscheduling
// podGroupPolicy and a JobSet template of steps (with what JobSet's webhook would default).
func trainingRuntime(steps ...map[string]any) map[string]any {
	var rjobs []any
	for _, s := range steps {
		rjobs = append(rjobs, s)
	}
	template := map[string]any{"spec": map[string]any{"replicatedJobs": rjobs}}
	testenv.DefaultJobSet(template)
	return map[string]any{
		"mlPolicy":       map[string]any{"numNodes": int64(1), "torch": map[string]any{}},
		"podGroupPolicy": map[string]any{"coscheduling": map[string]any{"scheduleTimeoutSeconds": int64(120)}},
		"template":       template,
	}
}

func TestTrainJobCreatesJobSetAndPodGroup(t *testing.T) {
	env := testenv.Start(t)
	env.StartKubeControllers(t)
	jobsetController := env.StartJobSetController(t)
	trainerController := env.StartTrainerController(t)
	ns := env.Namespace(t, "trainer")
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	env.CreateNodes(t, lt.MakeNode("node-a", "8").Obj())

	env.CreateClusterTrainingRuntime(t, "torch-distributed", torchRuntime())
	trainJob := env.CreateTrainJob(t, ns, "pretrain", "torch-distributed", map[string]any{"numNodes": int64(2)})

	// The JobSet, named as the TrainJob and controlled by it.
	var js *unstructured.Unstructured
	testenv.Eventually(t, 60*time.Second, "the TrainJob's JobSet", func() (bool, string) {
		got, err := dyn.Resource(testenv.JobSetGVR).Namespace(ns).Get(ctx, "pretrain", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		js = got
		return true, ""
	})
	if ref := metav1.GetControllerOf(js); ref == nil || ref.Kind != "TrainJob" || ref.UID != trainJob.GetUID() {
		t.Errorf("JobSet is not controlled by the TrainJob: %v", ref)
	}
	t.Logf("JobSet labels %v annotations %v", js.GetLabels(), js.GetAnnotations())
	rjobs, _, _ := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	wantParallelism := map[string]int64{"dataset-initializer": 1, "model-initializer": 1, "node": 2}
	var names []string
	for _, r := range rjobs {
		rjob := r.(map[string]any)
		name, _, _ := unstructured.NestedString(rjob, "name")
		names = append(names, name)
		replicas, _, _ := unstructured.NestedInt64(rjob, "replicas")
		parallelism, _, _ := unstructured.NestedInt64(rjob, "template", "spec", "parallelism")
		completions, _, _ := unstructured.NestedInt64(rjob, "template", "spec", "completions")
		if replicas != 1 || parallelism != wantParallelism[name] || completions != wantParallelism[name] {
			t.Errorf("replicatedJob %s: replicas %d parallelism %d completions %d, want 1, %d, %d",
				name, replicas, parallelism, completions, wantParallelism[name], wantParallelism[name])
		}
		podLabels, _, _ := unstructured.NestedStringMap(rjob, "template", "spec", "template", "metadata", "labels")
		if podLabels[podGroupLabel] != "pretrain" {
			t.Errorf("replicatedJob %s: pod template labels %v, want %s=pretrain", name, podLabels, podGroupLabel)
		}
		dependsOn, _, _ := unstructured.NestedSlice(rjob, "dependsOn")
		jobLabels, _, _ := unstructured.NestedStringMap(rjob, "template", "metadata", "labels")
		podAnnotations, _, _ := unstructured.NestedStringMap(rjob, "template", "spec", "template", "metadata", "annotations")
		podSpec, _, _ := unstructured.NestedMap(rjob, "template", "spec", "template", "spec")
		spec, _ := json.Marshal(podSpec)
		t.Logf("replicatedJob %s: replicas %d parallelism %d dependsOn %v job labels %v pod labels %v pod annotations %v pod spec %s",
			name, replicas, parallelism, dependsOn, jobLabels, podLabels, podAnnotations, spec)
	}
	if strings.Join(names, ",") != "dataset-initializer,model-initializer,node" {
		t.Errorf("replicatedJobs %v", names)
	}

	// The scheduler-plugins PodGroup: every pod of the JobSet, and their requests.
	var pg *unstructured.Unstructured
	testenv.Eventually(t, 60*time.Second, "the TrainJob's PodGroup", func() (bool, string) {
		got, err := dyn.Resource(testenv.SchedulerPluginsPodGroupGVR).Namespace(ns).Get(ctx, "pretrain", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pg = got
		return true, ""
	})
	if ref := metav1.GetControllerOf(pg); ref == nil || ref.Kind != "TrainJob" || ref.UID != trainJob.GetUID() {
		t.Errorf("PodGroup is not controlled by the TrainJob: %v", ref)
	}
	minMember, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember")
	timeout, _, _ := unstructured.NestedInt64(pg.Object, "spec", "scheduleTimeoutSeconds")
	minResources, _, _ := unstructured.NestedStringMap(pg.Object, "spec", "minResources")
	t.Logf("PodGroup %s/%s: minMember %d minResources %v scheduleTimeoutSeconds %d", pg.GetNamespace(), pg.GetName(), minMember, minResources, timeout)
	if minMember != 4 || timeout != 120 {
		t.Errorf("PodGroup minMember %d scheduleTimeoutSeconds %d, want 4 and 120", minMember, timeout)
	}
	for res, want := range map[string]string{"cpu": "300m", "memory": "192Mi"} {
		if got, err := resource.ParseQuantity(minResources[res]); err != nil || got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("PodGroup minResources %s %q, want %s", res, minResources[res], want)
		}
	}

	// The initializers' pods carry the PodGroup's label; the node Job waits for them.
	podsOf := func(rjob string) []v1.Pod {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
			LabelSelector: "jobset.sigs.k8s.io/jobset-name=pretrain,jobset.sigs.k8s.io/replicatedjob-name=" + rjob})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		return list.Items
	}
	var initializers []v1.Pod
	testenv.Eventually(t, 60*time.Second, "one pod per initializer", func() (bool, string) {
		initializers = append(podsOf("dataset-initializer"), podsOf("model-initializer")...)
		return len(initializers) == 2, fmt.Sprintf("%d pods", len(initializers))
	})
	if n := len(podsOf("node")); n != 0 {
		t.Errorf("%d node pods before the initializers completed", n)
	}

	// Stand in for a scheduler and kubelets for the initializers only: bind them, and let
	// them succeed, so that the JobSet controller starts the node Job they gate.
	env.RunPods(t, ns, func(*v1.Pod) v1.PodPhase { return v1.PodSucceeded })
	for _, p := range initializers {
		binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}, Target: v1.ObjectReference{Kind: "Node", Name: "node-a"}}
		if err := env.Client.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s: %v", p.Name, err)
		}
	}
	var nodes []v1.Pod
	testenv.Eventually(t, 90*time.Second, "2 node pods after the initializers completed", func() (bool, string) {
		nodes = podsOf("node")
		return len(nodes) == 2, fmt.Sprintf("%d node pods", len(nodes))
	})
	for _, p := range append(initializers, nodes...) {
		if p.Labels[podGroupLabel] != "pretrain" || p.Spec.SchedulerName != lt.SchedulerName {
			t.Errorf("pod %s: labels %v schedulerName %s", p.Name, p.Labels, p.Spec.SchedulerName)
		}
		t.Logf("pod %s: labels %v annotations %v", p.Name, p.Labels, p.Annotations)
	}

	// A JobSet missing a webhook default shows up only as recovered panics in the log.
	for _, p := range []*testenv.Process{jobsetController, trainerController} {
		if strings.Contains(p.Log(), "panic") {
			t.Errorf("%s panicked while reconciling:\n%s", p.Name, p.Tail(40))
		}
	}
}
