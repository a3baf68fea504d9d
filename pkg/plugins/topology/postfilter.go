package topology

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// PostFilter handles a member that failed on its planned node (the cluster changed since the
// plan, or a filter the plan could not foresee): the plan is dropped and the node recorded as
// refused, so that the tree is planned again without it, never the same refused plan twice.
// Then, for a member of a gang, it decides the gang's preemption (preemption.go): the tree
// preempts at most once per failed attempt, and members of gangs are never preempted for one
// by one. A pod in no gang is preempted for by upstream's DefaultPreemption, which the plugin
// runs on its guarded handle (the profile's own DefaultPreemption is not enabled at
// PostFilter, see manifests/scheduler-config.yaml).
func (pl *Topology) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	res, status := pl.postFilter(ctx, state, pod, statuses)
	pl.nominations.NoteResult(pod, res)
	return res, status
}

func (pl *Topology) postFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	sum, ok := pl.trees.Summary(pod)
	if podgroup.Refused(state) {
		// The gang refused the member before Filter ran (its tree backs off): no node
		// refused anything, and its preemption, if any, was decided when the attempt failed.
		if ok && sum.Gang {
			return pl.nomination(pod, sum), fwk.NewStatus(fwk.UnschedulableAndUnresolvable, podgroup.HeldPostFilter(pod))
		}
		return pl.preemptAlone(ctx, state, pod, statuses)
	}
	if !ok {
		return pl.preemptAlone(ctx, state, pod, statuses)
	}
	if data, err := state.Read(plannedKey); err == nil {
		// Read from the cycle, not from the plans: the gang's own PostFilter, which runs
		// first, ended the attempt, and with it the plan.
		node := string(data.(plannedNode))
		if s := statuses.Get(node); s != nil && !s.IsSuccess() {
			why := "refused by Filter"
			if len(s.Reasons()) > 0 {
				why = strings.Join(s.Reasons(), ", ")
			}
			pl.plans.Drop(sum.Root)
			pl.plans.Refuse(sum.Root, node, why, pl.planTTL)
			metrics.replans.WithLabelValues("filter").Inc()
			klog.FromContext(ctx).V(4).Info("Member refused on its planned node; the tree is planned again without it", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "node", node, "why", why)
		}
	}
	if !sum.Gang || sum.Scheduled {
		// A pod in no gang, or a replacement of a gang already running (it is scheduled on
		// its own, in its group's domains): preempted for alone, as upstream would, never
		// taking a pod of its own tree.
		return pl.preemptAlone(ctx, state, pod, statuses)
	}
	return pl.preempt(ctx, pod, sum)
}

// plannedKey is where PreFilter leaves the node a member's tree's plan narrowed it to, so
// that PostFilter knows which node Filter refused it.
const plannedKey fwk.StateKey = Name + "/planned"

// plannedNode is the node a plan narrowed a member to.
type plannedNode string

// Clone implements fwk.StateData.
func (n plannedNode) Clone() fwk.StateData { return n }

// preemptAlone runs DefaultPreemption, made to take running gangs whole, for a pod in no gang
// or a replacement member of a running gang (pkg/podpreemption).
func (pl *Topology) preemptAlone(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if pl.defaultPreemption == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	return pl.defaultPreemption.PostFilter(ctx, state, pod, statuses)
}

// nomination is the nominated node a gang member keeps after a failed attempt: its planned
// node while its tree waits for the victims it preempted, so that no pod of lower priority
// takes the freed room; otherwise none. A gang that failed holds no node, and a stale
// nomination (one written while the member waited at Permit, or by an earlier preemption)
// would make the scheduler's Filter count the member on that node for every other pod, for
// as long as the gang stays pending. Upstream clears a pod's nomination the same way when no
// PostFilter plugin nominates it.
func (pl *Topology) nomination(pod *v1.Pod, sum podgroup.Summary) *fwk.PostFilterResult {
	node := ""
	if plan := pl.plans.Get(sum.Root); plan != nil && len(plan.Victims) > 0 {
		if pp, ok := plan.Pods[pod.UID]; ok {
			node = pp.Node
		}
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: node}}
}
