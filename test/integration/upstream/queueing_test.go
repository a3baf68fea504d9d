package upstream

import (
	"testing"
)

// Upstream's TestPodGroupQueueing (queueing/queueing_test.go), the cases that need no plugin
// of upstream's own in the scheduler (the others inject a pod during a PreFilter, or fail a
// PreBind once: notRun, cases_test.go). A node of 2 cpu; the PodGroup is "pg" with no
// workloadRef.
func TestPodGroupQueueing(t *testing.T) { runSuite(t, casesPodGroupQueueing()) }

// casesPodGroupQueueing are the cases of upstream's TestPodGroupQueueing.
func casesPodGroupQueueing() suite {
	gang := func(min int32) group { return group{name: "pg", min: min, noRef: true} }
	basic := group{name: "pg", noRef: true}
	p := func(name, cpu string) pod { return pod{name: name, group: "pg", cpu: cpu} }
	gated := func(name string) pod { return pod{name: name, group: "pg", cpu: "2", gated: true} }
	node2 := nodes(node("node2", 6))
	return suite{cases: []ucase{
		{name: "Gang scheduling pod group queueing when new member pods are added", steps: []step{
			createGroups(gang(2)), createPods(p("p1", "2"), p("p2", "2")), unschedulablePods("p1", "p2"),
			createPods(p("p3", "2")), unschedulablePods("p1", "p2", "p3"), node2, scheduled("p1", "p2", "p3"),
			createPods(p("p4", "2")), scheduled("p1", "p2", "p3", "p4")}},
		{name: "Basic policy pod group queueing when new member pods are added", steps: []step{
			createGroups(basic), createPods(p("p1", "2")), scheduled("p1"), createPods(p("p2", "2")), unschedulablePods("p2"),
			createPods(p("p3", "2")), unschedulablePods("p2", "p3"), node2, scheduled("p1", "p2", "p3")}},
		{name: "Single gated pod blocks gang group from being scheduled until pod is ungated", steps: []step{
			node2, createGroups(gang(2)), createPods(gated("p1")), gatedPods("p1"), createPods(p("p2", "2"), p("p3", "2")),
			unschedulablePods("p2", "p3"), ungate("p1"), scheduled("p1", "p2", "p3")}},
		{name: "Single gated pod blocks basic group from being scheduled until pod is ungated", steps: []step{
			node2, createGroups(basic), createPods(gated("p1")), gatedPods("p1"), createPods(p("p2", "2"), p("p3", "2")),
			unschedulablePods("p2", "p3"), ungate("p1"), scheduled("p1", "p2", "p3")}},
		{name: "Gang pod group in active queue becomes gated when a new gated member pod is added", steps: []step{
			createGroups(gang(2)), createPods(p("p1", "2"), p("p2", "2")), unschedulablePods("p1", "p2"),
			createPods(gated("p3")), unschedulablePods("p1", "p2"), gatedPods("p3"), node2, ungate("p3"), scheduled("p1", "p2", "p3")}},
		{name: "Basic pod group in active queue becomes gated when a new gated member pod is added", steps: []step{
			createGroups(basic), createPods(p("p1", "2")), scheduled("p1"), createPods(p("p2", "2")), unschedulablePods("p2"),
			createPods(gated("p3")), unschedulablePods("p2"), gatedPods("p3"), node2, ungate("p3"), scheduled("p1", "p2", "p3")}},
		{name: "gang is scheduled, then pod group is deleted, and new enqueued pods belong to it end up in incompletePodGroupPods", steps: []step{
			createGroups(gang(2)), createPods(p("p1", "1"), p("p2", "1")), scheduled("p1", "p2"),
			deletePodGroup("pg"), createPods(p("p3", "2")), waitingForGroup("p3")}},
		{name: "basic group is scheduled, then pod group is deleted, and new enqueued pods belong to it end up in incompletePodGroupPods", steps: []step{
			createGroups(basic), createPods(p("p1", "1"), p("p2", "1")), scheduled("p1", "p2"),
			deletePodGroup("pg"), createPods(p("p3", "2")), waitingForGroup("p3")}},
		{name: "gang is partially scheduled, then pod group is deleted, unschedulable pods end up in incompletePodGroupPods", steps: []step{
			createGroups(gang(2)), createPods(p("p1", "1"), p("p2", "1"), p("p3", "2")), scheduled("p1", "p2"), unschedulablePods("p3"),
			deletePodGroup("pg"), waitingForGroup("p3")}},
		{name: "basic group is partially scheduled, then pod group is deleted, unschedulable pods end up in incompletePodGroupPods", steps: []step{
			createGroups(basic), createPods(p("p1", "1"), p("p2", "1"), p("p3", "2")), scheduled("p1", "p2"), unschedulablePods("p3"),
			deletePodGroup("pg"), waitingForGroup("p3")}},
		{name: "gang is unschedulable, then pod group is deleted, unschedulable pods end up in incompletePodGroupPods", steps: []step{
			createGroups(gang(3)), createPods(p("p1", "1"), p("p2", "1"), p("p3", "4")), unschedulablePods("p1", "p2", "p3"),
			deletePodGroup("pg"), waitingForGroup("p1", "p2", "p3")}},
	}, common: []step{nodes(node("node", 2))}}
}

