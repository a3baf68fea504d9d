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
// scraped, from the model: group by group, from the earliest creation of each group's members
// without a node, which the members' record keeps (Members.Unbound), not pod by pod.

// PendingGangs counts the pending gangs and how long the oldest has been pending.
func (m *Model) PendingGangs() (count int, oldest time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	// The trees of more than one group, by root: the earliest creation of a member without a
	// node (since), whether the tree is a gang (gang). A group that is its own root is counted
	// at once, without them.
	since := map[Key]time.Time{}
	gang := map[Key]bool{}
	for k, created := range m.members.Unbound() {
		g := m.index.Get(k)
		if !g.Exists() || g.problem != "" || g.Scheduled() {
			continue // an invalid group's tree has no root (RootOf)
		}
		if _, ok := g.ParentKey(); !ok {
			if g.IsGang() {
				count++
				oldest = max(oldest, now.Sub(created))
			}
			continue
		}
		root, ok := m.index.RootOf(k)
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
		if t, ok := since[root]; !ok || created.Before(t) {
			since[root] = created
		}
	}
	for _, t := range since {
		oldest = max(oldest, now.Sub(t))
	}
	return count + len(since), oldest
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
