package scheduler

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/plugins/topology"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

type dropped map[string]string

func (d dropped) NominationDropped(_ klog.Logger, pod *v1.Pod, node string) { d[pod.Name] = node }

// The guarded failure handler tells the model of a nomination a failed cycle cleared where
// the handler's copy of the pod did not show it (its earlier write may still land), and of no
// other; the in-process memory of the pod's nomination follows the queue's.
func TestFailureHandlerTellsOfUnseenDroppedNominations(t *testing.T) {
	clear := &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride}
	tests := []struct {
		name   string
		memory string // the node this process nominated the pod to before the cycle
		cached string // the nomination the handler's copy of the pod shows
		ni     *fwk.NominatingInfo
		want   string // the node the model is told of, "" for none
		after  string // the memory after the handler
	}{
		{name: "cleared, unseen", memory: "n1", ni: clear, want: "n1"},
		{name: "cleared, seen: the handler cleared it", memory: "n1", cached: "n1", ni: clear},
		{name: "moved to another node", memory: "n1", ni: &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: "n2"}, after: "n2"},
		{name: "kept (noop)", memory: "n1", ni: nil, after: "n1"},
		{name: "none to drop", ni: clear},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			noms, err := topology.NewNominations(nil)
			if err != nil {
				t.Fatal(err)
			}
			pod := lt.Member("ns", "pg", 0).Obj()
			if tc.memory != "" {
				noms.Note(pod, tc.memory)
			}
			model := dropped{}
			// The handler reads the informer's copy of the pod, and writes the status from it.
			base := func(_ context.Context, _ framework.Framework, pi *framework.QueuedPodInfo, _ *fwk.Status, _ *fwk.NominatingInfo, _ time.Time) {
				cached := pi.Pod.DeepCopy()
				cached.Status.NominatedNodeName = tc.cached
				pi.PodInfo, _ = framework.NewPodInfo(cached)
			}
			pi, _ := framework.NewPodInfo(pod)
			guardNominations(base, noms, model)(context.Background(), nil, &framework.QueuedPodInfo{PodInfo: pi}, fwk.NewStatus(fwk.Unschedulable), tc.ni, time.Now())
			if got := model[pod.Name]; got != tc.want {
				t.Errorf("model told of %q, want %q", got, tc.want)
			}
			if _, memory := noms.Of(pod.UID); memory != tc.after {
				t.Errorf("memory %q after the handler, want %q", memory, tc.after)
			}
		})
	}
}
