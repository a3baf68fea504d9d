package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
)

// The demo's wait says which group it still waits for and why, in the group's own terms:
// never a guess about the CRDs for a group a user made.
func TestSettledNamesWhatItWaitsFor(t *testing.T) {
	refused := &tree.Condition{Status: "False", Reason: v1alpha1.ReasonUnschedulable, Message: "cannot fit: PodGroup whale: no rack has room"}
	tests := []struct {
		name    string
		group   *tree.Group
		settled bool
		want    string
	}{
		{name: "placed", group: &tree.Group{Kind: "PodGroup", Name: "ok", Condition: &tree.Condition{Status: "True", Reason: v1alpha1.ReasonScheduled}, Pods: &tree.Counts{Exist: 2, Bound: 2}}, settled: true},
		{name: "refused for room", group: &tree.Group{Kind: "PodGroup", Name: "whale", Condition: refused}, settled: true},
		{name: "invalid", group: &tree.Group{Kind: "PodGroup", Name: "bad", Condition: &tree.Condition{Status: "False", Reason: v1alpha1.ReasonInvalid, Message: "invalid: unknown topology key"}}, settled: true},
		{name: "a user's group with no condition yet", group: &tree.Group{Kind: "PodGroup", Name: "mine"}, want: "PodGroup mine: no condition yet"},
		{name: "binding", group: &tree.Group{Kind: "PodGroup", Name: "train", Condition: &tree.Condition{Status: "True", Reason: v1alpha1.ReasonScheduled}, Pods: &tree.Counts{Exist: 4, Bound: 1}}, want: "PodGroup train: 1/4 pods bound"},
		{name: "missing", group: &tree.Group{Kind: "PodGroup", Name: "gone", Missing: true}, want: "PodGroup gone: does not exist, and pods name it"},
		{name: "waiting for pods", group: &tree.Group{Kind: "CompositePodGroup", Name: "tree", Condition: &tree.Condition{Status: "False", Reason: v1alpha1.ReasonUnschedulable, Message: "waiting for child groups"}},
			want: "CompositePodGroup tree: Unschedulable: waiting for child groups"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, state := Settled([]*tree.Group{tc.group})
			if ok != tc.settled {
				t.Fatalf("settled %v (%q), want %v", ok, state, tc.settled)
			}
			if !ok && !strings.Contains(state, tc.want) {
				t.Errorf("state %q, want it to name %q", state, tc.want)
			}
			if ok {
				return
			}
			err := settleTimeout(3*time.Minute, state)
			for _, w := range []string{"gave up after 3m0s", "every group in namespace " + Namespace, tc.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("timeout %q, want it to say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "CRD") {
				t.Errorf("timeout %q blames the CRDs", err)
			}
		})
	}
}
