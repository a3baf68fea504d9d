package topology

import (
	"sync"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/reservation"
)

var metrics = struct {
	plans        *k8smetrics.CounterVec
	planReuse    *k8smetrics.Counter
	replans      *k8smetrics.CounterVec
	failures     *k8smetrics.CounterVec
	planDuration *k8smetrics.Histogram

	preemptions        *k8smetrics.CounterVec
	victims            *k8smetrics.Counter
	victimGangs        *k8smetrics.Counter
	preemptionDuration *k8smetrics.Histogram
}{
	plans: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "topology_plans_total",
		Help:           "Placement plans computed for whole trees, by result: placed or unplaceable.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"result"}),
	planReuse: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "topology_plan_reuse_total",
		Help:           "Members scheduled from an existing plan of their tree, without planning again.",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	replans: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "topology_replans_total",
		Help:           "Plans dropped to plan the tree again, by reason: capacity (the planned node no longer has room) or filter (a planned member failed on its node).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"reason"}),
	failures: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "topology_placement_failures_total",
		Help:           "Trees that could not be placed, by the topology level at which no domain had room (\"any\" when no level was involved).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"level"}),
	planDuration: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "topology_plan_duration_seconds",
		Help:           "Time to plan the placement of a tree.",
		Buckets:        k8smetrics.ExponentialBuckets(0.0001, 2, 18),
		StabilityLevel: k8smetrics.ALPHA,
	}),
	preemptions: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "preemption_attempts_total",
		Help:           "Preemption decisions of gangs that could not be placed, by result: preempted, no_victims (no domain can be freed enough) or not_allowed (preemptionPolicy Never).",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"result"}),
	victims: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "preemption_victims_total",
		Help:           "Pods evicted by gang preemption.",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	victimGangs: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "preemption_victim_gangs_total",
		Help:           "Running gangs evicted whole by gang preemption.",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	preemptionDuration: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "preemption_duration_seconds",
		Help:           "Time to choose the victims of one gang preemption (its dry runs).",
		Buckets:        k8smetrics.ExponentialBuckets(0.0001, 2, 18),
		StabilityLevel: k8smetrics.ALPHA,
	}),
}

var registerOnce sync.Once

// RegisterMetrics adds the plugin's metrics to the registry the scheduler serves (once).
func RegisterMetrics() {
	reservation.RegisterMetrics()
	registerOnce.Do(func() {
		legacyregistry.MustRegister(metrics.plans, metrics.planReuse, metrics.replans, metrics.failures, metrics.planDuration,
			metrics.preemptions, metrics.victims, metrics.victimGangs, metrics.preemptionDuration)
		// Every known label value is exposed from the start (at 0), so that rates, dashboards
		// and alerts see the series before the first event of its kind.
		for _, result := range []string{"placed", "unplaceable"} {
			metrics.plans.WithLabelValues(result)
		}
		for _, reason := range []string{"capacity", "filter"} {
			metrics.replans.WithLabelValues(reason)
		}
		metrics.failures.WithLabelValues("any")
		for _, result := range []string{"preempted", "no_victims", "not_allowed"} {
			metrics.preemptions.WithLabelValues(result)
		}
	})
}
