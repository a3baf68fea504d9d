// Package podgroup is lockstep's group model, the one home of the logic the plugins and the
// controller share: it watches PodGroups, CompositePodGroups and the pods that name them,
// arranges them as trees with a root, keeps per-group pod counts (known, assumed, bound),
// decides readiness, validates hierarchies and writes group status.
//
// Data flows one way: informers feed the Manager; plugins read it and report what happened
// in a scheduling cycle (a pod assumed, failed, allowed); the Manager turns those reports
// into status conditions and events, one write per transition.
//
// Readiness mirrors upstream's GangScheduling with CompositePodGroups: a PodGroup is ready
// when count ≥ minCount (basic: 1); a CompositePodGroup is ready when at least minGroupCount
// (basic: 1) of its children are ready. A pod may proceed when its own PodGroup and every
// ancestor on its path to the root are ready ("path ready"). Which count is used depends on
// the question: pods that exist (may it be tried?), pods not yet failed this round (can it
// still succeed?), pods assumed or bound (may it bind?).
//
// Locking: the Manager's mutex is never held while calling into the scheduling framework
// (the queue calls PreEnqueue, QueueSort and queueing hints under its own lock), so methods
// that need the framework return what to do and the plugin does it.
package podgroup