// Upstream's TestCPGQueueing (queueing_test.go): composite trees completed, or made
// schedulable, by a later object or node. A node of 8 cpu unless a case adds it; pods of 2
// cpu.
func TestCPGQueueing(t *testing.T) { runSuite(t, casesCPGQueueing()) }

// casesCPGQueueing are the cases of upstream's TestCPGQueueing.
func casesCPGQueueing() suite {
	pg1 := group{name: "pg1", min: 2, parent: "cpg-mid"}
	mid := group{name: "cpg-mid", composite: true, min: 1, parent: "cpg-root"}
	root := group{name: "cpg-root", composite: true, min: 1}
	root2 := group{name: "cpg-root2", composite: true, min: 2}
	pg21 := group{name: "pg2-1", min: 2, parent: "cpg-root2"}
	pg22 := group{name: "pg2-2", min: 2, parent: "cpg-root2"}
	p := func(name, g string) pod { return pod{name: name, group: g, cpu: "2"} }
	node8 := nodes(node("node", 8))
	return suite{cases: []ucase{
		{name: "Incomplete CPG tree buffers pods and missing root CPG wakes them up", steps: []step{
			node8, createGroups(pg1, mid), createPods(p("p1", "pg1"), p("p2", "pg1")),
			// Upstream buffers them (incompletePodGroupPods); lockstep holds them, never tried,
			// their group Invalid for the missing parent, until the root appears.
			invalidGroups(`parent CompositePodGroup "cpg-root" not found`, "pg1"), heldUntried("p1", "p2"),
			createGroups(root), scheduled("p1", "p2")}},
		{name: "Node add triggers queueing hint for complete CPG tree from unschedulableQ", steps: []step{
			createGroups(root, mid, pg1), createPods(p("p1", "pg1"), p("p2", "pg1")), unschedulablePods("p1", "p2"),
			node8, scheduled("p1", "p2")}},
		{name: "PodGroup add triggers queueing hint for unschedulable CPG root", steps: []step{
			node8, createGroups(root2, pg21), createPods(p("p2-1", "pg2-1"), p("p2-2", "pg2-1"), p("p2-3", "pg2-2"), p("p2-4", "pg2-2")),
			unschedulablePods("p2-1", "p2-2"), waitingForGroup("p2-3", "p2-4"),
			createGroups(pg22), scheduled("p2-1", "p2-2", "p2-3", "p2-4")}},
		{name: "Pod add triggers queueing hint for unschedulable CPG root", steps: []step{
			node8, createGroups(root2, pg21, pg22), createPods(p("p2-1", "pg2-1"), p("p2-2", "pg2-1"), p("p2-3", "pg2-2")),
			unschedulablePods("p2-1", "p2-2", "p2-3"), createPods(p("p2-4", "pg2-2")), scheduled("p2-1", "p2-2", "p2-3", "p2-4")}},
		{name: "PodGroup update (reduce minCount) triggers queueing hint for unschedulable CPG tree", steps: []step{
			node8, createGroups(root, mid, pg1), createPods(p("p1", "pg1")), unschedulablePods("p1"),
			setMinCount("pg1", 1), scheduled("p1")}},
	}}
}
