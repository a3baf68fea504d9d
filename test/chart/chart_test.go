// Package chart checks charts/lockstep with the Helm CLI built from tools/helm: it lints,
// it renders with the defaults the same objects as `kubectl apply -k manifests/` (so the two
// installs cannot drift), and its values do what values.yaml says.
package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	_ "github.com/lockstep-sched/lockstep/pkg/apis/config/scheme" // lockstep's argument types
)

const namespace = "lockstep-system"

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// helm runs bin/helm, building it from tools/helm first if it is missing (make builds it
// beforehand; go test alone works too).
func helm(t *testing.T, args ...string) string {
	t.Helper()
	dir := root(t)
	bin := filepath.Join(dir, "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		build := exec.Command("go", "build", "-o", bin, "helm.sh/helm/v4/cmd/helm")
		build.Dir = filepath.Join(dir, "tools", "helm")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building helm from tools/helm: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// helmFails runs bin/helm expecting it to fail, and returns what it printed.
func helmFails(t *testing.T, args ...string) string {
	t.Helper()
	helm(t, "version") // builds it if missing
	cmd := exec.Command(filepath.Join(root(t), "bin", "helm"), args...)
	cmd.Dir = root(t)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("helm %s succeeded, want it to fail:\n%s", strings.Join(args, " "), out)
	}
	return string(out)
}

// allOptions turns on every optional object and changes every value a template reads.
var allOptions = []string{
	"--set", "image.repository=registry.example.com/lockstep-scheduler,image.tag=v9.8.7",
	"--set", "workloadController.enabled=false",
	"--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true",
	"--set", "metrics.readerSubjects[0].kind=ServiceAccount,metrics.readerSubjects[0].name=prometheus,metrics.readerSubjects[0].namespace=monitoring",
	"--set", "config.levels={topology.kubernetes.io/zone,kubernetes.io/hostname}",
	"--set", "config.gang.backoffSeconds=3,config.bind.maxBindsInFlight=8",
	"--set", "podDisruptionBudget.enabled=false,spreadReplicas=false,replicas=3",
	"--set", "extraArgs={-v=4}",
	"--set", "podSchedulerName=other-scheduler",
	"--set-json", `config.addedAffinity={"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["gpu"]}]}]}}`,
}

func TestChartLints(t *testing.T) {
	helm(t, "lint", "charts/lockstep", "--strict", "--namespace", namespace)
	helm(t, append([]string{"lint", "charts/lockstep", "--strict", "--namespace", namespace}, allOptions...)...)
}

// TestChartRendersTheManifests: with the default values the chart's objects are
// manifests/' objects, but for Helm's own labels, the config checksum on the pod template,
// the ConfigMap generator's name suffix, and the scheduler configuration's comments (it is
// compared as data).
func TestChartRendersTheManifests(t *testing.T) {
	chart := objects(t, helm(t, "template", "lockstep", "charts/lockstep", "--namespace", namespace, "--include-crds"))
	manifests := kustomize(t)
	delete(manifests, "Namespace//"+namespace) // helm install --create-namespace makes it
	chart, manifests = normalized(t, chart), normalized(t, manifests)
	if diff := cmp.Diff(keys(manifests), keys(chart)); diff != "" {
		t.Fatalf("objects differ (-manifests +chart):\n%s", diff)
	}
	for k, want := range manifests {
		if diff := cmp.Diff(want.Object, chart[k].Object); diff != "" {
			t.Errorf("%s differs (-manifests +chart):\n%s", k, diff)
		}
	}
}

// TestChartValues: each value changes what values.yaml says it changes.
func TestChartValues(t *testing.T) {
	objs := objects(t, helm(t, append([]string{"template", "lockstep", "charts/lockstep", "--namespace", "sched"}, allOptions...)...))
	deploy := objs["Deployment/sched/lockstep-scheduler"]
	if deploy == nil {
		t.Fatalf("no Deployment in %v", keys(objs))
	}
	container := nested(t, deploy, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	if got := container["image"]; got != "registry.example.com/lockstep-scheduler:v9.8.7" {
		t.Errorf("image %v", got)
	}
	if got := fmt.Sprint(container["command"]); !strings.Contains(got, "--workload-controller=false") || !strings.Contains(got, "-v=4") {
		t.Errorf("command %s, want --workload-controller=false and -v=4", got)
	}
	if got := nested(t, deploy, "spec", "template", "spec", "schedulerName"); got != "other-scheduler" {
		t.Errorf("the pods' schedulerName %v, want podSchedulerName", got)
	}
	if got := nested(t, deploy, "spec", "replicas"); fmt.Sprint(got) != "3" {
		t.Errorf("replicas %v", got)
	}
	if got, _, _ := unstructured.NestedFieldNoCopy(deploy.Object, "spec", "template", "spec", "topologySpreadConstraints"); got != nil {
		t.Errorf("spreadReplicas=false still spreads: %v", got)
	}
	for _, k := range []string{"ServiceMonitor/sched/lockstep-scheduler", "ClusterRoleBinding//lockstep-metrics-reader"} {
		if objs[k] == nil {
			t.Errorf("%s not rendered", k)
		}
	}
	if objs["PodDisruptionBudget/sched/lockstep-scheduler"] != nil {
		t.Errorf("podDisruptionBudget.enabled=false still renders one")
	}
	if subj := fmt.Sprint(nested(t, objs["ClusterRoleBinding//lockstep-metrics-reader"], "subjects")); !strings.Contains(subj, "prometheus") {
		t.Errorf("metrics reader bound to %s", subj)
	}
	cfg := schedulerConfig(t, objs["ConfigMap/sched/lockstep-scheduler-config"])
	if got := fmt.Sprint(nested(t, cfg, "leaderElection", "resourceNamespace")); got != "sched" {
		t.Errorf("lease in %s, want the release's namespace", got)
	}
	args := map[string]any{}
	for _, pc := range nested(t, cfg, "profiles").([]any)[0].(map[string]any)["pluginConfig"].([]any) {
		pc := pc.(map[string]any)
		args[pc["name"].(string)] = pc["args"]
	}
	for _, c := range []struct {
		plugin string
		path   []string
		want   string
	}{
		{"LockstepTopology", []string{"levels"}, "[topology.kubernetes.io/zone kubernetes.io/hostname]"},
		{"LockstepGang", []string{"backoffSeconds"}, "3"},
		{"LockstepGang", []string{"permitTimeoutSeconds"}, "60"},
		{"LockstepBind", []string{"maxBindsInFlight"}, "8"},
		{"NodeAffinity", []string{"addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}, "[map[matchExpressions:[map[key:pool operator:In values:[gpu]]]]]"},
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(args[c.plugin].(map[string]any), c.path...)
		if fmt.Sprint(got) != c.want {
			t.Errorf("%s %v = %v, want %s", c.plugin, c.path, got, c.want)
		}
	}
	// The scheduler loads and validates it as the binary does.
	loadsAsTheScheduler(t, objs["ConfigMap/sched/lockstep-scheduler-config"])
	// A changed configuration rolls the pods.
	defaults := objects(t, helm(t, "template", "lockstep", "charts/lockstep", "--namespace", "sched"))
	sum := func(d *unstructured.Unstructured) any {
		return nested(t, d, "spec", "template", "metadata", "annotations", "checksum/config")
	}
	if sum(deploy) == sum(defaults["Deployment/sched/lockstep-scheduler"]) {
		t.Errorf("the pod template's config checksum did not change with the configuration")
	}
}

func nested(t *testing.T, o *unstructured.Unstructured, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if !ok || err != nil {
		t.Fatalf("%s has no %v (%v)", key(o), path, err)
	}
	return v
}

// loadsAsTheScheduler loads the configuration a ConfigMap holds with kube-scheduler's loader
// (lockstep's argument types registered) and validates it, as the binary does at start.
func loadsAsTheScheduler(t *testing.T, cm *unstructured.Unstructured) {
	t.Helper()
	data, _, _ := unstructured.NestedString(cm.Object, "data", "scheduler-config.yaml")
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	logger, _ := ktesting.NewTestContext(t)
	cfg, err := options.LoadConfigFromFile(logger, path)
	if err != nil {
		t.Fatalf("the scheduler cannot load the chart's configuration: %v", err)
	}
	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("the chart's configuration is invalid: %v", err)
	}
}

// schedulerConfig is the KubeSchedulerConfiguration a ConfigMap holds, as data.
func schedulerConfig(t *testing.T, cm *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	if cm == nil {
		t.Fatal("no scheduler ConfigMap")
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "scheduler-config.yaml")
	cfg := map[string]any{}
	if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
		t.Fatalf("scheduler-config.yaml: %v", err)
	}
	return &unstructured.Unstructured{Object: cfg}
}

// helmLabels are the labels the chart adds to every object (manifests/ has none of them).
var helmLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/version", "app.kubernetes.io/managed-by", "helm.sh/chart"}

var generatorSuffix = regexp.MustCompile(`^(lockstep-scheduler-config)-[a-z0-9]{10}$`)

// normalized drops what may differ between the two installs, keyed again.
func normalized(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		normalize(t, o)
		out[key(o)] = o
	}
	return out
}

func normalize(t *testing.T, o *unstructured.Unstructured) {
	labels := o.GetLabels()
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		labels = nil
	}
	o.SetLabels(labels)
	if m := generatorSuffix.FindStringSubmatch(o.GetName()); m != nil {
		o.SetName(m[1])
	}
	switch o.GetKind() {
	case "Deployment":
		unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "annotations")
		volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
		for _, v := range volumes {
			if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
				if m := generatorSuffix.FindStringSubmatch(cm["name"].(string)); m != nil {
					cm["name"] = m[1]
				}
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, volumes, "spec", "template", "spec", "volumes")
	case "ConfigMap":
		o.Object["data"] = schedulerConfig(t, o).Object
	}
}

