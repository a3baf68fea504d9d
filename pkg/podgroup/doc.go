// Package podgroup is lockstep's group model, the one home of the logic the plugins and the
// controller share: it watches PodGroups, CompositePodGroups and the pods that belong to
// them (filed by pkg/filing), arranges them as trees with a root, keeps per-group pod
// counts (known, reserved, bound), decides readiness, validates hierarchies and writes group
// status.
//
// The Model keeps its state in parts under one lock — the Index of groups (index.go), the
// Members of each PodGroup (members.go), the Attempts of the scheduler (attempts.go) — and
// splits its work by role:
//   - the Model takes the informers' news and keeps the trees and their members
//     (model.go, membership.go, filing.go), settling every tree a change touched before the
//     lock is released (settle.go);
//   - the Gate answers the plugins' read-only questions: may a pod be scheduled, in which
//     order, what does its tree look like, which condition should a group carry (gate.go,
//     views.go, preemption.go, exclusive.go, status.go);
//   - Permits owns the attempts: Reserve, Permit, failures, deadlines and retries, and is
//     the only one to allow or reject a waiting pod (permits.go, retries.go).
//
// Data flows one way: informers feed the Model; plugins ask the Gate and report to Permits
// what happened in a scheduling cycle; the model turns that into status conditions and
// events, one write per transition.
//
// Readiness mirrors upstream's GangScheduling with CompositePodGroups: a PodGroup is ready
// when count ≥ minCount (basic: 1); a CompositePodGroup is ready when at least minGroupCount
// (basic: 1) of its children are ready. A pod may proceed when its own PodGroup and every
// ancestor on its path to the root are ready ("path ready"). Which count is used depends on
// the question: pods that exist (may it be tried?), pods not yet failed this round (can it
// still succeed?), pods reserved or bound (may it bind?).
//
// Locking: the model's lock is never held while calling into the scheduling framework's
// queue (the queue calls PreEnqueue, QueueSort and queueing hints under its own lock), so
// methods that need the queue return what to do and the model does it after unlocking. The
// one exception is Permits allowing waiting pods, which it does under its lock so that no
// rejection can slip between its decision and its Allow calls (see Permits).
package podgroup
