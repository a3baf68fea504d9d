package cluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/internal/kueuecontroller"
)

// The demo runs the upstream Kueue controller manager (sigs.k8s.io/kueue, the version pinned
// in tools/kueue/go.mod, which make demo-binaries builds into bin/kueue-controller-manager) so
// that an example can show the split users of both get: Kueue decides whether a Job runs
// (quota, queues), lockstep decides where (manifests/examples/09-kueue.yaml). It runs as
// test/integration/testenv runs it (see internal/kueuecontroller): its admission webhooks are
// registered by URL on loopback with a throwaway CA, so that a Job labelled
// kueue.x-k8s.io/queue-name is suspended on create as in a cluster. Only the batch/job
// integration is on.

// kueueProcess is the name the demo gives Kueue's process (its log, its pid file).
const kueueProcess = "kueue-controller-manager"

// installKueue installs Kueue's CRDs (their conversion webhooks calling Kueue on loopback),
// its namespace with the certificate Secret its rotator keeps, and its webhook
// configurations for its kinds and batch/v1 Jobs; it returns the certificates Kueue must
// serve.
func (c *Cluster) installKueue(ctx context.Context, client kubernetes.Interface) (*kueuecontroller.Certs, error) {
	dir, err := c.moduleDir(ctx, "kueue", "sigs.k8s.io/kueue")
	if err != nil {
		return nil, err
	}
	certs, err := kueuecontroller.NewCerts()
	if err != nil {
		return nil, err
	}
	baseURL := kueuecontroller.WebhookBaseURL(c.ports.KueueWebhook)
	crds, err := kueuecontroller.CRDs(dir, baseURL, certs.CA)
	if err != nil {
		return nil, err
	}
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, crd := range crds {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueuecontroller.Namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if _, err := client.CoreV1().Secrets(kueuecontroller.Namespace).Create(ctx, certs.Secret(), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	mutating, validating, err := kueuecontroller.WebhookConfigurations(dir, baseURL, certs.CA, nil)
	if err != nil {
		return nil, err
	}
	admission := client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	return certs, c.waitKueueServed(ctx)
}

// waitKueueServed waits until every Kueue kind the examples create can be listed.
func (c *Cluster) waitKueueServed(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.output(ctx, "get", "resourceflavors.kueue.x-k8s.io,clusterqueues.kueue.x-k8s.io,localqueues.kueue.x-k8s.io,workloads.kueue.x-k8s.io", "--all-namespaces")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the Kueue API is not served: %w", err)
	}
	return nil
}

// startKueue runs the Kueue controller manager with the admin kubeconfig and waits until its
// webhook server answers (before that, creating any Job fails: the webhooks' failurePolicy is
// Fail, as upstream's). Leader election, metrics and the visibility server are off.
func (c *Cluster) startKueue(ctx context.Context, certs *kueuecontroller.Certs) error {
	path, err := kueuecontroller.WriteConfig(filepath.Join(c.Dir, "kueue"), certs, c.ports.KueueWebhook, c.ports.KueueHealth, kueuecontroller.Options{})
	if err != nil {
		return err
	}
	// Level 2 logs admissions and evictions.
	if err := c.start(kueueProcess, kueueProcess, "--config="+path, "--kubeconfig="+c.Kubeconfig(), "--zap-log-level=2"); err != nil {
		return err
	}
	return c.waitHTTP(ctx, kueueProcess, kueuecontroller.ReadyURL(c.ports.KueueHealth), 2*time.Minute)
}

// kueueQueueLabel names the LocalQueue a Job is submitted to.
const kueueQueueLabel = "kueue.x-k8s.io/queue-name"

// workloadGVR is Kueue's Workload, one per queued Job.
var workloadGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}

// QueuedJob is a Job of the demo namespace submitted to a Kueue LocalQueue, as the API shows
// it: Kueue's answer, and where its pods are.
type QueuedJob struct {
	Name, Queue string
	// Suspended: Kueue has not admitted it (or evicted it); it has no pods.
	Suspended bool
	// Want is the Job's parallelism; Pods its pods and Bound those bound to a node.
	Want, Pods, Bound int
	// Kueue is the message of its Workload's QuotaReserved condition ("" before Kueue saw it).
	Kueue string
}

// Placed reports whether the Job has its outcome: waiting in Kueue with Kueue's reason, or
// admitted with every pod bound.
func (j QueuedJob) Placed() bool {
	if j.Suspended {
		return j.Kueue != ""
	}
	return j.Pods == j.Want && j.Bound == j.Pods
}

// QueuedJobs returns the Jobs of the demo namespace that name a LocalQueue, by name.
func (c *Cluster) QueuedJobs(ctx context.Context) ([]QueuedJob, error) {
	kube, err := c.client()
	if err != nil {
		return nil, err
	}
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	jobs, err := kube.BatchV1().Jobs(Namespace).List(ctx, metav1.ListOptions{LabelSelector: kueueQueueLabel})
	if err != nil || len(jobs.Items) == 0 {
		return nil, err // none queued (before the demo's second stage, Kueue is not installed)
	}
	workloads, err := dyn.Resource(workloadGVR).Namespace(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []QueuedJob
	for _, job := range jobs.Items {
		q := QueuedJob{Name: job.Name, Queue: job.Labels[kueueQueueLabel], Suspended: ptr.Deref(job.Spec.Suspend, false),
			Want: int(ptr.Deref(job.Spec.Parallelism, 1))}
		pods, err := kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
		if err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			q.Pods++
			if p.Spec.NodeName != "" {
				q.Bound++
			}
		}
		for i := range workloads.Items {
			if ref := metav1.GetControllerOf(&workloads.Items[i]); ref != nil && ref.UID == job.UID {
				q.Kueue = workloadCondition(&workloads.Items[i], "QuotaReserved")
			}
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// workloadCondition returns the message of a Kueue Workload's condition condType, "" if it
// has none.
func workloadCondition(wl *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); ok && m["type"] == condType {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}

// reportQueued prints what Kueue decided for each queued Job and how many of its pods are
// bound.
func reportQueued(w io.Writer, jobs []QueuedJob) {
	if len(jobs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nJobs queued in Kueue (Kueue decides whether, lockstep where):\n\n")
	for _, j := range jobs {
		state := fmt.Sprintf("admitted, %d/%d pods bound", j.Bound, j.Want)
		if j.Suspended {
			state = "waiting in Kueue, no pods"
		}
		fmt.Fprintf(w, "  %-20s queue %-8s %s — Kueue: %s\n", j.Name, j.Queue, state, j.Kueue)
	}
}
