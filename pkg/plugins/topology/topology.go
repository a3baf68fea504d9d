// Package topology implements LockstepTopology: hierarchical topology placement for gangs.
// A group may require (or prefer) that its pods share one domain of a topology level (zone,
// block, rack, host...), at every level of its tree. When the first member of a tree is
// scheduled, the plugin plans the whole tree at once (planner.go) and stores the plan in the
// group model; PreFilter then narrows each member to its planned node, so that a member is
// checked against one node and every upstream Filter still runs there. Pods of basic groups
// are not planned: PreFilter keeps them in the domain of their placed siblings and Score
// draws them to it.
//
// The plugin relies on LockstepGang, enabled in the same profile, to record reservations.
package topology

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/config/validation"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podpreemption"
)

// Name is the name of the plugin used in the plugin registry and configurations.
const Name = "LockstepTopology"

// Trees is what the plugin asks of the group model.
type Trees interface {
	// AddProfile registers the plugin's validation of group specs for its profile.
	AddProfile(p podgroup.Profile)
	Summary(pod *v1.Pod) (podgroup.Summary, bool)
	Tree(pod *v1.Pod) (*podgroup.GroupView, bool)
	// Pending reports whether a member is neither bound nor reserved.
	Pending(uid types.UID) bool
	// Preemptor describes a member's tree for preemption; UnitOf returns the running gang a
	// bound pod belongs to (a victim whole).
	Preemptor(pod *v1.Pod) (podgroup.Preemptor, bool)
	UnitOf(pod *v1.Pod) (podgroup.Unit, bool)
	// MayFree reports whether any pod on a node may be taken for a tree of priority of.
	MayFree(of int32, orEqual bool) bool
	// Regrouped returns where the model's word on running pods changed (gang preemption's
	// kept bounds follow it).
	Regrouped(since uint64) (nodes []string, all bool, now uint64)
	// RoomHelps answers a hint on a pod that left a node: false if that node cannot take a
	// member of the pod's tree, which failed for want of room.
	RoomHelps(pod, left *v1.Pod) bool
	// Exclusives returns the exclusive groups with members placed; GroupOf the PodGroup a
	// pod belongs to (exclusive.go).
	Exclusives() []podgroup.Exclusive
	GroupOf(pod *v1.Pod) (podgroup.Key, bool)
}

// Notes is what the plugin tells the group model's permits of a tree's attempt
// (podgroup.Permits), for its failure message and condition.
type Notes interface {
	// NoteUnplaceable records why the planner could not place a member's tree, for the
	// gang's failure message.
	NoteUnplaceable(pod *v1.Pod, why string)
	// NotePreempting records (or clears, "") that a tree is preempting, for its condition.
	NotePreempting(root podgroup.Key, msg string)
	// NoteReserving records (or clears, "") that a domain is held for a tree, for its
	// condition.
	NoteReserving(root podgroup.Key, msg string)
	// NotePreempted records that a preemptor evicts a running gang (the unit whose top is
	// root), for its groups' DisruptionTarget condition; the gang is a gang again. It
	// reports whether this was news.
	NotePreempted(root podgroup.Key, msg string) bool
	// Unnominate clears the nominatedNodeName the pods' statuses carry, off the scheduling
	// cycle.
	Unnominate(logger klog.Logger, pods []*v1.Pod)
}

// Topology is the LockstepTopology plugin.
type Topology struct {
	logger  klog.Logger
	handle  fwk.Handle
	trees   Trees
	notes   Notes
	plans   *Plans
	planTTL time.Duration
	levels  []string
	// planLimit bounds the time of one plan.
	planLimit time.Duration
	// planGangs: gangs without topology constraints are planned too (anywhere.go).
	planGangs bool
	anywhere  anywhere
	// topology caches where the nodes are across plans; verdicts, Filter verdicts of pod
	// shapes on nodes.
	topology topologyCache
	verdicts *verdictCache
	// nominations lists the nodes that may have nominated pods (nil: any node may).
	nominations *Nominations
	// changes is told the nodes of the pods this profile assumes and forgets (Reserve).
	changes *NodeChanges
	// podLister tells whether victims are gone; executor evicts (upstream's) the victims
	// gangPreemption chooses.
	podLister      corelisters.PodLister
	executor       *preemption.Executor
	gangPreemption *gangpreemption.Evaluator
	// defaultPreemption is upstream's DefaultPreemption for pods in no gang and replacements
	// of running gangs, made to take running gangs whole (pkg/podpreemption), built on the
	// same guarded handle: a pod it preempts while it waits at Permit or binds (a gang
	// member) stops counting before its tree can be allowed (podgroup.Guard).
	defaultPreemption *podpreemption.PodPreemption
}

var (
	_ fwk.PreEnqueuePlugin  = &Topology{}
	_ fwk.PreFilterPlugin   = &Topology{}
	_ fwk.FilterPlugin      = &Topology{}
	_ fwk.PostFilterPlugin  = &Topology{}
	_ fwk.ReservePlugin     = &Topology{}
	_ fwk.PreScorePlugin    = &Topology{}
	_ fwk.ScorePlugin       = &Topology{}
	_ fwk.EnqueueExtensions = &Topology{}
)

