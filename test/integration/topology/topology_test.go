package topology

import (
	"fmt"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
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

// Rack-required gangs land each in one rack, two gangs in two racks when one rack cannot
// hold both.
func TestRackRequiredGangs(t *testing.T) { testenv.ForEachAPI(t, testRackRequiredGangs) }

func testRackRequiredGangs(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "rack")
	env.CreateNodes(t, lt.TopologyNodes(1, 2, 2, 2, "4")...) // racks of 8 cpu
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t,
		lt.MakePodGroup().Namespace(ns).Name("a").Gang(4).Topology(lt.Required(lt.RackKey)).Obj(),
		lt.MakePodGroup().Namespace(ns).Name("b").Gang(3).Topology(lt.Required(lt.RackKey)).Obj())
	env.CreatePods(t, append(lt.Members(ns, "a", 4, lt.CPU("2")), lt.Members(ns, "b", 3, lt.CPU("2"))...)...)

	placed := env.WaitBound(t, ns, append(names(4, "a"), names(3, "b")...)...)
	ra := assertOneDomain(t, placed, names(4, "a"), lt.RackKey)
	rb := assertOneDomain(t, placed, names(3, "b"), lt.RackKey)
	if ra == rb {
		t.Errorf("both gangs in rack %s, which holds 8 cpu for 14 requested", ra)
	}
}

// A three-level tree: the job in one zone, each shard group in one block, each shard in one
// rack.
func TestThreeLevelCompositeZoneBlockRack(t *testing.T) {
	testenv.ForEachAPI(t, testThreeLevelCompositeZoneBlockRack)
}

func testThreeLevelCompositeZoneBlockRack(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "tree")
	env.CreateNodes(t, lt.TopologyNodes(2, 2, 2, 2, "4")...)
	env.StartScheduler(t, fastArgs)

	env.CreateComposites(t,
		lt.MakeCompositePodGroup().Namespace(ns).Name("job").Gang(2).Topology(lt.Required(lt.ZoneKey)).Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("m0").Gang(2).Parent("job").Topology(lt.Required(lt.BlockKey)).Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("m1").Gang(2).Parent("job").Topology(lt.Required(lt.BlockKey)).Obj())
	leaves := map[string]string{"l00": "m0", "l01": "m0", "l10": "m1", "l11": "m1"}
	for leaf, mid := range leaves {
		env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(leaf).Gang(2).Parent(mid).Topology(lt.Required(lt.RackKey)).Obj())
	}
	var all []string
	for leaf := range leaves {
		env.CreatePods(t, lt.Members(ns, leaf, 2, lt.CPU("3"))...)
		all = append(all, names(2, leaf)...)
	}

	placed := env.WaitBound(t, ns, all...)
	assertOneDomain(t, placed, all, lt.ZoneKey)
	for _, mid := range []string{"m0", "m1"} {
		var pods []string
		for leaf, m := range leaves {
			if m == mid {
				pods = append(pods, names(2, leaf)...)
			}
		}
		assertOneDomain(t, placed, pods, lt.BlockKey)
	}
	racks := map[string]bool{}
	for leaf := range leaves {
		racks[assertOneDomain(t, placed, names(2, leaf), lt.RackKey)] = true
	}
	if len(racks) != 4 {
		t.Errorf("4 shards of 6 cpu share racks of 8 cpu: %v", racks)
	}
	env.WaitCondition(t, "CompositePodGroup", ns, "job", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
}

// Preferred rack: a gang that fits in a rack packs into one; one that does not falls back to
// one block.
func TestPreferredRackFallsBackToBlock(t *testing.T) {
	testenv.ForEachAPI(t, testPreferredRackFallsBackToBlock)
}

func testPreferredRackFallsBackToBlock(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "pref")
	env.CreateNodes(t, lt.TopologyNodes(1, 2, 2, 2, "4")...) // racks 8 cpu, blocks 16
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("small").Gang(2).Topology(lt.Preferred(lt.RackKey)).Obj())
	env.CreatePods(t, lt.Members(ns, "small", 2, lt.CPU("4"))...)
	placed := env.WaitBound(t, ns, names(2, "small")...)
	assertOneDomain(t, placed, names(2, "small"), lt.RackKey)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("wide").Gang(3).Topology(lt.Required(lt.BlockKey), lt.Preferred(lt.RackKey)).Obj())
	env.CreatePods(t, lt.Members(ns, "wide", 3, lt.CPU("4"))...)
	placed = env.WaitBound(t, ns, names(3, "wide")...)
	assertOneDomain(t, placed, names(3, "wide"), lt.BlockKey)
	if got := domains(placed, names(3, "wide"), lt.RackKey); len(got) != 2 {
		t.Errorf("3 × 4 cpu in racks of 8 should span two racks of one block, got %v", got)
	}
}

