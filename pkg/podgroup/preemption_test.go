package podgroup

import (
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// withPriorityClasses gives the model a lister of the classes.
func withPriorityClasses(m *Model, classes ...*schedulingv1.PriorityClass) {
	pcs := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Scheduling().V1().PriorityClasses()
	for _, pc := range classes {
		_ = pcs.Informer().GetStore().Add(pc)
	}
	m.priorityLister = pcs.Lister()
}

// A tree preempts at its root's priority, not when its class or a member says Never, and
// only once its attempt failed.
func TestPreemptor(t *testing.T) {
	m, _, _ := testModel(t)
	withPriorityClasses(m,
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Value: 1000},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "polite"}, Value: 1000, PreemptionPolicy: ptr.To(v1.PreemptNever)})
	prod, polite := lt.MakePodGroup().Namespace("ns").Name("prod").Gang(2).Obj(), lt.MakePodGroup().Namespace("ns").Name("polite").Gang(2).Obj()
	prod.Spec.PriorityClassName, polite.Spec.PriorityClassName = "prod", "polite"
	m.OnGroup(nil, prod)
	m.OnGroup(nil, polite)
	p := addPods(m, "prod", 2)
	q := addPods(m, "polite", 2)

	got, ok := m.Gate().Preemptor(p[0])
	if !ok || got.Priority != 1000 || got.Never || got.Failed || got.Root != PodGroupKey("ns", "prod") || got.Object == nil {
		t.Errorf("prod: %+v, want priority 1000, may preempt, not failed", got)
	}
	m.Permits().Fail(bg, p[0], "no room", testPolicy)
	if got, _ := m.Gate().Preemptor(p[0]); !got.Failed {
		t.Error("prod failed its attempt, Preemptor says it did not")
	}
	if got, _ := m.Gate().Preemptor(q[0]); !got.Never {
		t.Error("polite's PriorityClass says Never")
	}
	own := lt.Member("ns", "prod", 5).Obj()
	own.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	m.OnPod(nil, own)
	if got, _ := m.Gate().Preemptor(own); !got.Never {
		t.Error("a member whose preemptionPolicy is Never must not preempt")
	}
}

// A child gang that cannot be ready, in a tree that can be ready without it (a composite's
// minGroupCount met by the others), preempts for itself: its failed member is a preemptor,
// though the tree backs off nothing. A member beyond its group's minimum is not.
func TestPreemptorOfASubtree(t *testing.T) {
	tests := []struct {
		name       string
		aPods      int
		wantFailed bool
	}{
		{name: "the member's gang cannot be ready without it", aPods: 2, wantFailed: true},
		{name: "the member's gang can be ready without it", aPods: 3, wantFailed: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("root").Gang(1).Obj())
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("root").Obj())
			m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Parent("root").Obj())
			a, b := addPods(m, "a", tc.aPods), addPods(m, "b", 2)
			if got, _ := m.Gate().Preemptor(a[0]); got.Failed {
				t.Fatalf("Preemptor before any failure: %+v, want not failed", got)
			}
			m.Permits().Fail(bg, a[0], "no room", testPolicy)
			if got, _ := m.Gate().Preemptor(a[0]); got.Failed != tc.wantFailed {
				t.Errorf("Preemptor of the failed member: Failed = %v, want %v", got.Failed, tc.wantFailed)
			}
			if got, _ := m.Gate().Preemptor(b[0]); got.Failed {
				t.Errorf("Preemptor of a member of the other child, which did not fail: Failed = true")
			}
		})
	}
}

// A running gang is one victim: every member holding room (bound or reserved), at the
// tree's priority; a pod of a basic group, or of no group, is not a unit.
func TestUnitOf(t *testing.T) {
	m, _, _ := testModel(t)
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Parent("job").Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Parent("job").Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("loose").Basic().Obj())
	a0, b0, b1 := lt.Member("ns", "a", 0).Node("n1").Obj(), lt.Member("ns", "b", 0).Node("n2").Obj(), lt.Member("ns", "b", 1).Obj()
	a0.Spec.Priority, b0.Spec.Priority = ptr.To[int32](5), ptr.To[int32](7)
	for _, p := range []*v1.Pod{a0, b0, b1} {
		m.OnPod(nil, p)
	}
	m.Permits().Reserve(bg, assumed(b1, "n3"), "n3")
	u, ok := m.Gate().UnitOf(a0)
	if !ok || u.Root != CompositePodGroupKey("ns", "job") || !u.Composite || u.Priority != 7 || len(u.Pods) != 3 {
		t.Fatalf("unit %+v, want the whole tree job (3 pods holding room) at priority 7", u)
	}
	for _, p := range u.Pods {
		if p.Spec.NodeName == "" {
			t.Errorf("unit pod %s without its node", p.Name)
		}
	}
	loose := lt.Member("ns", "loose", 0).Node("n1").Obj()
	m.OnPod(nil, loose)
	if _, ok := m.Gate().UnitOf(loose); ok {
		t.Error("a pod of a basic group is a victim on its own")
	}
}

// A tree that is preempting says so in its condition until it is scheduled.
func TestPreemptingCondition(t *testing.T) {
	m, _, _ := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Obj())
	p := addPods(m, "a", 1)
	k := PodGroupKey("ns", "a")
	m.Permits().Fail(bg, p[0], "no room", testPolicy)
	m.Permits().NotePreempting(k, "taking rack r1: evicting 8 pods of priority up to 10 (0 gangs whole)")
	if c, _ := m.Gate().Condition(k); c.Reason != v1alpha1.ReasonPreempting || c.Message != "taking rack r1: evicting 8 pods of priority up to 10 (0 gangs whole)" {
		t.Errorf("condition %+v, want Preempting with the message", c)
	}
	m.Permits().NotePreempting(k, "")
	if c, _ := m.Gate().Condition(k); c.Reason != v1alpha1.ReasonUnschedulable {
		t.Errorf("condition %+v, want the failure again once preemption is over", c)
	}
	m.Permits().NotePreempting(k, "taking rack r1")
	a := assumed(p[0], "n1")
	m.Permits().Reserve(bg, a, "n1")
	m.Permits().Permit(bg, a, testPolicy)
	m.OnPod(p[0], a)
	if c, _ := m.Gate().Condition(k); c.Reason != v1alpha1.ReasonScheduled {
		t.Errorf("condition %+v, want Scheduled", c)
	}
}
