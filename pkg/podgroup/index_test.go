package podgroup

import (
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

func TestHierarchyProblem(t *testing.T) {
	tests := []struct {
		name   string
		pgs    []any
		target Key
		want   string
	}{
		{
			name:   "root PodGroup",
			pgs:    []any{lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()},
			target: PodGroupKey("ns", "a"),
		},
		{
			name:   "PodGroup under a CompositePodGroup",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("root").Gang(1).Obj(), lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("root").Obj()},
			target: PodGroupKey("ns", "a"),
		},
		{
			name:   "missing parent",
			pgs:    []any{lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("nope").Obj()},
			target: PodGroupKey("ns", "a"),
			want:   `parent CompositePodGroup "nope" not found: create it; or, as parentCompositePodGroupName cannot be changed, delete PodGroup "a" and create it again with another parent, or none`,
		},
		{
			name:   "missing grandparent",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("mid").Gang(1).Parent("nope").Obj(), lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("mid").Obj()},
			target: PodGroupKey("ns", "a"),
			want:   `parent CompositePodGroup "nope" not found: create it; or, as parentCompositePodGroupName cannot be changed, delete CompositePodGroup "mid" and create it again with another parent, or none`,
		},
		{
			name:   "parent is a PodGroup",
			pgs:    []any{lt.MakePodGroup().Namespace("ns").Name("p").Gang(1).Obj(), lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("p").Obj()},
			target: PodGroupKey("ns", "a"),
			want:   `parent "p" is a PodGroup; parentCompositePodGroupName must name a CompositePodGroup, and cannot be changed: delete PodGroup "a" and create it again with another parent, or none`,
		},
		{
			name:   "cycle of two seen from a member",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("a").Gang(1).Parent("b").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("b").Gang(1).Parent("a").Obj()},
			target: CompositePodGroupKey("ns", "a"),
			want:   "cycle: a → b → a" + "; " + recreateAdvice,
		},
		{
			name:   "cycle seen from a PodGroup below it",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("a").Gang(1).Parent("b").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("b").Gang(1).Parent("a").Obj(), lt.MakePodGroup().Namespace("ns").Name("leaf").Gang(1).Parent("a").Obj()},
			target: PodGroupKey("ns", "leaf"),
			want:   "cycle: a → b → a" + "; " + recreateAdvice,
		},
		{
			name:   "self parent",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("a").Gang(1).Parent("a").Obj()},
			target: CompositePodGroupKey("ns", "a"),
			want:   "cycle: a → a" + "; " + recreateAdvice,
		},
		{
			name:   "four levels are allowed",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("d1").Gang(1).Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d2").Gang(1).Parent("d1").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d3").Gang(1).Parent("d2").Obj(), lt.MakePodGroup().Namespace("ns").Name("leaf").Gang(1).Parent("d3").Obj()},
			target: PodGroupKey("ns", "leaf"),
		},
		{
			name:   "five levels are not",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("d1").Gang(1).Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d2").Gang(1).Parent("d1").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d3").Gang(1).Parent("d2").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d4").Gang(1).Parent("d3").Obj(), lt.MakePodGroup().Namespace("ns").Name("leaf").Gang(1).Parent("d4").Obj()},
			target: PodGroupKey("ns", "leaf"),
			want:   "tree too deep: d1 → d2 → d3 → d4 → leaf has more than 4 levels",
		},
		{
			name:   "a valid group above a too deep one stays valid",
			pgs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("d1").Gang(1).Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d2").Gang(1).Parent("d1").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d3").Gang(1).Parent("d2").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("d4").Gang(1).Parent("d3").Obj(), lt.MakePodGroup().Namespace("ns").Name("leaf").Gang(1).Parent("d4").Obj()},
			target: CompositePodGroupKey("ns", "d3"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := NewIndex()
			for _, o := range tc.pgs {
				ix.Revalidate(ix.Upsert(o)[1], nil)
			}
			for _, k := range ix.Keys() {
				ix.Revalidate(ix.TopOf(k), nil)
			}
			if diff := cmp.Diff(tc.want, ix.Get(tc.target).Problem()); diff != "" {
				t.Errorf("problem (-want +got):\n%s", diff)
			}
			if _, ok := ix.RootOf(tc.target); ok != (tc.want == "") {
				t.Errorf("RootOf ok = %v, want %v", ok, tc.want == "")
			}
		})
	}
}

