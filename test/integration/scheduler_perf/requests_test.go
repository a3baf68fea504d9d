package schedulerperf

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// countRequests writes, when the workload ends, the requests its kube-apiserver served, by
// verb and resource (apiserver_request_total, which scheduler_perf resets after each
// workload), to <data-items-dir>/<mode>_<shape>-requests.json; hack/benchtable divides the
// scheduler's writes among them by the workload's pods. The count covers the whole workload,
// the harness's creation of nodes, groups and pods included.
func countRequests(tCtx ktesting.TContext) {
	path := dataFile(tCtx, "-requests.json")
	if path == "" {
		return
	}
	tCtx.Cleanup(func() {
		families, err := legacyregistry.DefaultGatherer.Gather()
		if err != nil {
			tCtx.Logf("counting the apiserver's requests: %v", err)
			return
		}
		writeJSON(tCtx, path, apiRequests(families))
	})
}

// dataFile is <data-items-dir>/<mode>_<shape><suffix> for the workload of tCtx, "" without
// -data-items-dir.
func dataFile(tCtx ktesting.TContext, suffix string) string {
	dir := ""
	if f := flag.Lookup("data-items-dir"); f != nil {
		dir = f.Value.String()
	}
	if dir == "" {
		return ""
	}
	parts := strings.Split(tCtx.Name(), "/") // BenchmarkPerfScheduling/<mode>/<shape>
	if len(parts) < 3 {
		return ""
	}
	return filepath.Join(dir, parts[1]+"_"+parts[2]+suffix)
}

// writeJSON writes v to path, logging (not failing the workload) if it cannot.
func writeJSON(tCtx ktesting.TContext, path string, v any) {
	data, _ := json.MarshalIndent(v, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		tCtx.Logf("creating %s: %v", filepath.Dir(path), err)
		return
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tCtx.Logf("writing %s: %v", path, err)
	}
}

// apiRequests sums apiserver_request_total by "VERB resource[/subresource]".
func apiRequests(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := labelsOf(m)
			key := labels["verb"] + " " + labels["resource"]
			if labels["subresource"] != "" {
				key += "/" + labels["subresource"]
			}
			out[key] += m.GetCounter().GetValue()
		}
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}
