// Package e2e runs the local demo cluster end to end, as `make demo` does, in a temporary
// work directory: it needs the binaries `make demo-binaries` builds into bin/.
package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/hack/demo/cluster"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The demo comes up, every example gang ends bound all-or-nothing in its domain, the
// too-big gang waits with a condition that explains why, the JobSet gets its tree and binds
// whole in one rack, Kueue admits the queued Jobs its quota holds and lockstep binds each
// whole in one rack of Kueue's zone, each LeaderWorkerSet replica and the RayCluster bind
// whole in one rack, the manifests install with kubectl apply -k, a second release of the
// chart installs and uninstalls next to the demo's, and the demo goes down leaving no process
// behind.
func TestDemo(t *testing.T) {
	root := testenv.RepoRoot()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl", "kwok", "jobset-controller", "kueue-controller-manager", "lws-controller", "kuberay-operator", "lockstep-scheduler", "kubectl-lockstep"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil {
			t.Fatalf("bin/%s missing: run make demo-binaries (make demo-test does)", b)
		}
	}
	var out bytes.Buffer
	c := cluster.New(root, &out)
	c.Dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	started := false
	t.Cleanup(func() {
		if started {
			pids := readPids(t, c.Dir)
			discovery := discoveryCacheOf(t, c)
			if err := c.Down(); err != nil {
				t.Errorf("demo down: %v", err)
			}
			if _, err := os.Stat(discovery); err == nil {
				t.Errorf("demo down left kubectl's cache of the demo's API server, %s", discovery)
			}
			for name, pid := range pids {
				if running(pid) {
					t.Errorf("%s (pid %d) still running after down", name, pid)
				}
			}
		}
		t.Logf("demo output:\n%s", out.String())
	})
	started = true
	if err := c.Up(ctx); err != nil {
		t.Fatalf("demo up: %v", err)
	}
	// Two stages: the examples that need no other controller are placed and reported before
	// the other projects' controllers start.
	first, jobSet := strings.Index(out.String(), "Gangs in namespace"), strings.Index(out.String(), "installing the JobSet CRD")
	if first < 0 || jobSet < 0 || first > jobSet || !strings.Contains(out.String()[first:jobSet], "Scheduled: ") {
		t.Errorf("the first examples were not placed and reported before the JobSet controller started (report at %d, JobSet at %d)", first, jobSet)
	}
	// How to use the cluster is said as soon as it is up, before the second stage (which may
	// build for minutes on a first run).
	if use := strings.Index(out.String(), "export KUBECONFIG="+c.Kubeconfig()); use < 0 || use > jobSet {
		t.Errorf("the kubeconfig line comes at %d, after the second stage began (%d)", use, jobSet)
	}
	roots, err := c.Gangs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, pending := cluster.Settled(roots); !ok {
		t.Fatalf("examples not settled: %s", pending)
	}
	checkREADMEOutput(t, root, out.String())

	byName := map[string]*tree.Group{}
	var walk func(g *tree.Group)
	walk = func(g *tree.Group) {
		byName[g.Name] = g
		for _, ch := range g.Children {
			walk(ch)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	for _, name := range []string{"pretrain", "pretrain-shard-0", "pretrain-shard-1", "serving", "sweep", "whale", "llm", "mpi", "native-train"} {
		if byName[name] == nil {
			t.Fatalf("example group %s missing; have %v", name, keys(byName))
		}
	}
	var finetune *tree.Group
	for name, g := range byName {
		if strings.HasPrefix(name, "finetune-") {
			finetune = g
		}
	}
	if finetune == nil {
		t.Fatal("the Job controller created no PodGroup for Job finetune")
	}

	// Every gang is all-or-nothing, and those scheduled sit in their domains.
	for name, g := range byName {
		if g.Pods != nil && g.Pods.Bound != 0 && g.Pods.Bound != g.Pods.Exist {
			t.Errorf("%s partially bound: %d of %d", name, g.Pods.Bound, g.Pods.Exist)
		}
	}
	level := map[string]int{"topology.kubernetes.io/zone": 0, "topology.kubernetes.io/block": 1, "topology.kubernetes.io/rack": 2}
	if g := byName["native-train"]; g.API != "scheduling.k8s.io" || g.Pods == nil || g.Pods.Exist != 4 {
		t.Errorf("native-train: %+v, want the native PodGroup with its Job's 4 pods", g)
	}
	for _, g := range []*tree.Group{byName["pretrain"], byName["pretrain-shard-0"], byName["pretrain-shard-1"], byName["serving"], byName["sweep"], byName["llm"], byName["mpi"], finetune, byName["native-train"]} {
		if g.Condition == nil || g.Condition.Status != "True" {
			t.Errorf("%s not scheduled: %+v", g.Name, g.Condition)
			continue
		}
		for _, key := range g.Topology {
			if strings.HasPrefix(key, "~") {
				continue
			}
			if d := domains(g, level[key]); len(d) != 1 {
				t.Errorf("%s requires one %s, its pods are in %v", g.Name, key, d)
			}
		}
	}
	// One 8-GPU worker per node, one MPI worker per node (anti-affinity).
	for _, name := range []string{"llm", "mpi"} {
		if nodes := domains(byName[name], 3); len(nodes) != 4 {
			t.Errorf("%s: 4 workers on %d nodes %v, want one per node", name, len(nodes), nodes)
		}
	}
	if racks := domains(byName["sweep"], 2); len(racks) > 3 {
		t.Errorf("sweep (24 pods, 8 fit a rack, rack preferred) spans %d racks: %v", len(racks), racks)
	}
	whale := byName["whale"]
	want := "cannot fit: PodGroup whale: no rack has room for 20 pods × 32 cpu; the roomiest rack could take 4"
	if whale.Pods.Bound != 0 || whale.Condition == nil || whale.Condition.Reason != "Unschedulable" || whale.Condition.Message != want {
		t.Errorf("whale: %d bound, condition %+v; want none bound and %q", whale.Pods.Bound, whale.Condition, want)
	}

	checkJobSet(ctx, t, c)
	checkKueue(ctx, t, c)
	checkServing(ctx, t, c)
	// Every kind the docs' kubectl get and describe commands name, and those make demo
	// prints, is served, unambiguously (docs_test.go).
	t.Run("DocsResources", func(t *testing.T) { checkDocsResources(t, c, out.String()) })

	// The plugin, found by kubectl on PATH, shows the trees.
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig(),
			"PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, got)
		}
		return string(got)
	}
	view := kubectl("lockstep", "get", "-A")
	if !strings.Contains(view, "CompositePodGroup demo/pretrain") || !strings.Contains(view, "z0 / ") {
		t.Errorf("kubectl lockstep get -A:\n%s", view)
	}
	// Neither the plugin nor the demo logs the API server's warnings about the native
	// groups' version, read on every call (they were a klog line each, 95 in one demo).
	// (kubectl apply shows it once for the native example it applies, as kubectl does.)
	if strings.Contains(view, "deprecated") || strings.Contains(view, "warnings.go") {
		t.Errorf("kubectl lockstep get -A shows the API server's deprecation warnings:\n%s", view)
	}
	if strings.Contains(out.String(), "warnings.go") {
		t.Errorf("the demo logs the API server's warnings:\n%s", out.String())
	}
	// explain agrees with the planner on the whale: the roomiest rack takes 4 of its 20 pods.
	if why := kubectl("lockstep", "explain", "whale", "-n", "demo"); !strings.Contains(why, want) || !strings.Contains(why, "takes 4 of 20") ||
		!strings.Contains(why, "What would make it fit:") {
		t.Errorf("kubectl lockstep explain whale:\n%s\nwant the condition, a rack taking 4 of 20 and what would make it fit", why)
	}
	checkMetrics(ctx, t, c, strings.TrimSpace(kubectl("create", "token", cluster.MetricsReader, "-n", "lockstep-system")))
	// The manifests install with one apply; RBAC has no wildcard.
	// (Server-side, checked by the apiserver: the demo installed the same objects with the
	// chart, whose field manager a dry run may take fields from.)
	kubectl("apply", "-k", filepath.Join(root, "manifests"), "--server-side", "--force-conflicts", "--dry-run=server")
	rendered := kubectl("kustomize", filepath.Join(root, "manifests"))
	roles := 0
	for _, doc := range strings.Split(rendered, "\n---\n") {
		var role rbacv1.ClusterRole // Roles have the same shape
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" && role.Kind != "Role" {
			continue
		}
		roles++
		for _, r := range role.Rules {
			for _, v := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
				if slices.Contains(v, "*") {
					t.Errorf("%s %s has a wildcard rule: %+v", role.Kind, role.Name, r)
				}
			}
		}
	}
	if roles < 2 {
		t.Errorf("found %d roles in the manifests", roles)
	}
	checkSecondRelease(ctx, t, c)
}

