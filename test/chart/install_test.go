package chart

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/test/integration/framework"
)

// TestChartRefusesClashingReleases installs the chart into a real kube-apiserver (with etcd,
// as the integration tests run it) as docs/install.md says it behaves:
//   - a second release whose profile has the schedulerName the first one serves is refused,
//     naming the first and what to do, and makes nothing;
//   - with a schedulerName of its own it installs next to the first, and both upgrade (their
//     own objects are no clash);
//   - a release of the first's name in another namespace, whose cluster-scoped objects (and
//     RoleBinding in kube-system, dashboard in Grafana's namespace) would be the first's, is
//     refused, naming each of them; with a fullnameOverride of its own it installs;
//   - helm install --dry-run=server refuses what install refuses; helm template, which reads
//     no cluster, refuses nothing.
func TestChartRefusesClashingReleases(t *testing.T) {
	kubeconfig, kube := startCluster(t)
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Every object a release makes outside its namespace that needs no other project's CRDs:
	// its ClusterRoles and ClusterRoleBindings, its RoleBinding in kube-system, the dashboard.
	options := []string{
		"--set", "metrics.dashboard.enabled=true,metrics.dashboard.namespace=monitoring",
		"--set", "metrics.readerSubjects[0].kind=ServiceAccount,metrics.readerSubjects[0].name=prometheus,metrics.readerSubjects[0].namespace=monitoring",
	}
	run := func(args ...string) (string, error) {
		t.Helper()
		helm(t, "version") // builds it if missing
		cmd := exec.Command(filepath.Join(root(t), "bin", "helm"), append(args, "--kubeconfig", kubeconfig)...)
		cmd.Dir = root(t)
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
			"HELM_DATA_HOME="+filepath.Join(home, "data"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	install := func(release, ns string, args ...string) (string, error) {
		t.Helper()
		return run(append(append([]string{"install", release, "charts/lockstep", "--namespace", ns, "--create-namespace"}, options...), args...)...)
	}
	succeeds := func(what string, out string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
	}
	refused := func(what string, out string, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s succeeded, want it refused:\n%s", what, out)
			return
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: refused without saying %q:\n%s", what, w, out)
			}
		}
	}

	out, err := install("lockstep", namespace)
	succeeds("the first release", out, err)

	// Another release with the first's schedulerName.
	out, err = install("second", "team")
	t.Logf("helm install second --namespace team:\n%s", out)
	refused("a second release serving lockstep-scheduler", out, err,
		"refusing release second in namespace team",
		"config.schedulerName lockstep-scheduler is already served by the scheduler configuration in ConfigMap lockstep-system/lockstep-scheduler-config",
		"release lockstep in namespace lockstep-system",
		"--set config.schedulerName=NAME")
	if strings.Contains(out, "objects this release would make") {
		t.Errorf("release second has names of its own, yet is told they are taken:\n%s", out)
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, "second-lockstep-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused release made its ClusterRole (%v)", err)
	}
	if out, err := run("status", "second", "--namespace", "team"); err == nil {
		t.Errorf("the refused release was recorded:\n%s", out)
	}
	out, err = run(append([]string{"install", "second", "charts/lockstep", "--namespace", "team", "--dry-run=server"}, options...)...)
	refused("helm install --dry-run=server of it", out, err, "config.schedulerName lockstep-scheduler is already served")
	out, err = run(append([]string{"template", "second", "charts/lockstep", "--namespace", "team"}, options...)...)
	succeeds("helm template of it (no lookup: it reads no cluster)", out, err)

	// With a schedulerName of its own it installs; both releases upgrade.
	out, err = install("second", "team", "--set", "config.schedulerName=second")
	succeeds("a second release with its own schedulerName", out, err)
	out, err = run("upgrade", "lockstep", "charts/lockstep", "--namespace", namespace, "--reuse-values", "--set", "replicas=1")
	succeeds("upgrading the first release", out, err)
	out, err = run("upgrade", "second", "charts/lockstep", "--namespace", "team", "--reuse-values", "--set", "replicas=1")
	succeeds("upgrading the second release", out, err)

	// The first's name in another namespace, with a schedulerName of its own: every object the
	// first made outside its namespace would be the same.
	var shared []string
	for _, o := range objects(t, helm(t, append([]string{"template", "lockstep", "charts/lockstep", "--namespace", namespace}, options...)...)) {
		if o.GetNamespace() == "" {
			shared = append(shared, o.GetKind()+" "+o.GetName())
		} else if o.GetNamespace() != namespace {
			shared = append(shared, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
		}
	}
	if len(shared) < 6 {
		t.Fatalf("release lockstep makes %v outside its namespace, want its ClusterRoles, ClusterRoleBindings, kube-system RoleBinding and dashboard", shared)
	}
	want := []string{"refusing release lockstep in namespace other", "Name this release differently, or set fullnameOverride"}
	for _, s := range shared {
		want = append(want, s+" (release lockstep in namespace lockstep-system)")
	}
	out, err = install("lockstep", "other", "--set", "config.schedulerName=other")
	t.Logf("helm install lockstep --namespace other:\n%s", out)
	refused("release lockstep in another namespace", out, err, want...)
	if strings.Contains(out, "config.schedulerName other is already served") {
		t.Errorf("schedulerName other is served by none, yet is refused:\n%s", out)
	}
	role, err := kube.RbacV1().ClusterRoles().Get(ctx, "lockstep-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := role.Annotations["meta.helm.sh/release-namespace"]; got != namespace {
		t.Errorf("ClusterRole lockstep-scheduler now belongs to the release in %q, want %q", got, namespace)
	}
	// Both clashes at once: each is named.
	out, err = install("lockstep", "other")
	refused("release lockstep in another namespace serving lockstep-scheduler", out, err,
		"config.schedulerName lockstep-scheduler is already served", "ClusterRole lockstep-scheduler (release lockstep in namespace lockstep-system)")
	// With names of its own it installs.
	out, err = install("lockstep", "other", "--set", "config.schedulerName=other,fullnameOverride=other-lockstep-scheduler")
	succeeds("release lockstep in another namespace with a fullnameOverride and schedulerName of its own", out, err)
}

