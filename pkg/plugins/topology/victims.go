package topology

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Victim selection. A tree that cannot be placed looks, in every domain of the level its
// root requires (the whole cluster if it requires none), for the pods of lower priority
// whose eviction lets the whole tree be planned there: all of them are taken out of a copy
// of the domain's nodes, the tree is planned on the copy, and then, most important first,
// every victim that the plan does not need gone is given back (upstream's reprieve, with
// the plan held fixed). A running gang is one victim: all its bound members or none. The
// domain chosen is the cheapest by (PodDisruptionBudgets violated, highest victim priority,
// gangs broken, pods evicted).

// preemptionTimeLimit bounds the dry runs of one decision once a domain was found.
const preemptionTimeLimit = 2 * time.Second

// victimUnit is what is evicted together: a running gang (every bound member of its
// disruption unit, podgroup.Unit) or one pod, as upstream's preemption.Victim, with the nodes it is on.
type victimUnit struct {
	preemption.Victim
	key  string // the gang's root, or the pod
	gang bool
	// root is the gang's root group and its object (its preemption is told there); nil for a
	// pod.
	root    runtime.Object
	rootKey podgroup.Key
	nodes   sets.Set[string]
	// lasting: a pod of a controller that keeps its pods running (a ReplicaSet, StatefulSet,
	// DaemonSet...), which may never end by itself.
	lasting bool
}

// preemptionCost orders the domains a tree could free.
type preemptionCost struct {
	priority         int32 // highest victim priority
	gangs, pods, pdb int
	// lasting counts the victims that may never end by themselves (see victimUnit).
	lasting int
}

// less orders domains as upstream orders preemption candidates, gangs counted: fewest
// PodDisruptionBudget violations, then the lowest highest victim priority, then fewest gangs
// broken, then fewest pods.
func (a preemptionCost) less(b preemptionCost) bool {
	switch {
	case a.pdb != b.pdb:
		return a.pdb < b.pdb
	case a.priority != b.priority:
		return a.priority < b.priority
	case a.gangs != b.gangs:
		return a.gangs < b.gangs
	}
	return a.pods < b.pods
}

// sooner orders the domains a reservation could hold by how soon they are likely to be
// free: fewer pods that may never end, then fewer pods to wait for, fewer gangs, lower
// priority.
func (a preemptionCost) sooner(b preemptionCost) bool {
	switch {
	case a.lasting != b.lasting:
		return a.lasting < b.lasting
	case a.pods != b.pods:
		return a.pods < b.pods
	case a.gangs != b.gangs:
		return a.gangs < b.gangs
	}
	return a.priority < b.priority
}

// lasting reports whether a pod belongs to a controller that keeps its pods running.
func lasting(pod *v1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			switch ref.Kind {
			case "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController", "LeaderWorkerSet":
				return true
			}
		}
	}
	return false
}

// preemptionChoice is one domain freed: the plan made as if the victims were gone.
type preemptionChoice struct {
	domain  string // "rack z0-b0-r1", or "the cluster"
	plan    *Plan
	victims []*victimUnit
	cost    preemptionCost
}

// pods returns the victims' pods.
func (c *preemptionChoice) pods() []*v1.Pod {
	var out []*v1.Pod
	for _, u := range c.victims {
		for _, pi := range u.Pods() {
			out = append(out, pi.GetPod())
		}
	}
	return out
}

// describe says what the choice takes, for conditions and events.
func (c *preemptionChoice) describe() string {
	gangs := fmt.Sprintf("%d gangs whole", c.cost.gangs)
	if c.cost.gangs == 1 {
		gangs = "1 gang whole"
	}
	return fmt.Sprintf("taking %s: evicting %d pods of priority up to %d (%s)", c.domain, c.cost.pods, c.cost.priority, gangs)
}

// selectVictims returns the cheapest domain whose lower-priority pods can be evicted so
// that the tree fits, or nil and why none can.
func (pl *Topology) selectVictims(ctx context.Context, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo) (*preemptionChoice, string) {
	c := pl.cheapestDomain(ctx, tree, p, infos, freeing{below: true})
	if c != nil {
		return c, ""
	}
	return nil, pl.noDomain(tree, infos, fmt.Sprintf("evicting every pod of priority below %d", p.Priority))
}

// freeing says what a dry run may take out of a domain: the pods below the tree's priority
// (preemption), or those at or below it (a reservation waits for them to end).
type freeing struct {
	below bool
}

