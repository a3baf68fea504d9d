// Package cluster runs lockstep's local demo cluster: etcd, kube-apiserver and
// kube-controller-manager built from k8s.io/kubernetes v1.37.1, KWOK for simulated nodes, the
// upstream JobSet, Kueue, LeaderWorkerSet and KubeRay controllers, and lockstep (scheduler + workload controller) with the
// manifests' configuration and RBAC, all on 127.0.0.1 under one work directory. `make demo`
// and `make demo-test` drive it.
package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/pkg/cli"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
)

// Namespace is where the examples run.
const Namespace = "demo"

// lockstepNamespace is where the chart installs lockstep.
const lockstepNamespace = "lockstep-system"

// MetricsReader is the ServiceAccount (in lockstep-system) the demo lets read /metrics, as a
// cluster's Prometheus would be.
const MetricsReader = "lockstep-metrics"

// Cluster is the demo cluster of one checkout.
type Cluster struct {
	Root string    // the repository
	Dir  string    // the work directory, Root/.demo
	Bin  string    // where the binaries are, Root/bin
	Out  io.Writer // progress

	ports ports
}

type ports struct {
	Etcd, EtcdPeer, APIServer, ControllerManager, Lockstep, JobSetWebhook, JobSetHealth, KueueWebhook, KueueHealth, LWSWebhook, LWSHealth, KubeRayHealth int
}

// New returns the demo cluster of the checkout at root.
func New(root string, out io.Writer) *Cluster {
	return &Cluster{Root: root, Dir: filepath.Join(root, ".demo"), Bin: filepath.Join(root, "bin"), Out: out}
}

// Kubeconfig is the admin kubeconfig of the cluster.
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.Dir, "kubeconfig") }

func (c *Cluster) step(format string, args ...any) {
	fmt.Fprintf(c.Out, "==> "+format+"\n", args...)
}

// Up starts the cluster (or finds it running), submits the examples and reports where
// their pods landed. It is safe to run again. It comes up in two stages, so that a newcomer
// sees gangs land within minutes of the first build: the control plane, KWOK's nodes and
// lockstep with the examples that need no other controller first; then (building them if
// bin/ lacks them) the JobSet, Kueue, LeaderWorkerSet and KubeRay controllers and their
// examples. lockstep watches those kinds from the moment their CRDs are served.
func (c *Cluster) Up(ctx context.Context) error {
	// A cluster whose core runs is kept, with its controllers all running or none started
	// yet (an earlier make demo stopped while building them); anything else starts afresh.
	if c.running(ctx, coreProcesses) && (c.running(ctx, integrationProcesses) || !c.anyAlive(integrationProcesses)) {
		c.step("the demo cluster is already running")
	} else if err := c.fresh(ctx); err != nil {
		return fmt.Errorf("%w (logs in %s)", err, filepath.Join(c.Dir, "logs"))
	}
	// The cluster is usable from here on; the second stage may build for minutes.
	fmt.Fprintf(c.Out, "The cluster is up. To use it (the second stage below adds controllers meanwhile):\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH\n",
		c.Kubeconfig(), c.Bin)
	core, integrations, err := c.examples()
	if err != nil {
		return err
	}
	c.step("submitting the examples that need no other controller to namespace %s", Namespace)
	if err := c.apply(ctx, core); err != nil {
		return err
	}
	c.step("waiting for them to be placed")
	if err := c.Settle(ctx, 3*time.Minute); err != nil {
		fmt.Fprintf(c.Out, "    (%v)\n", err)
	}
	if err := c.Report(ctx, c.Out); err != nil {
		return err
	}
	if !c.running(ctx, integrationProcesses) {
		if err := c.buildIntegrations(ctx); err != nil {
			return err
		}
		if err := c.startIntegrations(ctx); err != nil {
			return fmt.Errorf("%w (logs in %s)", err, filepath.Join(c.Dir, "logs"))
		}
	}
	c.step("submitting the examples of the JobSet, Kueue, LeaderWorkerSet and KubeRay controllers")
	if err := c.apply(ctx, integrations); err != nil {
		return err
	}
	c.step("waiting for every example to be placed")
	if err := c.Settle(ctx, 3*time.Minute); err != nil {
		fmt.Fprintf(c.Out, "    (%v)\n", err)
	}
	if err := c.Report(ctx, c.Out); err != nil {
		return err
	}
	fmt.Fprintln(c.Out)
	c.usage()
	fmt.Fprintf(c.Out, "Stop everything with: make demo-down\n")
	return nil
}