// checkSecondRelease installs the chart next to the demo's release as docs/install.md says:
// a release of another name, in another namespace, with a schedulerName of its own, whose
// pods the demo's lockstep places (the demo runs no default scheduler) and KWOK runs. It
// shares no cluster-scoped object with the demo's release, and uninstalling it leaves the
// demo's scheduler its RBAC and the CRDs.
func checkSecondRelease(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	const release, ns = "lockstep-try", "lockstep-try"
	helm := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "helm"), append([]string{"--kubeconfig=" + c.Kubeconfig()}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
	}
	helm("install", release, filepath.Join(c.Root, "charts", "lockstep"), "--namespace", ns, "--create-namespace",
		"--set", "config.schedulerName=lockstep-try", "--set", "podSchedulerName=lockstep-scheduler")
	kube, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	var pods []v1.Pod
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=lockstep-try-lockstep-scheduler"})
		if err != nil {
			return false, nil
		}
		pods = list.Items
		running := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" && p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		return len(pods) == 2 && running == 2, nil
	}); err != nil {
		for _, p := range pods {
			t.Logf("pod %s: node %q, phase %s, conditions %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
		t.Fatalf("release %s: want its 2 replicas placed and running, have %d pods", release, len(pods))
	}
	for _, p := range pods {
		t.Logf("release %s: pod %s placed on %s by the demo's lockstep, %s", release, p.Name, p.Spec.NodeName, p.Status.Phase)
	}
	rbac := kube.RbacV1()
	for _, name := range []string{"lockstep-try-lockstep-scheduler", "lockstep-try-lockstep-metrics-reader"} {
		if _, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("release %s's ClusterRole %s: %v", release, name, err)
		}
	}
	helm("uninstall", release, "--namespace", ns, "--wait")
	// The demo's release keeps what its scheduler runs as and reads with.
	for _, name := range []string{"lockstep-scheduler", "lockstep-metrics-reader"} {
		if _, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("after uninstalling %s, the demo's ClusterRole %s: %v", release, name, err)
		}
		if _, err := rbac.ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("after uninstalling %s, the demo's ClusterRoleBinding %s: %v", release, name, err)
		}
	}
	if _, err := rbac.ClusterRoles().Get(ctx, "lockstep-try-lockstep-scheduler", metav1.GetOptions{}); err == nil {
		t.Errorf("release %s's ClusterRole outlived it", release)
	}
	client, err := c.Lockstep()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.SchedulingV1alpha1().PodGroups(cluster.Namespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("after uninstalling %s, lockstep's API: %v", release, err)
	}
}

