package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/lockstep-sched/lockstep/internal/jobsetcontroller"
	"github.com/lockstep-sched/lockstep/internal/kueuecontroller"
	"github.com/lockstep-sched/lockstep/internal/trainercontroller"
)

// The upstream Kueue controller manager (sigs.k8s.io/kueue, the version pinned in
// tools/kueue/go.mod, a module of its own: Kueue's Kubernetes and controller-runtime versions
// differ from the other controllers') runs as its own process, with its admission webhooks
// registered with the apiserver by URL on loopback (see internal/kueuecontroller): a Job
// created with the label KueueQueueLabel is suspended by Kueue's webhook, as in a cluster,
// until Kueue admits its Workload.

const (
	// KueueQueueLabel names the LocalQueue a Job is submitted to.
	KueueQueueLabel = "kueue.x-k8s.io/queue-name"
	// kueueVersion is the Kueue API version the helpers speak (the CRDs store v1beta1 and
	// convert through Kueue's webhook).
	kueueVersion = "v1beta2"
)

var (
	// ResourceFlavorGVR, ClusterQueueGVR, LocalQueueGVR and WorkloadGVR are Kueue's kinds
	// the tests use, served once StartKueue installed the CRDs.
	ResourceFlavorGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: kueueVersion, Resource: "resourceflavors"}
	ClusterQueueGVR   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: kueueVersion, Resource: "clusterqueues"}
	LocalQueueGVR     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: kueueVersion, Resource: "localqueues"}
	WorkloadGVR       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: kueueVersion, Resource: "workloads"}
)

var kueueBuild = toolBuild{module: "kueue"}

// kueueController builds bin/kueue-controller-manager once per test process and returns it
// with the directory of the sigs.k8s.io/kueue module, where its CRDs and webhook manifest are.
func kueueController(t *testing.T) (binary, moduleDir string) {
	t.Helper()
	bin, dirs := kueueBuild.get(t, "kueue-controller-manager", "sigs.k8s.io/kueue/cmd/kueue", "sigs.k8s.io/kueue")
	return bin, dirs[0]
}

// StartKueue installs the Kueue CRDs, Kueue's namespace with its certificate Secret and the
// webhook configurations of Kueue's kinds and of batch/v1 Jobs, and runs the upstream Kueue
// controller manager against this test's apiserver until the test ends; it returns once the
// manager is ready (its webhook server listens). It runs without leader election, metrics or
// the visibility server, with only the batch/job integration; its webhooks (failurePolicy
// Fail, as upstream's) answer on a free loopback port. Jobs need the upstream Job
// controller (StartKubeControllers) to get pods once Kueue unsuspends them. Its log (zap
// level 2) is printed if the test failed.
func (e *Env) StartKueue(t *testing.T) *Process {
	t.Helper()
	return e.StartKueueWith(t, kueuecontroller.Options{})
}

// StartKueueWith is StartKueue with the configuration opts set. With opts.Frameworks, those
// integrations are on instead of batch/job alone, and their webhooks are registered (beside
// those of Kueue's kinds). Kueue sets up an integration's controller at start only if its
// kind is served then (else it polls, backing off up to 2 minutes): for
// jobset.x-k8s.io/jobset the JobSet CRD (v0.12.0, from tools/controllers, as
// StartJobSetController installs it) is installed here first if it is not already. JobSets
// need the JobSet controller (StartJobSetController) to get child Jobs once Kueue
// unsuspends them, and the upstream Job controller (StartKubeControllers) to get pods. For
// trainer.kubeflow.org/trainjob the JobSet CRD and the Trainer and scheduler-plugins PodGroup
// CRDs (from tools/controllers, as StartTrainerController installs them) are installed first:
// Kueue's TrainJob controller reads TrainJobs and their runtimes and owns JobSets. TrainJobs
// need the Trainer controller (StartTrainerController) and the JobSet controller too.
func (e *Env) StartKueueWith(t *testing.T, opts kueuecontroller.Options) *Process {
	t.Helper()
	bin, moduleDir := kueueController(t)
	if opts.Enables(kueuecontroller.FrameworkJobSet) || opts.Enables(kueuecontroller.FrameworkTrainJob) {
		e.installCRD(t, jobsetcontroller.CRDPath(JobSetModuleDir(t)), JobSetGVR)
	}
	if opts.Enables(kueuecontroller.FrameworkTrainJob) {
		e.installTrainerCRDs(t)
	}
	certs, err := kueuecontroller.NewCerts()
	if err != nil {
		t.Fatal(err)
	}
	webhookPort, healthPort := freePort(t), freePort(t)
	baseURL := kueuecontroller.WebhookBaseURL(webhookPort)
	crds, err := kueuecontroller.CRDs(moduleDir, baseURL, certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		e.createServedCRD(t, crd)
	}
	e.createKueueNamespace(t, certs)
	e.registerKueueWebhooks(t, moduleDir, baseURL, certs.CA, opts.Frameworks)

	dir := t.TempDir()
	cfgPath, err := kueuecontroller.WriteConfig(dir, certs, webhookPort, healthPort, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, "kueue-controller-manager", dir, bin, "--config="+cfgPath, "--kubeconfig="+e.releaseVersionKubeconfig(t), "--zap-log-level=2")
	waitReady(t, p, kueuecontroller.ReadyURL(healthPort))
	return p
}