// takes reports whether a pod or gang of priority prio may be taken out.
func (f freeing) takes(prio, of int32) bool {
	if f.below {
		return prio < of
	}
	return prio <= of
}

// cheapestDomain runs a dry run in every domain of the level the tree's root requires (the
// whole cluster if none) and returns the cheapest domain it could be freed in, nil if none.
func (pl *Topology) cheapestDomain(ctx context.Context, tree *podgroup.GroupView, p podgroup.Preemptor, infos []fwk.NodeInfo, f freeing) *preemptionChoice {
	logger := klog.FromContext(ctx)
	topo := pl.topology.get(pl.levels, infos)
	units, leaving := pl.victimUnits(infos, p, f)
	if len(units) == 0 && len(leaving) == 0 {
		return nil
	}
	dry := &dryRun{tree: tree, infos: infos, topo: topo, units: units, leaving: leaving, pdbs: pl.pdbs(),
		members: map[types.UID]*v1.Pod{}, verdicts: newVerdictCache(), exclusive: exclusiveTree(topo, tree)}
	tree.Walk(func(g *podgroup.GroupView) {
		for _, p := range g.Pending {
			dry.members[p.UID] = p
		}
	})
	level, _ := topo.constraintLevels(tree)
	domains := []*domain{{level: -1, nodes: topo.nodes}}
	if level >= 0 {
		domains = topo.sub[""][level]
	}
	deadline := time.Now().Add(preemptionTimeLimit)
	var best *preemptionChoice
	for _, d := range domains {
		if best != nil && time.Now().After(deadline) {
			break
		}
		c := pl.freeDomain(ctx, dry, d)
		if c == nil {
			continue
		}
		logger.V(5).Info("Dry run candidate", "root", tree.Key, "domain", c.domain, "pods", c.cost.pods, "gangs", c.cost.gangs,
			"priority", c.cost.priority, "pdbViolations", c.cost.pdb, "lasting", c.cost.lasting, "reserving", !f.below)
		if best == nil || (f.below && c.cost.less(best.cost)) || (!f.below && c.cost.sooner(best.cost)) {
			best = c
		}
	}
	return best
}

// noDomain says why no domain could be freed: "<what> would not make room in any rack".
func (pl *Topology) noDomain(tree *podgroup.GroupView, infos []fwk.NodeInfo, what string) string {
	level, _ := pl.topology.get(pl.levels, infos).constraintLevels(tree)
	where := "the cluster"
	if level >= 0 {
		where = "any " + levelName(pl.levels[level])
	}
	return fmt.Sprintf("%s would not make room in %s", what, where)
}

// exclusiveTree reports whether a group of the tree takes a domain to itself: then no pod
// may stay in the domain freed for it.
func exclusiveTree(topo *topology, tree *podgroup.GroupView) bool {
	excl := false
	tree.Walk(func(g *podgroup.GroupView) { excl = excl || topo.exclusiveLevel(g) >= 0 })
	return excl
}

// victimUnits returns, by node, the units that a tree of priority p.Priority may evict
// (gangs whole, other pods one by one), and the pods already terminating, which count as
// gone at no cost.
func (pl *Topology) victimUnits(infos []fwk.NodeInfo, p podgroup.Preemptor, f freeing) (map[string][]*victimUnit, map[string][]*v1.Pod) {
	units := map[string][]*victimUnit{}
	leaving := map[string][]*v1.Pod{}
	// gangs holds each running disruption unit (a gang, or a subtree whose top has
	// disruption mode all), nil for one that is no victim: a unit is looked at once, however
	// many members it has. Members of trees whose groups may be disrupted one by one are
	// victims on their own.
	gangs := map[podgroup.Key]*victimUnit{}
	for _, ni := range infos {
		if ni.Node() == nil {
			continue
		}
		name := ni.Node().Name
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if pod.DeletionTimestamp != nil {
				leaving[name] = append(leaving[name], pod)
				continue
			}
			sum, member := pl.trees.Summary(pod)
			if member && sum.Root == p.Root {
				if !pl.bound(pod) {
					// The tree's own member, reserved in the attempt that failed: its
					// reservation is being released.
					leaving[name] = append(leaving[name], pod)
				}
				continue
			}
			var u *victimUnit
			if member && sum.Unit != (podgroup.Key{}) {
				cached, done := gangs[sum.Unit]
				if !done {
					if f.takes(corev1helpers.PodPriority(pod), p.Priority) {
						if gang, ok := pl.trees.UnitOf(pod); ok && f.takes(gang.Priority, p.Priority) {
							cached = newGangVictim(sum.Unit.String(), gang, infos)
						}
					}
					gangs[sum.Unit] = cached
				}
				if u = cached; u == nil {
					continue
				}
			} else {
				if !f.takes(corev1helpers.PodPriority(pod), p.Priority) {
					continue
				}
				v, err := preemption.NewVictim([]fwk.PodInfo{pi}, corev1helpers.PodPriority(pod), fwk.PodKeyType)
				if err != nil {
					continue
				}
				u = &victimUnit{Victim: v, key: string(pod.UID), nodes: sets.New(name), lasting: lasting(pod)}
			}
			units[name] = append(units[name], u)
		}
	}
	return units, leaving
}

