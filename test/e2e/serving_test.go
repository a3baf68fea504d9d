package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-sched/lockstep/hack/demo/cluster"
)

// checkServing checks the LeaderWorkerSet and RayCluster examples
// (manifests/examples/10-leaderworkerset.yaml, 11-raycluster.yaml) from the API: each of the
// LeaderWorkerSet's 2 replicas (4 pods) is bound whole in one rack and has its own lockstep
// PodGroup of 4; the RayCluster's head and 3 workers are bound in one rack, its groups a tree
// of its head's PodGroup (1) and its worker group's (3).
func checkServing(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	kube, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	ls, err := c.Lockstep()
	if err != nil {
		t.Fatal(err)
	}
	bound := func(selector string, want int) []v1.Pod {
		t.Helper()
		var pods []v1.Pod
		n := 0
		if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := kube.CoreV1().Pods(cluster.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, nil
			}
			pods, n = list.Items, 0
			for _, p := range pods {
				if p.Spec.NodeName != "" {
					n++
				}
			}
			return len(pods) == want && n == want, nil
		}); err != nil {
			t.Fatalf("pods %s: %d, %d bound; want %d, all bound", selector, len(pods), n, want)
		}
		return pods
	}
	rackOf := func(p v1.Pod) string {
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return node.Labels[rackLabel]
	}
	gangsOf := func(kind, name string) map[string]int32 {
		t.Helper()
		list, err := ls.SchedulingV1alpha1().PodGroups(cluster.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int32{}
		for _, pg := range list.Items {
			if ref := metav1.GetControllerOf(&pg); ref != nil && ref.Kind == kind && ref.Name == name && pg.Spec.SchedulingPolicy.Gang != nil {
				out[pg.Name] = pg.Spec.SchedulingPolicy.Gang.MinCount
			}
		}
		return out
	}

	racks := map[string]map[string]bool{}
	for _, p := range bound("leaderworkerset.sigs.k8s.io/name=llama-70b", 8) {
		replica := p.Labels["leaderworkerset.sigs.k8s.io/group-index"]
		if racks[replica] == nil {
			racks[replica] = map[string]bool{}
		}
		racks[replica][rackOf(p)] = true
	}
	for replica, rs := range racks {
		if len(rs) != 1 {
			t.Errorf("LeaderWorkerSet llama-70b replica %s requires one rack; its pods are in %v", replica, keys(rs))
		}
	}
	if len(racks) != 2 {
		t.Errorf("LeaderWorkerSet llama-70b has replicas %v, want 2", keys(racks))
	}
	if g := gangsOf("LeaderWorkerSet", "llama-70b"); len(g) != 2 || fmt.Sprint(values(g)) != "[4 4]" {
		t.Errorf("LeaderWorkerSet llama-70b's PodGroups %v, want one gang of 4 per replica", g)
	}

	rayRacks := map[string]bool{}
	for _, p := range bound("ray.io/cluster=ray-tune", 4) {
		rayRacks[rackOf(p)] = true
	}
	if len(rayRacks) != 1 {
		t.Errorf("RayCluster ray-tune requires one rack; its pods are in %v", keys(rayRacks))
	}
	if g := gangsOf("RayCluster", "ray-tune"); len(g) != 2 || fmt.Sprint(values(g)) != "[1 3]" {
		t.Errorf("RayCluster ray-tune's PodGroups %v, want its head's (1) and its worker group's (minReplicas 3), under one root", g)
	}
}

func values[V any](m map[string]V) []V {
	var out []V
	for _, k := range sortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := keys(m)
	slices.Sort(ks)
	return ks
}