// releaseVersionKubeconfig returns a kubeconfig reaching this test's apiserver, as its
// superuser, through a loopback proxy that reports the apiserver's version as a release's
// (v<major>.<minor>.0), until the test ends. The in-process apiserver reports the unstamped
// version of an unreleased build, v0.0.0-master+$Format:%H$, which Kueue's main cannot
// parse as a semantic version and exits on (it checks Job features against it); everything
// else passes through unchanged, watches included.
func (e *Env) releaseVersionKubeconfig(t *testing.T) string {
	t.Helper()
	info, err := e.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	info.GitVersion = fmt.Sprintf("v%s.%s.0", info.Major, strings.TrimSuffix(info.Minor, "+"))
	body, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(e.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(e.Config) // the superuser's credentials
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport, proxy.FlushInterval = transport, -1
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(l) }()
	t.Cleanup(func() { server.Close() })
	return writeKubeconfig(t, &rest.Config{Host: "http://" + l.Addr().String()})
}

// createServedCRD creates crd and waits until the API serves its first served version.
func (e *Env) createServedCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Extensions.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			gvr.Version = v.Name
			break
		}
	}
	resources := dynamic.NewForConfigOrDie(e.Config).Resource(gvr)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := resources.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not served: %v", crd.Name, err)
	}
}

// createKueueNamespace creates Kueue's namespace and, in it, the Secret its certificate
// rotator must find (it neither creates the Secret nor replaces valid certificates).
func (e *Env) createKueueNamespace(t *testing.T, certs *kueuecontroller.Certs) {
	t.Helper()
	ctx := context.Background()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueuecontroller.Namespace}}
	if _, err := e.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := e.Client.CoreV1().Secrets(kueuecontroller.Namespace).Create(ctx, certs.Secret(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// registerKueueWebhooks creates Kueue's mutating and validating webhook configurations for
// its kinds and the integrations frameworks (nil: batch/job), calling baseURL and trusting
// caBundle.
func (e *Env) registerKueueWebhooks(t *testing.T, moduleDir, baseURL string, caBundle []byte, frameworks []string) {
	t.Helper()
	ctx := context.Background()
	mutating, validating, err := kueuecontroller.WebhookConfigurations(moduleDir, baseURL, caBundle, frameworks)
	if err != nil {
		t.Fatal(err)
	}
	admission := e.Client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createKueueObject creates an object of Kueue's API (kind, name, in ns unless cluster-scoped)
// with spec, through Kueue's webhooks.
func (e *Env) createKueueObject(t *testing.T, gvr schema.GroupVersionResource, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(),
		"kind":       kind,
		"metadata":   meta,
		"spec":       spec,
	}}
	created, err := dynamic.NewForConfigOrDie(e.Config).Resource(gvr).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	return created
}

// CreateResourceFlavor creates a ResourceFlavor named name that selects no nodes.
func (e *Env) CreateResourceFlavor(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	return e.createKueueObject(t, ResourceFlavorGVR, "ResourceFlavor", "", name, map[string]any{})
}

// CreateClusterQueue creates a ClusterQueue named name admitting workloads of every
// namespace with a nominal quota of cpu (a quantity) in ResourceFlavor flavor.
func (e *Env) CreateClusterQueue(t *testing.T, name, flavor, cpu string) *unstructured.Unstructured {
	t.Helper()
	return e.CreateClusterQueueWithPreemption(t, name, flavor, cpu, "")
}

// CreateLocalQueue creates a LocalQueue ns/name submitting to ClusterQueue clusterQueue.
func (e *Env) CreateLocalQueue(t *testing.T, ns, name, clusterQueue string) *unstructured.Unstructured {
	t.Helper()
	return e.createKueueObject(t, LocalQueueGVR, "LocalQueue", ns, name, map[string]any{"clusterQueue": clusterQueue})
}

// KueueWorkload returns the Kueue Workload of a workload object of any integration (a Job, a
// JobSet...: the Workload it controls), nil while there is none.
func (e *Env) KueueWorkload(t *testing.T, obj metav1.Object) *unstructured.Unstructured {
	t.Helper()
	list, err := dynamic.NewForConfigOrDie(e.Config).Resource(WorkloadGVR).Namespace(obj.GetNamespace()).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == obj.GetUID() {
			return &list.Items[i]
		}
	}
	return nil
}

