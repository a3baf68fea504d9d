package podgroup

import (
	"sync"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Subsystem is the prefix of lockstep's metrics, served on the scheduler's /metrics.
const Subsystem = "lockstep"

// metrics are created at package load so that code paths never check for nil; Register adds
// them to the registry the scheduler serves.
var metrics = struct {
	waitingGangs *k8smetrics.Gauge
	attempts     *k8smetrics.CounterVec
	gangLatency  *k8smetrics.Histogram
	permitWait   *k8smetrics.HistogramVec
	statusWrites *k8smetrics.CounterVec
	partialBinds *k8smetrics.Counter
	released     *k8smetrics.Counter
	// lostDecisions counts allows and rejections that never found their waiting pod.
	lostDecisions *k8smetrics.CounterVec
}{
	waitingGangs: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
		Subsystem:      Subsystem,
		Name:           "gangs_waiting",
		Help:           "Number of gangs (root groups) with members holding a reservation at Permit while waiting for the rest of the gang.",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	attempts: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "gang_attempts_total",
		Help:           "Gang scheduling attempts by result: scheduled (the whole gang was allowed to bind), unschedulable (a member could not be placed), timeout (members waited longer than the gang's timeout).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"result"}),
	gangLatency: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
		Subsystem:      Subsystem,
		Name:           "gang_scheduling_duration_seconds",
		Help:           "Time from the creation of a gang's first member to the bind that completed the whole gang.",
		Buckets:        k8smetrics.ExponentialBuckets(0.1, 2, 16),
		StabilityLevel: k8smetrics.ALPHA,
	}),
	permitWait: k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Subsystem:      Subsystem,
		Name:           "gang_permit_wait_duration_seconds",
		Help:           "Time a gang member held its reservation at Permit, by result: allowed or rejected.",
		Buckets:        k8smetrics.ExponentialBuckets(0.001, 2, 20),
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"result"}),
	statusWrites: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "group_status_writes_total",
		Help:           "Status writes to PodGroups and CompositePodGroups, by the reason of the condition written (PodGroupInitiallyScheduled, Short or DisruptionTarget).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"reason"}),
	partialBinds: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "gang_partial_binds_total",
		Help:           "Members that failed to bind after their gang was allowed to bind, some of it bound or binding (the gang is partially bound, short; the member is retried alone).",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	released: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "gangs_released_total",
		Help:           "Gangs released whole by evicting their bound members: short of their minimum for partialBindTimeoutSeconds, or half bound (bound members, never placed whole) with the rest not fitting.",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	lostDecisions: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      Subsystem,
		Name:           "gang_lost_decisions_total",
		Help:           "Allows and rejections of gang members that found no pod waiting at Permit within 30 s (the framework had let it go), by decision: allow or reject. Each is also logged as an error.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"decision"}),
}

var registerOnce sync.Once

// RegisterMetrics registers lockstep's metrics with the registry the scheduler serves.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(metrics.waitingGangs, metrics.attempts, metrics.gangLatency, metrics.permitWait, metrics.statusWrites, metrics.partialBinds, metrics.released, metrics.lostDecisions)
		// Gauges computed from the model at each scrape: pending gangs (pending.go), invalid
		// groups and pods waiting for a missing group (problems.go).
		legacyregistry.CustomMustRegister(&pendingCollector{}, &problemsCollector{})
		// Every known label value is exposed from the start (at 0), so that rates, dashboards
		// and alerts see the series before the first event of its kind.
		for _, result := range []string{"scheduled", "unschedulable", "timeout"} {
			metrics.attempts.WithLabelValues(result)
		}
		for _, d := range []string{"allow", "reject"} {
			metrics.lostDecisions.WithLabelValues(d)
		}
		for _, result := range []string{"allowed", "rejected"} {
			metrics.permitWait.WithLabelValues(result)
		}
		for _, reason := range []string{v1alpha1.ReasonScheduled, v1alpha1.ReasonUnschedulable, v1alpha1.ReasonInvalid,
			v1alpha1.ReasonPartiallyBound, v1alpha1.ReasonPreempting, v1alpha1.ReasonReserving,
			v1alpha1.ReasonPreemptionByScheduler, v1alpha1.ReasonRescheduled, ReasonGangReleased,
			v1alpha1.ReasonMemberLost, v1alpha1.ReasonWhole, v1alpha1.ReasonNotRunning} {
			metrics.statusWrites.WithLabelValues(reason)
		}
	})
}
