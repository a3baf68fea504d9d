package gang

import (
	"time"

	fwk "k8s.io/kube-scheduler/framework"
)

// Less orders the queue by priority (a gang member's is its tree's: the root group's
// priorityClassName, else the pod's own), then by the root group's creation time (or its
// last failure, whichever is later), then by root key, then by when the pod was queued.
// Members of one tree compare equal up to the last step, so they leave the queue back to
// back and two gangs do not interleave and hold each other's capacity; when room appears
// for one of several waiting trees, the one with the higher priority gets it.
func (pl *Gang) Less(a, b fwk.QueuedEntityInfo) bool {
	pa, ta, ka := pl.sortKey(a)
	pb, tb, kb := pl.sortKey(b)
	if pa != pb {
		return pa > pb
	}
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if ka != kb {
		return ka < kb
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}

// podInfoGetter is implemented by the queue's pod entities.
type podInfoGetter interface {
	GetPodInfo() fwk.PodInfo
}

// sortKey returns the priority, time and key an entity sorts by: its tree's for a gang
// member, its own priority, queue timestamp and name otherwise.
func (pl *Gang) sortKey(e fwk.QueuedEntityInfo) (int32, time.Time, string) {
	pi, ok := e.(podInfoGetter)
	if !ok || pi.GetPodInfo() == nil {
		return e.GetPriority(), e.GetTimestamp(), ""
	}
	pod := pi.GetPodInfo().GetPod()
	if k, ok := pl.groups.SortKey(pod); ok {
		return k.Priority, k.Time, k.Root
	}
	return e.GetPriority(), e.GetTimestamp(), "Pod " + pod.Namespace + "/" + pod.Name
}
