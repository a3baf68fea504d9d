package podgroup

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// strayCase is what follows a stray nomination's record.
type strayCase struct {
	name string
	// after runs between the record and the nomination's arrival.
	after func(m *Model, pods []*v1.Pod)
	// seen is the update that brings the nomination.
	seen func(pods []*v1.Pod) (old, cur *v1.Pod)
	want bool
}

// nominated returns a copy of p nominated to node.
func nominated(p *v1.Pod, node string) *v1.Pod {
	c := p.DeepCopy()
	c.Status.NominatedNodeName = node
	return c
}

// A member's wait that ends without a bind may leave the nomination its binding cycle wrote
// (NominatedNodeNameForExpectation) in the API, when the failure handler's informer copy did
// not show it yet; so may a failed cycle that clears a nomination an earlier cycle wrote by
// preemption, unseen. The model clears such a nomination, and only such a one: not a
// nomination of another node, not one the member's next cycle may have written (preemption),
// not one of a pod bound or waiting again.
func TestNominationLeftByAnEndedWaitIsCleared(t *testing.T) {
	tests := []strayCase{{
		name: "the ended wait's node, seen late",
		seen: func(pods []*v1.Pod) (*v1.Pod, *v1.Pod) { return pods[0], nominated(pods[0], "n1") },
		want: true,
	}, {
		name: "another node",
		seen: func(pods []*v1.Pod) (*v1.Pod, *v1.Pod) { return pods[0], nominated(pods[0], "n2") },
	}, {
		name: "the member was in a cycle since (its failure handler answers for the nomination)",
		after: func(m *Model, pods []*v1.Pod) {
			m.Gate().Check(klog.Background(), pods[0], 2)
		},
		seen: func(pods []*v1.Pod) (*v1.Pod, *v1.Pod) { return pods[0], nominated(pods[0], "n1") },
	}, {
		name: "the member is bound",
		seen: func(pods []*v1.Pod) (*v1.Pod, *v1.Pod) {
			return pods[0], nominated(assumed(pods[0], "n1"), "n1")
		},
	}, {
		name: "the nomination was seen cleared before it came back",
		after: func(m *Model, pods []*v1.Pod) {
			m.OnPod(nominated(pods[0], "n1"), pods[0])
		},
		seen: func(pods []*v1.Pod) (*v1.Pod, *v1.Pod) { return pods[0], nominated(pods[0], "n1") },
	}, {
		name: "the member was deleted and its name reused",
		after: func(m *Model, pods []*v1.Pod) {
			m.OnPodDelete(pods[0])
			m.OnPod(nil, pods[0])
		},
		seen: func(pods []*v1.Pod) (*v1.Pod, *v1.Pod) { return pods[0], nominated(pods[0], "n1") },
	}}
	// The other member cannot fit: the gang fails, its waiter is rejected, and the framework
	// unreserves it.
	endWait := func(t *testing.T, m *Model, rec *recorder, pods []*v1.Pod) {
		m.Permits().Fail(bg, pods[1], "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules", testPolicy)
		if _, _, rejected := rec.take(); rejected[pods[0].Name] == "" {
			t.Fatalf("waiter %s not rejected when its gang failed", pods[0].Name)
		}
		m.Permits().Unreserve(bg, assumed(pods[0], "n1"))
	}
	// How the nomination of n1 came to be one no cycle wants.
	sources := []struct {
		name  string
		leave func(t *testing.T, m *Model, rec *recorder, pods []*v1.Pod)
	}{{
		name:  "an ended wait",
		leave: endWait,
	}, {
		name: "a preemption nomination a failed cycle cleared unseen",
		leave: func(t *testing.T, m *Model, rec *recorder, pods []*v1.Pod) {
			endWait(t, m, rec, pods)
			// The member's next cycle (the wait's record goes) fails; its failure handler
			// clears the nomination an earlier cycle wrote by preemption, which its copy of
			// the pod does not show yet.
			m.Gate().Check(klog.Background(), pods[0], 2)
			m.Permits().NominationDropped(bg, pods[0], "n1")
		},
	}}
	for _, src := range sources {
		for _, tc := range tests {
			t.Run(src.name+"/"+tc.name, func(t *testing.T) {
				m, _, rec := testModel(t)
				pods := gangWithWaiters(m, rec, "pg", 2, 1)
				src.leave(t, m, rec, pods)
				tc.run(t, m, rec, pods)
			})
		}
	}
}

// run is one case of TestNominationLeftByAnEndedWaitIsCleared, after the stray nomination's
// record was made.
func (tc strayCase) run(t *testing.T, m *Model, rec *recorder, pods []*v1.Pod) {
	if tc.after != nil {
		tc.after(m, pods)
	}
	old, cur := tc.seen(pods)
	m.OnPod(old, cur)
	got := rec.takeUnnominated()
	if tc.want && got[pods[0].Name] != "n1" {
		t.Errorf("stray nomination of n1 not cleared: %v", got)
	}
	if !tc.want && len(got) != 0 {
		t.Errorf("cleared %v, want no nomination cleared", got)
	}
	if tc.want {
		m.OnPod(cur, nominated(cur, "n1")) // once answered, the record is gone
		if extra := rec.takeUnnominated(); len(extra) != 0 {
			t.Errorf("cleared again %v", extra)
		}
	}
	m.OnPodDelete(cur)
	if len(m.waitsLeft) != 0 {
		t.Errorf("records left after the pod went: %v", m.waitsLeft)
	}
}