// bound reports whether the API server has the pod bound (the snapshot also holds pods the
// scheduler only assumed).
func (pl *Topology) bound(pod *v1.Pod) bool {
	if pl.podLister == nil {
		return true
	}
	p, err := pl.podLister.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && p.UID == pod.UID && p.Spec.NodeName != ""
}

// newGangVictim makes a running gang one victim.
func newGangVictim(key string, gang podgroup.Unit, infos []fwk.NodeInfo) *victimUnit {
	pis := make([]fwk.PodInfo, 0, len(gang.Pods))
	nodes := sets.New[string]()
	for _, p := range gang.Pods {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			continue
		}
		pis = append(pis, pi)
		nodes.Insert(p.Spec.NodeName)
	}
	kind := fwk.PodGroupKeyType
	if gang.Composite {
		kind = fwk.CompositePodGroupKeyType
	}
	v, _ := preemption.NewVictim(pis, gang.Priority, kind)
	return &victimUnit{Victim: v, key: key, gang: true, nodes: nodes, root: gang.Object, rootKey: gang.Root}
}

// dryRun is what every domain's dry run of one decision shares: the tree and its pending
// members, the snapshot, the units that may be evicted and the pods already leaving, by
// node, the budgets, and the Filter verdicts on simulated nodes.
type dryRun struct {
	tree     *podgroup.GroupView
	members  map[types.UID]*v1.Pod
	infos    []fwk.NodeInfo
	topo     *topology
	units    map[string][]*victimUnit
	leaving  map[string][]*v1.Pod
	pdbs     []*policy.PodDisruptionBudget
	verdicts *verdictCache
	// exclusive: the tree takes its domain to itself; no pod may be given back there.
	exclusive bool
}

// freeDomain is one dry run: the domain's evictable units taken out, the tree planned in
// the domain, and every unit the plan does not need gone given back. Nil if the tree does
// not fit even with every unit gone.
func (pl *Topology) freeDomain(ctx context.Context, dry *dryRun, d *domain) *preemptionChoice {
	logger := klog.FromContext(ctx)
	inDomain := sets.New[string]()
	for _, n := range d.nodes {
		inDomain.Insert(n.name)
	}
	var candidates []*victimUnit
	picked := sets.New[string]()
	for _, n := range d.nodes {
		for _, u := range dry.units[n.name] {
			if !picked.Has(u.key) {
				picked.Insert(u.key)
				candidates = append(candidates, u)
			}
		}
	}
	terminating := 0
	for _, n := range d.nodes {
		terminating += len(dry.leaving[n.name])
	}
	if len(candidates) == 0 && terminating == 0 {
		return nil
	}
	// The tree is planned as if the lowest tier of victims were gone, then the next, ...:
	// the plan takes room from pods of the lowest priority that can give it, never from a
	// pod of priority 90 where pods of priority 1 would do (the reprieve below holds the
	// plan fixed, so it cannot undo the plan's choice). In a domain an exclusive group takes,
	// every pod goes.
	var sim *simulation
	var removed []fwk.PodInfo
	var plan *Plan
	tiers := priorityTiers(candidates)
	if dry.exclusive {
		tiers = tiers[len(tiers)-1:]
	}
	for _, ceiling := range tiers {
		// A copy of every node a candidate of the tier (or a leaving pod) is on, without
		// them; the PreFilter states of the plan forget them too.
		sim = newSimulation(dry.infos, dry.topo)
		removed = leavingInfos(d, dry.leaving)
		var tier []*victimUnit
		for _, u := range candidates {
			if u.Priority() <= ceiling {
				tier = append(tier, u)
				removed = append(removed, u.Pods()...)
			}
		}
		for _, pi := range removed {
			sim.remove(logger, pi.GetPod())
		}
		scope := &planScope{verdicts: dry.verdicts, removed: removed, outside: func(n *node) string {
			if inDomain.Has(n.name) {
				return ""
			}
			return "outside the domain being freed"
		}}
		if plan, _ = pl.planTree(ctx, dry.tree, sim.infos, scope); plan != nil {
			candidates = tier
			break
		}
	}
	if plan == nil {
		return nil
	}
	// Give back, most important first, every unit the plan does without.
	violating := pdbViolations(candidates, dry.pdbs)
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.Priority() != b.Priority() {
			return a.Priority() > b.Priority()
		}
		if violating[a.key] != violating[b.key] {
			return violating[a.key] > 0
		}
		return preemption.MoreImportantVictim(a.Victim, b.Victim)
	})
	back := pl.newReprieve(ctx, sim, plan, dry.members, removed)
	c := &preemptionChoice{domain: d.describe(pl.levels), plan: plan}
	for _, u := range candidates {
		if !dry.exclusive && back.giveBack(logger, u) {
			continue // reprieved
		}
		c.victims = append(c.victims, u)
		c.cost.priority = max(c.cost.priority, u.Priority())
		c.cost.pods += len(u.Pods())
		c.cost.pdb += violating[u.key]
		if u.gang {
			c.cost.gangs++
		}
		if u.lasting {
			c.cost.lasting++
		}
	}
	// No victims: the tree fits once the pods already terminating here are gone; the
	// cheapest choice of all, and one that evicts nobody.
	return c
}

