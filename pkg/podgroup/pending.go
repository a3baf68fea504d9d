package podgroup

import (
	"sync/atomic"
	"time"

	k8smetrics "k8s.io/component-base/metrics"
)

// Pending gangs, as a person and an alert see them: a gang that must still be placed whole
// (its tree has the gang policy and its group was never scheduled, or was disrupted since)
// with members that exist and have no node, pending since the earliest of those members was
// created. A workload kept suspended (queued in Kueue) has no pods and is not pending; a
// replacement member of a running gang is not a gang pending. Computed when the metrics are
// scraped, from the model, so nothing is kept per gang for them.

// PendingGangs counts the pending gangs and how long the oldest has been pending.
func (m *Model) PendingGangs() (count int, oldest time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	since := map[Key]time.Time{}
	gang := map[Key]bool{}
	for _, mem := range m.members.byUID {
		if mem.Bound() || terminated(mem.Pod) {
			continue
		}
		g := m.index.Get(mem.Group)
		if !g.Exists() || g.Scheduled() {
			continue
		}
		root, ok := m.index.RootOf(mem.Group)
		if !ok {
			continue
		}
		isGang, seen := gang[root]
		if !seen {
			m.index.visit(root, func(g *Group) bool {
				isGang = g.IsGang()
				return !isGang
			})
			gang[root] = isGang
		}
		if !isGang {
			continue
		}
		if t, ok := since[root]; !ok || mem.Pod.CreationTimestamp.Time.Before(t) {
			since[root] = mem.Pod.CreationTimestamp.Time
		}
	}
	for _, t := range since {
		oldest = max(oldest, now.Sub(t))
	}
	return len(since), oldest
}

// pendingSource is the model whose pending gangs the metrics report: the scheduler's (one
// per process; NewComponents sets it).
var pendingSource atomic.Pointer[Model]

var (
	pendingGangsDesc = k8smetrics.NewDesc(Subsystem+"_gangs_pending",
		"Gangs pending: not yet placed whole (never scheduled, or disrupted since) with members that exist and have no node. Suspended workloads (queued in Kueue) have no pods and are not counted.",
		nil, nil, k8smetrics.ALPHA, "")
	oldestPendingDesc = k8smetrics.NewDesc(Subsystem+"_gang_oldest_pending_seconds",
		"How long the gang pending longest has been pending, from the creation of its earliest member without a node (0 when none is). Alert on it for gangs stuck behind others.",
		nil, nil, k8smetrics.ALPHA, "")
)

// pendingCollector reports the pending gangs of pendingSource at each scrape.
type pendingCollector struct {
	k8smetrics.BaseStableCollector
}

func (*pendingCollector) DescribeWithStability(ch chan<- *k8smetrics.Desc) {
	ch <- pendingGangsDesc
	ch <- oldestPendingDesc
}

func (*pendingCollector) CollectWithStability(ch chan<- k8smetrics.Metric) {
	count, oldest := 0, time.Duration(0)
	if m := pendingSource.Load(); m != nil {
		count, oldest = m.PendingGangs()
	}
	ch <- k8smetrics.NewLazyConstMetric(pendingGangsDesc, k8smetrics.GaugeValue, float64(count))
	ch <- k8smetrics.NewLazyConstMetric(oldestPendingDesc, k8smetrics.GaugeValue, oldest.Seconds())
}
