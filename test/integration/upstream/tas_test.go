package upstream

import (
	"testing"
)

// tasNode is upstream's makeNode: 2 cpu, in a rack and a zone.
func tasNode(name, r, z string) step { return nodes(node(name, 2, rack, r, zone, z)) }

// tasNodes adds several such nodes.
func tasNodes(specs ...[3]string) step {
	return func(h *h) {
		for _, s := range specs {
			tasNode(s[0], s[1], s[2])(h)
		}
	}
}

func member(name, pg string) pod {
	return pod{name: name, group: pg, cpu: "1", priority: 100, grace0: true}
}
func memberPrio(name, pg string, p int32) pod {
	return pod{name: name, group: pg, cpu: "1", priority: p, grace0: true}
}
func large(name, pg string) pod { return pod{name: name, group: pg, cpu: "2", priority: 100} }
func assigned(name, node, cpu string) pod {
	return pod{name: name, node: node, cpu: cpu, priority: 100, grace0: true}
}
func assignedPrio(name, node, cpu string, p int32) pod {
	return pod{name: name, node: node, cpu: cpu, priority: p, grace0: true}
}
func gangPG(name, key string, min int32) group {
	return group{name: name, key: key, min: min, priority: 100}
}
func basicPG(name, key string) group { return group{name: name, key: key, priority: 100} }

var (
	r1z1 = func(n string) [3]string { return [3]string{n, "rack-1", "zone-1"} }
	r2z1 = func(n string) [3]string { return [3]string{n, "rack-2", "zone-1"} }
	r2z2 = func(n string) [3]string { return [3]string{n, "rack-2", "zone-2"} }
	r3z2 = func(n string) [3]string { return [3]string{n, "rack-3", "zone-2"} }
	r4z2 = func(n string) [3]string { return [3]string{n, "rack-4", "zone-2"} }
)

// Upstream's TestTopologyAwareSchedulingWithGangPolicy (tas_test.go): gangs with a Required
// rack (or zone) on nodes of 2 cpu; each case once (upstream runs each with CompositePodGroup
// on and off).
func TestTopologyAwareSchedulingWithGangPolicy(t *testing.T) {
	runSuite(t, casesTopologyAwareSchedulingWithGangPolicy())
}

