package bind

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/flowcontrol"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// metrics say whether binds wait, and for what: room in the window (the apiserver takes
// binds slower than the scheduler releases pods) or the bind client's rate limit (qps/burst
// too low), and how large the window is.
var metrics = struct {
	inFlight *k8smetrics.Gauge
	window   *k8smetrics.Gauge
	slotWait *k8smetrics.Histogram
	rateWait *k8smetrics.Histogram
}{
	inFlight: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "binds_in_flight",
		Help:           "Bind requests LockstepBind has outstanding (at most its window, lockstep_bind_window).",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	window: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "bind_window",
		Help:           "Bind requests LockstepBind lets out at once: a window that grows while binds succeed promptly and shrinks when the apiserver refuses, fails or slows them (at most maxBindsInFlight).",
		StabilityLevel: k8smetrics.ALPHA,
	}),
	slotWait: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "bind_slot_wait_seconds",
		Help:           "Time a pod waited for room in LockstepBind's window before its bind request.",
		Buckets:        k8smetrics.ExponentialBuckets(0.0001, 4, 10),
		StabilityLevel: k8smetrics.ALPHA,
	}),
	rateWait: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
		Subsystem:      podgroup.Subsystem,
		Name:           "bind_rate_limiter_wait_seconds",
		Help:           "Time a bind request waited for the bind client's rate limiter (qps/burst).",
		Buckets:        k8smetrics.ExponentialBuckets(0.0001, 4, 10),
		StabilityLevel: k8smetrics.ALPHA,
	}),
}

var registerOnce sync.Once

// RegisterMetrics adds the plugin's metrics to the registry the scheduler serves (once).
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(metrics.inFlight, metrics.window, metrics.slotWait, metrics.rateWait)
	})
}

// newObservedWindow is a window on the wall clock whose size the metric follows.
func newObservedWindow(max int64) *Window {
	w := NewWindow(max, time.Now)
	w.observedSize = metrics.window.Set
	metrics.window.Set(w.size)
	return w
}

// observedLimiter is client-go's token bucket, timing every wait: client-go's own
// rest_client_rate_limiter_duration_seconds does not tell the bind client from the others.
type observedLimiter struct {
	flowcontrol.RateLimiter
}

func newObservedLimiter(qps float32, burst int) flowcontrol.RateLimiter {
	return observedLimiter{flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

func (l observedLimiter) Wait(ctx context.Context) error {
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	metrics.rateWait.Observe(time.Since(start).Seconds())
	return err
}