// usage says how to use the cluster, once every example is placed.
func (c *Cluster) usage() {
	fmt.Fprintf(c.Out, `The cluster keeps running. To use it:
  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl get lockstep,jobsets,leaderworkersets,rayclusters -A
  kubectl get clusterqueues,localqueues,workloads.kueue.x-k8s.io -A
  kubectl lockstep get -A
  kubectl lockstep explain whale -n demo
  curl -sk -H "Authorization: Bearer $(kubectl create token %s -n %s)" %s | grep ^lockstep_
Logs are in %s (the scheduler's: %s).
`, c.Kubeconfig(), c.Bin, MetricsReader, lockstepNamespace, c.MetricsURL(), filepath.Join(c.Dir, "logs"),
		filepath.Join(c.Dir, "logs", "lockstep-scheduler.log"))
}

// integrationExamples are the examples that need a controller other than Kubernetes' own.
var integrationExamples = map[string]bool{"08-jobset.yaml": true, "09-kueue.yaml": true, "10-leaderworkerset.yaml": true, "11-raycluster.yaml": true}

// examples lists manifests/examples: those that need no other controller, and the others.
func (c *Cluster) examples() (core, integrations []string, err error) {
	files, err := filepath.Glob(filepath.Join(c.Root, "manifests", "examples", "*.yaml"))
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		if integrationExamples[filepath.Base(f)] {
			integrations = append(integrations, f)
		} else {
			core = append(core, f)
		}
	}
	return core, integrations, nil
}

// apply submits example files to the demo namespace.
func (c *Cluster) apply(ctx context.Context, files []string) error {
	args := []string{"apply", "-n", Namespace}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	return c.kubectl(ctx, args...)
}

// The demo's processes: the core cluster and lockstep, and the other projects' controllers.
var (
	coreProcesses        = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok", "lockstep-scheduler"}
	integrationProcesses = []string{"jobset-controller", kueueProcess, lwsProcess, kubeRayProcess}
	integrationBinaries  = []string{"jobset-controller", "kueue-controller-manager", "lws-controller", "kuberay-operator"}
)

// anyAlive reports whether any of the named processes of the demo is alive.
func (c *Cluster) anyAlive(names []string) bool {
	pids := c.pids()
	for _, n := range names {
		if _, ok := pids[n]; ok {
			return true
		}
	}
	return false
}