func TestReadiness(t *testing.T) {
	// Trees are described by objects and per-PodGroup counts of pending and bound pods.
	type counts struct{ pending, bound int }
	tests := []struct {
		name       string
		objs       []any
		pods       map[string]counts
		subtree    map[Key]bool // by known pods
		path       map[Key]bool // by known pods
		schedPath  map[Key]bool // by bound pods (nothing assumed here)
		checkGroup Key
	}{
		{
			name:    "gang PodGroup below and at minCount",
			objs:    []any{lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj(), lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Obj()},
			pods:    map[string]counts{"a": {pending: 2}, "b": {pending: 1, bound: 1}},
			subtree: map[Key]bool{PodGroupKey("ns", "a"): false, PodGroupKey("ns", "b"): true},
			schedPath: map[Key]bool{
				PodGroupKey("ns", "a"): false, PodGroupKey("ns", "b"): false,
			},
		},
		{
			name:      "basic PodGroup needs one pod",
			objs:      []any{lt.MakePodGroup().Namespace("ns").Name("a").Basic().Obj()},
			pods:      map[string]counts{"a": {bound: 1}},
			subtree:   map[Key]bool{PodGroupKey("ns", "a"): true},
			schedPath: map[Key]bool{PodGroupKey("ns", "a"): true},
		},
		{
			name: "gang CompositePodGroup counts ready children",
			objs: []any{lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj(), lt.MakePodGroup().Namespace("ns").Name("s0").Gang(2).Parent("job").Obj(), lt.MakePodGroup().Namespace("ns").Name("s1").Gang(2).Parent("job").Obj(), lt.MakePodGroup().Namespace("ns").Name("s2").Gang(2).Parent("job").Obj()},
			pods: map[string]counts{"s0": {pending: 2}, "s1": {pending: 2}, "s2": {pending: 1}},
			subtree: map[Key]bool{
				CompositePodGroupKey("ns", "job"): true, PodGroupKey("ns", "s2"): false,
			},
			path: map[Key]bool{
				PodGroupKey("ns", "s0"): true, PodGroupKey("ns", "s2"): false,
			},
		},
		{
			name: "gang CompositePodGroup short of children holds every child",
			objs: []any{lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(2).Obj(), lt.MakePodGroup().Namespace("ns").Name("s0").Gang(2).Parent("job").Obj(), lt.MakePodGroup().Namespace("ns").Name("s1").Gang(2).Parent("job").Obj()},
			pods: map[string]counts{"s0": {pending: 2}, "s1": {pending: 1}},
			subtree: map[Key]bool{
				CompositePodGroupKey("ns", "job"): false, PodGroupKey("ns", "s0"): true,
			},
			path: map[Key]bool{PodGroupKey("ns", "s0"): false},
		},
		{
			name:    "basic CompositePodGroup is ready with one ready child",
			objs:    []any{lt.MakeCompositePodGroup().Namespace("ns").Name("job").Basic().Obj(), lt.MakePodGroup().Namespace("ns").Name("s0").Gang(2).Parent("job").Obj(), lt.MakePodGroup().Namespace("ns").Name("s1").Gang(2).Parent("job").Obj()},
			pods:    map[string]counts{"s0": {pending: 2}, "s1": {pending: 1}},
			subtree: map[Key]bool{CompositePodGroupKey("ns", "job"): true},
			path:    map[Key]bool{PodGroupKey("ns", "s0"): true, PodGroupKey("ns", "s1"): false},
		},
		{
			name: "three levels",
			objs: []any{lt.MakeCompositePodGroup().Namespace("ns").Name("root").Gang(2).Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("m0").Gang(2).Parent("root").Obj(), lt.MakeCompositePodGroup().Namespace("ns").Name("m1").Gang(1).Parent("root").Obj(),
				lt.MakePodGroup().Namespace("ns").Name("l00").Gang(1).Parent("m0").Obj(), lt.MakePodGroup().Namespace("ns").Name("l01").Gang(1).Parent("m0").Obj(), lt.MakePodGroup().Namespace("ns").Name("l10").Gang(1).Parent("m1").Obj()},
			pods: map[string]counts{"l00": {pending: 1}, "l01": {}, "l10": {bound: 1}},
			subtree: map[Key]bool{
				CompositePodGroupKey("ns", "m0"): false, CompositePodGroupKey("ns", "m1"): true,
				CompositePodGroupKey("ns", "root"): false,
			},
			path:      map[Key]bool{PodGroupKey("ns", "l00"): false, PodGroupKey("ns", "l10"): false},
			schedPath: map[Key]bool{PodGroupKey("ns", "l10"): false},
		},
		{
			name:    "an invalid group is never ready",
			objs:    []any{lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Parent("nope").Obj()},
			pods:    map[string]counts{"a": {pending: 3}},
			subtree: map[Key]bool{PodGroupKey("ns", "a"): false},
		},
		{
			name:    "a group whose object does not exist is never ready",
			objs:    []any{},
			pods:    map[string]counts{"ghost": {pending: 3}},
			subtree: map[Key]bool{PodGroupKey("ns", "ghost"): false},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			for _, o := range tc.objs {
				m.OnGroup(nil, o)
			}
			for g, c := range tc.pods {
				for i := 0; i < c.pending; i++ {
					m.OnPod(nil, lt.Member("ns", g, i).Obj())
				}
				for i := 0; i < c.bound; i++ {
					m.OnPod(nil, lt.Member("ns", g, 100+i).Node("node").Obj())
				}
			}
			known := m.index.readiness(m.members.Known, false)
			for k, want := range tc.subtree {
				if got := known.subtree(k); got != want {
					t.Errorf("subtree(%s) by known pods = %v, want %v", k, got, want)
				}
			}
			for k, want := range tc.path {
				if got := known.path(k); got != want {
					t.Errorf("path(%s) by known pods = %v, want %v", k, got, want)
				}
			}
			sched := m.index.readiness(m.permits.placedCounter(), false)
			for k, want := range tc.schedPath {
				if got := sched.path(k); got != want {
					t.Errorf("path(%s) by scheduled pods = %v, want %v", k, got, want)
				}
			}
		})
	}
}

