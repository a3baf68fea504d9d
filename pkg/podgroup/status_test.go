package podgroup

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
)

func TestDesiredCondition(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(m *Manager)
		key     Key
		want    condition
		noWrite bool
	}{
		{
			name:  "gang short of pods",
			setup: func(m *Manager) { m.onGroup(pg("a", 3, "")); addPods(m, "a", 1) },
			key:   PodGroupKey("ns", "a"),
			want: condition{status: metav1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable,
				message: "waiting for pods: minCount is 3", note: "waiting for pods: 1 of 3 pods exist"},
		},
		{
			name:    "enough pods and no attempt yet: nothing to say",
			setup:   func(m *Manager) { m.onGroup(pg("a", 1, "")); addPods(m, "a", 1) },
			key:     PodGroupKey("ns", "a"),
			noWrite: true,
		},
		{
			name: "composite short of children",
			setup: func(m *Manager) {
				m.onGroup(cpg("job", 2, ""))
				m.onGroup(pg("s0", 1, "job"))
				addPods(m, "s0", 1)
			},
			key: CompositePodGroupKey("ns", "job"),
			want: condition{status: metav1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable,
				message: "waiting for child groups: 1 of 2 child groups ready", note: "waiting for child groups: 1 of 2 child groups ready"},
		},
		{
			name: "child ready, waiting for its siblings",
			setup: func(m *Manager) {
				m.onGroup(cpg("job", 2, ""))
				m.onGroup(pg("s0", 1, "job"))
				addPods(m, "s0", 1)
			},
			key: PodGroupKey("ns", "s0"),
			want: condition{status: metav1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable,
				message: "waiting for the rest of the tree: job: 1 of 2 child groups ready", note: "waiting for the rest of the tree: job: 1 of 2 child groups ready"},
		},
		{
			name:  "invalid",
			setup: func(m *Manager) { m.onGroup(cpg("a", 1, "b")); m.onGroup(cpg("b", 1, "a")) },
			key:   CompositePodGroupKey("ns", "b"),
			want: condition{status: metav1.ConditionFalse, reason: v1alpha1.ReasonInvalid,
				message: "invalid: cycle: b → a → b", note: "invalid: cycle: b → a → b"},
		},
		{
			name: "scheduled",
			setup: func(m *Manager) {
				m.onGroup(pg("a", 2, ""))
				for _, p := range addPods(m, "a", 2) {
					m.Assume(p, "n1")
					m.Permit(p, time.Minute)
				}
			},
			key: PodGroupKey("ns", "a"),
			want: condition{status: metav1.ConditionTrue, reason: v1alpha1.ReasonScheduled,
				message: "2 pods placed together (minCount 2)", note: "2 pods placed together (minCount 2)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testManager(t)
			tc.setup(m)
			got, ok := m.desiredLocked(tc.key)
			if ok == tc.noWrite {
				t.Fatalf("desired ok = %v, want %v", ok, !tc.noWrite)
			}
			if got != tc.want {
				t.Errorf("desired %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The writer writes a condition once per transition, however often it is asked, and never
// rewrites a True condition.
func TestStatusWriterWritesOncePerTransition(t *testing.T) {
	m, _, _ := testManager(t)
	obj := pg("a", 3, "")
	client := fake.NewSimpleClientset(obj)
	m.client = client
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(obj); err != nil {
		t.Fatal(err)
	}
	m.pgLister = listers.NewPodGroupLister(indexer)
	m.cpgLister = listers.NewCompositePodGroupLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	key := PodGroupKey("ns", "a")
	ctx := context.Background()

	writes := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	sync := func() {
		t.Helper()
		if err := m.status.sync(ctx, key); err != nil {
			t.Fatal(err)
		}
	}

	m.onGroup(obj)
	pods := []*v1.Pod{pod("a", 0, ""), pod("a", 1, ""), pod("a", 2, "")}
	m.onPod(nil, pods[0])
	sync()
	m.onPod(nil, pods[1])
	sync()
	if got := writes(); got != 1 {
		t.Fatalf("%d writes while waiting for pods, want 1", got)
	}
	m.onPod(nil, pods[2])
	sync()
	if got := writes(); got != 1 {
		t.Fatalf("%d writes once all pods exist, want still 1", got)
	}
	for _, p := range pods {
		m.Assume(p, "n1")
		m.Permit(p, time.Minute)
	}
	sync()
	sync()
	if got := writes(); got != 2 {
		t.Fatalf("%d writes after scheduling, want 2", got)
	}
	// The object now carries True: a later failure does not regress it.
	updated, err := client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := indexer.Update(updated); err != nil {
		t.Fatal(err)
	}
	m.groups[key].scheduled = false
	m.groups[key].failure = "cannot fit"
	sync()
	if got := writes(); got != 2 {
		t.Errorf("%d writes, want a True condition never rewritten", got)
	}
}