// maxPriorityTiers bounds the plans one domain's dry run makes, one per tier of victims.
const maxPriorityTiers = 6

// priorityTiers returns the ceilings of the tiers a dry run frees a domain by, lowest first:
// each distinct victim priority, at most maxPriorityTiers of them (spread over the range,
// the highest always last), so that the last tier takes every candidate. At least one.
func priorityTiers(units []*victimUnit) []int32 {
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
func pdbViolations(units []*victimUnit, pdbs []*policy.PodDisruptionBudget) map[string]int {
	out := map[string]int{}
	if len(pdbs) == 0 {
		return out
	}
	violating, _ := preemption.FilterVictimsWithPDBViolation(victimsOf(units), pdbs)
	for _, v := range violating {
		out[v.Victim.(*victimUnit).key] = v.ViolateCount
	}
	return out
}

func victimsOf(units []*victimUnit) []preemption.Victim {
	out := make([]preemption.Victim, len(units))
	for i, u := range units {
		out[i] = u
	}
	return out
}

// pdbs lists the PodDisruptionBudgets, none if they cannot be listed.
func (pl *Topology) pdbs() []*policy.PodDisruptionBudget {
	if pl.pdbLister == nil {
		return nil
	}
	out, err := pl.pdbLister.List(labels.Everything())
	if err != nil {
		return nil
	}
	return out
}

// describe names a domain in messages: "rack z0-b0-r1", or "the cluster".
func (d *domain) describe(levels []string) string {
	if d.level < 0 {
		return "the cluster"
	}
	return levelName(levels[d.level]) + " " + d.name()
}

// simulation is a copy-on-write view of the snapshot's nodes, with pods taken out or put
// back.
type simulation struct {
	infos  []fwk.NodeInfo
	topo   *topology
	copied map[int]bool
}

func newSimulation(infos []fwk.NodeInfo, topo *topology) *simulation {
	return &simulation{infos: append([]fwk.NodeInfo(nil), infos...), topo: topo, copied: map[int]bool{}}
}

// get returns the node's info as simulated, copying it on first use.
func (s *simulation) get(name string) fwk.NodeInfo {
	n, ok := s.topo.byName[name]
	if !ok {
		return nil
	}
	if !s.copied[n.idx] {
		s.infos[n.idx] = s.infos[n.idx].Snapshot()
		s.copied[n.idx] = true
	}
	return s.infos[n.idx]
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

// maxNamed is how many victims logs and events name.
const maxNamed = 10

// victimNames lists pods for logs and events, the first maxNamed of them.
func victimNames(pods []*v1.Pod) string {
	names := make([]string, 0, maxNamed+1)
	for i, p := range pods {
		if i == maxNamed {
			names = append(names, fmt.Sprintf("and %d more", len(pods)-maxNamed))
			break
		}
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return strings.Join(names, ", ")
}
