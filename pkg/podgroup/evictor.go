package podgroup

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// Evictor evicts the bound members of a gang the model releases (release.go, short.go) or
// whose preemption it finishes (disruption.go); reason is their DisruptionTarget's.
type Evictor interface {
	Evict(logger klog.Logger, pods []*v1.Pod, reason, why string)
}

// ReasonGangReleased is the reason of the DisruptionTarget condition and the event of a pod
// evicted because its gang was released.
const ReasonGangReleased = "GangReleased"

// podEvictor evicts as upstream's preemption does: the DisruptionTarget condition first (a
// Job's podFailurePolicy can tell the disruption from a failure of the pod), then deletion,
// and an event on the pod.
type podEvictor struct {
	client   kubernetes.Interface
	recorder events.EventRecorder
}

// NewEvictor returns an Evictor that deletes pods through client.
func NewEvictor(client kubernetes.Interface, recorder events.EventRecorder) Evictor {
	return &podEvictor{client: client, recorder: recorder}
}

func (e *podEvictor) Evict(logger klog.Logger, pods []*v1.Pod, reason, why string) {
	ctx := klog.NewContext(context.Background(), logger)
	for _, pod := range pods {
		status := pod.Status.DeepCopy()
		cond := &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: reason, Message: why}
		if podutil.UpdatePodCondition(status, cond) {
			if err := schedutil.PatchPodStatus(ctx, e.client, pod.Name, pod.Namespace, &pod.Status, status); err != nil && !apierrors.IsNotFound(err) {
				logger.Error(err, "Could not mark a member of a gang evicted whole", "pod", klog.KObj(pod))
			}
		}
		if err := e.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, deleteExactly(pod)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			logger.Error(err, "Could not evict a member of a gang evicted whole", "pod", klog.KObj(pod))
			continue
		}
		if e.recorder != nil {
			e.recorder.Eventf(pod, nil, v1.EventTypeWarning, reason, "Evicting", "%s", why)
		}
		logger.V(2).Info("Member of a gang evicted whole", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "reason", reason, "why", why)
	}
}

// deleteExactly deletes this pod, not one recreated under its name since the model saw it.
func deleteExactly(pod *v1.Pod) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))}
}
