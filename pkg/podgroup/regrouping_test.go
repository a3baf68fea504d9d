package podgroup

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// The regrouping log says where what the model says of running pods changed with no pod
// changing: a group created over running pods, its parent created or edited, a group deleted
// while its pods run, a PriorityClass edited (everywhere). Gang preemption's kept bounds
// follow it instead of expiring every 30 seconds; a change it missed would keep a bound that
// is no longer one.
func TestRegroupedSaysWhereRunningPodsChangedGroup(t *testing.T) {
	m, _, _ := testModel(t)
	g := m.Gate()
	since := uint64(0)
	expect := func(what string, nodes []string, all bool) {
		t.Helper()
		gotNodes, gotAll, now := g.Regrouped(since)
		if !cmp.Equal(gotNodes, nodes) || gotAll != all {
			t.Errorf("%s: Regrouped = %v, all %v; want %v, all %v", what, gotNodes, gotAll, nodes, all)
		}
		since = now
	}
	m.OnPod(nil, lt.Member("ns", "a", 0).Node("n1").Obj())
	m.OnPod(nil, lt.Member("ns", "a", 1).Node("n2").Obj())
	m.OnPod(nil, lt.Member("ns", "b", 0).Obj()) // pending
	expect("pods only", nil, false)

	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("job").Obj())
	expect("group created over running pods", []string{"n1", "n2"}, false)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("b").Gang(1).Obj())
	expect("a group of pending pods only", nil, false)

	m.OnGroup(nil, lt.MakeCompositePodGroup().Namespace("ns").Name("job").Gang(1).Obj())
	expect("parent created", []string{"n1", "n2"}, false)

	pg := lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Parent("job").Obj()
	m.OnGroupDelete(pg)
	expect("group deleted while its pods run", []string{"n1", "n2"}, false)
	expect("nothing since", nil, false)

	m.OnPriorityClass()
	expect("a PriorityClass edited", nil, true)

	m.regroupings.limit = 3
	for i := range 4 {
		m.OnPod(nil, lt.Member("ns", "c", i).Node(fmt.Sprintf("m%d", i)).Obj())
	}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("c").Gang(1).Obj())
	expect("more nodes than it remembers", nil, true)
	if n := len(m.regroupings.at); n > 3 {
		t.Errorf("%d nodes remembered, want at most 3", n)
	}
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj())
	expect("then a change as before", []string{"n1", "n2"}, false)
}
