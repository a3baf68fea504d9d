package gang

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Permit lets a member bind once its path to the root is ready counting live members that
// are bound or hold a reservation, and then the model allows every waiting member of the tree
// whose path is ready, at once. Otherwise the member waits, holding its reservation, until
// the model allows it or ends the wait (the PodGroup's scheduleTimeoutSeconds or the
// plugin's permitTimeoutSeconds; the framework's own timeout is set a little later, as a
// backstop). On a tree's first wait, its pending members are activated.
func (pl *Gang) Permit(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	d := pl.permits.Permit(klog.FromContext(ctx), pod, pl.policy)
	switch {
	case d.Reject != "":
		return fwk.NewStatus(fwk.Unschedulable, d.Reject), 0
	case d.Allow:
		return nil, 0
	}
	return fwk.NewStatus(fwk.Wait, d.Message), d.Timeout
}
