package scheduler

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	kubescheduler "k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/plugins/topology"
)

// nominationDropper is what the failure handler tells the group model (podgroup.Permits).
type nominationDropper interface {
	NominationDropped(logger klog.Logger, pod *v1.Pod, node string)
}

// guardNominations wraps kube-scheduler's failure handler. A pod nominated by one cycle
// (preemption writes status.nominatedNodeName) whose next cycle fails and clears the
// nomination has it cleared only if the informer's copy the handler reads already shows it;
// where the first cycle's write is still on its way, the handler sends nothing, the write
// lands afterwards, and the scheduler's nominator holds the node for the pod until its next
// cycle (a gang member held while its gang backs off: the whole backoff), against every pod
// of its priority or lower. The wrapper tells the model of such a drop, and the model clears
// the nomination if it arrives before the pod's next cycle (podgroup's nominations.go; gang
// and group members only). It also keeps noms' memory of the pod's nomination as the queue's.
func guardNominations(base kubescheduler.FailureHandlerFn, noms *topology.Nominations, model nominationDropper) kubescheduler.FailureHandlerFn {
	return func(ctx context.Context, f framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		uid := podInfo.Pod.UID
		_, memory := noms.Of(uid)
		base(ctx, f, podInfo, status, ni, start)
		if ni.Mode() != fwk.ModeOverride {
			return
		}
		noms.Note(podInfo.Pod, ni.NominatedNodeName)
		// podInfo.Pod is now the copy the handler wrote the status from: where it shows the
		// nomination, the handler cleared it. A nomination moved to another node is left
		// alone: a late write of the old one is the queue's to correct at the next cycle.
		if memory == "" || ni.NominatedNodeName != "" || podInfo.Pod.Status.NominatedNodeName == memory {
			return
		}
		model.NominationDropped(klog.FromContext(ctx), podInfo.Pod, memory)
	}
}