// checkMetrics reads /metrics as a cluster's Prometheus would: with the token of a
// ServiceAccount the chart bound to the lockstep-metrics-reader ClusterRole (anonymous
// requests are refused), and finds there every metric the shipped alerts and dashboard query.
func checkMetrics(ctx context.Context, t *testing.T, c *cluster.Cluster, token string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.MetricsURL(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get(""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("anonymous GET /metrics: %d, want 401 or 403", code)
	}
	code, metrics := get(token)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics as the metrics reader: %d\n%s", code, metrics)
	}
	if v, ok := testenv.Sample(metrics, "lockstep_leader"); !ok || v != 1 {
		t.Errorf("lockstep_leader %v (%v), want 1", v, ok)
	}
	var queried []string
	for _, f := range []string{"alerts.yaml", "grafana-dashboard.json"} {
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "manifests", "monitoring", f))
		if err != nil {
			t.Fatal(err)
		}
		queried = append(queried, metricName.FindAllString(string(data), -1)...)
	}
	if len(queried) < 10 {
		t.Fatalf("found %d metric names in the alerts and dashboard", len(queried))
	}
	for _, name := range queried {
		family := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if !strings.Contains(metrics, "# TYPE "+family+" ") {
			t.Errorf("%s (queried by the shipped alerts or dashboard) is not on the scheduler's /metrics", family)
		}
	}
	// The metrics reference names exactly the lockstep_ metrics the scheduler serves, with
	// their types.
	ref, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, m := range documentedMetric.FindAllStringSubmatch(string(ref), -1) {
		documented[m[1]] = m[2]
	}
	served := map[string]string{}
	for _, m := range servedMetric.FindAllStringSubmatch(metrics, -1) {
		served[m[1]] = m[2]
	}
	if len(served) < 20 || !reflect.DeepEqual(documented, served) {
		t.Errorf("docs/reference/metrics.md documents %v\nthe scheduler serves %v", documented, served)
	}
}

