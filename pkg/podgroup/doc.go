// Package podgroup is lockstep's group model, the one home of the logic the plugins and the
// controller share: it watches PodGroups, CompositePodGroups and the pods that belong to
// them (filed by pkg/filing), arranges them as trees with a root, keeps per-group pod
// counts, decides readiness, validates hierarchies, and carries each group through its life.
//
// A gang's life is one state machine (life.go): every group is in one State — Held, Pending,
// Waiting, Allowed, Running, PartiallyBound, Released, Disrupted, Gone — that changes only
// through Life.fire, along an edge of the table Lifecycle (from, event, guard, to, what is
// written, how loud). docs/semantics.md holds the same table, and a test compares them.
// lifecycle.go is the model's side: it computes the facts the guards read, fires the events
// (observed when a change settles, from the scheduler's calls, from timers, from other
// components, or the group's object read back), and does what entering a state asks.
// conditions.go derives what each object should say from its state; short.go and release.go
// hold the two rules that release a running gang (short too long; half bound).
//
// Where each fact lives:
//   - a group's state, since when, the minimum it runs with, whether it ever ran, why it is
//     short (a lost member or its attempt's binds): its Life, in its Index entry (index.go);
//   - which pods belong to which group, bound, gated, completed: Members (members.go), fed by
//     the pod informer only (membership.go);
//   - reservations, waits at Permit, attempts and their backoffs, what the last attempt said:
//     Attempts (attempts.go), owned by Permits;
//   - what was written on each object: the StatusWriter (status.go) — and, for what decides
//     an eviction, the object itself (PodGroupInitiallyScheduled, Short, DisruptionTarget),
//     read back by the Restored event;
//   - plans, reservations, nominations: their owners outside this package, which ask the
//     model and hear from it (RoundObserver: AttemptEnded, TreeScheduled, TreeGone).
//
// The Model keeps its parts under one lock and splits its work by role:
//   - the Model itself takes the informers' news and keeps the trees and their members
//     (model.go, membership.go, filing.go), settling every tree a change touched before the
//     lock is released (settle.go: each group's life observes its counts);
//   - the Gate answers the plugins' read-only questions: may a pod be scheduled, in which
//     order, what does its tree look like, which conditions should a group carry (gate.go,
//     views.go, preemption.go, exclusive.go, conditions.go);
//   - Permits owns the attempts: Reserve, Permit, failures, deadlines and retries, and is
//     the only one to allow or reject a waiting pod (permits.go, retries.go, scout.go).
//
// One pod's Permit: permits.go finds its attempt (permitAttemptLocked), asks whether its tree
// may bind now counting placed members (allowReadyLocked, readiness.go), and either allows
// every ready member at once — their groups take TreeAllowed — or waits (waitLocked); the
// change then settles (settle.go), where each group of the tree observes its counts.
//
// Readiness mirrors upstream's GangScheduling with CompositePodGroups: a PodGroup is ready
// when count ≥ minCount (basic: 1); a CompositePodGroup is ready when at least minGroupCount
// (basic: 1) of its children are ready. A pod may proceed when its own PodGroup and every
// ancestor on its path to the root are ready ("path ready"). Which count is used depends on
// the question: pods that exist (may it be tried?), pods not yet failed this round (can it
// still succeed?), pods reserved or bound (may it bind?), pods bound (does it run?).
//
// Locking: the model's lock is never held while calling into the scheduling framework's
// queue (the queue calls PreEnqueue, QueueSort and queueing hints under its own lock), so
// methods that need the queue return what to do and the model does it after unlocking. The
// one exception is Permits allowing waiting pods, which it does under its lock so that no
// rejection can slip between its decision and its Allow calls (see Permits).
package podgroup
