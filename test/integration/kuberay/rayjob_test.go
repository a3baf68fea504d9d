package kuberay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-sched/lockstep/internal/kuberaycontroller"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// A RayJob in K8sJobMode whose cluster (a head and minReplicas 2 workers) and submitter pod
// template both use lockstep-scheduler. KubeRay makes a RayCluster controlled by the RayJob; it
// gets one lockstep PodGroup (minCount 3) and binds whole. Once its pods run (RunPods) and the
// cluster is Ready, KubeRay creates the submitter Job; its one pod, made by the Job controller
// with schedulerName lockstep-scheduler, binds on its own: it is not filed under the cluster's
// gang (it carries no Ray label and its controller is the Job), and the Job gets no group of
// its own: the namespace still holds the cluster's Workload and PodGroup only. The cluster's
// pods are untouched meanwhile. Had the submitter been counted in the gang (minCount 4), the
// cluster would never have been Ready and no submitter would exist.
func TestRayJobSubmitterDoesNotBlockTheGang(t *testing.T) {
	e := start(t, nil, lt.MakeNode("node-a", "4").Obj(), lt.MakeNode("node-b", "4").Obj())
	e.RunPods(t, e.ns, nil)
	spec := clusterSpec("2", group{replicas: 2, minReplicas: 2, maxReplicas: 2})
	job := e.create("RayJob", "rayjob", nil, nil, map[string]any{
		"entrypoint":               `python -c "print(1)"`,
		"submissionMode":           "K8sJobMode",
		"shutdownAfterJobFinishes": false,
		"rayClusterSpec":           spec,
		"submitterPodTemplate": map[string]any{"spec": map[string]any{
			"schedulerName": lt.SchedulerName,
			"restartPolicy": "Never",
			"containers":    []any{rayContainer("ray-job-submitter", "1")},
		}},
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
	if ref := metav1.GetControllerOf(cluster); ref == nil || ref.UID != job.GetUID() {
		t.Errorf("RayCluster %s: ownerReferences %s, want the RayJob as controller", cluster.GetName(), owners(cluster.GetOwnerReferences()))
	}

	pg := e.clusterGroup(cluster, 3)
	gang := e.waitCluster(cluster.GetName(), 2, 3)
	for i := range gang {
		e.checkRayPod(&gang[i], cluster)
	}
	e.checkBoundWhole(cluster.GetName(), 3)
	e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "child groups placed together")

	var submitter v1.Pod
	testenv.Eventually(t, 120*time.Second, "the submitter Job's pod bound", func() (bool, string) {
		pods := e.pods("job-name=rayjob")
		if len(pods) != 1 {
			return false, fmt.Sprint(placement(pods))
		}
		submitter = pods[0]
		return submitter.Spec.NodeName != "", fmt.Sprint(placement(pods))
	})
	t.Logf("submitter pod %s on %s: labels %v, owners %s", submitter.Name, submitter.Spec.NodeName, submitter.Labels, owners(submitter.OwnerReferences))
	if submitter.Spec.SchedulerName != lt.SchedulerName {
		t.Errorf("submitter pod %s: schedulerName %q, want the template's %q", submitter.Name, submitter.Spec.SchedulerName, lt.SchedulerName)
	}
	for k, v := range submitter.Labels {
		if strings.HasPrefix(k, "ray.io/") || k == v1alpha1.PodGroupLabel || k == kuberaycontroller.PodGroupLabel {
			t.Errorf("submitter pod %s: label %s=%q, want no Ray or pod-group label", submitter.Name, k, v)
		}
	}
	if ref := metav1.GetControllerOf(&submitter); ref == nil || ref.Kind != "Job" || ref.Name != "rayjob" {
		t.Errorf("submitter pod %s: ownerReferences %s, want the Job rayjob as controller", submitter.Name, owners(submitter.OwnerReferences))
	}
	// The list may see the bind before the watch delivers it: wait for the watch.
	testenv.Eventually(t, 30*time.Second, "the watch's binds of pods of no RayCluster: the submitter's alone", func() (bool, string) {
		binds := e.watch.bindsOf("")
		return len(binds) == 1 && binds[0].pod == submitter.Name, fmt.Sprint(binds)
	})

	// No group for the submitter, the cluster's unchanged, its pods untouched.
	e.controller.Settled(t, testenv.JobGVR, submitter.Namespace, "rayjob", "the cluster's Workload and PodGroup the only lockstep groups", func() (bool, string) {
		_, ok, state := e.treeOf(cluster, 3)
		return ok, state
	})
	now := placement(e.pods(clusterSelector(cluster.GetName(), "")))
	for _, p := range gang {
		if now[p.Name] != p.Spec.NodeName {
			t.Errorf("cluster pod %s was on %s, now %q", p.Name, p.Spec.NodeName, now[p.Name])
		}
	}
	if d := e.watch.deletedPods(); len(d) != 0 {
		t.Errorf("pods deleted: %v", d)
	}
}