func kustomize(t *testing.T, dir ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(append([]string{root(t), "manifests"}, dir...)...))
	if err != nil {
		t.Fatalf("kustomize build manifests: %v", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, string(out))
}

// objects decodes a YAML stream, keyed by kind/namespace/name.
func objects(t *testing.T, stream string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		o := map[string]any{}
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%v in %q", err, doc)
		}
		if len(o) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: o}
		if _, dup := out[key(u)]; dup {
			t.Fatalf("%s twice", key(u))
		}
		out[key(u)] = u
	}
}

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}

func keys(m map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestChartMonitoringIsTheManifests: the chart's alerts and dashboard are those of
// manifests/monitoring.
func TestChartMonitoringIsTheManifests(t *testing.T) {
	chart := objects(t, helm(t, append([]string{"template", "lockstep", "charts/lockstep", "--namespace", namespace}, allOptions...)...))
	monitoring := kustomize(t, "monitoring")
	for _, k := range []string{"PrometheusRule/lockstep-system/lockstep-scheduler", "ConfigMap/lockstep-system/lockstep-grafana-dashboard"} {
		want, got := monitoring[k], chart[k]
		if want == nil || got == nil {
			t.Fatalf("%s: in manifests/monitoring %v, in the chart %v", k, want != nil, got != nil)
		}
		field := "spec"
		if want.GetKind() == "ConfigMap" {
			field = "data"
		}
		if diff := cmp.Diff(want.Object[field], got.Object[field]); diff != "" {
			t.Errorf("%s %s differs (-manifests +chart):\n%s", k, field, diff)
		}
		if got.GetLabels()["grafana_dashboard"] != want.GetLabels()["grafana_dashboard"] {
			t.Errorf("%s labels %v, want %v", k, got.GetLabels(), want.GetLabels())
		}
	}
}
