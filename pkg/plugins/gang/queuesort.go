package gang

import (
	"time"

	fwk "k8s.io/kube-scheduler/framework"
)

// Less orders the queue by priority, then by the root group's creation time (or its last
// failure, whichever is later), then by root key, then by when the pod was queued. Members of
// one tree compare equal up to the last step, so they leave the queue back to back and two
// gangs do not interleave and hold each other's capacity.
func (pl *Gang) Less(a, b fwk.QueuedEntityInfo) bool {
	pa, pb := a.GetPriority(), b.GetPriority()
	if pa != pb {
		return pa > pb
	}
	ta, ka := pl.sortKey(a)
	tb, kb := pl.sortKey(b)
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

// sortKey returns the time and key an entity sorts by: its tree's for a gang member, its own
// queue timestamp and name otherwise.
func (pl *Gang) sortKey(e fwk.QueuedEntityInfo) (time.Time, string) {
	pi, ok := e.(podInfoGetter)
	if !ok || pi.GetPodInfo() == nil {
		return e.GetTimestamp(), ""
	}
	pod := pi.GetPodInfo().GetPod()
	if t, key, ok := pl.groups.SortKey(pod); ok {
		return t, key
	}
	return e.GetTimestamp(), "Pod " + pod.Namespace + "/" + pod.Name
}