// A group deleted and created again starts over: it is not scheduled any more, and its
// children and members are linked to the new object.
func TestIndexDeleteAndRecreate(t *testing.T) {
	m, _, _ := testModel(t)
	ix := m.index
	job := lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj()
	job.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue}}
	m.OnGroup(nil, job)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Parent("job").Obj())
	if !ix.Get(CompositePodGroupKey("ns", "job")).Scheduled() {
		t.Fatal("a group whose object says it was scheduled (with its current spec) is scheduled")
	}
	m.OnGroupDelete(job)
	if got := ix.Get(PodGroupKey("ns", "a")).Problem(); got != `parent CompositePodGroup "job" not found: create it; or, as parentCompositePodGroupName cannot be changed, delete PodGroup "a" and create it again with another parent, or none` {
		t.Errorf("child of a deleted parent: problem %q", got)
	}
	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj())
	if ix.Get(CompositePodGroupKey("ns", "job")).Scheduled() {
		t.Error("a group created again is scheduled")
	}
	if root, ok := ix.RootOf(PodGroupKey("ns", "a")); !ok || root != CompositePodGroupKey("ns", "job") {
		t.Errorf("RootOf = %v %v, want the new parent", root, ok)
	}
	// A condition written for an older spec (observedGeneration behind) is not taken.
	stale := lt.MakePodGroup().Namespace("ns").Name("b").Gang(3).Obj()
	stale.Generation = 2
	stale.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	m.OnGroup(nil, stale)
	if ix.Get(PodGroupKey("ns", "b")).Scheduled() {
		t.Error("a condition True for generation 1 taken for generation 2")
	}
}
