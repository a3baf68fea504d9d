package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A failure handed to kube-scheduler's failure handler keeps the words of the pod's
// PodScheduled condition where it differs from them only in the node count, so that the
// handler writes nothing; any other difference, a failure in Filter (whose reasons count
// nodes), a condition of another reason, or a pod the informer holds another copy of, is
// handed on as it came.
func TestFailureKeepsTheConditionsWordsButForTheNodeCount(t *testing.T) {
	const (
		pre  = "cannot place the gang: PodGroup pg: not enough free capacity for 3 pods × 3 cpu"
		post = "preemption: evicting every pod of priority below 0 would not make room in the cluster"
	)
	preFilter := func(nodes int, pre string) *fwk.Status {
		return fwk.NewStatus(fwk.Unschedulable).WithError(&framework.FitError{NumAllNodes: nodes, Diagnosis: framework.Diagnosis{PreFilterMsg: pre, PostFilterMsg: post}})
	}
	filter := func(nodes int) *fwk.Status {
		statuses := framework.NewDefaultNodeToStatus()
		statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
		return fwk.NewStatus(fwk.Unschedulable).WithError(&framework.FitError{NumAllNodes: nodes, Diagnosis: framework.Diagnosis{NodeToStatus: statuses, PostFilterMsg: post}})
	}
	tests := []struct {
		name      string
		condition *v1.PodCondition // the informer's copy's PodScheduled condition
		uid       types.UID        // the informer's copy's UID, the pod's if empty
		status    *fwk.Status
		want      string // the message handed on
	}{
		{
			name:      "another node count",
			condition: unschedulable(preFilter(2, pre)),
			status:    preFilter(3, pre),
			want:      preFilter(2, pre).Message(),
		},
		{
			name:      "fewer nodes",
			condition: unschedulable(preFilter(3, pre)),
			status:    preFilter(2, pre),
			want:      preFilter(3, pre).Message(),
		},
		{
			name:      "the same count",
			condition: unschedulable(preFilter(2, pre)),
			status:    preFilter(2, pre),
			want:      preFilter(2, pre).Message(),
		},
		{
			name:      "another reason",
			condition: unschedulable(preFilter(2, pre)),
			status:    preFilter(3, "gang pg backs off"),
			want:      preFilter(3, "gang pg backs off").Message(),
		},
		{
			name:   "no condition yet",
			status: preFilter(3, pre),
			want:   preFilter(3, pre).Message(),
		},
		{
			name:      "a condition of a scheduler error",
			condition: &v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonSchedulerError, Message: preFilter(2, pre).Message()},
			status:    preFilter(3, pre),
			want:      preFilter(3, pre).Message(),
		},
		{
			name:      "filtered: the reasons count nodes",
			condition: unschedulable(filter(2)),
			status:    filter(3),
			want:      filter(3).Message(),
		},
		{
			name:      "not a FitError",
			condition: unschedulable(preFilter(2, pre)),
			status:    fwk.NewStatus(fwk.Unschedulable, "binding rejected"),
			want:      "binding rejected",
		},
		{
			name:      "the pod was recreated",
			condition: unschedulable(preFilter(2, pre)),
			uid:       "another",
			status:    preFilter(3, pre),
			want:      preFilter(3, pre).Message(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := lt.Member("ns", "pg", 0).Obj()
			cached := pod.DeepCopy()
			if tc.condition != nil {
				cached.Status.Conditions = []v1.PodCondition{*tc.condition}
			}
			if tc.uid != "" {
				cached.UID = tc.uid
			}
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := indexer.Add(cached); err != nil {
				t.Fatal(err)
			}
			got := sameWords(klog.Background(), corelisters.NewPodLister(indexer), pod, tc.status)
			if got.Message() != tc.want {
				t.Errorf("handed on %q, want %q", got.Message(), tc.want)
			}
			if got.Code() != tc.status.Code() {
				t.Errorf("handed on code %v, want %v", got.Code(), tc.status.Code())
			}
			// The handler reads the FitError's diagnosis to requeue the pod: it is kept.
			if fitErr, ok := tc.status.AsError().(*framework.FitError); ok {
				if kept, ok := got.AsError().(*framework.FitError); !ok || kept.Diagnosis.PreFilterMsg != fitErr.Diagnosis.PreFilterMsg {
					t.Errorf("handed on %#v, want the FitError's diagnosis", got.AsError())
				}
			}
		})
	}
}

// unschedulable is the PodScheduled condition the scheduler writes for a failure.
func unschedulable(status *fwk.Status) *v1.PodCondition {
	return &v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: status.Message()}
}
