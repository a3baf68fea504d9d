package upstream

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// zr is a node of 2 cpu in a zone and a rack (and a block, when given).
func zr(name, z, r string, b ...string) *v1.Node {
	labels := []string{zone, z, rack, r}
	if len(b) > 0 {
		labels = append(labels, block, b[0])
	}
	return node(name, 2, labels...)
}

func cpgGang(name, parent, key string, min int32) group {
	return group{name: name, composite: true, parent: parent, key: key, min: min, priority: 100}
}
func cpgBasic(name, parent, key string) group {
	return group{name: name, composite: true, parent: parent, key: key, priority: 100}
}
func pgGang(name, parent, key string, min int32) group {
	return group{name: name, parent: parent, key: key, min: min, priority: 100}
}
func pgBasic(name, parent, key string) group {
	return group{name: name, parent: parent, key: key, priority: 100}
}

// memberOn is a member of pg already bound to node (upstream's makeAssignedGroupPod).
func memberOn(name, pg, node, cpu string) pod {
	return pod{name: name, group: pg, node: node, cpu: cpu, priority: 100, grace0: true}
}

// Upstream's TestCPGTopologyAwareScheduling (cpg_tas_test.go): trees whose levels have
// topology constraints, on nodes of 2 cpu.
func TestCPGTopologyAwareScheduling(t *testing.T) { runSuite(t, casesCPGTopologyAwareScheduling()) }

