package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/statefulset"

	"github.com/lockstep-sched/lockstep/internal/lwscontroller"
)

// The upstream LeaderWorkerSet controller manager (sigs.k8s.io/lws, the version pinned in
// tools/lws-kuberay/go.mod, a module of its own: LWS's Kubernetes and controller-runtime versions
// differ from the other controllers') runs as its own process, with its admission webhooks
// registered with the apiserver by URL on loopback (see internal/lwscontroller): its pod
// webhook labels the pods of the StatefulSets it makes, without which it makes no workers.

// LWS labels and annotations (sigs.k8s.io/lws/api/leaderworkerset/v1) the tests read.
const (
	LWSNameLabel          = "leaderworkerset.sigs.k8s.io/name"
	LWSGroupIndexLabel    = "leaderworkerset.sigs.k8s.io/group-index"
	LWSWorkerIndexLabel   = "leaderworkerset.sigs.k8s.io/worker-index"
	LWSGroupKeyLabel      = "leaderworkerset.sigs.k8s.io/group-key"
	LWSRevisionLabel      = "leaderworkerset.sigs.k8s.io/template-revision-hash"
	LWSSizeAnnotation     = "leaderworkerset.sigs.k8s.io/size"
	LWSLeaderAnnotation   = "leaderworkerset.sigs.k8s.io/leader-name"
	LWSReplicasAnnotation = "leaderworkerset.sigs.k8s.io/replicas"
)

// LeaderWorkerSetGVR is the LeaderWorkerSet resource, served once StartLWSController
// installed the CRD.
var LeaderWorkerSetGVR = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

var lwsBuild = toolBuild{module: "lws-kuberay"}

// lwsController builds bin/lws-controller once per test process and returns it with the
// directory of the sigs.k8s.io/lws module, where its CRD and webhook manifests are.
func lwsController(t *testing.T) (binary, moduleDir string) {
	t.Helper()
	bin, dirs := lwsBuild.get(t, "lws-controller", "sigs.k8s.io/lws/cmd", "sigs.k8s.io/lws")
	return bin, dirs[0]
}

// StartLWSController installs the LeaderWorkerSet CRD and LWS's mutating and validating
// webhook configurations (LeaderWorkerSets, and pods labelled leaderworkerset.sigs.k8s.io/name)
// and runs the upstream LWS controller manager against this test's apiserver until the test
// ends; it returns once its webhooks answer. It runs without leader election, metrics or its
// own certificate management; its webhooks (failurePolicy Fail, as upstream's) answer on a
// free loopback port with a certificate made here. LWS makes StatefulSets: its groups get
// pods only with a StatefulSet controller (StartStatefulSetController), and its
// RecreateGroupOnPodRestart policy needs the garbage collector (StartKubeControllers). Its log
// (zap level 2) is printed if the test failed.
func (e *Env) StartLWSController(t *testing.T) *Process {
	t.Helper()
	bin, moduleDir := lwsController(t)
	e.installCRD(t, lwscontroller.CRDPath(moduleDir), LeaderWorkerSetGVR)

	certs, err := lwscontroller.NewCerts()
	if err != nil {
		t.Fatal(err)
	}
	webhookPort, healthPort := freePort(t), freePort(t)
	baseURL := lwscontroller.WebhookBaseURL(webhookPort)
	mutating, validating, err := lwscontroller.WebhookConfigurations(moduleDir, baseURL, certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := lwscontroller.WebhookPaths(mutating, validating)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admission := e.Client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfgPath, err := lwscontroller.WriteConfig(dir, certs, webhookPort, healthPort)
	if err != nil {
		t.Fatal(err)
	}
	p := run(t, "lws-controller", dir, bin, "--config="+cfgPath, "--kubeconfig="+e.Kubeconfig, "--zap-log-level=2")
	waitReady(t, p, lwscontroller.ReadyURL(healthPort))
	waitWebhooks(t, p, baseURL, certs.CA, paths)
	return p
}

// waitWebhooks waits up to a minute until the webhook server at baseURL, trusted through
// caBundle, serves every path (answers anything but 404), and fails the test at once if the
// process exits.
func waitWebhooks(t *testing.T, p *Process, baseURL string, caBundle []byte, paths []string) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		t.Fatal("no certificate in the CA bundle")
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	Eventually(t, 60*time.Second, p.Name+" webhooks served", func() (bool, string) {
		if exited, err := p.Exited(); exited {
			t.Fatalf("%s exited: %v\n%s", p.Name, err, p.Tail(40))
		}
		var missing []string
		for _, path := range paths {
			resp, err := client.Post(baseURL+path, "application/json", strings.NewReader("{}"))
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				missing = append(missing, path)
			}
		}
		return len(missing) == 0, "not served: " + strings.Join(missing, ", ")
	})
}

// StartStatefulSetController runs the upstream StatefulSet controller in-process, as
// kube-controller-manager would, until the test ends: LWS (and anything else that makes
// StatefulSets) gets pods only through it. StartKubeControllers does not run it.
func (e *Env) StartStatefulSetController(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	t.Cleanup(cancel)
	cfg := rest.CopyConfig(e.Config)
	informerSet := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "statefulset-informers")), 0)
	sc := statefulset.NewStatefulSetController(ctx,
		informerSet.Core().V1().Pods(), informerSet.Apps().V1().StatefulSets(),
		informerSet.Core().V1().PersistentVolumeClaims(), informerSet.Apps().V1().ControllerRevisions(),
		kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "statefulset-controller")))
	informerSet.Start(ctx.Done())
	go sc.Run(ctx, 2)
	informerSet.WaitForCacheSync(ctx.Done())
}