// buildIntegrations builds the other projects' controllers into bin/ unless they are there
// (make demo-controllers; minutes on a cold Go cache), saying every half minute that it still
// builds.
func (c *Cluster) buildIntegrations(ctx context.Context) error {
	missing := false
	for _, b := range integrationBinaries {
		if _, err := os.Stat(filepath.Join(c.Bin, b)); err != nil {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	c.step("building the JobSet, Kueue, LeaderWorkerSet and KubeRay controllers from their modules (make demo-controllers; the gangs above keep running meanwhile)")
	return c.build(ctx, "demo-controllers")
}

// build runs make target in the repository, showing its output: each long build of the
// target says every 30 s what it still builds (hack/progress.sh), so nothing is added here.
func (c *Cluster) build(ctx context.Context, target string) error {
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", c.Root, target)
	cmd.Stdout, cmd.Stderr = c.Out, c.Out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make %s: %w", target, err)
	}
	return nil
}

// Down stops every process of the demo and removes its work directory.
func (c *Cluster) Down() error {
	portsKnown := c.loadPorts() == nil
	err := c.stopAll()
	if err == nil {
		err = os.RemoveAll(c.Dir)
	}
	if portsKnown {
		c.forgetDiscovery()
	}
	return err
}

// forgetDiscovery removes what kubectl cached of the demo's API server in the user's home
// (~/.kube/cache/discovery/127.0.0.1_PORT, one per run, as each run picks a free port); the
// demo's own kubectl caches under the work directory (kubectlCache).
func (c *Cluster) forgetDiscovery() {
	home, err := os.UserHomeDir()
	if err != nil || c.ports.APIServer == 0 {
		return
	}
	_ = os.RemoveAll(filepath.Join(home, ".kube", "cache", "discovery", fmt.Sprintf("127.0.0.1_%d", c.ports.APIServer)))
}

// kubectlArgs are the flags of every kubectl the demo runs: its kubeconfig, and a cache
// under its work directory, which goes with it.
func (c *Cluster) kubectlArgs(args ...string) []string {
	return append([]string{"--kubeconfig=" + c.Kubeconfig(), "--cache-dir=" + filepath.Join(c.Dir, "kubectl-cache")}, args...)
}

// running reports whether the named processes of the demo run and its API server answers.
func (c *Cluster) running(ctx context.Context, names []string) bool {
	if err := c.loadPorts(); err != nil {
		return false
	}
	pids := c.pids()
	for _, name := range names {
		if _, ok := pids[name]; !ok {
			return false
		}
	}
	client, err := c.client()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// fresh starts a new cluster from nothing (stopping leftovers of an earlier run).
func (c *Cluster) fresh(ctx context.Context) error {
	if len(c.pids()) > 0 {
		c.step("stopping what is left of an earlier demo")
	}
	_ = c.stopAll()
	for _, d := range []string{"etcd", "logs", "lockstep-certs", "jobset-certs", "kueue", "lws"} {
		_ = os.RemoveAll(filepath.Join(c.Dir, d))
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	if err := c.choosePorts(); err != nil {
		return err
	}
	pkiDir := filepath.Join(c.Dir, "pki")
	c.step("generating certificates and kubeconfigs in %s", c.Dir)
	if err := pki(pkiDir); err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", c.ports.APIServer)
	if err := writeKubeconfig(c.Kubeconfig(), server, filepath.Join(pkiDir, "ca.crt"), &clientcmdapi.AuthInfo{
		ClientCertificate: filepath.Join(pkiDir, "admin.crt"), ClientKey: filepath.Join(pkiDir, "admin.key")}); err != nil {
		return err
	}

	c.step("starting etcd on 127.0.0.1:%d", c.ports.Etcd)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports.Etcd)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports.EtcdPeer)
	if err := c.start("etcd", "etcd", "--name=demo", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL, "--initial-cluster=demo="+peerURL,
		"--log-level=warn"); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, "etcd", etcdURL+"/health", 60*time.Second); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}

	c.step("starting kube-apiserver on %s", server)
	if err := c.start("kube-apiserver", "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(c.ports.APIServer),
		"--tls-cert-file="+filepath.Join(pkiDir, "apiserver.crt"), "--tls-private-key-file="+filepath.Join(pkiDir, "apiserver.key"),
		"--client-ca-file="+filepath.Join(pkiDir, "ca.crt"),
		"--service-account-key-file="+filepath.Join(pkiDir, "sa.key"),
		"--service-account-signing-key-file="+filepath.Join(pkiDir, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--authorization-mode=Node,RBAC", "--service-cluster-ip-range=10.0.0.0/24",
		// The native workload API, served as on a cluster that enables its gates: lockstep
		// schedules its PodGroups (example 12) as its own kinds.
		"--feature-gates=GenericWorkload=true,CompositePodGroup=true,TopologyAwareWorkloadScheduling=true",
		"--runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true",
		// Nothing runs behind the kubernetes Service of a loopback-only cluster.
		"--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"), "--profiling=false"); err != nil {
		return err
	}
	client, err := c.client()
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.alive("kube-apiserver"); err != nil {
			return false, err
		}
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}

	c.step("starting kube-controller-manager (Job controller, garbage collector, ...)")
	if err := c.start("kube-controller-manager", "kube-controller-manager",
		"--kubeconfig="+c.Kubeconfig(), "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(c.ports.ControllerManager),
		"--service-account-private-key-file="+filepath.Join(pkiDir, "sa.key"), "--root-ca-file="+filepath.Join(pkiDir, "ca.crt"),
		"--use-service-account-credentials=false", "--leader-elect=false", "--controllers=*,-nodeipam"); err != nil {
		return err
	}

	c.step("installing lockstep with its Helm chart (charts/lockstep: CRDs, RBAC, configuration; no replicas, the demo runs the binary on this machine)")
	if err := c.helm(ctx, "install", "lockstep", filepath.Join(c.Root, "charts", "lockstep"),
		"--namespace", lockstepNamespace, "--create-namespace", "--set", "replicas=0",
		"--set", "metrics.readerSubjects[0].kind=ServiceAccount,metrics.readerSubjects[0].name="+MetricsReader+
			",metrics.readerSubjects[0].namespace="+lockstepNamespace); err != nil {
		return err
	}
	if err := c.kubectl(ctx, "create", "serviceaccount", MetricsReader, "-n", lockstepNamespace); err != nil {
		return err
	}
	if err := c.kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"); err != nil {
		return err
	}
	if err := c.kubectl(ctx, "create", "namespace", Namespace); err != nil {
		return err
	}

	c.step("starting KWOK and creating 64 simulated nodes (2 zones × 2 blocks × 4 racks × 4 nodes)")
	kwokConfig, err := c.kwokConfig(ctx)
	if err != nil {
		return err
	}
	if err := c.start("kwok", "kwok", "--kubeconfig="+c.Kubeconfig(), "--config="+kwokConfig, "--manage-all-nodes=false",
		"--manage-nodes-with-label-selector=type=kwok", "--cidr=10.244.0.0/16", "--node-lease-duration-seconds=40"); err != nil {
		return err
	}
	if err := c.createNodes(ctx, client); err != nil {
		return err
	}

	c.step("starting lockstep-scheduler (with its workload controller) as ServiceAccount lockstep-system/lockstep-scheduler")
	if err := c.startLockstep(ctx, server, pkiDir); err != nil {
		return err
	}
	return c.waitHTTP(ctx, "lockstep-scheduler", fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.Lockstep), 2*time.Minute)
}

