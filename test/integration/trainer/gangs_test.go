package trainer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The TrainJobs below run under lockstep end to end: the real Trainer controller makes a
// JobSet and a scheduler-plugins PodGroup (minMember counting every pod), the real JobSet
// controller makes the Jobs, lockstep's workload controller the groups, lockstep's
// scheduler binds, and stand-in kubelets run the pods to completion.

type trainEnv struct {
	*testenv.Env
	t   *testing.T
	ns  string
	dyn dynamic.Interface
}

func startTrainer(t *testing.T, nodes ...*v1.Node) *trainEnv {
	e := &trainEnv{Env: testenv.Start(t), t: t}
	e.ns = e.Namespace(t, "train")
	e.CreateNodes(t, nodes...)
	e.StartKubeControllers(t)
	e.StartJobSetController(t)
	e.StartTrainerController(t)
	e.StartJobController(t)
	e.StartScheduler(t, testenv.GangArgs{"backoffSeconds": 1})
	// Every pod runs to completion but the filler some tests put on a node.
	e.RunPods(t, e.ns, func(p *v1.Pod) v1.PodPhase {
		if strings.HasPrefix(p.Name, "filler") {
			return ""
		}
		return v1.PodSucceeded
	})
	e.dyn = dynamic.NewForConfigOrDie(e.Config)
	return e
}

// pods returns the pods of a TrainJob's replicated job.
func (e *trainEnv) pods(trainJob, rjob string) []v1.Pod {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + trainJob + ",jobset.sigs.k8s.io/replicatedjob-name=" + rjob})
	if err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// waitComplete waits for the TrainJob's Complete condition.
