package topology

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// clearNominations clears the nominations the tree's pending members other than the scout
// still carry when the tree is planned afresh: a preemption nominated each member to the node
// its plan gave it (in the scheduler's memory), and the member that was the scout then had it
// written on its status. Once that plan has ended they hold no node, but the scheduler's
// Filter still counts each one there for every pod of its priority or lower, its own siblings
// included, where the planner, which knows them as members, does not. The fresh plan can then
// put the scout on a sibling's node, and Filter refuses it there; on upstream's
// GangPreemptionPodGroups shape (a host port per gang), a gang whose preemption plan lost its
// room was refused each node its siblings were nominated to, and never bound.
//
// Members of a fresh plan need no nomination: lockstep nominates a gang's members only while
// they wait for the pods it evicts (preempt). The scout's own nomination is the scheduler's
// to settle at the end of its cycle, and never counts against itself.
func (pl *Topology) clearNominations(logger klog.Logger, tree *podgroup.GroupView, scout *v1.Pod) {
	var written []*v1.Pod
	tree.Walk(func(g *podgroup.GroupView) {
		for _, m := range g.Pending {
			if m.UID == scout.UID {
				continue
			}
			status, memory := m.Status.NominatedNodeName, ""
			if pl.nominations != nil {
				status, memory = pl.nominations.Of(m.UID)
				if status == "" && memory == "" {
					continue
				}
				pl.nominations.Note(m, "")
			}
			pl.handle.DeleteNominatedPodIfExists(m)
			if status != "" && m.Status.NominatedNodeName != "" {
				written = append(written, m)
			}
			logger.V(4).Info("Stale nomination of a member cleared: its tree is planned afresh", "pod", klog.KObj(m), "group", g.Key, "scout", klog.KObj(scout), "status", status, "memory", memory)
		}
	})
	pl.notes.Unnominate(logger, written)
}
