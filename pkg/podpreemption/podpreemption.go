// Package podpreemption is upstream's DefaultPreemption made to see lockstep's gangs, for the
// pods lockstep preempts for one at a time: pods in no gang, and replacements of running
// gangs. LockstepTopology runs it at PostFilter (the profile's own DefaultPreemption is not
// enabled); gang preemption, one decision per tree, is LockstepTopology's own.
package podpreemption

import (
	"context"
	"fmt"
	"math"
	"sort"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PodPreemption preempts for one pod at a time. A pod in no gang, and a replacement member of a gang already running, is
// preempted for one pod at a time, as upstream's DefaultPreemption does — but upstream knows
// group members only by pod.spec.schedulingGroup, so on its own it would evict single
// members of lockstep's running gangs. PodPreemption is DefaultPreemption made to see them:
//   - a running gang is one victim: when a member is needed gone, every running member of its
//     disruption unit (podgroup.Unit) goes with it, and the gang is marked disrupted
//     (DisruptionTarget, a gang again) with an event on its top group;
//   - a gang's priority is its tree's (the root's priorityClassName), not only its pods';
//   - victims that break no gang are preferred: at equal priority a gang member is given
//     back first on a node, and across nodes the candidate breaking fewer gangs wins after
//     PodDisruptionBudgets and the highest victim priority;
//   - a replacement never takes a pod of its own tree.
//
// It runs on the guarded handle (podgroup.Guard): a victim waiting at Permit, or already
// allowed and in PreBind, is stopped through the group model first, so no gang binds short.
type PodPreemption struct {
	*defaultpreemption.DefaultPreemption
	trees Trees
	notes Notes
	fh    fwk.Handle
}

// Trees is what pod preemption asks of the group model (podgroup.Gate): a pod's tree and its
// disruption unit, and the running gang a pod belongs to.
type Trees interface {
	Summary(pod *v1.Pod) (podgroup.Summary, bool)
	UnitOf(pod *v1.Pod) (podgroup.Unit, bool)
}

// Notes is what pod preemption tells the group model (podgroup.Permits): a running gang it
// evicts is disrupted.
type Notes interface {
	NotePreempted(root podgroup.Key, msg string) bool
}

var _ preemption.Interface = &PodPreemption{}

// New builds upstream's DefaultPreemption (upstream's default args) on handle — the guarded
// handle of podgroup.Guard, so that a victim waiting at Permit or binding is stopped through
// the group model — with lockstep's view of gangs.
func New(ctx context.Context, handle fwk.Handle, trees Trees, notes Notes) (*PodPreemption, error) {
	args := &schedconfig.DefaultPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100}
	dp, err := defaultpreemption.New(ctx, args, handle, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	if err != nil {
		return nil, err
	}
	pp := &PodPreemption{DefaultPreemption: dp, trees: trees, notes: notes, fh: handle}
	dp.IsEligiblePod = pp.eligible
	dp.MoreImportantVictim = pp.moreImportant
	dp.Evaluator = preemption.NewEvaluator(defaultpreemption.Name, handle, pp, dp.Executor)
	preemptPod := dp.Executor.PreemptPod
	dp.Executor.PreemptPod = func(ctx context.Context, c preemption.Candidate, by preemption.ExecutorPreemptor, victim *v1.Pod, plugin string) (bool, error) {
		pp.tellGang(ctx, by, c, victim)
		return preemptPod(ctx, c, by, victim, plugin)
	}
	return pp, nil
}

// eligible reports whether a victim may be taken for preemptor at all (its priority below
// the preemptor's is checked by upstream): never a pod of the preemptor's own tree, never a
// member of a gang whose tree's priority is not below the preemptor's, nor of one with a
// member anywhere whose own priority is not below it (the gang goes whole, and no preemptor
// evicts a pod of its priority or above).
func (pp *PodPreemption) eligible(_ fwk.NodeInfo, victim preemption.Victim, preemptor *v1.Pod) bool {
	mine, member := pp.trees.Summary(preemptor)
	prio := corev1helpers.PodPriority(preemptor)
	for _, pi := range victim.Pods() {
		pod := pi.GetPod()
		sum, ok := pp.trees.Summary(pod)
		if !ok {
			continue
		}
		if member && sum.Root == mine.Root {
			return false
		}
		if sum.Unit == (podgroup.Key{}) {
			continue
		}
		u, ok := pp.trees.UnitOf(pod)
		if !ok {
			continue
		}
		if u.Priority >= prio {
			return false
		}
		for _, p := range u.Pods {
			if corev1helpers.PodPriority(p) >= prio {
				return false
			}
		}
	}
	return true
}

// moreImportant orders victims for the reprieve on a node, most important first: higher
// priority, then a member of a running gang before a pod alone (giving it back spares the
// whole gang), then upstream's order.
func (pp *PodPreemption) moreImportant(a, b preemption.Victim) bool {
	if a.Priority() != b.Priority() {
		return a.Priority() > b.Priority()
	}
	if ga, gb := pp.inGang(a), pp.inGang(b); ga != gb {
		return ga
	}
	return preemption.MoreImportantVictim(a, b)
}

func (pp *PodPreemption) inGang(v preemption.Victim) bool {
	for _, pi := range v.Pods() {
		if sum, ok := pp.trees.Summary(pi.GetPod()); ok && sum.Unit != (podgroup.Key{}) {
			return true
		}
	}
	return false
}

// SelectVictimsOnNode is upstream's, then every victim that belongs to a running gang brings
// the rest of its gang along, wherever its members run: a gang is evicted whole or not at
// all. The victims stay ordered by priority, highest first, as upstream's candidate
// ranking expects.
func (pp *PodPreemption) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, preemptor *v1.Pod, nodeInfo fwk.NodeInfo,
	all []*preemption.DomainVictim, pdbs []*policy.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	victims, violations, status := pp.DefaultPreemption.SelectVictimsOnNode(ctx, state, preemptor, nodeInfo, all, pdbs)
	if !status.IsSuccess() || len(victims) == 0 {
		return victims, violations, status
	}
	out := wholeGangs(victims, pp.trees.UnitOf)
	if len(out) > len(victims) {
		// The budgets count every pod evicted, the members on other nodes too: a candidate
		// ranks by them.
		violations = pdbViolations(out, pdbs)
		klog.FromContext(ctx).V(5).Info("Victims on node take their gangs along", "preemptor", klog.KObj(preemptor), "node", nodeInfo.Node().Name, "victims", len(victims), "withGangs", len(out), "pdbViolations", violations)
	}
	return out, violations, status
}

