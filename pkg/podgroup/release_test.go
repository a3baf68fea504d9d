package podgroup

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A gang found half bound (a member bound, the gang never scheduled whole: a leader died
// between its binds) whose other members do not fit is released one backoff after that
// failure: its bound members are evicted. Not if it finishes meanwhile, not while it
// preempts for room, not while an attempt of it is under way.
func TestHalfBoundGangIsReleased(t *testing.T) {
	tests := []struct {
		name string
		// meanwhile happens between the failure and the end of the backoff.
		meanwhile   func(m *Model, pods []*v1.Pod)
		wantEvicted []string
		// then happens after the backoff; wantLater is what is evicted by then.
		then      func(m *Model, clk *simClock, pods []*v1.Pod)
		wantLater []string
		// observer is the plans the model asks about preemption plans; none if nil.
		observer RoundObserver
	}{{
		name:        "the rest does not fit: released",
		wantEvicted: []string{"a-0"},
	}, {
		name: "the rest fits meanwhile: finished, nothing evicted",
		meanwhile: func(m *Model, pods []*v1.Pod) {
			reservePermit(m, pods[1])
			reservePermit(m, pods[2])
		},
	}, {
		name: "preempting for room: not until its victims are gone",
		meanwhile: func(m *Model, pods []*v1.Pod) {
			m.Permits().NotePreempting(PodGroupKey("ns", "a"), "preempting on rack r1")
		},
		then: func(m *Model, clk *simClock, pods []*v1.Pod) {
			m.Permits().NotePreempting(PodGroupKey("ns", "a"), "")
			clk.Step(10 * time.Second)
		},
		wantLater: []string{"a-0"},
	}, {
		name: "its condition says preempting, but its preemption plan ended: released",
		// The plans have no plan made by preempting for it (it expired, or was dropped).
		observer: &victimsWatch{},
		meanwhile: func(m *Model, pods []*v1.Pod) {
			m.Permits().NotePreempting(PodGroupKey("ns", "a"), "preempting on rack r1")
		},
		wantEvicted: []string{"a-0"},
	}, {
		name: "an attempt under way: not until it ends",
		meanwhile: func(m *Model, pods []*v1.Pod) {
			clk := m.clock.(*simClock)
			clk.Step(9 * time.Second) // the retry floor is past: the next attempt may start
			reservePermit(m, pods[1])
		},
		then: func(m *Model, clk *simClock, pods []*v1.Pod) {
			m.Permits().Fail(bg, pods[2], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
			m.Permits().Unreserve(bg, assumed(pods[1], "n1"))
			clk.Step(10 * time.Second)
		},
		wantLater: []string{"a-0"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, rec := observedModel(t, tc.observer)
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
			pods := []*v1.Pod{
				lt.Member("ns", "a", 0).Node("n1").Obj(), // bound by a leader that died
				lt.Member("ns", "a", 1).Obj(),
				lt.Member("ns", "a", 2).Obj(),
			}
			for _, p := range pods {
				m.OnPod(nil, p)
			}
			m.Gate().Admit(bg, pods[1])
			if key, _ := m.Gate().SortKey(pods[1]); !key.Finishing {
				t.Fatal("a half-bound gang's members go first")
			}
			m.Permits().Fail(bg, pods[1], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
			if tc.meanwhile != nil {
				tc.meanwhile(m, pods)
			}
			clk.Step(epoch.Add(testPolicy.Backoff + time.Millisecond).Sub(clk.Now()))
			if got := rec.takeEvicted(); !cmp.Equal(got, tc.wantEvicted) {
				t.Errorf("evicted %v after the backoff, want %v", got, tc.wantEvicted)
			}
			if tc.wantEvicted != nil {
				c, _ := m.Gate().Condition(PodGroupKey("ns", "a"))
				if !strings.Contains(c.Message, "released: evicted its bound pods a-0 (1 of 3 pods were bound") {
					t.Errorf("condition %q, want the release explained", c.Message)
				}
			}
			if tc.then != nil {
				tc.then(m, clk, pods)
				clk.Step(time.Millisecond)
				if got := rec.takeEvicted(); !cmp.Equal(got, tc.wantLater) {
					t.Errorf("evicted %v later, want %v", got, tc.wantLater)
				}
			}
		})
	}
}

// A gang scheduled whole once whose minCount was raised since is half bound by the new
// minimum, but it runs: it is not released when the pods its new minimum asks for do not fit.
func TestRunningGangWithRaisedMinimumIsNotReleased(t *testing.T) {
	m, clk, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	m.OnPod(nil, lt.Member("ns", "a", 0).Node("n1").Obj())
	m.OnPod(nil, lt.Member("ns", "a", 1).Node("n1").Obj())
	if !m.index.Get(PodGroupKey("ns", "a")).Scheduled() {
		t.Fatal("a gang whose minimum is bound is scheduled")
	}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	third := lt.Member("ns", "a", 2).Obj()
	m.OnPod(nil, third)
	m.Permits().Fail(bg, third, "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	clk.Step(time.Minute)
	if got := rec.takeEvicted(); len(got) > 0 {
		t.Errorf("evicted %v of a gang that ran whole", got)
	}
}
