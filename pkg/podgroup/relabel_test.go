package podgroup

import (
	"slices"
	"testing"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A pod relabeled to another group, asked about by the scheduler's queue before the model has
// seen the change (their informers deliver apart), is not judged by its old group (held for
// that gang's scout, it would wait for good): it waits for the model, which activates it when
// it files the change (TestGroupModelInvariants, INVARIANT_SEED=30949).
func TestRelabeledPodWaitsForTheModelNotForItsOldGroup(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(1).Obj())
	p := lt.Member("ns", "a", 0).Obj()
	m.OnPod(nil, p)
	moved := p.DeepCopy()
	moved.Labels[v1alpha1.PodGroupLabel] = "b"
	rec.take()
	if v := m.Gate().Admit(bg, moved); v.Code != Unseen {
		t.Fatalf("Admit before the model saw the relabel = %v %q, want Unseen", v.Code, v.Message)
	}
	m.OnPod(p, moved)
	if activated, _, _ := rec.take(); !slices.Contains(activated, moved.Name) {
		t.Fatalf("activated %v once the model filed the relabel, want %s", activated, moved.Name)
	}
	if v := m.Gate().Admit(bg, moved); v.Code == Unseen || v.Group != PodGroupKey("ns", "b") {
		t.Errorf("Admit once seen = %v %q (group %v), want a verdict of PodGroup b", v.Code, v.Message, v.Group)
	}
}

// A pending pod held for its gang's scout and then relabeled to a gang that runs is
// activated when the model files the change: its old gang's news is no longer its, its new
// gang changes state for nothing, and the queue holds it until someone moves it
// (TestGroupModelInvariants, INVARIANT_SEED=44139).
func TestRelabeledPodHeldForItsOldScoutIsTriedAgain(t *testing.T) {
	m, _, rec := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(1).Obj())
	m.OnPod(nil, lt.Member("ns", "b", 0).Node("n1").Obj())
	a0, a1 := lt.Member("ns", "a", 0).Obj(), lt.Member("ns", "a", 1).Obj()
	m.OnPod(nil, a0)
	m.OnPod(nil, a1)
	if v := m.Gate().Admit(bg, a0); v.Code != Proceed {
		t.Fatalf("Admit %s = %v %q, want Proceed (the scout)", a0.Name, v.Code, v.Message)
	}
	if v := m.Gate().Admit(bg, a1); v.Code == Proceed {
		t.Fatalf("Admit %s = %v, want it held for its gang's scout", a1.Name, v.Code)
	}
	moved := a1.DeepCopy()
	moved.Labels[v1alpha1.PodGroupLabel] = "b"
	rec.take()
	m.OnPod(a1, moved)
	if activated, _, _ := rec.take(); !slices.Contains(activated, moved.Name) {
		t.Fatalf("activated %v once the model filed the relabel, want %s", activated, moved.Name)
	}
	if v := m.Gate().Admit(bg, moved); v.Code != Proceed || v.Group != PodGroupKey("ns", "b") {
		t.Errorf("Admit once moved = %v %q (group %v), want Proceed for PodGroup b", v.Code, v.Message, v.Group)
	}
}
