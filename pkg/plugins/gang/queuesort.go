package gang

import (
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Less orders the queue by priority (a gang member's is its tree's: the root group's
// priorityClassName, else the pod's own), then half-bound trees first (a leader died between
// their binds: their bound pods run without their peers), then by the root group's creation
// time (the oldest tree first; its last failure on a try at the end of its backoff:
// podgroup's queueTimeLocked), then by root key, then by when the pod was queued.
// Members of one tree compare equal up to the last step, so they leave the queue back to
// back and two gangs do not interleave and hold each other's capacity; when room appears
// for one of several waiting trees, the one with the higher priority gets it.
func (pl *Gang) Less(a, b fwk.QueuedEntityInfo) bool {
	ka, kb := pl.sortKey(a), pl.sortKey(b)
	if ka.Before(kb) || kb.Before(ka) {
		return ka.Before(kb)
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}

// podInfoGetter is implemented by the queue's pod entities.
type podInfoGetter interface {
	GetPodInfo() fwk.PodInfo
}

// sortKey returns the key an entity sorts by: its tree's for a gang member, its own
// priority, queue timestamp and name otherwise.
func (pl *Gang) sortKey(e fwk.QueuedEntityInfo) podgroup.SortKey {
	pi, ok := e.(podInfoGetter)
	if !ok || pi.GetPodInfo() == nil {
		return podgroup.SortKey{Priority: e.GetPriority(), Time: e.GetTimestamp()}
	}
	pod := pi.GetPodInfo().GetPod()
	if k, ok := pl.groups.SortKey(pod); ok {
		return k
	}
	return podgroup.SortKey{Priority: e.GetPriority(), Time: e.GetTimestamp(), Root: "Pod " + pod.Namespace + "/" + pod.Name}
}