// casesTopologyAwareSchedulingWithGangPolicy are the cases of upstream's TestTopologyAwareSchedulingWithGangPolicy.
func casesTopologyAwareSchedulingWithGangPolicy() suite {
	p := func(i int) pod { return member(names("p", 6)[i-1], "pg1") }
	rack5 := tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z2("node3-rack2"), r2z2("node4-rack2"), r2z2("node5-rack2"), r3z2("node6-rack3"))
	rack9 := tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z2("node3-rack2"), r2z2("node4-rack2"), r2z2("node5-rack2"),
		r3z2("node6-rack3"), r3z2("node7-rack3"), r3z2("node8-rack3"), r4z2("node9-rack4"))
	rack14 := tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1"), r2z1("node4-rack2"), r2z1("node5-rack2"), r3z2("node6-rack3"))
	return suite{cases: []ucase{
		{name: "gang schedules on a single rack, when only one feasible rack is available", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1"), r2z1("node4-rack2"), r2z1("node5-rack2"), [3]string{"node6-zone2", "rack-3", "zone-2"}),
			createPods(assigned("existing1", "node4-rack2", "2")), createGroups(gangPG("pg1", rack, 3)), createPods(p(1), p(2), p(3)),
			scheduled("p1", "p2", "p3"), onNodes(names("p", 3), "node1-rack1", "node2-rack1", "node3-rack1")}},
		{name: "gang remains pending when no feasible resources are found", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z1("node3-rack2"), [3]string{"node4-zone2", "rack-3", "zone-2"}),
			createGroups(gangPG("pg1", rack, 3)), createPods(large("p1", "pg1"), large("p2", "pg1"), large("p3", "pg1")),
			unschedulablePods("p1", "p2", "p3")}},
		{name: "gang remains pending when resources are consumed by existing pods", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1")),
			createPods(assigned("existing1", "node1-rack1", "2"), assigned("existing2", "node3-rack1", "2")),
			createGroups(gangPG("pg1", rack, 3)), createPods(p(1), p(2), p(3)), unschedulablePods("p1", "p2", "p3"),
			deletePods("existing1"), scheduled("p1", "p2", "p3")}},
		{name: "gang uses pod group preemption when resources are consumed by lower priority existing pods", differs: "upstream evicts both existing pods; one is enough for the gang (3 of the rack's 6 cpu free with either gone), " +
			"and lockstep evicts no pod it does not need to", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1")),
			createPods(assigned("existing1", "node1-rack1", "2"), assigned("existing2", "node3-rack1", "2")),
			createGroups(group{name: "pg1", key: rack, min: 3, priority: 200}),
			createPods(memberPrio("p1", "pg1", 200), memberPrio("p2", "pg1", 200), memberPrio("p3", "pg1", 200)),
			scheduled("p1", "p2", "p3"), removedOneOf("existing1", "existing2")}},
		{name: "gang uses preemption and schedules on a single rack, choosing placement with the highest score", steps: []step{
			rack5,
			createPods(assignedPrio("low1-rack1", "node1-rack1", "2", 10), assignedPrio("low1-rack2", "node3-rack2", "2", 10), assignedPrio("low2-rack2", "node4-rack2", "2", 10)),
			createGroups(group{name: "pg1", key: rack, min: 3, priority: 200}),
			createPods(memberPrio("p1", "pg1", 200), memberPrio("p2", "pg1", 200), memberPrio("p3", "pg1", 200)),
			scheduled("p1", "p2", "p3"), removed("low1-rack1"), onNodes(names("p", 3), "node1-rack1", "node2-rack1")}},
		{name: "gang uses preemption and schedules on a single rack, choosing placement with highest allocation percentage with pre-existing pods in cluster",
			differs: "racks 1, 2 and 3 each take the gang for one victim of priority 10; upstream picks rack 2 by its placement score (most allocated), " +
				"lockstep's preemption by its victims alone (the same cost): one rack, one victim, the priority-200 pods kept", steps: []step{
				rack9,
				createPods(assignedPrio("existing1", "node3-rack2", "2", 200), assignedPrio("existing2", "node8-rack3", "1", 200),
					assignedPrio("low1-rack1", "node1-rack1", "2", 10), assignedPrio("low1-rack2", "node4-rack2", "2", 10),
					assignedPrio("low1-rack3", "node6-rack3", "2", 10), assignedPrio("low2-rack3", "node8-rack3", "1", 10)),
				createGroups(group{name: "pg1", key: rack, min: 3, priority: 200}),
				createPods(memberPrio("p1", "pg1", 200), memberPrio("p2", "pg1", 200), memberPrio("p3", "pg1", 200)),
				scheduled("p1", "p2", "p3"), oneDomain(rack, "p1", "p2", "p3"),
				removedOneOf("low1-rack1", "low1-rack2", "low1-rack3"), scheduled("existing1", "existing2")}},
		{name: "gang schedules on a single rack, choosing placement with the highest score in default placement scoring algorithm", steps: []step{
			rack5, createGroups(gangPG("pg1", rack, 3)), createPods(p(1), p(2), p(3)),
			scheduled("p1", "p2", "p3"), onNodes(names("p", 3), "node1-rack1", "node2-rack1")}},
		{name: "gang schedules on a single rack, choosing placement with highest allocation percentage (default placement scoring algorithm) with pre-existing pods in cluster", steps: []step{
			rack9, createPods(assigned("existing1", "node3-rack2", "2"), assigned("existing2", "node8-rack3", "1")),
			createGroups(gangPG("pg1", rack, 3)), createPods(p(1), p(2), p(3)),
			scheduled("p1", "p2", "p3"), onNodes(names("p", 3), "node3-rack2", "node4-rack2", "node5-rack2")}},
		{name: "two gangs schedule consecutively, each on a separate rack", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1"), r2z1("node4-rack2"), r2z1("node5-rack2")),
			createGroups(gangPG("pg1", rack, 3)), createPods(large("p1", "pg1"), large("p2", "pg1"), large("p3", "pg1")), scheduled("p1", "p2", "p3"),
			createGroups(gangPG("pg2", rack, 2)), createPods(member("p4", "pg2"), member("p5", "pg2")), scheduled("p4", "p5"),
			onNodes(names("p", 3), "node1-rack1", "node2-rack1", "node3-rack1"), onNodes([]string{"p4", "p5"}, "node4-rack2", "node5-rack2")}},
		{name: "two gangs schedule consecutively, both on the same rack", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1"), r2z1("node4-rack2")),
			createGroups(gangPG("pg1", rack, 2)), createPods(large("p1", "pg1"), member("p2", "pg1")),
			createGroups(gangPG("pg2", rack, 3)), createPods(member("p3", "pg2"), member("p4", "pg2"), member("p5", "pg2")),
			scheduled("p1", "p2"), onNodes([]string{"p1", "p2"}, "node1-rack1", "node2-rack1", "node3-rack1"),
			scheduled("p3", "p4", "p5"), onNodes([]string{"p3", "p4", "p5"}, "node1-rack1", "node2-rack1", "node3-rack1")}},
		{name: "two gangs schedule consecutively, different topology keys", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z1("node3-rack2"), [3]string{"node4-zone2", "rack-3", "zone-2"},
				[3]string{"node5-zone2", "rack-3", "zone-2"}, [3]string{"node6-zone2", "rack-3", "zone-2"}),
			createGroups(gangPG("pg1", rack, 3)), createPods(large("p1", "pg1"), large("p2", "pg1"), large("p3", "pg1")), scheduled("p1", "p2", "p3"),
			createGroups(gangPG("pg2", zone, 3)), createPods(large("p4", "pg2"), large("p5", "pg2"), large("p6", "pg2")), scheduled("p4", "p5", "p6"),
			onNodes(names("p", 3), "node4-zone2", "node5-zone2", "node6-zone2"), onNodes([]string{"p4", "p5", "p6"}, "node1-rack1", "node2-rack1", "node3-rack2")}},
		{name: "two gangs schedule consecutively, only one fits in the cluster", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1")),
			createGroups(gangPG("pg1", rack, 3)), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"),
			createGroups(gangPG("pg2", rack, 2)), createPods(member("p4", "pg2"), member("p5", "pg2")),
			onNodes(names("p", 3), "node1-rack1", "node2-rack1"), unschedulablePods("p4", "p5")}},
		{name: "gang with minCount < pod count schedules on a single rack", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z1("node3-rack2"), r2z1("node4-rack2")),
			createGroups(gangPG("pg1", rack, 2)), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"), oneDomain(rack, "p1", "p2", "p3")}},
		{name: "gang with minCount < pod count schedules on a single rack, choosing smaller rack", steps: []step{
			rack14, createGroups(gangPG("pg1", rack, 3)), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"),
			createPods(p(4)), scheduled("p4"), onNodes(names("p", 4), "node4-rack2", "node5-rack2"),
			createPods(p(5)), unschedulablePods("p5")}},
		{name: "gang with minCount < pod count schedules on a single rack without preemption, additional pod triggers preemption on the same rack", steps: []step{
			rack14, createPods(assignedPrio("low1-rack2", "node5-rack2", "1", 10)),
			createGroups(group{name: "pg1", key: rack, min: 3, priority: 200}),
			createPods(memberPrio("p1", "pg1", 200), memberPrio("p2", "pg1", 200), memberPrio("p3", "pg1", 200)), scheduled("p1", "p2", "p3"),
			onNodes([]string{"p1", "p2", "p3", "low1-rack2"}, "node4-rack2", "node5-rack2"),
			createPods(memberPrio("p4", "pg1", 200)), scheduled("p4"), removed("low1-rack2"), onNodes(names("p", 4), "node4-rack2", "node5-rack2"),
			createPods(memberPrio("p5", "pg1", 200)), unschedulablePods("p5"), onNodes(names("p", 4), "node4-rack2", "node5-rack2")}},
		{name: "gang does not schedule on a single rack when preemption could free up enough resources", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1")), createPods(assigned("existing1", "node2-rack1", "2")),
			createGroups(gangPG("pg1", rack, 3)), createPods(p(1), p(2), p(3)), unschedulablePods("p1", "p2", "p3")}},
	}}
}