// When no rack has room, the gang waits with a condition that says so in numbers, and binds
// in one rack once a rack has room.
func TestNoRackFitsExplainsInNumbers(t *testing.T) {
	testenv.ForEachAPI(t, testNoRackFitsExplainsInNumbers)
}

func testNoRackFitsExplainsInNumbers(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "full")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 2, "4")...)
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("big").Gang(3).Topology(lt.Required(lt.RackKey)).Obj())
	env.CreatePods(t, lt.Members(ns, "big", 3, lt.CPU("4"))...)
	env.WaitCondition(t, "PodGroup", ns, "big", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable,
		"cannot fit: PodGroup big: no rack has room for 3 pods × 4 cpu; the roomiest rack could take 2")
	env.AssertUnbound(t, ns, names(3, "big")...)

	env.CreateNodes(t, lt.InTopology(lt.MakeNode("z0-b0-r0-h2", "4"), "z0", "z0-b0", "z0-b0-r0").Obj())
	placed := env.WaitBound(t, ns, names(3, "big")...)
	if r := assertOneDomain(t, placed, names(3, "big"), lt.RackKey); r != "z0-b0-r0" {
		t.Errorf("gang in rack %s, want the rack that grew", r)
	}
}

// Members already bound (after a restart) pin their rack, even when another rack fits better.
func TestBoundMembersPinTheirRackAcrossRestart(t *testing.T) {
	testenv.ForEachAPI(t, testBoundMembersPinTheirRackAcrossRestart)
}

func testBoundMembersPinTheirRackAcrossRestart(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "pin")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 2, "8")...)
	// Rack r0 is fuller, so best fit alone would choose it for the rest of the gang.
	env.CreatePods(t, lt.GroupPod(ns, "filler", "").Req(lt.CPU("6")).Node("z0-b0-r0-h0").Obj())
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("resume").Gang(4).Topology(lt.Required(lt.RackKey)).Obj())
	env.CreatePods(t,
		lt.Member(ns, "resume", 0).Req(lt.CPU("2")).Node("z0-b0-r1-h0").Obj(),
		lt.Member(ns, "resume", 1).Req(lt.CPU("2")).Node("z0-b0-r1-h1").Obj(),
		lt.Member(ns, "resume", 2).Req(lt.CPU("2")).Obj(),
		lt.Member(ns, "resume", 3).Req(lt.CPU("2")).Obj())

	env.StartScheduler(t, fastArgs)
	placed := env.WaitBound(t, ns, names(4, "resume")...)
	if r := assertOneDomain(t, placed, names(4, "resume"), lt.RackKey); r != "z0-b0-r1" {
		t.Errorf("gang finished in rack %s, want the rack its bound members are in", r)
	}
}

// A bind can land as its node is deleted. Such a member says nothing of where its gang is: a
// replacement whose only placed sibling is on a deleted node waits, told why, rather than
// binding in any rack; once the member is removed (as the pod garbage collector does), the
// replacements bind in one rack. Replacements of a scheduled gang bind one by one, the first
// where it fits best: nodes of room for two members keep the second from finding the first's
// rack full (the rack that lost a node has one node left).
func TestMemberOnADeletedNodeDoesNotUnpinItsRack(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "orphan")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 2, "8")...)
	env.StartScheduler(t, fastArgs)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(2).Topology(lt.Required(lt.RackKey)).Obj())
	env.CreatePods(t, lt.Members(ns, "train", 2, lt.CPU("3"))...)
	placed := env.WaitBound(t, ns, names(2, "train")...)
	assertOneDomain(t, placed, names(2, "train"), lt.RackKey)
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	env.DeleteNode(t, placed["train-0"]) // train-1 may be on it too: then it is a second orphan
	env.DeletePods(t, ns, "train-1")
	env.CreatePods(t, lt.Member(ns, "train", 2).Req(lt.CPU("3")).Obj())
	env.WaitUnschedulable(t, ns, "train-2", "member placed on node "+placed["train-0"]+", which is not in the cluster")

	env.DeletePods(t, ns, "train-0")
	env.CreatePods(t, lt.Member(ns, "train", 3).Req(lt.CPU("3")).Obj())
	placed = env.WaitBound(t, ns, "train-2", "train-3")
	assertOneDomain(t, placed, []string{"train-2", "train-3"}, lt.RackKey)
}

// A rack-required gang whose pods were all deleted after it was scheduled (its node failed,
// its controller restarted them) gets its replacements placed whole again, in the rack with
// room for all of them: the first does not take the emptiest node for itself alone, in a rack
// with room for two, and leave the others pinned where they cannot fit.
func TestReplacementsOfAnEmptiedGangBindInOneRack(t *testing.T) {
	testenv.ForEachAPI(t, testReplacementsOfAnEmptiedGangBindInOneRack)
}

