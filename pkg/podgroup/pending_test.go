package podgroup

import (
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A gang is pending from its earliest member's creation until its members have nodes; basic
// groups and replacements of a running gang are not pending gangs. The metrics report it at
// each scrape.
func TestPendingGangs(t *testing.T) {
	m, clk, _ := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("gang").Gang(2).Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("basic").Basic().Obj())
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("running").Gang(1).Condition("True", "Scheduled").Obj())
	gang := addPods(m, "gang", 2)
	addPods(m, "basic", 1)
	addPods(m, "running", 1) // a replacement of a scheduled gang
	clk.Step(10 * time.Minute)
	late := lt.Member("ns", "later", 0).Obj() // a gang created later
	late.CreationTimestamp.Time = lt.Epoch.Add(9 * time.Minute)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("later").Gang(1).Obj())
	m.OnPod(nil, late)

	if n, oldest := m.PendingGangs(); n != 2 || oldest != 10*time.Minute {
		t.Errorf("PendingGangs = %d, %s; want 2, 10m0s (gang, then later)", n, oldest)
	}
	pendingSource.Store(m)
	t.Cleanup(func() { pendingSource.Store(nil) })
	want := `
# HELP lockstep_gang_oldest_pending_seconds [ALPHA] How long the gang pending longest has been pending, from the creation of its earliest member without a node (0 when none is). Alert on it for gangs stuck behind others.
# TYPE lockstep_gang_oldest_pending_seconds gauge
lockstep_gang_oldest_pending_seconds 600
# HELP lockstep_gangs_pending [ALPHA] Gangs pending: not yet placed whole (never scheduled, or disrupted since) with members that exist and have no node. Suspended workloads (queued in Kueue) have no pods and are not counted.
# TYPE lockstep_gangs_pending gauge
lockstep_gangs_pending 2
`
	if err := testutil.CustomCollectAndCompare(&pendingCollector{}, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	for _, p := range gang {
		m.OnPod(p, assumed(p, "n1"))
	}
	if n, oldest := m.PendingGangs(); n != 1 || oldest != time.Minute {
		t.Errorf("with gang bound: PendingGangs = %d, %s; want 1, 1m0s (later)", n, oldest)
	}
	m.OnPodDelete(late)
	if n, oldest := m.PendingGangs(); n != 0 || oldest != 0 {
		t.Errorf("with nothing pending: PendingGangs = %d, %s; want 0, 0s", n, oldest)
	}
}