var (
	// documentedMetric is a row of the metrics reference: name and type.
	documentedMetric = regexp.MustCompile("(?m)^\\| `(lockstep_[a-z_]+)` \\| ([a-z]+) \\|")
	// servedMetric is a metric's TYPE line on /metrics.
	servedMetric = regexp.MustCompile(`(?m)^# TYPE (lockstep_[a-z_]+) ([a-z]+)$`)
)

// metricName finds the metrics a PromQL expression names.
var metricName = regexp.MustCompile(`\b(?:lockstep|scheduler)_[a-z_]*[a-z]\b`)

// checkJobSet checks the JobSet example (manifests/examples/08-jobset.yaml): the JobSet
// controller runs its 3 Jobs (leader × 1 pod, workers × 2 pods each), lockstep's workload
// controller gives the JobSet a tree — a root requiring a rack, a CompositePodGroup per
// ReplicatedJob, a PodGroup per child Job — and all 5 pods are bound in one rack. Its pods
// join their PodGroups through their Job, which the tree view does not follow for a JobSet's
// Jobs, so pods and Jobs are read from the API.
func checkJobSet(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	const name = "jobset-training"
	kube, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	ofJobSet := metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=" + name}
	var pods []v1.Pod
	bound := 0
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(cluster.Namespace).List(ctx, ofJobSet)
		if err != nil {
			return false, nil
		}
		pods, bound = list.Items, 0
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return len(pods) == 5 && bound == 5, nil
	}); err != nil {
		t.Fatalf("JobSet %s: %d pods, %d bound; want 5, all bound", name, len(pods), bound)
	}
	racks := map[string]bool{}
	for _, p := range pods {
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		racks[node.Labels["topology.kubernetes.io/rack"]] = true
	}
	if len(racks) != 1 {
		t.Errorf("JobSet %s requires one rack, its pods are in %v", name, keys(racks))
	}

	roots, err := c.Gangs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var root *tree.Group
	for _, r := range roots {
		if r.Kind == "CompositePodGroup" && strings.HasPrefix(r.Name, name+"-") {
			root = r
		}
	}
	if root == nil {
		t.Fatalf("no CompositePodGroup for JobSet %s", name)
	}
	if root.Min != 2 || !slices.Equal(root.Topology, []string{"topology.kubernetes.io/rack"}) || len(root.Children) != 2 ||
		root.Condition == nil || root.Condition.Status != "True" {
		t.Fatalf("JobSet root %s: min %d, topology %v, %d children, condition %+v; want 2 ReplicatedJobs in one rack, scheduled",
			root.Name, root.Min, root.Topology, len(root.Children), root.Condition)
	}
	// Each child Job has its PodGroup (named after the Job), under its ReplicatedJob's group.
	jobs, err := kube.BatchV1().Jobs(cluster.Namespace).List(ctx, ofJobSet)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 3 {
		t.Fatalf("JobSet %s has %d Jobs, want 3", name, len(jobs.Items))
	}
	for _, job := range jobs.Items {
		rjob := job.Labels["jobset.sigs.k8s.io/replicatedjob-name"]
		var found []*tree.Group
		for _, mid := range root.Children {
			if mid.Kind != "CompositePodGroup" || !strings.HasPrefix(mid.Name, name+"-"+rjob+"-") {
				continue
			}
			for _, pg := range mid.Children {
				if pg.Kind == "PodGroup" && strings.HasPrefix(pg.Name, job.Name+"-") {
					found = append(found, pg)
				}
			}
		}
		if len(found) != 1 {
			t.Errorf("Job %s: %d PodGroups under ReplicatedJob %s's group, want 1", job.Name, len(found), rjob)
			continue
		}
		if pg := found[0]; pg.Min != *job.Spec.Parallelism || pg.Condition == nil || pg.Condition.Status != "True" {
			t.Errorf("PodGroup %s of Job %s: min %d, condition %+v; want min %d, scheduled", pg.Name, job.Name, pg.Min, pg.Condition, *job.Spec.Parallelism)
		}
	}
}

