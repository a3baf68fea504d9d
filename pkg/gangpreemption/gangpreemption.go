// Package gangpreemption decides a gang's preemption: in which domain, evicting which pods,
// a tree that cannot be placed can be placed. It is to lockstep's planner what upstream's
// framework/preemption is to DefaultPreemption: the dry runs, victim selection, reprieve
// and costs, apart from the plugin that stores the plan, nominates members and tells the
// groups (pkg/plugins/topology).
//
// In every domain of the level the tree's root requires (the whole cluster if it requires
// none), the pods of lower priority are taken out of a copy of the domain's nodes, the tree
// is planned on the copy, and then, most important first, every victim the plan does not
// need gone is given back (upstream's reprieve, with the plan held fixed). A running gang is
// one victim: all its bound members or none (its disruption unit, podgroup.Unit). The domain
// chosen is the cheapest by (PodDisruptionBudgets violated, highest victim priority, gangs
// broken, pods evicted), as upstream orders its candidates. Resources alone bound each
// domain's cost before its dry run: domains that cannot hold the tree are not run, and the
// rest run cheapest bound first, until none left can beat the cheapest found.
package gangpreemption

import (
	"container/heap"
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// TimeLimit bounds the dry runs of one decision once a domain was found.
const TimeLimit = 2 * time.Second

// Trees is what the evaluator reads of the group model: which gang, and which disruption
// unit, a running pod belongs to.
type Trees interface {
	Summary(pod *v1.Pod) (podgroup.Summary, bool)
	UnitOf(pod *v1.Pod) (podgroup.Unit, bool)
	// MayFree reports whether any pod on a node may be taken (or leaves anyway) for a tree
	// of priority of: false spares the dry run a look at every pod of every node.
	MayFree(of int32, orEqual bool) bool
	// Regrouped returns the nodes whose pods Summary or UnitOf may answer otherwise for since
	// change since (all: any node), and the number of the last change (podgroup.Gate).
	Regrouped(since uint64) (nodes []string, all bool, now uint64)
}

// Domain is a set of nodes a tree may be placed in whole: a domain of the level its root
// requires, or the whole cluster.
type Domain struct {
	// Name names it in messages: "rack z0-b0-r1", or "the cluster". Key tells it from every
	// other domain (its path), where names may repeat (rack r1 of two blocks).
	Name, Key string
	Nodes     []string
	// Version changes whenever one of the nodes or their pods change, and never comes back;
	// 0 where it is not known (the nodes' NodeInfo generations are read instead).
	Version uint64
}

// id identifies the domain among the others: its Key, its Name where it has none. Read for
// every domain at each decision, it allocates nothing.
func (d Domain) id() string {
	if d.Key != "" {
		return d.Key
	}
	return d.Name
}

// Evictions are the pods other trees' preemptions are evicting, and the nodes they are on.
type Evictions struct {
	Pods  sets.Set[types.UID]
	Nodes sets.Set[string]
}

// Placement is a plan of the tree: where each pending member goes.
type Placement interface {
	NodeOf(member types.UID) (string, bool)
}

// DryRun is the planner as one decision sees it.
type DryRun interface {
	// Domains are the domains the tree may be freed in. A node is in one of them at most.
	// They are the dry run's to keep: the caller does not change them.
	Domains() []Domain
	// DomainOf returns the place in Domains of the domain whose Nodes hold the node, false if
	// none does.
	DomainOf(node string) (int, bool)
	// Exclusive reports whether a group of the tree takes its domain to itself: then no pod
	// may stay in the domain freed for it.
	Exclusive() bool
	// Evicting are the pods other trees' preemptions are evicting: they leave at no cost,
	// like pods already terminating, before the informer says so.
	Evicting() Evictions
	// Plan plans the tree on infos (a copy of the snapshot from which removed were taken
	// out), on d's nodes only; false if it does not fit.
	Plan(ctx context.Context, infos []fwk.NodeInfo, d Domain, removed []fwk.PodInfo) (Placement, bool)
}

// Mode says what a dry run may take out of a domain.
type Mode int

const (
	// Preempt takes the pods of priority below the tree's: they are preempted.
	Preempt Mode = iota
	// Reserve takes those at or below it: a reservation waits for them to end, and the domain
	// chosen is the one likely to be free soonest (Cost.Sooner).
	Reserve
)

// takes reports whether a pod or gang of priority prio may be taken out for a tree of
// priority of.
func (m Mode) takes(prio, of int32) bool {
	if m == Preempt {
		return prio < of
	}
	return prio <= of
}

// Evaluator finds the domain a tree can be freed in. One is built per plugin and shared by
// its decisions.
type Evaluator struct {
	handle fwk.PluginsRunner
	// pre runs the PreFilter plugins for the reprieve; nil where the handle runs none
	// (resources only).
	pre   preFilterRunner
	trees Trees
	// pods tells whether a pod is bound (the snapshot also holds pods the scheduler only
	// assumed); pdbs which evictions budgets allow. Either may be nil.
	pods corelisters.PodLister
	pdbs policylisters.PodDisruptionBudgetLister
	// nodes finds nodes in the snapshot by name; bounds keeps each domain's bound from one
	// decision to the next (bounds.go).
	nodes  nodeNames
	bounds boundCache
	// scratch is the node-long lists of a decision, reused by the next (scratch.go).
	scratch scratch
}

// preFilterRunner is the part of the profile's framework that runs PreFilter plugins; the
// handle a plugin gets is the framework.
type preFilterRunner interface {
	RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string])
}

