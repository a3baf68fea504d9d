package gangpreemption

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// The index of nodes kept from one decision to the next answers for the list it is asked
// about: a list in another order, or with a node more, rebuilds it; a node the list does not
// have is not found.
func TestNodeIndexFollowsTheList(t *testing.T) {
	a, b, c := lt.MakeNode("a", "1").Obj(), lt.MakeNode("b", "1").Obj(), lt.MakeNode("c", "1").Obj()
	var names nodeNames
	for _, tc := range []struct {
		name  string
		nodes []*v1.Node
	}{
		{"first list", []*v1.Node{a, b}},
		{"the same list again", []*v1.Node{a, b}},
		{"another order", []*v1.Node{b, a}},
		{"a node more", []*v1.Node{c, b, a}},
	} {
		infos := nodeInfos(tc.nodes, nil)
		x := names.get(infos)
		for i, n := range tc.nodes {
			if got, ok := x.of(n.Name); !ok || got != i {
				t.Errorf("%s: node %s at %d, %v; want %d", tc.name, n.Name, got, ok, i)
			}
		}
		if _, ok := x.of("gone"); ok {
			t.Errorf("%s: found a node the list does not have", tc.name)
		}
	}
}