// startIntegrations installs the other projects' CRDs and starts their controllers.
func (c *Cluster) startIntegrations(ctx context.Context) error {
	client, err := c.client()
	if err != nil {
		return err
	}
	// Server-side: the JobSet CRD (800 kB) is too big for client-side apply's
	// last-applied-configuration annotation.
	c.step("installing the JobSet CRD and starting the JobSet controller (without webhooks: JobSets set what they would default)")
	jobSetCRD, err := c.jobSetCRD(ctx)
	if err != nil {
		return err
	}
	if err := c.kubectl(ctx, "apply", "--server-side", "-f", jobSetCRD); err != nil {
		return err
	}
	if err := c.waitJobSetsServed(ctx); err != nil {
		return err
	}
	if err := c.startJobSet(ctx); err != nil {
		return err
	}

	c.step("installing Kueue's CRDs and webhooks, and starting the Kueue controller manager (quotas and queues for the Jobs of example 09)")
	kueueCerts, err := c.installKueue(ctx, client)
	if err != nil {
		return err
	}
	if err := c.startKueue(ctx, kueueCerts); err != nil {
		return err
	}

	c.step("installing the LeaderWorkerSet and KubeRay CRDs, and starting their controllers (examples 10 and 11)")
	lwsCerts, lwsPaths, err := c.installLWS(ctx, client)
	if err != nil {
		return err
	}
	if err := c.installKubeRay(ctx); err != nil {
		return err
	}
	if err := c.waitServed(ctx, "leaderworkersets.leaderworkerset.x-k8s.io", "rayclusters.ray.io"); err != nil {
		return err
	}
	if err := c.startLWS(ctx, lwsCerts, lwsPaths); err != nil {
		return err
	}
	if err := c.startKubeRay(ctx); err != nil {
		return err
	}

	return nil
}