// pdbViolations counts the pods whose eviction, with all of pods evicted, would break a
// PodDisruptionBudget (upstream's count, over every pod rather than one node's).
func pdbViolations(pods []*v1.Pod, pdbs []*policy.PodDisruptionBudget) int {
	victims := make([]preemption.Victim, 0, len(pods))
	for _, p := range pods {
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			continue
		}
		victims = append(victims, preemption.NewPodVictim(pi, nil, nil))
	}
	violating, _ := preemption.FilterVictimsWithPDBViolation(victims, pdbs)
	n := 0
	for _, v := range violating {
		n += v.ViolateCount
	}
	return n
}

// wholeGangs adds to victims every running member of the gangs they belong to (unitOf), once
// each, ordered by priority (highest first).
func wholeGangs(victims []*v1.Pod, unitOf func(*v1.Pod) (podgroup.Unit, bool)) []*v1.Pod {
	seen := make(map[types.UID]bool, len(victims))
	out := make([]*v1.Pod, 0, len(victims))
	for _, v := range victims {
		if !seen[v.UID] {
			seen[v.UID] = true
			out = append(out, v)
		}
		u, ok := unitOf(v)
		if !ok {
			continue
		}
		for _, p := range u.Pods {
			if !seen[p.UID] {
				seen[p.UID] = true
				out = append(out, p)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return corev1helpers.PodPriority(out[i]) > corev1helpers.PodPriority(out[j]) })
	return out
}

// OrderedScoreFuncs ranks the candidate nodes as lockstep ranks the domains of gang
// preemption: fewest PodDisruptionBudgets violated, then the lowest highest victim
// priority, then fewest gangs broken, then fewest pods evicted; upstream's sum of priorities
// and latest start time break the remaining ties.
func (pp *PodPreemption) OrderedScoreFuncs(_ context.Context, byNode map[string]*extenderv1.Victims) []func(node string) int64 {
	gangs := make(map[string]int64, len(byNode))
	for node, v := range byNode {
		units := map[podgroup.Key]bool{}
		for _, p := range v.Pods {
			if sum, ok := pp.trees.Summary(p); ok && sum.Unit != (podgroup.Key{}) {
				units[sum.Unit] = true
			}
		}
		gangs[node] = int64(len(units))
	}
	return []func(string) int64{
		func(n string) int64 { return -byNode[n].NumPDBViolations },
		func(n string) int64 {
			highest := int32(math.MinInt32)
			for _, p := range byNode[n].Pods {
				highest = max(highest, corev1helpers.PodPriority(p))
			}
			return -int64(highest)
		},
		func(n string) int64 { return -gangs[n] },
		func(n string) int64 { return -int64(len(byNode[n].Pods)) },
		func(n string) int64 {
			var sum int64
			for _, p := range byNode[n].Pods {
				sum += int64(corev1helpers.PodPriority(p)) + int64(math.MaxInt32+1)
			}
			return -sum
		},
		func(n string) int64 {
			if t := util.GetEarliestPodStartTime(byNode[n]); t != nil {
				return t.UnixNano()
			}
			return math.MinInt64
		},
	}
}

// tellGang marks the gang of a victim disrupted (DisruptionTarget, a gang again: its
// recreated pods wait for each other) and tells its top group who preempts it, once per
// preemptor.
func (pp *PodPreemption) tellGang(ctx context.Context, by preemption.ExecutorPreemptor, c preemption.Candidate, victim *v1.Pod) {
	sum, ok := pp.trees.Summary(victim)
	if !ok || sum.Unit == (podgroup.Key{}) {
		return
	}
	// The same words for every member of the unit: the unit is told once (NotePreempted
	// reports news once), however many members the executor evicts.
	why := fmt.Sprintf("evicting its running pods: preempted by %s %s/%s (priority %d), which takes node %s",
		by.Type(), by.GetNamespace(), by.GetName(), by.Priority(), c.Name())
	if !pp.notes.NotePreempted(sum.Unit, why) {
		return
	}
	klog.FromContext(ctx).V(4).Info("Running gang preempted whole by a pod", "preemptor", klog.KObj(by), "gang", sum.Unit, "root", sum.Root, "node", c.Name())
	if u, ok := pp.trees.UnitOf(victim); ok && u.Object != nil {
		if rec := pp.fh.EventRecorder(); rec != nil {
			rec.Eventf(u.Object, by.Obj(), v1.EventTypeWarning, v1alpha1.ReasonPreempted, "Preempted", "%s (%d pods)", why, len(u.Pods))
		}
	}
}