// domains returns the distinct label values at level of the nodes of g's subtree.
func domains(g *tree.Group, level int) []string {
	set := map[string]bool{}
	var walk func(g *tree.Group)
	walk = func(g *tree.Group) {
		for _, m := range g.Members {
			if len(m.Path) > level {
				set[m.Path[level]] = true
			}
		}
		for _, c := range g.Children {
			walk(c)
		}
	}
	walk(g)
	return keys(set)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// running reports whether a process runs: it exists and is not a zombie (the test started
// the demo's processes, so their corpses stay its children until it exits).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// readPids returns the pids the demo recorded.
func readPids(t *testing.T, dir string) map[string]int {
	out := map[string]int{}
	entries, _ := os.ReadDir(filepath.Join(dir, "pids"))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, "pids", e.Name()))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			out[e.Name()] = pid
		}
	}
	return out
}

// discoveryCacheOf is where kubectl, run by a user with the demo's kubeconfig, caches the
// demo's API server: ~/.kube/cache/discovery/127.0.0.1_PORT. It runs such a kubectl, so that
// the entry exists for make demo-down to remove.
func discoveryCacheOf(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(c.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	server := regexp.MustCompile(`server: https://127\.0\.0\.1:(\d+)`).FindStringSubmatch(string(data))
	if server == nil {
		t.Fatalf("no server in %s", c.Kubeconfig())
	}
	cmd := exec.Command(filepath.Join(c.Bin, "kubectl"), "--kubeconfig="+c.Kubeconfig(), "api-resources")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("kubectl api-resources: %v\n%s", err, out)
	}
	dir := filepath.Join(home, ".kube", "cache", "discovery", "127.0.0.1_"+server[1])
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("kubectl cached nothing of the demo's API server: %v", err)
	}
	return dir
}

// checkREADMEOutput: the groups the README shows make demo printing are printed so, up to
// their condition's words (which name racks the run chose): kind, name, policy, topology
// and pod counts. A change of the report's format fails here, not in a reader's terminal.
func checkREADMEOutput(t *testing.T, root, report string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(data), "```\nCompositePodGroup demo/")
	if start < 0 {
		t.Fatal("README.md shows no make demo output")
	}
	block := string(data)[start+4:]
	block = block[:strings.Index(block, "```")]
	checked := 0
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimLeft(line, "├└│─ ")
		if !strings.HasPrefix(line, "PodGroup ") && !strings.HasPrefix(line, "CompositePodGroup ") {
			continue
		}
		head := line
		for _, status := range []string{"  Scheduled: ", "  Unschedulable: "} {
			if i := strings.Index(head, status); i >= 0 {
				head = head[:i+len(status)]
			}
		}
		if !strings.Contains(report, head) {
			t.Errorf("README.md shows %q; make demo printed no such line:\n%s", head, report)
		}
		checked++
	}
	if checked < 3 {
		t.Errorf("checked %d of the README's group lines; want at least 3", checked)
	}
}