// startLockstep runs the scheduler with the manifests' configuration, authenticated with a
// token of the ServiceAccount manifests/rbac.yaml grants: the demo exercises that RBAC.
func (c *Cluster) startLockstep(ctx context.Context, server, pkiDir string) error {
	token, err := c.output(ctx, "create", "token", "lockstep-scheduler", "-n", "lockstep-system", "--duration=48h")
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.Dir, "lockstep.kubeconfig")
	if err := writeKubeconfig(kubeconfig, server, filepath.Join(pkiDir, "ca.crt"), &clientcmdapi.AuthInfo{Token: string(trim(token))}); err != nil {
		return err
	}
	// The configuration the chart installed, as its Deployment would mount it.
	data, err := c.output(ctx, "get", "configmap", "lockstep-scheduler-config", "-n", lockstepNamespace,
		`-o=jsonpath={.data.scheduler-config\.yaml}`)
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return err
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	path := filepath.Join(c.Dir, "lockstep-config.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return err
	}
	// /metrics is authorized as in a cluster, where the in-cluster config is used: requests
	// are authenticated (TokenReview) and authorized (SubjectAccessReview) by the apiserver,
	// as the ServiceAccount the scheduler runs as.
	return c.start("lockstep-scheduler", "lockstep-scheduler", "--config="+path,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(c.ports.Lockstep),
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--cert-dir="+filepath.Join(c.Dir, "lockstep-certs"))
}

// KwokVersion is the KWOK release the demo runs (as the Makefile builds it).
const KwokVersion = "v0.8.0"

