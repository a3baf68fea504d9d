package podgroup

import (
	"fmt"
	"time"

	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// A running gang a preemptor takes is taken whole: the preemptor's executor evicts every pod
// of its disruption unit. But an executor stops at its first eviction that fails (upstream's
// cancels the rest of its candidate's victims), and a gang must never be left partly evicted:
// its members left running would hold their room without their peers, for ever (the gang is a
// gang again: it waits until it is placed whole). One path finishes what a preemption started:
// a unit that entered Disrupted is looked at again disruptionFinish later, and whatever of it
// still runs, neither evicted nor leaving, is evicted by the model, as a release is; again,
// while some is left. Only the leader evicts.

// disruptionFinish is how long after a unit was preempted the model finishes its eviction:
// long enough for the executor's evictions to be seen.
const disruptionFinish = 10 * time.Second

// armFinishLocked looks at the preempted unit top again in disruptionFinish.
func (p *Permits) armFinishLocked(top Key) {
	m := p.m
	m.clock.AfterFunc(disruptionFinish, func() {
		m.update(m.logger, func(eff *effects) { p.finishDisruptionLocked(eff, top) })
	})
}

// finishDisruptionLocked evicts what still runs of the preempted unit top, if it is still
// Disrupted: what its preemptor's executor did not evict.
func (p *Permits) finishDisruptionLocked(eff *effects, top Key) {
	m := p.m
	g := m.index.Get(top)
	if !g.Exists() || g.life.state != Disrupted {
		return // placed again, or gone
	}
	pods, names := p.runningLocked(top)
	if len(pods) == 0 {
		return
	}
	if m.leading {
		why := fmt.Sprintf("gang %s was preempted whole but %d of its pods still run (%s): evicting them, so that it is not left partly evicted",
			top.Name, len(pods), someNames(names))
		eff.evict = append(eff.evict, eviction{group: g.Object(), pods: pods, why: why, reason: v1alpha1.ReasonPreemptionByScheduler})
		eff.logger.V(2).Info("Finishing a gang's preemption", "unit", top, "evicted", klog.KObjSlice(pods))
	}
	p.armFinishLocked(top) // until none is left
}
