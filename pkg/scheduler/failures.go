package scheduler

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	kubescheduler "k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// keepFailureWords wraps kube-scheduler's failure handler so that a pod whose attempt failed
// for the reason its PodScheduled condition gives already is not written again because the
// cluster's node count moved. The scheduler writes the condition from its FitError, which
// starts "0/<nodes> nodes are available:", the nodes of that cycle's snapshot; for a pod
// refused at PreFilter (a gang's scout whose plan found no room) the rest of the message does
// not depend on the count, and a node added or deleted rewrote every waiting gang's condition
// at its next try: 10,000 status writes for one node at 10,000 waiting gangs, each saying
// nothing new of the gang. Such a failure is handed on with the count the condition gives, as
// the scheduler's event series (events.k8s.io) keeps its first note and counts the rest: the
// condition changes when the reason does. pods is the scheduler's informer's lister, the one
// the handler reads the pod from.
func keepFailureWords(base kubescheduler.FailureHandlerFn, pods corelisters.PodLister) kubescheduler.FailureHandlerFn {
	return func(ctx context.Context, f framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		base(ctx, f, podInfo, sameWords(klog.FromContext(ctx), pods, podInfo.Pod, status), ni, start)
	}
}

// sameWords is status, or where status is a FitError of a PreFilter refusal that reads as
// pod's PodScheduled condition (the informer's copy, which the handler writes from) but for
// the node count, the same FitError with the condition's count.
func sameWords(logger klog.Logger, pods corelisters.PodLister, pod *v1.Pod, status *fwk.Status) *fwk.Status {
	fitErr, ok := status.AsError().(*framework.FitError)
	if !ok || fitErr.Diagnosis.PreFilterMsg == "" {
		return status
	}
	cached, err := pods.Pods(pod.Namespace).Get(pod.Name)
	if err != nil || cached.UID != pod.UID {
		return status
	}
	_, c := podutil.GetPodCondition(&cached.Status, v1.PodScheduled)
	if c == nil || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable {
		return status
	}
	kept := *fitErr
	if _, err := fmt.Sscanf(c.Message, framework.NoNodeAvailableMsg, &kept.NumAllNodes); err != nil || kept.NumAllNodes == fitErr.NumAllNodes || kept.Error() != c.Message {
		return status
	}
	logger.V(4).Info("Failure says what the pod's condition says but for the node count: the condition is kept", "pod", klog.KObj(pod), "nodes", fitErr.NumAllNodes, "conditionNodes", kept.NumAllNodes)
	s := fwk.NewStatus(status.Code()).WithError(&kept)
	s.SetPlugin(status.Plugin())
	return s
}
