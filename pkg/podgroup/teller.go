package podgroup

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// Teller writes why a pending gang member waits on the pod itself, for the members no
// scheduling cycle tried: those held out of the queue while their gang's scout tried the gang
// for them (scout.go). They are told what the scheduler tells the members it tried, in the
// same words, so that every pending member of a gang that does not fit says why (kubectl
// describe pod), and the condition is written once per gang, not per attempt.
//
// It also clears the nominatedNodeName a member's ended wait left on it (nominations.go):
// the same pod status, written by the same client.
type Teller interface {
	Tell(logger klog.Logger, pods []*v1.Pod, msg string)
	Unnominate(logger klog.Logger, pod *v1.Pod)
}

// podTeller writes the PodScheduled condition (False, reason Unschedulable) as the
// scheduler's failure handler does.
type podTeller struct{ client kubernetes.Interface }

// NewTeller returns a Teller that writes through client.
func NewTeller(client kubernetes.Interface) Teller { return podTeller{client: client} }

func (t podTeller) Tell(logger klog.Logger, pods []*v1.Pod, msg string) {
	ctx := klog.NewContext(context.Background(), logger)
	for _, pod := range pods {
		status := pod.Status.DeepCopy()
		if !podutil.UpdatePodCondition(status, unschedulable(msg)) {
			continue
		}
		if err := schedutil.PatchPodStatus(ctx, t.client, pod.Name, pod.Namespace, &pod.Status, status); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Could not tell a gang member why it waits", "pod", klog.KObj(pod))
		}
	}
}

func (t podTeller) Unnominate(logger klog.Logger, pod *v1.Pod) {
	ctx := klog.NewContext(context.Background(), logger)
	status := pod.Status.DeepCopy()
	status.NominatedNodeName = ""
	if err := schedutil.PatchPodStatus(ctx, t.client, pod.Name, pod.Namespace, &pod.Status, status); err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Could not clear the nomination a gang member's ended wait left", "pod", klog.KObj(pod))
	}
}

func unschedulable(msg string) *v1.PodCondition {
	return &v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg}
}

// untold returns the pending members whose PodScheduled condition does not say msg yet, but
// those the framework tells (tried).
func untold(pending []*v1.Pod, msg string, tried sets.Set[types.UID]) []*v1.Pod {
	var out []*v1.Pod
	for _, pod := range pending {
		if tried.Has(pod.UID) {
			continue
		}
		if _, c := podutil.GetPodCondition(&pod.Status, v1.PodScheduled); c == nil || c.Status != v1.ConditionFalse || c.Message != msg {
			out = append(out, pod)
		}
	}
	return out
}