// New returns an evaluator running the profile's plugins through handle.
func New(handle fwk.PluginsRunner, trees Trees, pods corelisters.PodLister, pdbs policylisters.PodDisruptionBudgetLister) *Evaluator {
	e := &Evaluator{handle: handle, trees: trees, pods: pods, pdbs: pdbs, bounds: boundCache{now: time.Now, maxRoomHosts: maxRoomHosts}}
	e.pre, _ = handle.(preFilterRunner)
	return e
}

// Cheapest returns the cheapest domain dry offers that the tree could be freed in
// (Preempt: Cost.Less; Reserve: Cost.Sooner), nil if none. Domains run from the lowest bound
// on their cost up, and only until no domain left can beat the cheapest found (bound.go).
func (e *Evaluator) Cheapest(ctx context.Context, dry DryRun, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo, mode Mode) *Choice {
	logger := klog.FromContext(ctx)
	if !e.trees.MayFree(p.Priority, mode == Reserve) {
		logger.V(5).Info("Dry run skipped: no pod on any node may be taken", "root", tree.Key, "priority", p.Priority, "reserving", mode == Reserve)
		return nil
	}
	buf, done := e.scratch.take(len(infos))
	defer done()
	run := e.newDecision(dry, tree, p, infos, mode, buf)
	// The domains that may hold the tree by resources, from the lowest bound on their cost
	// up (bound.go); the bounds of domains whose nodes did not change since an earlier
	// decision of a tree of the same shape are that decision's, and domains whose nodes did
	// not change since an earlier decision of the same threshold are bounded from what that
	// decision read of them, once their floor is the lowest (bounds.go, inventories.go).
	domains := run.domains
	e.bounds.regrouped(e.trees, run)
	kept := e.bounds.forDecision(run.shape(), run.threshold(), domains)
	defer e.bounds.done(kept)
	candidates := buf.bounded
	var sources [nodesSource + 1]int
	for i, d := range domains {
		floor, ok, source := kept.lowerBound(run, i, d)
		sources[source]++
		if ok {
			candidates = append(candidates, boundedDomain{at: i, floor: floor, onlyFloor: source == inventorySource})
		}
	}
	buf.bounded = candidates
	queue := &byFloor{domains: candidates, mode: mode}
	heap.Init(queue)
	deadline := time.Now().Add(TimeLimit)
	var best *Choice
	runs, refined := 0, 0
	defer func() {
		logger.V(5).Info("Dry runs", "root", tree.Key, "domains", len(domains), "floorsFromInventory", sources[inventorySource],
			"refined", refined, "boundedFromNodes", sources[nodesSource], "mayHold", len(candidates), "run", runs, "reserving", mode == Reserve)
	}()
	for queue.Len() > 0 {
		cand := queue.domains[0]
		if best != nil && (time.Now().After(deadline) || !mode.better(cand.floor, best.Cost)) {
			break
		}
		if cand.onlyFloor {
			// The lowest is a floor: bounded, the domain goes back at its bound.
			refined++
			floor, ok := kept.refine(run, cand.at, domains[cand.at])
			if !ok {
				heap.Pop(queue)
				continue
			}
			queue.domains[0].floor, queue.domains[0].onlyFloor = floor, false
			heap.Fix(queue, 0)
			continue
		}
		heap.Pop(queue)
		runs++
		c := e.free(ctx, run, domains[cand.at])
		if c == nil {
			continue
		}
		logger.V(5).Info("Dry run candidate", "root", tree.Key, "domain", c.Domain.Name, "pods", c.Cost.Pods, "gangs", c.Cost.Gangs,
			"priority", c.Cost.Priority, "pdbViolations", c.Cost.PDB, "lasting", c.Cost.Lasting, "reserving", mode == Reserve,
			"bound", cand.floor)
		if best == nil || mode.better(c.Cost, best.Cost) {
			best = c
		}
	}
	return best
}