// startCluster runs etcd (bin/etcd, built when missing) and an in-process kube-apiserver for
// the test, and returns a kubeconfig and a client for it as its superuser. Helm reaches it
// through a proxy that answers /version as a v1.37 cluster does: go test builds the apiserver
// without make's -ldflags, so it calls itself v0.0.0-master+$Format:%H$, which the chart's
// kubeVersion (>=1.37.0-0) refuses.
func startCluster(t *testing.T) (string, kubernetes.Interface) {
	t.Helper()
	bin := filepath.Join(root(t), "bin")
	if _, err := exec.LookPath("etcd"); err != nil {
		if _, err := os.Stat(filepath.Join(bin, "etcd")); err != nil {
			build := exec.Command("go", "build", "-o", filepath.Join(bin, "etcd"), "go.etcd.io/etcd/server/v3")
			build.Dir = root(t)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building etcd: %v\n%s", err, out)
			}
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	framework.StartEtcd(logr.Discard(), t, true)
	server := kubeapiservertesting.StartTestServerOrDie(t, nil, []string{"--endpoint-reconciler-type=none"}, framework.SharedEtcd())
	t.Cleanup(server.TearDownFn)
	cfg := rest.CopyConfig(server.ClientConfig)
	client := kubernetes.NewForConfigOrDie(cfg)
	// The chart makes a RoleBinding in kube-system, which the apiserver creates moments after
	// it is ready.
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("no namespace kube-system: %v", err)
	}

	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	kube := kubeVersion(t)
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("/version", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(kube)
	})
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := clientcmdapi.NewConfig()
	config.Clusters["test"] = &clientcmdapi.Cluster{Server: front.URL}
	config.AuthInfos["test"] = &clientcmdapi.AuthInfo{}
	config.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	config.CurrentContext = "test"
	if err := clientcmd.WriteToFile(*config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, client
}

// kubeVersion is the /version of a cluster of the Kubernetes lockstep is built from (go.mod's
// k8s.io/kubernetes).
func kubeVersion(t *testing.T) version.Info {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes v(\d+)\.(\d+)\.(\d+)\s*$`).FindStringSubmatch(string(data))
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/kubernetes")
	}
	return version.Info{Major: m[1], Minor: m[2], GitVersion: "v" + m[1] + "." + m[2] + "." + m[3], Platform: "linux/amd64"}
}
