package gangpreemption

import (
	"context"
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// decision is what every domain's dry run of one decision shares: the tree and its pending
// members, the snapshot and its nodes by name, what each node holds (read as domains need
// it), and the budgets.
type decision struct {
	dry     DryRun
	tree    *podgroup.GroupView
	members map[types.UID]*v1.Pod
	infos   []fwk.NodeInfo
	index   *nodeIndex
	nodes   *classifier
	pdbs    []*policy.PodDisruptionBudget
	// need is what the pending members request in all, slot what the smallest requests.
	need, slot capacity.Resources
	// exclusive: the tree takes its domain to itself; no pod may be given back there.
	exclusive bool
	mode      Mode
	priority  int32
	// domains are the domains the dry run offers; own the places among them of those whose
	// nodes hold pods other trees' preemptions are evicting, or the tree's own bound or
	// reserved members: what such a domain holds is this decision's alone (bounds.go).
	domains []Domain
	own     sets.Set[int]
	// sim is the simulation the dry runs share, one after the other (simulate); scratch
	// holds its list, and what each node holds (scratch.go).
	sim     *simulation
	scratch *scratch
}

// free is one domain's dry run: the domain's units taken out, the tree planned in the
// domain, and every unit the plan does not need gone given back. Nil if the tree does not
// fit even with every unit gone.
func (e *Evaluator) free(ctx context.Context, run *decision, d Domain) *Choice {
	var candidates []*Unit
	picked := sets.New[string]()
	terminating := 0
	for _, n := range d.Nodes {
		on := run.on(n)
		if on == nil {
			continue
		}
		for _, u := range on.units {
			if !picked.Has(u.unit.Key) {
				picked.Insert(u.unit.Key)
				candidates = append(candidates, u.unit)
			}
		}
		terminating += len(on.leaving)
	}
	if len(candidates) == 0 && terminating == 0 {
		return nil
	}
	// The tree is planned as if the lowest tier of victims were gone, then the next, ...:
	// the plan takes room from pods of the lowest priority that can give it, never from a
	// pod of priority 90 where pods of priority 1 would do (the reprieve holds the plan
	// fixed, so it cannot undo the plan's choice). In a domain an exclusive group takes,
	// every pod goes.
	tiers := priorityTiers(candidates)
	if run.exclusive {
		tiers = tiers[len(tiers)-1:]
	}
	for _, ceiling := range tiers {
		var tier []*Unit
		for _, u := range candidates {
			if u.Priority() <= ceiling {
				tier = append(tier, u)
			}
		}
		c := e.planWithout(ctx, run, d, tier)
		if c == nil {
			continue
		}
		if run.exclusive {
			return c
		}
		// The plan does not know which nodes' victims cost least: with every unit of the
		// tier gone, it may take a node of each of five gangs where four gangs' nodes would
		// do. Planned again without only the fewest units that give the members room
		// (bounder.leanest), the dry run keeps whichever costs less.
		if lean := run.bounderOf(d).leanest(tier); lean != nil && len(lean) < len(tier) {
			l := e.planWithout(ctx, run, d, lean)
			klog.FromContext(ctx).V(5).Info("Dry run planned again without the fewest units", "root", run.tree.Key, "domain", d.Name,
				"units", len(lean), "of", len(tier), "planned", l != nil, "cost", costOf(l), "before", c.Cost)
			if l != nil && run.mode.better(l.Cost, c.Cost) {
				return l
			}
		}
		return c
	}
	return nil
}

// costOf is a choice's cost for logs, nil if none.
func costOf(c *Choice) *Cost {
	if c == nil {
		return nil
	}
	return &c.Cost
}

// planWithout plans the tree in domain d on a copy of the nodes without the units (and the
// pods already leaving), then gives back, most important first, every unit the plan does
// without. Nil if the tree does not fit.
func (e *Evaluator) planWithout(ctx context.Context, run *decision, d Domain, units []*Unit) *Choice {
	logger := klog.FromContext(ctx)
	// A copy of every node a unit (or a leaving pod) is on, without them; the PreFilter
	// states of the plan forget them too.
	sim := run.simulate()
	removed := run.leavingInfos(d)
	for _, u := range units {
		removed = append(removed, u.Pods()...)
	}
	for _, pi := range removed {
		sim.remove(logger, pi.GetPod())
	}
	plan, ok := run.dry.Plan(ctx, sim.infos, d, removed)
	if !ok {
		return nil
	}
	candidates := append([]*Unit(nil), units...)
	violating := pdbViolations(candidates, run.pdbs)
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.Priority() != b.Priority() {
			return a.Priority() > b.Priority()
		}
		if violating[a.Key] != violating[b.Key] {
			return violating[a.Key] > 0
		}
		return preemption.MoreImportantVictim(a.Victim, b.Victim)
	})
	back := e.newReprieve(ctx, sim, plan, run.members, removed)
	var apart sets.Set[*Unit]
	if !run.exclusive {
		apart = sets.New(back.giveBackApart(candidates)...)
	}
	c := &Choice{Domain: d, Plan: plan}
	for _, u := range candidates {
		if apart.Has(u) || !run.exclusive && back.giveBack(logger, u) {
			continue // reprieved
		}
		c.Victims = append(c.Victims, u)
		c.Cost.Priority = max(c.Cost.Priority, u.Priority())
		c.Cost.Pods += len(u.Pods())
		c.Cost.PDB += violating[u.Key]
		if u.Gang {
			c.Cost.Gangs++
		}
		if u.Lasting {
			c.Cost.Lasting++
		}
	}
	return c
}