// Shared is what the plugin shares with the plugins of every profile: pkg/scheduler builds it
// once per scheduler.
type Shared struct {
	// Trees is the group model's gate, Notes its permits.
	Trees Trees
	Notes Notes
	Plans *Plans
	// Guard wraps the handle the plugin's preemption evicts through, so that rejecting a
	// member waiting at Permit goes through the group model first (podgroup.Guard); nil
	// leaves the handle as it is.
	Guard func(fwk.Handle) fwk.Handle
	// Nominations lists the nodes that may have nominated pods; nil makes every plan that
	// weighs whole domains ask the nominator about every node.
	Nominations *Nominations
	// Changes tells the plugin's topology which nodes changed since its last plan; nil makes
	// every plan check every node.
	Changes *NodeChanges
}

// New builds the plugin from its (defaulted, internal) args, on what it shares with every
// profile.
func New(ctx context.Context, obj runtime.Object, handle fwk.Handle, shared Shared) (fwk.Plugin, error) {
	trees, notes, plans := shared.Trees, shared.Notes, shared.Plans
	args, err := getArgs(obj)
	if err != nil {
		return nil, err
	}
	if err := validation.ValidateLockstepTopologyArgs(field.NewPath(Name+"Args"), args); err != nil {
		return nil, err
	}
	RegisterMetrics()
	pl := &Topology{
		logger:    klog.FromContext(ctx).WithName(Name),
		handle:    handle,
		trees:     trees,
		notes:     notes,
		plans:     plans,
		planTTL:   time.Duration(args.PlanTTLSeconds) * time.Second,
		levels:    append([]string(nil), args.Levels...),
		planLimit: time.Duration(args.PlanTimeLimitMilliseconds) * time.Millisecond,
		planGangs: args.PlanUnconstrainedGangs,
		verdicts:  newVerdictCache(),

		nominations: shared.Nominations,
		changes:     shared.Changes,
	}
	pl.topology.changed = shared.Changes.subscribe()
	var pdbs policylisters.PodDisruptionBudgetLister
	if f := handle.SharedInformerFactory(); f != nil {
		pl.podLister = f.Core().V1().Pods().Lister()
		pdbs = f.Policy().V1().PodDisruptionBudgets().Lister()
		evictor := handle
		if shared.Guard != nil {
			evictor = shared.Guard(handle)
		}
		pl.executor = preemption.NewExecutor(evictor, feature.Features{})
		pp, err := podpreemption.New(ctx, evictor, trees, notes)
		if err != nil {
			return nil, err
		}
		pl.defaultPreemption = pp
		plans.WatchVictims(pl.victimThere)
	}
	pl.gangPreemption = gangpreemption.New(handle, trees, pl.podLister, pdbs)
	trees.AddProfile(podgroup.Profile{Name: handle.ProfileName(), Validators: []podgroup.Validator{pl.validate}})
	return pl, nil
}

func getArgs(obj runtime.Object) (*config.LockstepTopologyArgs, error) {
	if obj == nil {
		return defaultArgs(), nil
	}
	args, ok := obj.(*config.LockstepTopologyArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type %sArgs, got %T", Name, obj)
	}
	return args, nil
}

func defaultArgs() *config.LockstepTopologyArgs {
	return &config.LockstepTopologyArgs{
		Levels:                    append([]string(nil), configv1.DefaultTopologyLevels...),
		PlanTTLSeconds:            configv1.DefaultPlanTTLSeconds,
		PlanTimeLimitMilliseconds: configv1.DefaultPlanTimeLimitMilliseconds,
		PlanUnconstrainedGangs:    true,
	}
}

// Name returns the name of the plugin.
func (pl *Topology) Name() string { return Name }

// PreEnqueue holds back a pod in no gang whose own preemption is still evicting its victims
// (DefaultPreemption's asynchronous preemption), as the profile's DefaultPreemption would.
func (pl *Topology) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if pl.defaultPreemption == nil {
		return nil
	}
	return pl.defaultPreemption.PreEnqueue(ctx, pod)
}

// validate refuses topology keys that are not configured levels, and slices broader than
// the group's Required level: the schema can only check that keys are label keys, not how
// the configured levels nest.
func (pl *Topology) validate(_ podgroup.Key, topology []v1alpha1.TopologyConstraint) string {
	for _, t := range topology {
		if !contains(pl.levels, t.Key) {
			return fmt.Sprintf("topology key %q is not a configured level (%s)", t.Key, strings.Join(pl.levels, ", "))
		}
	}
	return sliceProblem(pl.levels, topology)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// constrained reports whether any group of the tree has a topology constraint, and whether
// any is a gang.
func constrained(root *podgroup.GroupView) (topology, gang bool) {
	root.Walk(func(g *podgroup.GroupView) {
		topology = topology || len(g.Topology) > 0
		gang = gang || g.Gang
	})
	return topology, gang
}