// WorkloadCondition returns the condition of type condType of a Kueue Workload, nil if it has
// none.
func WorkloadCondition(wl *unstructured.Unstructured, condType string) *metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != condType {
			continue
		}
		cond := &metav1.Condition{Type: condType}
		cond.Status = metav1.ConditionStatus(fmt.Sprint(m["status"]))
		cond.Reason, _ = m["reason"].(string)
		cond.Message, _ = m["message"].(string)
		return cond
	}
	return nil
}

// TopologyGVR is Kueue's Topology kind (topology-aware scheduling, on by default in v0.15),
// served once StartKueue installed the CRDs.
var TopologyGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: kueueVersion, Resource: "topologies"}

// CreateTopology creates a Kueue Topology named name whose levels are the node label keys
// levels, from the highest to the lowest (kubernetes.io/hostname, if any, last).
func (e *Env) CreateTopology(t *testing.T, name string, levels ...string) *unstructured.Unstructured {
	t.Helper()
	var ls []any
	for _, l := range levels {
		ls = append(ls, map[string]any{"nodeLabel": l})
	}
	return e.createKueueObject(t, TopologyGVR, "Topology", "", name, map[string]any{"levels": ls})
}

// CreateTASResourceFlavor creates a ResourceFlavor named name for topology-aware scheduling:
// it selects the nodes with nodeLabels (Kueue requires at least one) and places workloads
// in Topology topology.
func (e *Env) CreateTASResourceFlavor(t *testing.T, name, topology string, nodeLabels map[string]string) *unstructured.Unstructured {
	t.Helper()
	labels := map[string]any{}
	for k, v := range nodeLabels {
		labels[k] = v
	}
	return e.createKueueObject(t, ResourceFlavorGVR, "ResourceFlavor", "", name, map[string]any{
		"nodeLabels":   labels,
		"topologyName": topology,
	})
}

// CreateClusterQueueWithPreemption is CreateClusterQueue with the preemption policy
// withinClusterQueue (Never, LowerPriority, LowerOrNewerEqualPriority; "" for Kueue's
// default): a pending workload may evict the admitted workloads of the ClusterQueue it
// allows, to get their quota.
func (e *Env) CreateClusterQueueWithPreemption(t *testing.T, name, flavor, cpu, withinClusterQueue string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{
		"namespaceSelector": map[string]any{},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{"cpu"},
			"flavors": []any{map[string]any{
				"name":      flavor,
				"resources": []any{map[string]any{"name": "cpu", "nominalQuota": cpu}},
			}},
		}},
	}
	if withinClusterQueue != "" {
		spec["preemption"] = map[string]any{"withinClusterQueue": withinClusterQueue}
	}
	return e.createKueueObject(t, ClusterQueueGVR, "ClusterQueue", "", name, spec)
}

// installTrainerCRDs installs the Trainer CRDs (TrainJob, TrainingRuntime,
// ClusterTrainingRuntime) and the scheduler-plugins PodGroup CRD as StartTrainerController
// does (it finds them installed), and waits until they are served.
func (e *Env) installTrainerCRDs(t *testing.T) {
	t.Helper()
	_, trainerDir, schedulerPluginsDir := trainerController(t)
	crds := trainercontroller.CRDPaths(trainerDir)
	for i, gvr := range []schema.GroupVersionResource{TrainJobGVR, TrainingRuntimeGVR, ClusterTrainingRuntimeGVR} {
		e.installCRD(t, crds[i], gvr)
	}
	e.installCRD(t, trainercontroller.PodGroupCRDPath(schedulerPluginsDir), SchedulerPluginsPodGroupGVR)
}
