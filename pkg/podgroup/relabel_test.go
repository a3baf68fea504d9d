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