// Upstream's TestTopologyAwareSchedulingWithBasicPolicy (tas_test.go): basic groups with a
// rack (or zone) constraint: upstream places the group's pods in one domain without a gang.
func TestTopologyAwareSchedulingWithBasicPolicy(t *testing.T) {
	runSuite(t, casesTopologyAwareSchedulingWithBasicPolicy())
}

// casesTopologyAwareSchedulingWithBasicPolicy are the cases of upstream's TestTopologyAwareSchedulingWithBasicPolicy.
func casesTopologyAwareSchedulingWithBasicPolicy() suite {
	p := func(i int) pod { return member(names("p", 6)[i-1], "pg1") }
	q := func(name string) pod { return member(name, "pg2") }
	unfittable := func(name string) pod { return pod{name: name, group: "pg1", cpu: "3", priority: 100} }
	two := tasNodes(r1z1("node1-rack1"), r2z1("node2-rack2"))
	return suite{cases: []ucase{
		{name: "basic podgroup schedules on the only rack in the cluster", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1")), createGroups(basicPG("pg1", rack)), createPods(p(1), p(2), p(3)),
			scheduled("p1", "p2", "p3"), onNodes(names("p", 3), "node1-rack1", "node2-rack1")}},
		{name: "basic podgroup schedules all pods on a single rack, when there are multiple racks fitting in the cluster", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z1("node3-rack2"), r2z1("node4-rack2"), [3]string{"node5-zone2", "rack-3", "zone-2"}, [3]string{"node6-zone2", "rack-3", "zone-2"}),
			createGroups(basicPG("pg1", rack)), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"), oneDomain(rack, "p1", "p2", "p3")}},
		{name: "basic podgroup cannot fit on a single rack, no pods get scheduled on a different rack", steps: []step{
			two, createGroups(basicPG("pg1", rack)), createPods(p(1), p(2), p(3)),
			scheduled("p1", "p2"), unschedulablePods("p3"), oneDomain(rack, "p1", "p2")}},
		{name: "basic podgroup does not schedule at all when no pods fit", steps: []step{
			two, createGroups(basicPG("pg1", rack)), createPods(unfittable("p1"), unfittable("p2")), unschedulablePods("p1", "p2")}},
		{name: "basic podgroup schedules only some pods when others don't fit on any node", steps: []step{
			two, createGroups(basicPG("pg1", rack)), createPods(unfittable("p1"), p(2)), scheduled("p2"), unschedulablePods("p1")}},
		{name: "basic podgroup schedules on a single rack, choosing placement with highest allocation percentage (default placement scoring algorithm)", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z2("node3-rack2"), r2z2("node4-rack2"), r2z2("node5-rack2")),
			createGroups(basicPG("pg1", rack)), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"),
			onNodes(names("p", 3), "node1-rack1", "node2-rack1")}},
		{name: "basic podgroup schedules on a single rack, choosing placement with highest allocation percentage with pre-existing pods", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1"), r2z2("node4-rack2"), r2z2("node5-rack2"), r2z2("node6-rack2"),
				r3z2("node7-rack3"), r3z2("node8-rack3"), r3z2("node9-rack3"), r3z2("node10-rack3")),
			createPods(assigned("existing1", "node1-rack1", "1"), assigned("existing2", "node5-rack2", "1"), assigned("existing3", "node6-rack2", "1")),
			createGroups(basicPG("pg1", rack)), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"),
			onNodes(names("p", 3), "node4-rack2", "node5-rack2", "node6-rack2")}},
		{name: "basic podgroup schedules on a single rack, choosing best scoring placement that will not fit all podgroup", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1"), r1z1("node4-rack1"), r2z1("node5-rack2")),
			createPods(assigned("existing1", "node1-rack1", "2")), createGroups(basicPG("pg1", rack)),
			createPods(p(1)), scheduled("p1"), createPods(p(2), p(3)), scheduled("p2"),
			onNodes([]string{"p1", "p2"}, "node5-rack2"), unschedulablePods("p3")}},
		{name: "two basic podgroups schedule consecutively, each on a single rack", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1"), r2z1("node4-rack2")),
			createGroups(basicPG("pg1", rack)), createPods(p(1), p(2)), createGroups(basicPG("pg2", rack)), createPods(q("p3"), q("p4")),
			scheduled("p1", "p2"), onNodes([]string{"p1", "p2"}, "node4-rack2"),
			scheduled("p3", "p4"), onNodes([]string{"p3", "p4"}, "node1-rack1", "node2-rack1", "node3-rack1")}},
		{name: "two basic podgroups schedule consecutively on the only rack", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r1z1("node3-rack1")),
			createGroups(basicPG("pg1", rack)), createPods(p(1), p(2)), createGroups(basicPG("pg2", rack)), createPods(q("p3"), q("p4"), q("p5")),
			scheduled("p1", "p2", "p3", "p4", "p5")}},
		{name: "two basic podgroups schedule consecutively, different topology keys", steps: []step{
			tasNodes(r1z1("node1-rack1"), r2z2("node2-zone2"), r2z2("node3-zone2"), r3z2("node4-zone2"), r3z2("node5-zone2")),
			createGroups(basicPG("pg1", rack)), createPods(p(1), p(2)),
			createGroups(basicPG("pg2", zone)), createPods(large("p3", "pg2"), large("p4", "pg2"), large("p5", "pg2")),
			scheduled("p1", "p2", "p3", "p4", "p5"), onNodes([]string{"p1", "p2"}, "node1-rack1"),
			onNodes([]string{"p3", "p4", "p5"}, "node2-zone2", "node3-zone2", "node4-zone2", "node5-zone2")}},
		{name: "two basic podgroups schedule consecutively, one does not fit in the assigned rack", steps: []step{
			tasNodes(r1z1("node1-rack1"), r1z1("node2-rack1"), r2z1("node3-rack2")),
			createGroups(basicPG("pg1", rack)), createPods(p(1)), scheduled("p1"), createPods(p(2), p(3)), scheduled("p2"),
			unschedulablePods("p3"), onNodes([]string{"p1", "p2"}, "node3-rack2"),
			createGroups(basicPG("pg2", rack)), createPods(q("p4"), q("p5"), q("p6")), scheduled("p4", "p5", "p6"),
			onNodes([]string{"p4", "p5", "p6"}, "node1-rack1", "node2-rack1")}},
		{name: "basic podgroup continues to schedule pods when more resources become available", steps: []step{
			two, createPods(assigned("existing1", "node1-rack1", "1")), createGroups(basicPG("pg1", rack)),
			createPods(p(1)), scheduled("p1"), createPods(p(2)), onNodes([]string{"p1"}, "node1-rack1"), unschedulablePods("p2"),
			deletePods("existing1"), scheduled("p1", "p2"), onNodes([]string{"p1", "p2"}, "node1-rack1")}},
	}}
}
