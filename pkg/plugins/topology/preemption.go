package topology

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Gang preemption. One decision per tree and failed attempt: when a gang's tree cannot be
// placed, the member whose PostFilter sees the failure looks for the cheapest domain to free
// (pkg/gangpreemption, which plans on this plugin's planner through dryrun.go), evicts the
// victims through upstream's preemption executor (DisruptionTarget condition, delete, an
// event naming the preempting gang), stores the plan made as if they
// were gone, with its victims, and nominates every member on its planned node so that the
// freed room is not taken by pods of lower priority. The tree's members then wait until every
// victim is gone, and are placed by that plan. Members of gangs never reach the profile's
// DefaultPreemption: evicting for one member of a gang that cannot run whole evicts for
// nothing.

// victimsGrace is the least time a preempting plan is kept before its victims are counted
// (Plans keeps it while any is left): their graceful termination (30 s by default) may
// outlast planTTLSeconds.
const victimsGrace = 2 * time.Minute

// preempt runs for a gang member that fits nowhere. It never returns plain Unschedulable,
// so DefaultPreemption does not run for members of gangs.
func (pl *Topology) preempt(ctx context.Context, pod *v1.Pod, sum podgroup.Summary) (*fwk.PostFilterResult, *fwk.Status) {
	logger := klog.FromContext(ctx)
	refuse := func(result, msg string) (*fwk.PostFilterResult, *fwk.Status) {
		if result != "" {
			metrics.preemptions.WithLabelValues(result).Inc()
			logger.V(4).Info("Gang does not preempt", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "why", msg)
		}
		return pl.nomination(pod, sum), fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "preemption: "+msg)
	}
	if plan := pl.plans.Get(sum.Root); plan != nil && len(plan.Victims) > 0 {
		if left := pl.victimsLeft(plan); left > 0 {
			return refuse("", fmt.Sprintf("waiting for %d preempted pods to leave %s", left, plan.Freed))
		}
	}
	p, ok := pl.trees.Preemptor(pod)
	switch {
	case !ok:
		return refuse("", "the pod has no valid tree")
	case !p.Failed:
		return refuse("", "the gang can be ready without this member")
	}
	tree, ok := pl.trees.Tree(pod)
	if !ok {
		return refuse("", "the pod has no valid tree")
	}
	infos, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	// Where eviction cannot help, a gang that has starved long enough has room held for it.
	starving := func(result, why string) (*fwk.PostFilterResult, *fwk.Status) {
		msg := pl.reserve(ctx, tree, p, infos)
		pl.notes.NoteReserving(p.Root, msg)
		if msg != "" {
			return refuse(result, why+"; "+msg)
		}
		return refuse(result, why)
	}
	if p.Never {
		return starving("not_allowed", "preemptionPolicy is Never")
	}
	start := time.Now()
	choice, why := pl.selectVictims(ctx, tree, p, infos, pod)
	metrics.preemptionDuration.Observe(time.Since(start).Seconds())
	if choice == nil {
		return starving("no_victims", why)
	}
	// The reservation, if any, ends: how is counted once the tree is scheduled or starves
	// again (its gang often binds in the room it held, once the last pods in the way leave).
	if r := pl.plans.reservations.Preempts(p.Root); r != nil {
		logger.V(4).Info("Gang gives up its reservation for preemption; it ends bound if the gang is scheduled", "root", p.Root,
			"reserved", r.Domain, "freed", choice.Domain.Name, "victims", len(choice.Victims))
	}
	pl.notes.NoteReserving(p.Root, "")
	if len(choice.Victims) == 0 {
		// Pods already terminating (earlier victims, or pods being deleted) make room: wait
		// for them rather than evict anyone else.
		return refuse("", "waiting for terminating pods to leave "+choice.Domain.Name)
	}
	plan := planOf(choice)
	plan.Victims, plan.VictimNodes = map[types.UID]types.NamespacedName{}, sets.New[string]()
	victims := choice.Pods()
	for _, v := range victims {
		plan.Victims[v.UID] = types.NamespacedName{Namespace: v.Namespace, Name: v.Name}
		plan.VictimNodes.Insert(v.Spec.NodeName)
	}
	pl.awaitLeaving(plan)
	plan.Freed = choice.Domain.Name
	plan.Expires = time.Now().Add(max(pl.planTTL, victimsGrace))
	pl.plans.Store(plan)
	msg := choice.Describe()
	pl.notes.NotePreempting(p.Root, msg)
	if rec := pl.handle.EventRecorder(); rec != nil && p.Object != nil {
		rec.Eventf(p.Object, nil, v1.EventTypeNormal, v1alpha1.ReasonPreempting, "Preempting", "%s: %s", msg, gangpreemption.PodNames(victims))
	}
	pl.tellVictims(p, choice)
	metrics.preemptions.WithLabelValues("preempted").Inc()
	metrics.victims.Add(float64(len(victims)))
	metrics.victimGangs.Add(float64(choice.Cost.Gangs))
	logger.V(2).Info("Gang preempts", "pod", klog.KObj(pod), "root", p.Root, "priority", p.Priority, "domain", choice.Domain.Name,
		"victims", len(victims), "victimGangs", choice.Cost.Gangs, "highestVictimPriority", choice.Cost.Priority, "pdbViolations", choice.Cost.PDB,
		"pods", gangpreemption.PodNames(victims))

	var nominated *fwk.NominatingInfo
	tree.Walk(func(g *podgroup.GroupView) {
		for _, m := range g.Pending {
			pp, ok := plan.Pods[m.UID]
			if !ok || podgroup.IsFollower(m) {
				continue // followers do not exist yet: their room is held once the leaders bind
			}
			info := &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: pp.Node}
			if m.UID == pod.UID {
				nominated = info // the scheduler records it on the pod
				continue
			}
			if pi, err := framework.NewPodInfo(m); err == nil {
				pl.handle.AddNominatedPod(logger, pi, info)
				pl.nominations.Note(m, pp.Node)
			}
		}
	})
	gangpreemption.Evict(ctx, pl.executor, &gangpreemption.Preemptor{Gang: p, Pending: tree, Scheduler: pod.Spec.SchedulerName}, choice, Name)
	var result *fwk.PostFilterResult
	if nominated != nil {
		result = &fwk.PostFilterResult{NominatingInfo: nominated}
	}
	return result, fwk.NewStatus(fwk.Success, msg)
}