// on returns what the named node holds, nil if the snapshot has no such node.
func (run *decision) on(node string) *nodeUnits {
	if i, ok := run.index.of(node); ok {
		return run.nodes.on(i)
	}
	return nil
}

// maxPriorityTiers bounds the plans one domain's dry run makes, one per tier of victims.
const maxPriorityTiers = 6

// priorityTiers returns the ceilings of the tiers a dry run frees a domain by, lowest first:
// each distinct victim priority, at most maxPriorityTiers of them (spread over the range,
// the highest always last), so that the last tier takes every candidate. At least one.
func priorityTiers(units []*Unit) []int32 {
	distinct := sets.New[int32]()
	for _, u := range units {
		distinct.Insert(u.Priority())
	}
	all := sets.List(distinct)
	if len(all) == 0 {
		return []int32{math.MaxInt32}
	}
	if len(all) <= maxPriorityTiers {
		return all
	}
	out := make([]int32, 0, maxPriorityTiers)
	for i := 1; i <= maxPriorityTiers; i++ {
		out = append(out, all[i*len(all)/maxPriorityTiers-1])
	}
	return out
}

// pdbViolations counts, per unit, the pods whose eviction a PodDisruptionBudget does not
// allow (upstream's accounting).
func pdbViolations(units []*Unit, pdbs []*policy.PodDisruptionBudget) map[string]int {
	out := map[string]int{}
	if len(pdbs) == 0 {
		return out
	}
	victims := make([]preemption.Victim, len(units))
	for i, u := range units {
		victims[i] = u
	}
	violating, _ := preemption.FilterVictimsWithPDBViolation(victims, pdbs)
	for _, v := range violating {
		out[v.Victim.(*Unit).Key] = v.ViolateCount
	}
	return out
}

// leavingInfos returns the PodInfos of pods already leaving the domain's nodes.
func (run *decision) leavingInfos(d Domain) []fwk.PodInfo {
	var out []fwk.PodInfo
	seen := sets.New[types.UID]()
	for _, n := range d.Nodes {
		on := run.on(n)
		if on == nil {
			continue
		}
		for _, p := range on.leaving {
			if seen.Has(p.UID) {
				continue
			}
			seen.Insert(p.UID)
			if pi, err := framework.NewPodInfo(p); err == nil {
				out = append(out, pi)
			}
		}
	}
	return out
}

// simulation is a copy-on-write view of the snapshot's nodes, with pods taken out or put
// back.
type simulation struct {
	infos  []fwk.NodeInfo
	index  *nodeIndex
	copied map[int]bool
}

// newSimulation returns a simulation of infos whose list is buf (its contents replaced).
func newSimulation(infos []fwk.NodeInfo, index *nodeIndex, buf []fwk.NodeInfo) *simulation {
	return &simulation{infos: append(buf[:0], infos...), index: index, copied: map[int]bool{}}
}

// simulate returns the decision's simulation, as the snapshot is: the first dry run copies
// the snapshot's list of nodes, each later one puts back the nodes the last one copied
// rather than copy every node again. Dry runs run one after the other, and none keeps its
// simulation past its plan and reprieve.
func (run *decision) simulate() *simulation {
	s := run.sim
	if s == nil {
		run.sim = newSimulation(run.infos, run.index, run.scratch.sim)
		run.scratch.sim = run.sim.infos
		return run.sim
	}
	for i := range s.copied {
		s.infos[i] = run.infos[i]
	}
	clear(s.copied)
	return s
}

// get returns the node's info as simulated, copying it on first use.
func (s *simulation) get(name string) fwk.NodeInfo {
	i, ok := s.index.of(name)
	if !ok {
		return nil
	}
	if !s.copied[i] {
		s.infos[i] = s.infos[i].Snapshot()
		s.copied[i] = true
	}
	return s.infos[i]
}

func (s *simulation) remove(logger klog.Logger, p *v1.Pod) {
	if ni := s.get(p.Spec.NodeName); ni != nil {
		if err := ni.RemovePod(logger, p); err != nil {
			logger.V(5).Info("Preemption dry run: pod not on its node", "pod", klog.KObj(p), "node", p.Spec.NodeName, "err", err)
		}
	}
}

func (s *simulation) add(pi fwk.PodInfo) {
	if ni := s.get(pi.GetPod().Spec.NodeName); ni != nil {
		ni.AddPodInfo(pi)
	}
}
