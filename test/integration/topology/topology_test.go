package topology

import (
	"fmt"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

var fastArgs = testenv.GangArgs{"backoffSeconds": 1}

func names(n int, group string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", group, i)
	}
	return out
}

// domains returns the distinct domains of a level the named pods are bound in.
func domains(placed map[string]string, pods []string, level string) []string {
	set := map[string]bool{}
	for _, p := range pods {
		set[testenv.Domain(placed[p], level)] = true
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// assertOneDomain fails unless all pods are bound in one domain of level, and returns it.
func assertOneDomain(t *testing.T, placed map[string]string, pods []string, level string) string {
	t.Helper()
	got := domains(placed, pods, level)
	if len(got) != 1 {
		t.Fatalf("pods %v span %v at %s; placement %v", pods, got, level, placed)
	}
	return got[0]
}

func gangPods(ns, group string, n int, cpu string) []*v1.Pod {
	return testenv.GangPods(ns, group, n, cpu)
}

// Rack-required gangs land each in one rack, two gangs in two racks when one rack cannot
// hold both.
func TestRackRequiredGangs(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "rack")
	env.CreateNodes(t, testenv.TopologyNodes(1, 2, 2, 2, "4")...) // racks of 8 cpu
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, "a", 4, ""), "rack"), testenv.Constrain(testenv.Gang(ns, "b", 3, ""), "rack"))
	env.CreatePods(t, append(gangPods(ns, "a", 4, "2"), gangPods(ns, "b", 3, "2")...)...)

	placed := env.WaitBound(t, ns, append(names(4, "a"), names(3, "b")...)...)
	ra := assertOneDomain(t, placed, names(4, "a"), testenv.RackLabel)
	rb := assertOneDomain(t, placed, names(3, "b"), testenv.RackLabel)
	if ra == rb {
		t.Errorf("both gangs in rack %s, which holds 8 cpu for 14 requested", ra)
	}
}

// A three-level tree: the job in one zone, each shard group in one block, each shard in one
// rack.
func TestThreeLevelCompositeZoneBlockRack(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "tree")
	env.CreateNodes(t, testenv.TopologyNodes(2, 2, 2, 2, "4")...)
	env.StartScheduler(t, fastArgs)

	env.CreateComposites(t,
		testenv.ConstrainComposite(testenv.Composite(ns, "job", 2, ""), "zone"),
		testenv.ConstrainComposite(testenv.Composite(ns, "m0", 2, "job"), "block"),
		testenv.ConstrainComposite(testenv.Composite(ns, "m1", 2, "job"), "block"))
	leaves := map[string]string{"l00": "m0", "l01": "m0", "l10": "m1", "l11": "m1"}
	for leaf, mid := range leaves {
		env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, leaf, 2, mid), "rack"))
	}
	var all []string
	for leaf := range leaves {
		env.CreatePods(t, gangPods(ns, leaf, 2, "3")...)
		all = append(all, names(2, leaf)...)
	}

	placed := env.WaitBound(t, ns, all...)
	assertOneDomain(t, placed, all, testenv.ZoneLabel)
	for _, mid := range []string{"m0", "m1"} {
		var pods []string
		for leaf, m := range leaves {
			if m == mid {
				pods = append(pods, names(2, leaf)...)
			}
		}
		assertOneDomain(t, placed, pods, testenv.BlockLabel)
	}
	racks := map[string]bool{}
	for leaf := range leaves {
		racks[assertOneDomain(t, placed, names(2, leaf), testenv.RackLabel)] = true
	}
	if len(racks) != 4 {
		t.Errorf("4 shards of 6 cpu share racks of 8 cpu: %v", racks)
	}
	env.WaitCondition(t, "CompositePodGroup", ns, "job", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
}

