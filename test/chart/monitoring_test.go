package chart

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// monitoringOptions turns on every monitoring object.
var monitoringOptions = []string{
	"--set", "metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true",
}

// TestChartMonitoringSelectsLockstep: every alert expression and every dashboard query,
// rendered for a release, selects that release's series only (the job its ServiceMonitor
// gives them, the Service's name, and its namespace: never the default kube-scheduler's
// scheduler_* series nor another release's), and names only metrics lockstep serves.
func TestChartMonitoringSelectsLockstep(t *testing.T) {
	served := servedMetrics(t)
	for _, c := range []struct {
		release, namespace string
		options            []string
		job                string // the job label the alerts must select
		serviceJob         bool   // the job is the metrics Service's name (the ServiceMonitor's)
	}{
		{release: "lockstep", namespace: namespace, job: "lockstep-scheduler-metrics", serviceJob: true},
		{release: "b", namespace: "other", job: "b-lockstep-scheduler-metrics", serviceJob: true},
		{release: "b", namespace: "other", options: []string{"--set", "metrics.job=kubernetes-service-endpoints"}, job: "kubernetes-service-endpoints"},
	} {
		t.Run(c.release+"/"+c.namespace+"/"+c.job, func(t *testing.T) {
			args := append([]string{"template", c.release, "charts/lockstep", "--namespace", c.namespace}, monitoringOptions...)
			rendered := helm(t, append(args, c.options...)...)
			objs := objects(t, rendered)
			if strings.Contains(rendered, "bearerTokenFile") {
				t.Errorf("the chart renders the deprecated bearerTokenFile")
			}
			var service, monitor, rule, dashboard *unstructured.Unstructured
			for _, o := range objs {
				switch o.GetKind() {
				case "Service":
					service = o
				case "ServiceMonitor":
					monitor = o
				case "PrometheusRule":
					rule = o
				case "ConfigMap":
					if strings.HasSuffix(o.GetName(), "-grafana-dashboard") {
						dashboard = o
					}
				}
			}
			if service == nil || monitor == nil || rule == nil || dashboard == nil {
				t.Fatalf("Service %v, ServiceMonitor %v, PrometheusRule %v, dashboard %v: want all", service != nil, monitor != nil, rule != nil, dashboard != nil)
			}
			// prometheus-operator labels the series with job = the Service's name (no
			// jobLabel) and namespace = the Service's, of the Service the monitor selects.
			if c.serviceJob && service.GetName() != c.job {
				t.Errorf("the metrics Service is %s: its series' job is not %s", service.GetName(), c.job)
			}
			if got, ok, _ := unstructured.NestedString(monitor.Object, "spec", "jobLabel"); ok {
				t.Errorf("ServiceMonitor jobLabel %q: the job would not be the Service's name", got)
			}
			selects, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
			for k, v := range selects {
				if service.GetLabels()[k] != v {
					t.Errorf("the ServiceMonitor selects %v, the Service has labels %v", selects, service.GetLabels())
				}
			}
			if service.GetNamespace() != c.namespace || monitor.GetNamespace() != c.namespace {
				t.Errorf("Service in %s, ServiceMonitor in %s, want %s", service.GetNamespace(), monitor.GetNamespace(), c.namespace)
			}

			// Every alert.
			groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
			alerts := 0
			for _, g := range groups {
				for _, r := range g.(map[string]any)["rules"].([]any) {
					r := r.(map[string]any)
					alerts++
					checkSelects(t, "alert "+r["alert"].(string), r["expr"].(string), served, map[string]string{"job": c.job, "namespace": c.namespace})
				}
			}
			if alerts < 9 {
				t.Errorf("%d alerts rendered", alerts)
			}

			// Every panel's query, with the dashboard's variables set as they are for this
			// release: its namespace and job (the variables list only lockstep's series), any
			// cluster.
			data, _, _ := unstructured.NestedString(dashboard.Object, "data", "grafana-dashboard.json")
			var board struct {
				Panels []struct {
					Title   string
					Targets []struct{ Expr string }
				}
				Templating struct {
					List []struct {
						Name  string
						Type  string
						Query json.RawMessage
					}
				}
			}
			if err := json.Unmarshal([]byte(data), &board); err != nil {
				t.Fatalf("the dashboard: %v", err)
			}
			render := strings.NewReplacer("$cluster", ".*", "$namespace", c.namespace, "$job", c.job).Replace
			queries := 0
			for _, p := range board.Panels {
				for _, target := range p.Targets {
					queries++
					checkSelects(t, "panel "+p.Title, render(target.Expr), served, map[string]string{"job": c.job, "namespace": c.namespace})
					if !strings.Contains(target.Expr, `cluster=~"$cluster"`) {
						t.Errorf("panel %s: %s does not follow the cluster variable", p.Title, target.Expr)
					}
				}
			}
			if queries < 15 {
				t.Errorf("%d panel queries", queries)
			}
			// The variables offer only lockstep schedulers: their values come from a lockstep
			// metric, the job from the chosen namespace's.
			variables := map[string]bool{}
			for _, v := range board.Templating.List {
				if v.Type != "query" {
					continue
				}
				variables[v.Name] = true
				var q struct{ Query string }
				if err := json.Unmarshal(v.Query, &q); err != nil {
					t.Fatalf("variable %s: %v", v.Name, err)
				}
				m := labelValues.FindStringSubmatch(q.Query)
				if m == nil || m[2] != v.Name {
					t.Errorf("variable %s: query %q, want label_values(<lockstep series>, %s)", v.Name, q.Query, v.Name)
					continue
				}
				sels, err := vectorSelectors(m[1])
				if err != nil || len(sels) != 1 || !strings.HasPrefix(sels[0].name, "lockstep_") || !served[sels[0].name] {
					t.Errorf("variable %s: %s selects %v (%v), want one lockstep metric", v.Name, q.Query, sels, err)
					continue
				}
				if ns, _ := sels[0].equal("namespace"); v.Name == "job" && ns != "$namespace" {
					t.Errorf("variable job: %s does not follow the namespace variable", q.Query)
				}
			}
			for _, v := range []string{"cluster", "namespace", "job"} {
				if !variables[v] {
					t.Errorf("the dashboard has no %s variable", v)
				}
			}
		})
	}
}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-z_]+)\)$`)

// checkSelects checks that every vector selector of expr names a metric lockstep serves and
// has the equality matchers want.
func checkSelects(t *testing.T, what, expr string, served map[string]bool, want map[string]string) {
	t.Helper()
	sels, err := vectorSelectors(expr)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return
	}
	if len(sels) == 0 {
		t.Errorf("%s: no series in %s", what, expr)
	}
	if strings.Contains(expr, "$") {
		t.Errorf("%s: %s holds a variable the test does not set", what, expr)
	}
	for _, s := range sels {
		if !served[s.name] {
			t.Errorf("%s: %s is not a metric lockstep serves (docs/reference/metrics.md, kube-scheduler's scheduler_*)", what, s.name)
		}
		for label, value := range want {
			if got, ok := s.equal(label); !ok || got != value {
				t.Errorf("%s: %s does not select %s=%q", what, s, label, value)
			}
		}
	}
}

// servedMetrics are the series names lockstep's /metrics has: lockstep's own, as the metrics
// reference lists them (generated from their registration; the demo's test checks it against
// a running scheduler's /metrics), and kube-scheduler's scheduler_* ones, as
// k8s.io/kubernetes/pkg/scheduler/metrics registers them. Histograms and summaries count
// with their series' suffixes.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	served := map[string]bool{}
	add := func(name string) {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			served[name+suffix] = true
		}
	}
	ref, err := os.ReadFile(filepath.Join(root(t), "docs", "reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range documentedMetric.FindAllStringSubmatch(string(ref), -1) {
		add(m[1])
	}
	if len(served) < 4*20 {
		t.Fatalf("found %d lockstep metrics in docs/reference/metrics.md", len(served)/4)
	}
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	list.Dir = root(t)
	dir, err := list.Output()
	if err != nil {
		t.Fatalf("locating k8s.io/kubernetes: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "pkg", "scheduler", "metrics", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	upstream := schedulerMetric.FindAllStringSubmatch(string(src), -1)
	if len(upstream) < 20 {
		t.Fatalf("found %d scheduler_* metrics in k8s.io/kubernetes/pkg/scheduler/metrics", len(upstream))
	}
	for _, m := range upstream {
		add("scheduler_" + m[1])
	}
	return served
}

var (
	// documentedMetric is a row of the metrics reference: name and type.
	documentedMetric = regexp.MustCompile("(?m)^\\| `(lockstep_[a-z_]+)` \\| ([a-z]+) \\|")
	// schedulerMetric is the registration of one of kube-scheduler's metrics.
	schedulerMetric = regexp.MustCompile(`Subsystem:\s+SchedulerSubsystem,\s+Name:\s+"([a-z_]+)"`)
)

// TestChartServiceMonitorAuthorization: the ServiceMonitor presents a bearer token from a
// Secret (authorization.credentials, not the deprecated bearerTokenFile): by default the
// token of a ServiceAccount the chart makes and binds to the metrics-reader ClusterRole; with
// metrics.serviceMonitor.tokenSecret, the Secret named, and the chart makes no scraper.
func TestChartServiceMonitorAuthorization(t *testing.T) {
	for _, c := range []struct {
		options      []string
		secret, key  string
		scraper      string // the ServiceAccount the chart makes, if any
		bindsReaders bool
	}{
		{secret: "b-lockstep-metrics-scraper-token", key: "token", scraper: "b-lockstep-metrics-scraper", bindsReaders: true},
		{options: []string{"--set", "metrics.serviceMonitor.tokenSecret.name=prometheus-token,metrics.serviceMonitor.tokenSecret.key=jwt"},
			secret: "prometheus-token", key: "jwt"},
	} {
		args := append([]string{"template", "b", "charts/lockstep", "--namespace", "other", "--set", "metrics.serviceMonitor.enabled=true"}, c.options...)
		objs := objects(t, helm(t, args...))
		monitor := objs["ServiceMonitor/other/b-lockstep-scheduler"]
		if monitor == nil {
			t.Fatalf("no ServiceMonitor in %v", keys(objs))
		}
		endpoint := nested(t, monitor, "spec", "endpoints").([]any)[0].(map[string]any)
		credentials, _, _ := unstructured.NestedStringMap(endpoint, "authorization", "credentials")
		if typ, _, _ := unstructured.NestedString(endpoint, "authorization", "type"); typ != "Bearer" || credentials["name"] != c.secret || credentials["key"] != c.key {
			t.Errorf("ServiceMonitor authorization %v, want Bearer credentials %s/%s", endpoint["authorization"], c.secret, c.key)
		}
		for _, deprecated := range []string{"bearerTokenFile", "bearerTokenSecret"} {
			if endpoint[deprecated] != nil {
				t.Errorf("ServiceMonitor endpoint has %s", deprecated)
			}
		}
		binding := objs["ClusterRoleBinding//b-lockstep-metrics-reader"]
		if c.scraper == "" {
			for k, o := range objs {
				if o.GetKind() == "Secret" || strings.Contains(k, "scraper") {
					t.Errorf("with a token Secret of its own the chart still renders %s", k)
				}
			}
			if binding != nil {
				t.Errorf("no subject to bind, yet %s", key(binding))
			}
			continue
		}
		secret := objs["Secret/other/"+c.secret]
		if secret == nil || secret.Object["type"] != "kubernetes.io/service-account-token" ||
			secret.GetAnnotations()["kubernetes.io/service-account.name"] != c.scraper || objs["ServiceAccount/other/"+c.scraper] == nil {
			t.Fatalf("want a ServiceAccount %s and its token in Secret %s; have %v", c.scraper, c.secret, keys(objs))
		}
		if binding == nil {
			t.Fatalf("the scraper is bound to nothing: %v", keys(objs))
		}
		if ref := nested(t, binding, "roleRef", "name"); ref != "b-lockstep-metrics-reader" || objs["ClusterRole//b-lockstep-metrics-reader"] == nil {
			t.Errorf("the scraper's binding refers to %v", ref)
		}
		found := false
		for _, s := range nested(t, binding, "subjects").([]any) {
			s := s.(map[string]any)
			found = found || (s["kind"] == "ServiceAccount" && s["name"] == c.scraper && s["namespace"] == "other")
		}
		if !found {
			t.Errorf("the metrics reader is bound to %v, not to the scraper", nested(t, binding, "subjects"))
		}
	}
}

// TestChartAlertLabelsSurviveAggregation: an alert's annotations name only labels its
// expression keeps ({{ $labels.reason }} is empty when the aggregation drops reason).
func TestChartAlertLabelsSurviveAggregation(t *testing.T) {
	rule := objects(t, helm(t, append([]string{"template", "lockstep", "charts/lockstep", "--namespace", namespace}, monitoringOptions...)...))["PrometheusRule/"+namespace+"/lockstep-scheduler"]
	if rule == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	for _, r := range alertRules(t, rule) {
		by, without := aggregationLabels(r.Expr)
		for _, text := range r.Annotations {
			for _, m := range annotationLabel.FindAllStringSubmatch(text, -1) {
				for _, kept := range by {
					if !slices.Contains(kept, m[1]) {
						t.Errorf("alert %s names $labels.%s, which by (%s) drops", r.Alert, m[1], strings.Join(kept, ", "))
					}
				}
				for _, dropped := range without {
					if slices.Contains(dropped, m[1]) {
						t.Errorf("alert %s names $labels.%s, which without (%s) drops", r.Alert, m[1], strings.Join(dropped, ", "))
					}
				}
			}
		}
	}
}

var annotationLabel = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// alertRule is one alerting rule of a PrometheusRule.
type alertRule struct {
	Alert, Expr, For string
	Labels           map[string]string
	Annotations      map[string]string
}

// alertRules returns the alerting rules of a rendered PrometheusRule.
func alertRules(t *testing.T, rule *unstructured.Unstructured) []alertRule {
	t.Helper()
	var spec struct {
		Groups []struct{ Rules []alertRule }
	}
	data, err := json.Marshal(rule.Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	var out []alertRule
	for _, g := range spec.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestChartAlertsOnGroupProblems: invalid groups and pods waiting for a group that does not
// exist are alerted on, as gangs pending long are: each alert on its gauge (a metric the
// scheduler serves), one alert per reason (the aggregation keeps it), for some minutes (a
// group the workload controller makes appears within seconds; a child created a moment
// before its parent is Invalid as long), a warning whose description says what to do for
// every reason the gauge has.
func TestChartAlertsOnGroupProblems(t *testing.T) {
	served := servedMetrics(t)
	reasons := documentedLabelValues(t)
	rule := objects(t, helm(t, append([]string{"template", "lockstep", "charts/lockstep", "--namespace", namespace}, monitoringOptions...)...))["PrometheusRule/"+namespace+"/lockstep-scheduler"]
	if rule == nil {
		t.Fatal("no PrometheusRule rendered")
	}
	rules := map[string]alertRule{}
	for _, r := range alertRules(t, rule) {
		rules[r.Alert] = r
	}
	for _, c := range []struct {
		alert, metric, forAtLeast string
		// everyReason: the description names each value of the gauge's reason label.
		everyReason bool
	}{
		{alert: "LockstepInvalidGroups", metric: "lockstep_groups_invalid", forAtLeast: "5m"},
		{alert: "LockstepPodsWaitingForMissingGroup", metric: "lockstep_pods_waiting_for_group", forAtLeast: "5m", everyReason: true},
	} {
		r, ok := rules[c.alert]
		if !ok {
			t.Errorf("no alert %s in %v", c.alert, keysOf(rules))
			continue
		}
		sels, err := vectorSelectors(r.Expr)
		if err != nil || len(sels) != 1 || sels[0].name != c.metric || !served[c.metric] {
			t.Errorf("alert %s: %s selects %v (%v), want %s alone, a metric the scheduler serves", c.alert, r.Expr, sels, err, c.metric)
		}
		by, _ := aggregationLabels(r.Expr)
		if len(by) != 1 || !slices.Contains(by[0], "reason") {
			t.Errorf("alert %s: %s does not keep the reason: one alert for all reasons", c.alert, r.Expr)
		}
		if !strings.HasSuffix(strings.TrimSpace(r.Expr), "> 0") {
			t.Errorf("alert %s: %s, want it to fire on any (> 0)", c.alert, r.Expr)
		}
		got, err1 := time.ParseDuration(r.For)
		least, _ := time.ParseDuration(c.forAtLeast)
		if err1 != nil || got < least {
			t.Errorf("alert %s: for %q, want at least %s", c.alert, r.For, c.forAtLeast)
		}
		if r.Labels["severity"] != "warning" {
			t.Errorf("alert %s: severity %q, want warning", c.alert, r.Labels["severity"])
		}
		if r.Annotations["summary"] == "" || !strings.Contains(r.Annotations["description"], "kubectl ") {
			t.Errorf("alert %s: annotations %v, want a summary and a description with what to run", c.alert, r.Annotations)
		}
		if len(reasons[c.metric]) < 4 {
			t.Fatalf("%s has reasons %v in docs/reference/metrics.md", c.metric, reasons[c.metric])
		}
		for _, reason := range reasons[c.metric] {
			if c.everyReason && !regexp.MustCompile(`\b`+reason+`\b`).MatchString(r.Annotations["description"]) {
				t.Errorf("alert %s: the description says nothing of reason %s", c.alert, reason)
			}
		}
	}
}

// documentedLabelValues returns the values of the reason label of each metric the metrics
// reference lists with one.
func documentedLabelValues(t *testing.T) map[string][]string {
	t.Helper()
	ref, err := os.ReadFile(filepath.Join(root(t), "docs", "reference", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, m := range documentedReasons.FindAllStringSubmatch(string(ref), -1) {
		for _, v := range strings.Split(m[2], ",") {
			out[m[1]] = append(out[m[1]], strings.Trim(strings.TrimSpace(v), "`"))
		}
	}
	return out
}

// documentedReasons is a row of the metrics reference with a reason label: name, values.
var documentedReasons = regexp.MustCompile("(?m)^\\| `(lockstep_[a-z_]+)` \\| [a-z]+ \\| `reason`: ([^|;]+) \\|")

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
