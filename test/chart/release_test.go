package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// TestChartValuesSchema: values.schema.json (JSON schema draft-07) closes every object the
// chart owns, so that a misspelt or invalid value fails helm lint and helm template (and
// so install and upgrade) instead of being ignored, or crash-looping the scheduler; the
// defaults and every option pass (TestChartLints).
func TestChartValuesSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root(t), "charts", "lockstep", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	if schema["$schema"] != "http://json-schema.org/draft-07/schema#" {
		t.Errorf("$schema %v, want draft-07", schema["$schema"])
	}
	// Every object the schema describes field by field is closed; objects described as a
	// whole (Kubernetes types passed through, string maps) have no properties.
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		if props, ok := s["properties"].(map[string]any); ok {
			if s["additionalProperties"] != false {
				t.Errorf("%s: properties without additionalProperties: false", path)
			}
			for name, p := range props {
				walk(path+"."+name, p.(map[string]any))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(path+"[]", items)
		}
	}
	walk("values", schema)

	// Every value of values.yaml is in the schema (so closing an object never rejects one).
	var values map[string]any
	valuesYAML, err := os.ReadFile(filepath.Join(root(t), "charts", "lockstep", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(valuesYAML, &values); err != nil {
		t.Fatal(err)
	}
	var described func(path string, v map[string]any, s map[string]any)
	described = func(path string, v map[string]any, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		if props == nil {
			return
		}
		for k, val := range v {
			p, ok := props[k].(map[string]any)
			if !ok {
				t.Errorf("%s.%s is in values.yaml, not in the schema", path, k)
				continue
			}
			if m, ok := val.(map[string]any); ok {
				described(path+"."+k, m, p)
			}
		}
	}
	described("values", values, schema)

	typo := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(typo, []byte("config:\n  gang:\n    permitTimeoutSecs: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string // in helm's error
	}{
		{[]string{"--set", "permitTimeoutSecs=1"}, "'permitTimeoutSecs' not allowed"},
		{[]string{"--set", "config.gang.permitTimeoutSecs=1"}, "'permitTimeoutSecs' not allowed"},
		{[]string{"-f", typo}, "'permitTimeoutSecs' not allowed"},
		{[]string{"--set", "metrics.serviceMonitor.enable=true"}, "'enable' not allowed"},
		{[]string{"--set", "config.topology.levels={kubernetes.io/hostname}"}, "'levels' not allowed"},
		{[]string{"--set", "replicas=-1"}, "/replicas"},
		{[]string{"--set-string", "replicas=2"}, "/replicas"},
		{[]string{"--set", "config.gang.permitTimeoutSeconds=0"}, "/config/gang/permitTimeoutSeconds"},
		{[]string{"--set", "image.pullPolicy=Sometimes"}, "/image/pullPolicy"},
		{[]string{"--set", "metrics.serviceMonitor.interval=30 seconds"}, "/metrics/serviceMonitor/interval"},
		{[]string{"--set", "metrics.prometheusRule.slowGangSeconds=7200"}, "/metrics/prometheusRule/slowGangSeconds"},
		{[]string{"--set", "nameOverride=Lockstep_Scheduler"}, "/nameOverride"},
	} {
		for _, cmd := range [][]string{
			{"lint", "charts/lockstep", "--strict", "--namespace", namespace},
			{"template", "lockstep", "charts/lockstep", "--namespace", namespace},
		} {
			if out := helmFails(t, append(cmd, c.args...)...); !strings.Contains(out, c.want) {
				t.Errorf("helm %s %v: the error does not say %q:\n%s", cmd[0], c.args, c.want, out)
			}
		}
	}
}

// releaseOptions turns on every object a release may make.
var releaseOptions = []string{
	"--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true,metrics.dashboard.namespace=monitoring",
	"--set", "metrics.readerSubjects[0].kind=ServiceAccount,metrics.readerSubjects[0].name=prometheus,metrics.readerSubjects[0].namespace=monitoring",
}

// TestChartReleasesShareNoNames: two releases of different names, in two namespaces or in
// one, make no object of the same kind and name where they could meet — cluster-scoped
// objects (ClusterRoles, ClusterRoleBindings), objects in namespaces not the release's (the
// kube-system RoleBinding, the dashboard in Grafana's namespace), and everything in a shared
// namespace —, hold different leases, and no selector of one matches the other's pods. The
// CRDs (crds/, which helm template leaves out) are the one thing releases share: Helm
// installs them once and never deletes them. Two releases of one name in different
// namespaces would make the same objects outside their namespaces, all of them: the chart
// refuses the second (TestChartRefusesClashingReleases).
func TestChartReleasesShareNoNames(t *testing.T) {
	type release struct{ name, namespace string }
	render := func(r release) map[string]*unstructured.Unstructured {
		return objects(t, helm(t, append([]string{"template", r.name, "charts/lockstep", "--namespace", r.namespace}, releaseOptions...)...))
	}
	plain, a, b, c := release{"lockstep", namespace}, release{"a", namespace}, release{"b", "other"}, release{"c", namespace}
	rendered := map[release]map[string]*unstructured.Unstructured{}
	for _, r := range []release{plain, a, b, c} {
		rendered[r] = render(r)
		clusterScoped := 0
		for _, o := range rendered[r] {
			if o.GetNamespace() == "" {
				clusterScoped++
			}
		}
		if clusterScoped < 4 {
			t.Errorf("release %s: %d cluster-scoped objects, want ClusterRoles and their bindings", r.name, clusterScoped)
		}
	}
	for _, pair := range [][2]release{{a, b}, {plain, b}, {plain, a}, {a, c}} {
		x, y := rendered[pair[0]], rendered[pair[1]]
		for k := range x {
			if y[k] != nil {
				t.Errorf("releases %s (in %s) and %s (in %s) both make %s", pair[0].name, pair[0].namespace, pair[1].name, pair[1].namespace, k)
			}
		}
		if lx, ly := lease(t, x), lease(t, y); lx == ly {
			t.Errorf("releases %s and %s both lead through lease %s", pair[0].name, pair[1].name, lx)
		}
		for _, p := range [][2]map[string]*unstructured.Unstructured{{x, y}, {y, x}} {
			pods := podLabels(t, p[1])
			for k, sel := range selectors(t, p[0]) {
				if sel.Matches(pods) {
					t.Errorf("%s of release %s selects release %s's pods (%v)", k, pair[0].name, pair[1].name, pods)
				}
			}
		}
	}
	// The release named after the chart keeps manifests/' names (TestChartRendersTheManifests);
	// any other prefixes them.
	var names []string
	for _, o := range rendered[b] {
		if o.GetNamespace() == "" || o.GetNamespace() != b.namespace {
			names = append(names, key(o))
			if !strings.HasPrefix(o.GetName(), "b-lockstep-") {
				t.Errorf("%s: not named after release b", key(o))
			}
		}
	}
	sort.Strings(names)
	t.Logf("release b's objects outside its namespace: %v", names)
	// The same name in another namespace: every object outside the namespaces is the same.
	twin := render(release{plain.name, "other"})
	for k, o := range rendered[plain] {
		outside := o.GetNamespace() == "" || o.GetNamespace() != plain.namespace
		if outside != (twin[k] != nil) {
			t.Errorf("%s of release %s in %s: outside its namespace %v, made by its namesake in other too %v",
				k, plain.name, plain.namespace, outside, twin[k] != nil)
		}
	}
	// With the CRDs, they are all the releases share.
	x := objects(t, helm(t, append([]string{"template", "a", "charts/lockstep", "--namespace", namespace, "--include-crds"}, releaseOptions...)...))
	y := objects(t, helm(t, append([]string{"template", "b", "charts/lockstep", "--namespace", "other", "--include-crds"}, releaseOptions...)...))
	for k := range x {
		if y[k] != nil && x[k].GetKind() != "CustomResourceDefinition" {
			t.Errorf("both releases make %s", k)
		}
	}
}

// lease is the name and namespace of the lease a release's scheduler leads through.
func lease(t *testing.T, objs map[string]*unstructured.Unstructured) string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-config") {
			cfg := schedulerConfig(t, o)
			return nested(t, cfg, "leaderElection", "resourceNamespace").(string) + "/" + nested(t, cfg, "leaderElection", "resourceName").(string)
		}
	}
	t.Fatal("no scheduler configuration")
	return ""
}

// podLabels are the labels of a release's scheduler pods.
func podLabels(t *testing.T, objs map[string]*unstructured.Unstructured) labels.Set {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			m, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
			return m
		}
	}
	t.Fatal("no Deployment")
	return nil
}

// selectors are the label selectors of a release's objects that pick pods or Services.
func selectors(t *testing.T, objs map[string]*unstructured.Unstructured) map[string]labels.Selector {
	t.Helper()
	out := map[string]labels.Selector{}
	for k, o := range objs {
		var m map[string]string
		switch o.GetKind() {
		case "Deployment", "PodDisruptionBudget", "ServiceMonitor":
			m, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector", "matchLabels")
		case "Service":
			m, _, _ = unstructured.NestedStringMap(o.Object, "spec", "selector")
		default:
			continue
		}
		if len(m) == 0 {
			t.Fatalf("%s selects everything", k)
		}
		out[k] = labels.SelectorFromSet(m)
	}
	if len(out) < 4 {
		t.Fatalf("found the selectors of %v", out)
	}
	return out
}