func testReplacementsOfAnEmptiedGangBindInOneRack(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "emptied")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 2, "8")...)
	env.StartScheduler(t, fastArgs)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(4).Topology(lt.Required(lt.RackKey)).Obj())
	env.CreatePods(t, lt.Members(ns, "train", 4, lt.CPU("3"))...)
	placed := env.WaitBound(t, ns, names(4, "train")...)
	assertOneDomain(t, placed, names(4, "train"), lt.RackKey)
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	rack, other := env.NodeDomain(t, placed["train-0"], lt.RackKey), "z0-b0-r0"
	if rack == other {
		other = "z0-b0-r1"
	}
	// The gang's rack keeps room for four members (6 of 8 cores on each host); the other
	// rack has one empty host (room for two) and one full.
	env.CreatePods(t, lt.MakePod().Namespace(ns).Name("fill-0").Req(lt.CPU("2")).Node(rack+"-h0").Obj(),
		lt.MakePod().Namespace(ns).Name("fill-1").Req(lt.CPU("2")).Node(rack+"-h1").Obj(),
		lt.MakePod().Namespace(ns).Name("fill-2").Req(lt.CPU("8")).Node(other+"-h1").Obj())
	env.DeletePods(t, ns, names(4, "train")...)
	var again []*v1.Pod
	for i := 4; i < 8; i++ {
		again = append(again, lt.Member(ns, "train", i).Req(lt.CPU("3")).Obj())
	}
	env.CreatePods(t, again...)
	replacements := []string{"train-4", "train-5", "train-6", "train-7"}
	placed = env.WaitBound(t, ns, replacements...)
	assertOneDomain(t, placed, replacements, lt.RackKey)
}

// A topology key that is not a configured level is refused with a condition.
func TestUnknownTopologyKeyIsInvalid(t *testing.T) {
	testenv.ForEachAPI(t, testUnknownTopologyKeyIsInvalid)
}

func testUnknownTopologyKeyIsInvalid(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "badkey")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 1, 2, "4")...)
	env.StartScheduler(t, fastArgs)
	env.CreatePodGroups(t,
		lt.MakePodGroup().Namespace(ns).Name("g").Gang(2).Topology(lt.Required("example.com/pdu")).Obj(),
		lt.MakePodGroup().Namespace(ns).Name("ok").Gang(2).Obj())
	env.CreatePods(t, append(lt.Members(ns, "g", 2, lt.CPU("1")), lt.Members(ns, "ok", 2, lt.CPU("1"))...)...)
	env.WaitCondition(t, "PodGroup", ns, "g", metav1.ConditionFalse, v1alpha1.ReasonInvalid, `topology key "example.com/pdu" is not a configured level`)
	env.WaitBound(t, ns, names(2, "ok")...)
	env.AssertUnbound(t, ns, names(2, "g")...)
}

// With the shipped levels (zone, block, rack, hostname) on nodes labelled only with a zone
// and a hostname, as most clusters' are: a host-required gang binds whole on one host and a
// zone-required one in one zone, while a rack-required gang waits, told that no node carries
// the rack label. Domains are read from the nodes' labels in the API.
func TestNodesWithoutBlockOrRackLabels(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "unracked")
	env.CreateNodes(t,
		lt.InTopology(lt.MakeNode("a0", "4"), "za", "", "").Obj(),
		lt.InTopology(lt.MakeNode("a1", "8"), "za", "", "").Obj(),
		lt.InTopology(lt.MakeNode("b0", "8"), "zb", "", "").Obj(),
		lt.InTopology(lt.MakeNode("b1", "4"), "zb", "", "").Obj())
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t,
		lt.MakePodGroup().Namespace(ns).Name("host").Gang(2).Topology(lt.Required(lt.HostKey)).Obj(),
		lt.MakePodGroup().Namespace(ns).Name("zone").Gang(3).Topology(lt.Required(lt.ZoneKey)).Obj(),
		lt.MakePodGroup().Namespace(ns).Name("rack").Gang(2).Topology(lt.Required(lt.RackKey)).Obj())
	env.CreatePods(t, append(append(lt.Members(ns, "host", 2, lt.CPU("4")), lt.Members(ns, "zone", 3, lt.CPU("2"))...),
		lt.Members(ns, "rack", 2, lt.CPU("1"))...)...)

	env.WaitCondition(t, "PodGroup", ns, "rack", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable,
		"no node carries the rack label "+lt.RackKey)
	placed := env.WaitBound(t, ns, append(names(2, "host"), names(3, "zone")...)...)
	hosts := map[string]bool{}
	for _, p := range names(2, "host") {
		hosts[env.NodeDomain(t, placed[p], lt.HostKey)] = true
	}
	if len(hosts) != 1 {
		t.Errorf("host-required gang on hosts %v; placement %v", hosts, placed)
	}
	zones := map[string]bool{}
	for _, p := range names(3, "zone") {
		zones[env.NodeDomain(t, placed[p], lt.ZoneKey)] = true
	}
	if len(zones) != 1 {
		t.Errorf("zone-required gang in zones %v; placement %v", zones, placed)
	}
	env.AssertUnbound(t, ns, names(2, "rack")...)
}
