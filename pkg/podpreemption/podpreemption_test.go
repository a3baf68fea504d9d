package podpreemption

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// wholeGangs adds every running member of a victim's gang, once, highest priority first.
func TestWholeGangs(t *testing.T) {
	pod := func(name string, prio int32) *v1.Pod {
		return st.MakePod().Name(name).UID(name).Priority(prio).Obj()
	}
	a0, a1, a2, b, c := pod("a-0", 5), pod("a-1", 5), pod("a-2", 5), pod("b", 7), pod("c", 1)
	units := map[types.UID]podgroup.Unit{
		a0.UID: {Pods: []*v1.Pod{a0, a1, a2}}, a1.UID: {Pods: []*v1.Pod{a0, a1, a2}}, a2.UID: {Pods: []*v1.Pod{a0, a1, a2}},
	}
	unitOf := func(p *v1.Pod) (podgroup.Unit, bool) { u, ok := units[p.UID]; return u, ok }
	var names []string
	for _, p := range wholeGangs([]*v1.Pod{b, a1, c, a0}, unitOf) {
		names = append(names, p.Name)
	}
	if got, want := fmt.Sprint(names), "[b a-1 a-0 a-2 c]"; got != want {
		t.Errorf("wholeGangs = %s, want %s", got, want)
	}
	if n := sets.New(names...).Len(); n != len(names) {
		t.Errorf("a pod listed twice: %v", names)
	}
}
