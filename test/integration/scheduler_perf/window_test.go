package schedulerperf

import (
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// The waiting workloads (LockstepWaitingGangs, LockstepWaitingAtScale, NativeWaitingGangs,
// PlainWaiting) measure rates over a window in which nothing can be scheduled: apiserver
// writes, events and attempts per minute. scheduler_perf gives no counter over a window: its
// metrics collector reads histograms only (counters in metricsCollectorConfig yield no data
// item), resets nothing at startCollectingMetrics, and the apiserver's counts are reset only
// between workloads. So the
// workload marks the window itself: it creates the ConfigMap bench-window-start right after
// startCollectingMetrics and bench-window-stop right before stopCollectingMetrics
// (templates/window-marker.yaml), and recordWindow snapshots the counters when it sees each
// (a watch event, milliseconds after the create) and writes their difference to
// <data-items-dir>/<mode>_<shape>-window.json for hack/benchtable.
const windowLabel = "bench.lockstep.dev/window"

// windowCounters are the counters a window records, each summed by the label named.
var windowCounters = map[string]string{
	"lockstep_gang_attempts_total":               "result",
	"lockstep_group_status_writes_total":         "reason",
	"scheduler_schedule_attempts_total":          "result",
	"scheduler_podgroup_schedule_attempts_total": "result",
	"scheduler_queue_incoming_pods_total":        "event",
	"lockstep_reservations_total":                "event",
}

// window is what <mode>_<shape>-window.json holds.
type window struct {
	Seconds float64 `json:"seconds"`
	// Requests: apiserver_request_total by "VERB resource[/subresource]", during the window.
	Requests map[string]float64 `json:"requests"`
	// Counters: windowCounters by their label, during the window; AtStart: their totals
	// since the workload started, when the window starts (the tries before it).
	Counters map[string]map[string]float64 `json:"counters"`
	AtStart  map[string]map[string]float64 `json:"atStart"`
	// PendingAtStart, PendingAtEnd: scheduler_pending_pods by queue when the window starts and
	// ends: where the waiting pods are kept (unschedulable: until an event that may help them;
	// gated: held by a PreEnqueue plugin; backoff, active). Pods still active at the start
	// had not all been tried when the window began.
	PendingAtStart map[string]float64 `json:"pendingAtStart"`
	PendingAtEnd   map[string]float64 `json:"pendingAtEnd"`
}

// snapshot is the counters at one edge of the window.
type snapshot struct {
	at       time.Time
	requests map[string]float64
	counters map[string]map[string]float64
	pending  map[string]float64
}

// watchMarkers calls onEdge with the label's value for each ConfigMap carrying label that the
// workload creates (the edges of a measured window), and done once the workload ends and the
// watch has stopped.
func watchMarkers(tCtx ktesting.TContext, label string, onEdge func(edge string), done func()) {
	factory := informers.NewSharedInformerFactoryWithOptions(tCtx.Client(), 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = label }))
	if _, err := factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cm, ok := obj.(*v1.ConfigMap); ok {
				onEdge(cm.Labels[label])
			}
		},
	}); err != nil {
		tCtx.Logf("watching for the markers %s: %v", label, err)
		return
	}
	stop := make(chan struct{})
	factory.Start(stop)
	tCtx.Cleanup(func() {
		close(stop)
		factory.Shutdown()
		done()
	})
}

// recordWindow watches for the window's markers and writes the window when the workload
// ends; workloads without markers write nothing.
func recordWindow(tCtx ktesting.TContext) {
	path := dataFile(tCtx, "-window.json")
	if path == "" {
		return
	}
	var mu sync.Mutex
	edges := map[string]*snapshot{}
	watchMarkers(tCtx, windowLabel, func(edge string) {
		s, err := takeSnapshot()
		if err != nil {
			tCtx.Logf("window %s: %v", edge, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		edges[edge] = s
	}, func() {
		mu.Lock()
		defer mu.Unlock()
		start, end := edges["start"], edges["stop"]
		if start == nil || end == nil {
			return
		}
		writeJSON(tCtx, path, window{
			Seconds:        end.at.Sub(start.at).Seconds(),
			Requests:       minus(end.requests, start.requests),
			Counters:       countersMinus(end.counters, start.counters),
			AtStart:        start.counters,
			PendingAtStart: start.pending,
			PendingAtEnd:   end.pending,
		})
	})
}

func takeSnapshot() (*snapshot, error) {
	at := time.Now()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return nil, err
	}
	s := &snapshot{at: at, requests: apiRequests(families), counters: map[string]map[string]float64{}, pending: map[string]float64{}}
	for _, mf := range families {
		if mf.GetName() == "scheduler_pending_pods" {
			sumBy(s.pending, mf, "queue", func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
		}
		label, ok := windowCounters[mf.GetName()]
		if !ok {
			continue
		}
		by := map[string]float64{}
		sumBy(by, mf, label, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
		s.counters[mf.GetName()] = by
	}
	return s, nil
}

// sumBy adds the values of mf's series into out, by the value of label.
func sumBy(out map[string]float64, mf *dto.MetricFamily, label string, value func(*dto.Metric) float64) {
	for _, m := range mf.GetMetric() {
		out[labelsOf(m)[label]] += value(m)
	}
}

// minus is end - start by key, without the keys that did not change.
func minus(end, start map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range end {
		if d := v - start[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func countersMinus(end, start map[string]map[string]float64) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for name, by := range end {
		out[name] = minus(by, start[name])
	}
	return out
}