// Preferred rack: a gang that fits in a rack packs into one; one that does not falls back to
// one block.
func TestPreferredRackFallsBackToBlock(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "pref")
	env.CreateNodes(t, testenv.TopologyNodes(1, 2, 2, 2, "4")...) // racks 8 cpu, blocks 16
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, "small", 2, ""), "~rack"))
	env.CreatePods(t, gangPods(ns, "small", 2, "4")...)
	placed := env.WaitBound(t, ns, names(2, "small")...)
	assertOneDomain(t, placed, names(2, "small"), testenv.RackLabel)

	env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, "wide", 3, ""), "block", "~rack"))
	env.CreatePods(t, gangPods(ns, "wide", 3, "4")...)
	placed = env.WaitBound(t, ns, names(3, "wide")...)
	assertOneDomain(t, placed, names(3, "wide"), testenv.BlockLabel)
	if got := domains(placed, names(3, "wide"), testenv.RackLabel); len(got) != 2 {
		t.Errorf("3 × 4 cpu in racks of 8 should span two racks of one block, got %v", got)
	}
}

// When no rack has room, the gang waits with a condition that says so in numbers, and binds
// in one rack once a rack has room.
func TestNoRackFitsExplainsInNumbers(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "full")
	env.CreateNodes(t, testenv.TopologyNodes(1, 1, 2, 2, "4")...)
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, "big", 3, ""), "rack"))
	env.CreatePods(t, gangPods(ns, "big", 3, "4")...)
	env.WaitCondition(t, "PodGroup", ns, "big", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable,
		"cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2")
	env.AssertUnbound(t, ns, names(3, "big")...)

	env.CreateNodes(t, testenv.Node("z0-b0-r0-h2", "4", map[string]string{
		testenv.ZoneLabel: "z0", testenv.BlockLabel: "z0-b0", testenv.RackLabel: "z0-b0-r0", testenv.HostLabel: "z0-b0-r0-h2"}))
	placed := env.WaitBound(t, ns, names(3, "big")...)
	if r := assertOneDomain(t, placed, names(3, "big"), testenv.RackLabel); r != "z0-b0-r0" {
		t.Errorf("gang in rack %s, want the rack that grew", r)
	}
}

// Members already bound (after a restart) pin their rack, even when another rack fits better.
func TestBoundMembersPinTheirRackAcrossRestart(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "pin")
	env.CreateNodes(t, testenv.TopologyNodes(1, 1, 2, 2, "8")...)
	// Rack r0 is fuller, so best fit alone would choose it for the rest of the gang.
	env.CreatePods(t, func() *v1.Pod { p := testenv.Pod(ns, "filler", "", "6"); p.Spec.NodeName = "z0-b0-r0-h0"; return p }())
	env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, "resume", 4, ""), "rack"))
	pods := gangPods(ns, "resume", 4, "2")
	pods[0].Spec.NodeName, pods[1].Spec.NodeName = "z0-b0-r1-h0", "z0-b0-r1-h1"
	env.CreatePods(t, pods...)

	env.StartScheduler(t, fastArgs)
	placed := env.WaitBound(t, ns, names(4, "resume")...)
	if r := assertOneDomain(t, placed, names(4, "resume"), testenv.RackLabel); r != "z0-b0-r1" {
		t.Errorf("gang finished in rack %s, want the rack its bound members are in", r)
	}
}

// A topology key that is not a configured level is refused with a condition.
func TestUnknownTopologyKeyIsInvalid(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "badkey")
	env.CreateNodes(t, testenv.TopologyNodes(1, 1, 1, 2, "4")...)
	env.StartScheduler(t, fastArgs)
	env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, "g", 2, ""), "example.com/pdu"), testenv.Gang(ns, "ok", 2, ""))
	env.CreatePods(t, append(gangPods(ns, "g", 2, "1"), gangPods(ns, "ok", 2, "1")...)...)
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionFalse, v1alpha1.ReasonInvalid, `topology key "example.com/pdu" is not a configured level`)
	env.WaitBound(t, ns, names(2, "ok")...)
	env.AssertUnbound(t, ns, names(2, "g")...)
}
