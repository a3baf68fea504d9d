package gang

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Permit lets a member bind once its path to the root is ready counting assumed and bound
// pods, and then allows every waiting member of the tree whose path is ready, at once.
// Otherwise the member waits, holding its reservation, for the PodGroup's
// scheduleTimeoutSeconds or the plugin's permitTimeoutSeconds; on its first wait of a round
// the tree's pending members are activated so that they are tried right away.
func (pl *Gang) Permit(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	d := pl.groups.Permit(pod, pl.permitTimeout)
	switch {
	case d.Reject != "":
		return fwk.NewStatus(fwk.Unschedulable, d.Reject), 0
	case d.Allow:
		for _, p := range d.AllowWaiting {
			if wp := pl.waitingPod(p); wp != nil {
				wp.Allow(Name)
			}
		}
		return nil, 0
	}
	pl.activate(d.Activate)
	return fwk.NewStatus(fwk.Wait, fmt.Sprintf("waiting for the rest of the gang (up to %s)", d.Timeout)), d.Timeout
}