// byFloor orders the domains that may hold the tree as the search takes them: the lowest
// floor first (Mode.better), the first offered among equals, as a stable sort by bound
// orders them; a domain with only a floor goes back at its bound before it can be run.
type byFloor struct {
	domains []boundedDomain
	mode    Mode
}

func (q *byFloor) Len() int { return len(q.domains) }
func (q *byFloor) Less(i, j int) bool {
	a, b := q.domains[i], q.domains[j]
	switch {
	case q.mode.better(a.floor, b.floor):
		return true
	case q.mode.better(b.floor, a.floor):
		return false
	}
	return a.at < b.at
}
func (q *byFloor) Swap(i, j int) { q.domains[i], q.domains[j] = q.domains[j], q.domains[i] }
func (q *byFloor) Push(x any)    { q.domains = append(q.domains, x.(boundedDomain)) }
func (q *byFloor) Pop() any {
	last := q.domains[len(q.domains)-1]
	q.domains = q.domains[:len(q.domains)-1]
	return last
}

// newDecision gathers what every domain's dry run of one decision shares. The nodes' pods are
// read as domains need them (classifier), into buf.
func (e *Evaluator) newDecision(dry DryRun, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo, mode Mode, buf *scratch) *decision {
	members, placed := map[types.UID]*v1.Pod{}, sets.New[string]()
	tree.Walk(func(g *podgroup.GroupView) {
		for _, p := range g.Pending {
			members[p.UID] = p
		}
		placed.Insert(g.PlacedNodes...)
	})
	evicting := dry.Evicting()
	index := e.nodes.get(infos)
	run := &decision{dry: dry, tree: tree, infos: infos, index: index, pdbs: e.listPDBs(), members: members,
		exclusive: dry.Exclusive(), mode: mode, priority: p.Priority, domains: dry.Domains(), own: sets.New[int](),
		nodes: e.newClassifier(infos, index, p, mode, evicting.Pods, members, buf), scratch: buf}
	run.need, run.slot = needOf(members)
	for n := range evicting.Nodes.Union(placed) {
		if i, ok := dry.DomainOf(n); ok {
			run.own.Insert(i)
		}
	}
	return run
}

// bound reports whether the API server has the pod bound.
func (e *Evaluator) bound(pod *v1.Pod) bool {
	if e.pods == nil {
		return true
	}
	p, err := e.pods.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && p.UID == pod.UID && p.Spec.NodeName != ""
}

// listPDBs lists the PodDisruptionBudgets, none if they cannot be listed.
func (e *Evaluator) listPDBs() []*policy.PodDisruptionBudget {
	if e.pdbs == nil {
		return nil
	}
	out, err := e.pdbs.List(labels.Everything())
	if err != nil {
		return nil
	}
	return out
}

// StuckMargin is how long past its deletion grace period (its deletionTimestamp) a
// terminating pod is still counted as leaving. One past it is stuck (its node gone, a
// finalizer nobody removes): it holds its room for as long as anyone can tell, no eviction
// frees it, and no preemptor waits for it.
const StuckMargin = 30 * time.Second

// Leaving reports whether a terminating pod is still leaving at now: its deletion grace period
// plus StuckMargin has not passed.
func Leaving(pod *v1.Pod, now time.Time) bool {
	return pod.DeletionTimestamp != nil && now.Before(pod.DeletionTimestamp.Add(StuckMargin))
}