// kwokConfig writes KWOK's configuration: the stages that make nodes Ready (and heartbeat
// through node Leases, so that the node lifecycle controller lifts their not-ready taint)
// and pods Running (and go away when deleted), taken from the KWOK module's own stage definitions. Pods are
// never completed: the demo's Jobs keep running.
func (c *Cluster) kwokConfig(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/kwok@"+KwokVersion).Output()
	if err != nil {
		return "", fmt.Errorf("locating the KWOK module: %w", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	var docs []string
	for _, stage := range []string{"node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
		"pod/fast/pod-ready.yaml", "pod/fast/pod-delete.yaml"} {
		data, err := os.ReadFile(filepath.Join(mod.Dir, "kustomize", "stage", stage))
		if err != nil {
			return "", err
		}
		docs = append(docs, string(data))
	}
	path := filepath.Join(c.Dir, "kwok.yaml")
	return path, os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o644)
}

// Node layout of the demo: 2 zones × 2 blocks × 4 racks × 4 nodes.
const (
	Zones, Blocks, Racks, Hosts = 2, 2, 4, 4
)

// createNodes creates the simulated nodes, labeled with their place, and waits until KWOK
// reports them Ready.
func (c *Cluster) createNodes(ctx context.Context, client kubernetes.Interface) error {
	capacity := v1.ResourceList{
		v1.ResourceCPU: mustQuantity("32"), v1.ResourceMemory: mustQuantity("256Gi"),
		v1.ResourcePods: mustQuantity("110"), "nvidia.com/gpu": mustQuantity("8"),
	}
	var names []string
	for z := 0; z < Zones; z++ {
		for b := 0; b < Blocks; b++ {
			for r := 0; r < Racks; r++ {
				for h := 0; h < Hosts; h++ {
					zone := fmt.Sprintf("z%d", z)
					block := fmt.Sprintf("%s-b%d", zone, b)
					rack := fmt.Sprintf("%s-r%d", block, r)
					name := fmt.Sprintf("%s-n%d", rack, h)
					node := &v1.Node{
						ObjectMeta: metav1.ObjectMeta{Name: name,
							Labels: map[string]string{
								"type": "kwok", "kubernetes.io/hostname": name,
								"topology.kubernetes.io/zone": zone, "topology.kubernetes.io/block": block, "topology.kubernetes.io/rack": rack,
							},
							Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
						},
						Status: v1.NodeStatus{Capacity: capacity, Allocatable: capacity},
					}
					if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
						return err
					}
					names = append(names, name)
				}
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range list.Items {
			if schedulable(&n) {
				ready++
			}
		}
		return ready == len(names), nil
	})
}

// schedulable reports whether a node is Ready and rid of the not-ready taint new nodes get.
func schedulable(n *v1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// client returns an admin client of the cluster.
func (c *Cluster) client() (*kubernetes.Clientset, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// Lockstep returns an admin client of lockstep's API.
func (c *Cluster) Lockstep() (versioned.Interface, error) {
	cfg, err := c.restConfig()
	if err != nil {
		return nil, err
	}
	cfg.ContentType = "application/json"
	return versioned.NewForConfig(cfg)
}

// Client returns an admin client of the cluster.
func (c *Cluster) Client() (kubernetes.Interface, error) { return c.client() }

func (c *Cluster) restConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.WarningHandler = cli.NewWarningHandler(c.Out)
	return cfg, nil
}

// kubectl runs bin/kubectl against the cluster, showing its output.
func (c *Cluster) kubectl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "kubectl"), c.kubectlArgs(args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	for _, line := range splitLines(string(out)) {
		fmt.Fprintf(c.Out, "    %s\n", line)
	}
	return nil
}

// helm runs bin/helm against the demo cluster.
func (c *Cluster) helm(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "helm"), append([]string{"--kubeconfig=" + c.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm %v: %w\n%s", args, err, out)
	}
	return nil
}

// MetricsURL is the scheduler's /metrics, readable with a token of the MetricsReader
// ServiceAccount (bound to the lockstep-metrics-reader ClusterRole by the chart).
func (c *Cluster) MetricsURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d/metrics", c.ports.Lockstep)
}

// output runs bin/kubectl and returns its standard output.
func (c *Cluster) output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "kubectl"), c.kubectlArgs(args...)...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl %v: %w", args, err)
	}
	return out, nil
}

func (c *Cluster) choosePorts() error {
	var ps [12]int
	for i := range ps {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		ps[i] = l.Addr().(*net.TCPAddr).Port
	}
	c.ports = ports{Etcd: ps[0], EtcdPeer: ps[1], APIServer: ps[2], ControllerManager: ps[3], Lockstep: ps[4],
		JobSetWebhook: ps[5], JobSetHealth: ps[6], KueueWebhook: ps[7], KueueHealth: ps[8], LWSWebhook: ps[9], LWSHealth: ps[10], KubeRayHealth: ps[11]}
	data, err := json.Marshal(c.ports)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, "ports.json"), data, 0o644)
}

func (c *Cluster) loadPorts() error {
	data, err := os.ReadFile(filepath.Join(c.Dir, "ports.json"))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, &c.ports)
}

func writeKubeconfig(path, server, ca string, user *clientcmdapi.AuthInfo) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["demo"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca}
	kc.AuthInfos["demo"] = user
	kc.Contexts["demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "demo", Namespace: Namespace}
	kc.CurrentContext = "demo"
	return clientcmd.WriteToFile(*kc, path)
}

// waitHTTP waits until url answers 200 (TLS certificates of the demo are self-signed), and
// fails at once if the process that should answer exited.
func (c *Cluster) waitHTTP(ctx context.Context, name, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if err := c.alive(name); err != nil {
			return false, err
		}
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
