package e2e

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/hack/demo/cluster"
)

const (
	zoneLabel = "topology.kubernetes.io/zone"
	rackLabel = "topology.kubernetes.io/rack"
)

// checkKueue checks the Kueue example (manifests/examples/09-kueue.yaml) from the API
// objects: of three Jobs of 2 × 8 GPUs behind a quota of 16 GPUs per zone, Kueue admits two,
// each bound whole in one rack of the zone its flavor names (one per zone), and keeps the
// third suspended with no pods and no lockstep group; once an admitted Job is deleted the
// third is admitted and binds whole in one rack.
func checkKueue(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	kube, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	var admitted, waiting []cluster.QueuedJob
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		jobs, err := c.QueuedJobs(ctx)
		if err != nil || len(jobs) != 3 {
			return false, nil
		}
		admitted, waiting = nil, nil
		for _, j := range jobs {
			if !j.Placed() {
				return false, nil
			}
			if j.Suspended {
				waiting = append(waiting, j)
			} else {
				admitted = append(admitted, j)
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the Kueue example did not settle: admitted %+v, waiting %+v", admitted, waiting)
	}
	if len(admitted) != 2 || len(waiting) != 1 {
		t.Fatalf("Kueue admitted %+v and kept %+v waiting; want 2 admitted (16 GPUs per zone), 1 waiting", admitted, waiting)
	}
	zones := map[string]bool{}
	for _, j := range admitted {
		zones[jobZoneAndRack(ctx, t, kube, j.Name)] = true
	}
	if len(zones) != 2 {
		t.Errorf("the two admitted Jobs are in zones %v, want one in each (each zone's flavor has quota for one)", keys(zones))
	}
	w := waiting[0]
	if w.Pods != 0 {
		t.Errorf("queued Job %s has %d pods while Kueue keeps it waiting", w.Name, w.Pods)
	}
	ls, err := c.Lockstep()
	if err != nil {
		t.Fatal(err)
	}
	job, err := kube.BatchV1().Jobs(cluster.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	groups, err := ls.SchedulingV1alpha1().PodGroups(cluster.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pg := range groups.Items {
		if metav1.IsControlledBy(&pg, job) {
			t.Errorf("queued Job %s, suspended by Kueue, has lockstep PodGroup %s", w.Name, pg.Name)
		}
	}

	// Quota frees: the waiting Job is admitted and binds whole.
	if err := kube.BatchV1().Jobs(cluster.Namespace).Delete(ctx, admitted[0].Name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	var last cluster.QueuedJob
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		jobs, err := c.QueuedJobs(ctx)
		if err != nil {
			return false, nil
		}
		for _, j := range jobs {
			if j.Name == w.Name {
				last = j
				return !j.Suspended && j.Placed(), nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("queued Job %s not admitted and bound once %s was deleted: %+v", w.Name, admitted[0].Name, last)
	}
	jobZoneAndRack(ctx, t, kube, w.Name)
}

// jobZoneAndRack checks that the bound pods of Job name are in one rack, within the zone
// Kueue put in their nodeSelector, and returns that zone.
func jobZoneAndRack(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string) string {
	t.Helper()
	pods, err := kube.CoreV1().Pods(cluster.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	racks, zones := map[string]bool{}, map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s on node %q: %v", p.Name, p.Spec.NodeName, err)
		}
		racks[node.Labels[rackLabel]], zones[node.Labels[zoneLabel]] = true, true
		if want := assignedZone(&p); want == "" || node.Labels[zoneLabel] != want {
			t.Errorf("pod %s of Job %s is in zone %s; Kueue's flavor assigned %q", p.Name, name, node.Labels[zoneLabel], want)
		}
	}
	if len(racks) != 1 || len(zones) != 1 {
		t.Errorf("Job %s requires one rack; its pods are in racks %v, zones %v", name, keys(racks), keys(zones))
	}
	for z := range zones {
		return z
	}
	return ""
}

// assignedZone is the zone Kueue's admission put in a pod's nodeSelector (its flavor's node
// label).
func assignedZone(p *v1.Pod) string { return p.Spec.NodeSelector[zoneLabel] }
