// Package leader tells lockstep's components whether this scheduler leads. Only the leader
// schedules (kube-scheduler runs its scheduling loop only while it holds the lease and exits
// when it loses it); lockstep's parts that act on the cluster (status writes, events, the
// workload controller) follow the same lease, while a standby keeps its caches warm.
package leader

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// leading is 1 while this process leads: which replica of a Deployment leads is visible on
// /metrics.
var leading = k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
	Subsystem:      "lockstep",
	Name:           "leader",
	Help:           "1 when this scheduler holds its leader election lease (or runs without leader election) and schedules; 0 on a standby.",
	StabilityLevel: k8smetrics.ALPHA,
})

var registerOnce sync.Once

// Elected is closed once this process leads. It never reopens: a kube-scheduler that loses
// its lease exits.
type Elected struct {
	once sync.Once
	ch   chan struct{}
}

// New returns a signal that is not leading yet.
func New() *Elected {
	registerOnce.Do(func() { legacyregistry.MustRegister(leading) })
	return &Elected{ch: make(chan struct{})}
}

// Lead marks this process the leader; later calls do nothing.
func (e *Elected) Lead() {
	e.once.Do(func() {
		leading.Set(1)
		close(e.ch)
	})
}

// Leading reports whether this process leads.
func (e *Elected) Leading() bool {
	select {
	case <-e.ch:
		return true
	default:
		return false
	}
}

// Done is closed once this process leads.
func (e *Elected) Done() <-chan struct{} { return e.ch }

// Run calls fn with ctx once this process leads, unless ctx ends first.
func (e *Elected) Run(ctx context.Context, fn func(context.Context)) {
	go func() {
		select {
		case <-e.ch:
			fn(ctx)
		case <-ctx.Done():
		}
	}()
}

// Lock wraps a leader-election lock: the first time this process writes the lease as its
// holder (it acquired it), the signal fires. kube-scheduler's leader elector calls its own
// callbacks, which lockstep cannot add to; the lock is what it shares.
type Lock struct {
	resourcelock.Interface
	elected *Elected
}

// WrapLock returns lock, reporting acquisition to e.
func WrapLock(lock resourcelock.Interface, e *Elected) *Lock {
	return &Lock{Interface: lock, elected: e}
}

// Create creates the lease; success makes this process the holder.
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, ler)
	l.observe(err, ler)
	return err
}

// Update renews or takes over the lease; success makes this process the holder.
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, ler)
	l.observe(err, ler)
	return err
}

func (l *Lock) observe(err error, ler resourcelock.LeaderElectionRecord) {
	if err == nil && ler.HolderIdentity == l.Identity() && ler.HolderIdentity != "" {
		l.elected.Lead()
	}
}

// Recorder passes events on only while this process leads: a standby announces nothing.
type Recorder struct {
	events.EventRecorder
	elected *Elected
}

// GateRecorder returns r, silent until e leads.
func GateRecorder(r events.EventRecorder, e *Elected) *Recorder {
	return &Recorder{EventRecorder: r, elected: e}
}

// Eventf records an event if this process leads.
func (r *Recorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	if r.EventRecorder != nil && r.elected.Leading() {
		r.EventRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
	}
}