func (e *trainEnv) waitComplete(name string) {
	e.t.Helper()
	testenv.Eventually(e.t, 120*time.Second, "TrainJob "+name+" Complete", func() (bool, string) {
		tj, err := e.dyn.Resource(testenv.TrainJobGVR).Namespace(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(tj.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Complete" && m["status"] == "True" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", conds)
	})
}

// podGroupPhase is the scheduler-plugins PodGroup's status.phase and succeeded count.
func (e *trainEnv) podGroupPhase(name string) (string, int64) {
	e.t.Helper()
	pg, err := e.dyn.Resource(testenv.SchedulerPluginsPodGroupGVR).Namespace(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	phase, _, _ := unstructured.NestedString(pg.Object, "status", "phase")
	succeeded, _, _ := unstructured.NestedInt64(pg.Object, "status", "succeeded")
	return phase, succeeded
}

// TestTrainJobWithInitializersRunsToCompletion: a TrainJob on a runtime with dataset and
// model initializers and the coscheduling policy, whose PodGroup's minMember (4) counts the
// initializers though the trainer nodes start only after they complete. Under lockstep the
// initializers run first, then the 2 trainer nodes bind as one gang in one rack — the one
// rack with room for both (Kueue's podset-required-topology on the node pod template) —
// and the TrainJob completes; the PodGroup's status ends Finished with 4 succeeded.
func TestTrainJobWithInitializersRunsToCompletion(t *testing.T) {
	e := startTrainer(t, lt.TopologyNodes(1, 1, 3, 2, "2")...)
	// One node of racks z0-b0-r0 and z0-b0-r1 is half taken: only rack z0-b0-r2 has room
	// for two trainer nodes of 2 cpu each (packing without the constraint would fill the
	// fuller racks first, one trainer each).
	for i, node := range []string{"z0-b0-r0-h0", "z0-b0-r1-h0"} {
		e.CreatePods(t, lt.GroupPod(e.ns, fmt.Sprintf("filler-%d", i), "").Req(lt.CPU("1")).Node(node).Obj())
	}

	node := step("node", "trainer", "2", "64Mi")
	node["dependsOn"] = []any{
		map[string]any{"name": "dataset-initializer", "status": "Complete"},
		map[string]any{"name": "model-initializer", "status": "Complete"},
	}
	podTemplate := node["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)
	podTemplate["metadata"] = map[string]any{"annotations": map[string]any{"kueue.x-k8s.io/podset-required-topology": lt.RackKey}}
	e.CreateClusterTrainingRuntime(t, "torch-with-initializers", trainingRuntime(
		step("dataset-initializer", "dataset-initializer", "500m", "32Mi"),
		step("model-initializer", "model-initializer", "500m", "32Mi"),
		node))
	e.CreateTrainJob(t, e.ns, "pretrain", "torch-with-initializers", map[string]any{"numNodes": int64(2)})

	e.waitComplete("pretrain")
	initializers := append(e.pods("pretrain", "dataset-initializer"), e.pods("pretrain", "model-initializer")...)
	trainers := e.pods("pretrain", "node")
	if len(initializers) != 2 || len(trainers) != 2 {
		t.Fatalf("%d initializer and %d trainer pods, want 2 and 2", len(initializers), len(trainers))
	}
	for _, p := range append(initializers, trainers...) {
		if p.Spec.NodeName == "" || p.Status.Phase != v1.PodSucceeded {
			t.Errorf("pod %s: node %q phase %s, want bound and Succeeded", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
	for _, p := range trainers {
		if rack := testenv.Domain(p.Spec.NodeName, lt.RackKey); rack != "z0-b0-r2" {
			t.Errorf("trainer %s on %s (rack %s), want rack z0-b0-r2 (the one rack with room for both)", p.Name, p.Spec.NodeName, rack)
		}
	}
	// The initializers ran before the trainer nodes existed: the node Job starts only once
	// they completed, so no gang could have waited for all 4 pods at once.
	for _, ip := range initializers {
		for _, tp := range trainers {
			if !ip.CreationTimestamp.Before(&tp.CreationTimestamp) && !ip.CreationTimestamp.Equal(&tp.CreationTimestamp) {
				t.Errorf("initializer %s created after trainer %s", ip.Name, tp.Name)
			}
		}
	}
	testenv.Eventually(t, 60*time.Second, "the scheduler-plugins PodGroup Finished", func() (bool, string) {
		phase, succeeded := e.podGroupPhase("pretrain")
		return phase == "Finished" && succeeded == 4, fmt.Sprintf("phase %s succeeded %d", phase, succeeded)
	})
	if _, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), "pretrain", metav1.GetOptions{}); err == nil {
		t.Errorf("a lockstep PodGroup mirrors the TrainJob's flat PodGroup; its pods belong to the JobSet's stages")
	}
}

// TestTrainJobWithoutInitializersBindsAsOneGang: the 3 trainer nodes of a TrainJob without
// initializers bind together or not at all: with room for 2, none binds; once a third node
// appears, all 3 bind.
func TestTrainJobWithoutInitializersBindsAsOneGang(t *testing.T) {
	e := startTrainer(t, lt.MakeNode("n1", "2").Obj(), lt.MakeNode("n2", "2").Obj())
	e.CreateClusterTrainingRuntime(t, "torch", trainingRuntime(step("node", "trainer", "2", "64Mi")))
	e.CreateTrainJob(t, e.ns, "finetune", "torch", map[string]any{"numNodes": int64(3)})
	testenv.Eventually(t, 60*time.Second, "3 trainer pods", func() (bool, string) {
		n := len(e.pods("finetune", "node"))
		return n == 3, fmt.Sprintf("%d pods", n)
	})
	e.Settled(t, "no trainer binds with room for 2 of 3", func() (bool, string) {
		for _, p := range e.pods("finetune", "node") {
			if p.Spec.NodeName != "" {
				return false, p.Name + " bound to " + p.Spec.NodeName
			}
		}
		return true, ""
	})
	e.CreateNodes(t, lt.MakeNode("n3", "2").Obj())
	e.waitComplete("finetune")
	for _, p := range e.pods("finetune", "node") {
		if p.Spec.NodeName == "" {
			t.Errorf("trainer %s never bound", p.Name)
		}
	}
}