// casesCPGTopologyAwareScheduling are the cases of upstream's TestCPGTopologyAwareScheduling.
func casesCPGTopologyAwareScheduling() suite {
	m := func(name, pg string) pod { return member(name, pg) }
	pods8 := createPods(m("p1", "pg1"), m("p2", "pg1"), m("p3", "pg2"), m("p4", "pg2"), m("p5", "pg3"), m("p6", "pg3"), m("p7", "pg4"), m("p8", "pg4"))
	all8 := names("p", 8)
	return suite{cases: []ucase{
		{name: "parent CPG has topology constraints, children do not; schedules on a single rack", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r1", "zone-1", "rack-1"), zr("node3-z1-r2", "zone-1", "rack-2"), zr("node4-z1-r2", "zone-1", "rack-2")),
			createPods(assigned("existing", "node4-z1-r2", "2")),
			createGroups(cpgGang("cpg-root", "", rack, 2), pgGang("pg1", "cpg-root", "", 2), pgGang("pg2", "cpg-root", "", 2)),
			createPods(m("p1", "pg1"), m("p2", "pg1"), m("p3", "pg2"), m("p4", "pg2")),
			scheduled(names("p", 4)...), onNodes(names("p", 4), "node1-z1-r1", "node2-z1-r1")}},
		{name: "parent CPG has topology constraints, children do not; preexisting pod belonging to the hierarchy determines the topology", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r1", "zone-1", "rack-1"), zr("node3-z1-r2", "zone-1", "rack-2"), zr("node4-z1-r2", "zone-1", "rack-2")),
			createPods(memberOn("existing", "pg1", "node4-z1-r2", "1")),
			createGroups(cpgGang("cpg-root", "", rack, 2), pgGang("pg1", "cpg-root", "", 2), pgGang("pg2", "cpg-root", "", 2)),
			createPods(m("p1", "pg1"), m("p2", "pg2"), m("p3", "pg2")),
			scheduled(names("p", 3)...), onNodes(names("p", 3), "node3-z1-r2", "node4-z1-r2")}},
		{name: "parent CPG has topology constraints, children do not; remains pending when no single rack can fit all children", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r2", "zone-1", "rack-2")),
			createPods(assigned("existing1", "node1-z1-r1", "1"), assigned("existing2", "node2-z1-r2", "1")),
			createGroups(cpgGang("cpg-root", "", rack, 2), pgBasic("pg1", "cpg-root", ""), pgBasic("pg2", "cpg-root", "")),
			createPods(m("p1", "pg1"), m("p2", "pg2")), unschedulablePods("p1", "p2")}},
		{name: "parent CPG and child PGs both have topology constraints (multi-level constraints: zone and rack)", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r2", "zone-1", "rack-2"), zr("node3-z2-r1", "zone-2", "rack-1"), zr("node4-z2-r1", "zone-2", "rack-1")),
			createPods(assigned("existing-z2", "node3-z2-r1", "1")),
			createGroups(cpgGang("cpg-root", "", zone, 2), pgGang("pg1", "cpg-root", rack, 2), pgGang("pg2", "cpg-root", rack, 2)),
			createPods(m("p1", "pg1"), m("p2", "pg1"), m("p3", "pg2"), m("p4", "pg2")),
			scheduled(names("p", 4)...), onNodes(names("p", 4), "node1-z1-r1", "node2-z1-r2"),
			oneDomain(rack, "p1", "p2"), oneDomain(rack, "p3", "p4")}},
		{name: "parent CPG and only one child PG has topology constraints; the other child uses parent's topology", steps: []step{
			nodes(tainted(zr("node1-z1-r1", "zone-1", "rack-1"), "taint"), zr("node2-z1-r2", "zone-1", "rack-2"), zr("node3-z1-r3", "zone-1", "rack-3"),
				zr("node4-z2-r1", "zone-2", "rack-1"), zr("node5-z2-r2", "zone-2", "rack-2")),
			createPods(assigned("existing-z2", "node5-z2-r2", "1"), assigned("existing-z1-r2", "node2-z1-r2", "1"), assigned("existing-z1-r3", "node3-z1-r3", "1")),
			createGroups(cpgGang("cpg-root", "", zone, 2), pgGang("pg1", "cpg-root", rack, 2), pgGang("pg2", "cpg-root", "", 2)),
			createPods(tolerating(m("p1", "pg1"), "taint"), tolerating(m("p2", "pg1"), "taint"),
				preferring(m("p3", "pg2"), "node4-z2-r1"), preferring(m("p4", "pg2"), "node4-z2-r1")),
			scheduled(names("p", 4)...), oneDomain(zone, names("p", 4)...), oneDomain(rack, "p1", "p2")}},
		{name: "parent CPG and all child PGs have topology constraints, preexisting pod group pods constrain the available topology domains", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r2", "zone-1", "rack-2"), zr("node3-z1-r2", "zone-1", "rack-2"),
				zr("node4-z2-r1", "zone-2", "rack-1"), zr("node5-z2-r1", "zone-2", "rack-1")),
			createGroups(cpgGang("cpg-root", "", zone, 2), pgGang("pg1", "cpg-root", rack, 2), pgGang("pg2", "cpg-root", rack, 2)),
			createPods(memberOn("existing-z1", "pg1", "node1-z1-r1", "1")),
			createPods(m("p1", "pg1"), m("p2", "pg2"), m("p3", "pg2")),
			scheduled(names("p", 3)...), onNodes([]string{"p1"}, "node1-z1-r1"), onNodes([]string{"p2", "p3"}, "node2-z1-r2", "node3-z1-r2")}},
		{name: "parent CPG has topology constraints, preexisting pod group pods are in conflicting domains across pod groups, fails to schedule any pod",
			differs: "in the reason only: upstream reports a SchedulingError (PodScheduled False, not Unschedulable); lockstep reads it as a tree that " +
				"cannot be placed as its bound members stand: refused, Unschedulable, its condition saying which domains conflict", steps: []step{
				nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r1", "zone-1", "rack-1"), zr("node3-z2-r1", "zone-2", "rack-1"), zr("node4-z2-r1", "zone-2", "rack-1")),
				createGroups(cpgGang("cpg-root", "", zone, 2), pgGang("pg1", "cpg-root", rack, 2), pgGang("pg2", "cpg-root", rack, 2)),
				createPods(memberOn("existing-z1", "pg1", "node1-z1-r1", "1"), memberOn("existing-z2", "pg2", "node3-z2-r1", "1")),
				createPods(m("p1", "pg1"), m("p2", "pg2")), unschedulablePods("p1", "p2")}},
		{name: "3-level CPG hierarchy: all levels have topology constraints (root=zone, sub=block, leaf=rack)", steps: []step{
			nodes(zr("node1-z1-g1-r1", "zone-1", "rack-1", "block-1"), zr("node2-z1-g1-r2", "zone-1", "rack-2", "block-1"),
				zr("node3-z1-g2-r1", "zone-1", "rack-1", "block-2"), zr("node4-z1-g2-r2", "zone-1", "rack-2", "block-2"),
				zr("node5-z2-g1-r1", "zone-2", "rack-1", "block-1"), zr("node6-z2-g1-r1", "zone-2", "rack-1", "block-1")),
			createGroups(cpgGang("cpg-root", "", zone, 2), cpgGang("cpg-sub1", "cpg-root", block, 2), cpgGang("cpg-sub2", "cpg-root", block, 2),
				pgGang("pg1", "cpg-sub1", rack, 2), pgGang("pg2", "cpg-sub1", rack, 2), pgGang("pg3", "cpg-sub2", rack, 2), pgGang("pg4", "cpg-sub2", rack, 2)),
			pods8, scheduled(all8...), oneDomain(zone, all8...), oneDomain(block, "p1", "p2", "p3", "p4"), oneDomain(block, "p5", "p6", "p7", "p8"),
			oneDomain(rack, "p1", "p2"), oneDomain(rack, "p3", "p4"), oneDomain(rack, "p5", "p6"), oneDomain(rack, "p7", "p8")}},
		{name: "3-level CPG hierarchy: mid-level without topology constraints (root=zone, sub=none, leaf=rack)", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r2", "zone-1", "rack-2"), zr("node3-z2-r1", "zone-2", "rack-1")),
			createGroups(cpgGang("cpg-root", "", zone, 2), cpgBasic("cpg-sub1", "cpg-root", ""), cpgBasic("cpg-sub2", "cpg-root", ""),
				pgGang("pg1", "cpg-sub1", rack, 2), pgGang("pg2", "cpg-sub2", rack, 2)),
			createPods(m("p1", "pg1"), m("p2", "pg1"), m("p3", "pg2"), m("p4", "pg2")),
			scheduled(names("p", 4)...), oneDomain(zone, names("p", 4)...), oneDomain(rack, "p1", "p2"), oneDomain(rack, "p3", "p4")}},
		{name: "3-level CPG hierarchy: top level without topology constraint (root=none, sub=zone, leaf=rack)", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r2", "zone-1", "rack-2"), zr("node3-z2-r3", "zone-2", "rack-3"),
				zr("node4-z2-r4", "zone-2", "rack-4"), zr("node5-z2-r5", "zone-2", "rack-5")),
			createGroups(cpgBasic("cpg-root", "", ""), cpgGang("cpg-sub1", "cpg-root", zone, 2), cpgGang("cpg-sub2", "cpg-root", zone, 2),
				pgGang("pg1", "cpg-sub1", rack, 2), pgGang("pg2", "cpg-sub1", rack, 2), pgGang("pg3", "cpg-sub2", rack, 2), pgGang("pg4", "cpg-sub2", rack, 2)),
			pods8, scheduled(all8...), oneDomain(zone, "p1", "p2", "p3", "p4"), oneDomain(zone, "p5", "p6", "p7", "p8"),
			oneDomain(rack, "p1", "p2"), oneDomain(rack, "p3", "p4"), oneDomain(rack, "p5", "p6"), oneDomain(rack, "p7", "p8")}},
		{name: "3-level CPG hierarchy: bottom level without topology constraint (root=zone, sub=rack, leaf=none)", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r1", "zone-1", "rack-1"), zr("node3-z1-r2", "zone-1", "rack-2"),
				zr("node4-z1-r2", "zone-1", "rack-2"), zr("node5-z2-r3", "zone-2", "rack-3"), zr("node6-z2-r3", "zone-2", "rack-3")),
			createGroups(cpgGang("cpg-root", "", zone, 2), cpgGang("cpg-sub1", "cpg-root", rack, 2), cpgGang("cpg-sub2", "cpg-root", rack, 2),
				pgGang("pg1", "cpg-sub1", "", 2), pgGang("pg2", "cpg-sub1", "", 2), pgGang("pg3", "cpg-sub2", "", 2), pgGang("pg4", "cpg-sub2", "", 2)),
			pods8, scheduled(all8...), oneDomain(zone, all8...), oneDomain(rack, "p1", "p2", "p3", "p4"), oneDomain(rack, "p5", "p6", "p7", "p8")}},
		{name: "3-level CPG hierarchy: preexisting pod in leaf PodGroup determines topology for intermediate and root CPGs", steps: []step{
			nodes(zr("node1-z1-r1", "zone-1", "rack-1"), zr("node2-z1-r1", "zone-1", "rack-1"), zr("node3-z1-r2", "zone-1", "rack-2"), zr("node4-z1-r2", "zone-1", "rack-2"),
				zr("node5-z2-r1", "zone-2", "rack-1"), zr("node6-z2-r1", "zone-2", "rack-1"), zr("node7-z2-r2", "zone-2", "rack-2"), zr("node8-z2-r2", "zone-2", "rack-2")),
			createGroups(cpgGang("cpg-root", "", zone, 2), cpgGang("cpg-sub1", "cpg-root", rack, 2), cpgGang("cpg-sub2", "cpg-root", rack, 2),
				pgGang("pg1", "cpg-sub1", "", 2), pgGang("pg2", "cpg-sub1", "", 2), pgGang("pg3", "cpg-sub2", "", 2), pgGang("pg4", "cpg-sub2", "", 2)),
			createPods(memberOn("existing-pg1", "pg1", "node5-z2-r1", "1")),
			createPods(m("p1", "pg1"), m("p2", "pg2"), m("p3", "pg2"), m("p4", "pg3"), m("p5", "pg3"), m("p6", "pg4"), m("p7", "pg4")),
			scheduled(names("p", 7)...), onNodes(names("p", 7), "node5-z2-r1", "node6-z2-r1", "node7-z2-r2", "node8-z2-r2"),
			onNodes([]string{"p1", "p2", "p3"}, "node5-z2-r1", "node6-z2-r1"), onNodes([]string{"p4", "p5", "p6", "p7"}, "node7-z2-r2", "node8-z2-r2")}},
	}}
}

// tainted adds a NoSchedule taint (key only) to a node.
func tainted(n *v1.Node, key string) *v1.Node {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: v1.TaintEffectNoSchedule})
	return n
}

// tolerating adds a toleration of key (operator Equal, no value, any effect).
func tolerating(p pod, key string) pod {
	prev := p.mutate
	p.mutate = func(o *v1.Pod) {
		if prev != nil {
			prev(o)
		}
		o.Spec.Tolerations = append(o.Spec.Tolerations, v1.Toleration{Key: key})
	}
	return p
}

// preferring adds a preferred node affinity (weight 100) for the node named n.
func preferring(p pod, n string) pod {
	prev := p.mutate
	p.mutate = func(o *v1.Pod) {
		if prev != nil {
			prev(o)
		}
		o.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
			Weight: 100, Preference: v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{n}}}}}}}}
	}
	return p
}