// tellVictims tells each gang among the victims that it is being preempted, by whom and for
// which domain: a Warning event on its root group, and the DisruptionTarget condition on each
// of its groups (through the model, which makes the tree a gang again). Its pods' own events
// say so one by one, and its PodGroupInitiallyScheduled condition stays True (terminal).
func (pl *Topology) tellVictims(p podgroup.Preemptor, c *gangpreemption.Choice) {
	rec := pl.handle.EventRecorder()
	for _, u := range c.Victims {
		if !u.Gang {
			continue
		}
		why := fmt.Sprintf("evicting its %d running pods: preempted by gang %s (priority %d), which takes %s", len(u.Pods()), p.Root, p.Priority, c.Domain.Name)
		if pl.notes.NotePreempted(u.RootKey, why) && rec != nil && u.Root != nil {
			rec.Eventf(u.Root, p.Object, v1.EventTypeWarning, v1alpha1.ReasonPreempted, "Preempted", "%s", why)
		}
	}
}

// victimsLeft counts the victims of a preempting plan that still exist, in the API (the pod
// informer) or in the scheduler's snapshot. The model's news of a victim's deletion retries
// the tree, and the scheduler's cache hears of it through a handler of its own, behind when
// a thousand deletions come at once: a node the snapshot still fills with a victim is not
// the plan's yet, and planning the tree again there took more victims (upstream's
// GangPreemptionBasic, 10 gangs of 10: 1003 deletes for 1000 pods).
func (pl *Topology) victimsLeft(plan *Plan) int {
	left := pl.plans.VictimsLeft(plan)
	if left == len(plan.Victims) || pl.podLister == nil || pl.handle.SnapshotSharedLister() == nil {
		return left
	}
	infos := pl.handle.SnapshotSharedLister().NodeInfos()
	for node := range plan.VictimNodes {
		ni, err := infos.Get(node)
		if err != nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if ref, ok := plan.Victims[pod.UID]; ok && !pl.victimThere(pod.UID, ref) &&
				(pod.DeletionTimestamp == nil || gangpreemption.Leaving(pod, pl.plans.now())) {
				left++ // gone from the API, not yet from the cache (a stuck one is not waited for)
			}
		}
	}
	return left
}

// awaitLeaving adds to a preempting plan's victims the pods already leaving the nodes it
// places members on: pods terminating, and pods other trees' preemptions evict. The dry run
// counted them gone, so the plan holds only once they are; its members wait for them as for
// the pods it evicts. Without it a tree whose own victims left first found its planned node
// still full of another preemptor's victims, planned again, and lost the room it was
// nominated to (upstream's GangPreemptionPodGroups, 10 gangs of 10, where each gang's
// preemption leaves room that the next one counts on).
func (pl *Topology) awaitLeaving(plan *Plan) {
	if pl.handle.SnapshotSharedLister() == nil {
		return
	}
	evicting := pl.plans.Evicting(plan.Root)
	infos := pl.handle.SnapshotSharedLister().NodeInfos()
	nodes := sets.New[string]()
	for _, pp := range plan.Pods {
		nodes.Insert(pp.Node)
	}
	for node := range nodes {
		ni, err := infos.Get(node)
		if err != nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if (pod.DeletionTimestamp == nil && !evicting.Pods.Has(pod.UID)) ||
				(pod.DeletionTimestamp != nil && !gangpreemption.Leaving(pod, pl.plans.now())) {
				continue // not leaving, or stuck: nothing to wait for
			}
			plan.Victims[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
			plan.VictimNodes.Insert(node)
		}
	}
}

// victimThere reports whether the victim uid, named ref, is still there to wait for: it
// exists, and is not stuck terminating past its grace period (a victim that never leaves is
// waited for no longer: its tree plans afresh, and may go where room is, or preempt
// elsewhere).
func (pl *Topology) victimThere(uid types.UID, ref types.NamespacedName) bool {
	p, err := pl.podLister.Pods(ref.Namespace).Get(ref.Name)
	return err == nil && p.UID == uid && (p.DeletionTimestamp == nil || gangpreemption.Leaving(p, pl.plans.now()))
}
