package reservation

import (
	"sync"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// metrics are created at package load so that code paths never check for nil; RegisterMetrics
// adds them to the registry the scheduler serves.
var metrics = struct {
	events   *k8smetrics.CounterVec
	held     *k8smetrics.Gauge
	capacity *k8smetrics.GaugeVec
	bindWait *k8smetrics.Histogram
}{
	events: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "reservations_total",
		Help:           "Reservations of domains for starving gangs, by how each started and ended, once: started, bound (the gang was scheduled, also by a preemption it gave the reservation up for), timeout, lapsed (the gang stopped asking for it), released (it gave way to a gang that waited longer; the gang no longer starves or is eligible, starved again after preempting, or is gone).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"event"}),
	held: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "reservations_held",
		Help:           "Number of domains held for starving gangs.",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	capacity: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "reserved_capacity",
		Help:           "Capacity the plans of starving gangs' reservations need, by resource (cpu in cores, memory in bytes, extended resources in units).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"resource"}),
	bindWait: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "reservation_bind_wait_seconds",
		Help:           "Time from the start of a gang's reservation to the gang scheduled.",
		Buckets:        k8smetrics.ExponentialBuckets(1, 2, 16),
		StabilityLevel: k8smetrics.ALPHA,
	}),
}

var registerOnce sync.Once

// RegisterMetrics adds the reservations' metrics to the registry the scheduler serves (once).
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(metrics.events, metrics.held, metrics.capacity, metrics.bindWait)
		// Every known label value is exposed from the start (at 0), so that rates, dashboards
		// and alerts see the series before the first event of its kind.
		for _, event := range []string{"started", "bound", "timeout", "lapsed", "released"} {
			metrics.events.WithLabelValues(event)
		}
		for _, resource := range []string{"cpu", "memory"} {
			metrics.capacity.WithLabelValues(resource)
		}
	})
}
