package upstream

import (
	"testing"
)

// Upstream's TestPreemption (test/integration/scheduler/preemption/preemption_test.go,
// k8s.io/kubernetes v1.37.1), its cases where PodGroups or CompositePodGroups are the
// victims: a pod alone, pinned to a node by its "node" label, preempts running members of
// basic groups disrupted whole or one by one. The pods are upstream's pause pods (a 30 s
// grace period: a victim is left terminating, no kubelet runs, here as upstream); the nodes
// have 500m or 1000m cpu and as many bytes of memory. Upstream runs each case 8 times, for
// SchedulerAsyncPreemption, SchedulerAsyncAPICalls and ClearingNominatedNodeNameAfterBinding
// on and off, and checks the preemptor's nomination only with the last off; lockstep is one
// binary, each case runs once, and the preemptor never binds while its victims terminate, so
// its nomination is checked each time. Upstream's tokenFilter plugin is in its profile, with
// tokens enough never to refuse a pod in these cases: it is left out.
func TestPreemptionPodGroupVictims(t *testing.T) { runSuite(t, casesPreemptionPodGroupVictims()) }

// casesPreemptionPodGroupVictims are the cases of upstream's TestPreemptionPodGroupVictims.
func casesPreemptionPodGroupVictims() suite {
	const low, medium, high = 100, 200, 300
	// pause is a pause pod of the cases: cpu (millicores), memory (bytes), pinned by the
	// node selector node=<on>, in group g ("" for none).
	pause := func(name, g string, prio int32, on, cpu, memory string) pod {
		return withMemory(selecting(pod{name: name, group: g, cpu: cpu, priority: prio}, "node", on), memory)
	}
	node1 := nodes(sizedNode("node1", "500m", "500"))
	node2 := nodes(sizedNode("node2", "500m", "500"))
	bigNode2 := nodes(sizedNode("node2", "1000m", "1000"))
	preemptor := func(on, cpu, memory string) step {
		return createPods(pause("preemptor-pod", "", high, on, cpu, memory))
	}
	// evicted is upstream's check of a victim: being deleted within wait.ForeverTestTimeout,
	// with the DisruptionTarget condition.
	evicted := func(names ...string) step {
		return seq(deletingWithin(upstreamForever, names...), disruptionTargeted(names...))
	}
	nominated := nominatedWithin(upstreamForever, "preemptor-pod")
	twoVictims := func(g, node2 string, cpu, memory string) step {
		return seq(createPods(pause("pod-group-victim-1", g, low, "node1", cpu, memory), pause("pod-group-victim-2", g, low, node2, cpu, memory)),
			scheduledWithin(upstreamForever, "pod-group-victim-1", "pod-group-victim-2"))
	}
	lowAndMedium := seq(createPods(pause("pg-low-node1", "pg-low", low, "node1", "200m", "100"), pause("pg-low-node2", "pg-low", low, "node2", "200m", "100"),
		pause("pg-medium-node1", "pg-medium", medium, "node1", "200m", "100"), pause("pg-medium-node2", "pg-medium", medium, "node2", "200m", "100")),
		scheduledWithin(upstreamForever, "pg-low-node1", "pg-low-node2", "pg-medium-node1", "pg-medium-node2"))
	insufficient := seq(createPods(pause("unpreemptible-pod", "", high, "node2", "500m", "200"),
		pause("pg-victim-1", "pg-victim", low, "node2", "150m", "100"), pause("pg-victim-2", "pg-victim", low, "node2", "150m", "100")),
		scheduledWithin(upstreamForever, "unpreemptible-pod", "pg-victim-1", "pg-victim-2"),
		preemptor("node2", "600m", "200"),
		// Not checked upstream: the preemptor refused, so that the check after it reads the
		// victims after an attempt (upstream reads them at once).
		refusedWithin(upstreamForever, "preemptor-pod"),
		notDeleting("unpreemptible-pod", "pg-victim-1", "pg-victim-2"))
	singleMulti := seq(createPods(pause("pg-single-multi-node1", "pg-single-multi", low, "node1", "500m", "200"),
		pause("pg-single-multi-node2", "pg-single-multi", low, "node2", "500m", "200")),
		scheduledWithin(upstreamForever, "pg-single-multi-node1", "pg-single-multi-node2"),
		preemptor("node1", "500m", "200"),
		evicted("pg-single-multi-node1"), notDeleting("pg-single-multi-node2"), nominated)
	basicWhole := func(name string, prio int32) group { return group{name: name, priority: prio, all: true} }
	cpgWhole := func(name string, prio int32) group {
		return disruptAll(group{name: name, composite: true, priority: prio})
	}
	child := func(name, parent string, prio int32) group { return group{name: name, parent: parent, priority: prio} }

	return suite{cases: []ucase{
		{name: "pod group victim across multiple nodes, pod-group-as-victim enabled", steps: []step{
			node1, node2, createGroups(basicWhole("pg1", low)),
			twoVictims("pg1", "node2", "500m", "200"), preemptor("node1", "500m", "200"),
			evicted("pod-group-victim-1", "pod-group-victim-2"), nominated}},
		{name: "pod group occupying a single node, pod-group-as-victim enabled", steps: []step{
			node1, createGroups(basicWhole("pg-single", low)),
			twoVictims("pg-single", "node1", "200m", "100"), preemptor("node1", "300m", "200"),
			evicted("pod-group-victim-1", "pod-group-victim-2"), nominated}},
		{name: "multiple victim pod groups, only subset selected for preemption", steps: []step{
			node1, node2, createGroups(basicWhole("pg-low", low), basicWhole("pg-medium", medium)),
			lowAndMedium, preemptor("node1", "300m", "100"),
			evicted("pg-low-node1", "pg-low-node2"), notDeleting("pg-medium-node1", "pg-medium-node2"), nominated}},
		{name: "unsuccessful pod group preemption when freeing lower priority group is insufficient", steps: []step{
			node1, bigNode2, createGroups(basicWhole("pg-victim", low)), insufficient}},
		{name: "pod group victim across multiple nodes, DisruptionModeSingle enabled", steps: []step{
			// disruptionMode single is the default: upstream sets it, here it is left unset.
			node1, node2, createGroups(group{name: "pg-single-multi", priority: low}), singleMulti}},
		{name: "CPG victim across multiple nodes, pod-group-as-victim enabled", steps: []step{
			node1, node2, createGroups(cpgWhole("cpg1", low)), createGroups(child("pg1", "cpg1", low)),
			twoVictims("pg1", "node2", "500m", "200"), preemptor("node1", "500m", "200"),
			evicted("pod-group-victim-1", "pod-group-victim-2"), nominated}},
		{name: "CPG occupying a single node, pod-group-as-victim enabled", steps: []step{
			node1, createGroups(cpgWhole("cpg-single", low)), createGroups(child("pg-single", "cpg-single", low)),
			twoVictims("pg-single", "node1", "200m", "100"), preemptor("node1", "300m", "200"),
			evicted("pod-group-victim-1", "pod-group-victim-2"), nominated}},
		{name: "multiple victim CPGs, only subset selected for preemption", steps: []step{
			node1, node2, createGroups(cpgWhole("cpg-low", low), cpgWhole("cpg-medium", medium)),
			createGroups(child("pg-low", "cpg-low", low), child("pg-medium", "cpg-medium", medium)),
			lowAndMedium, preemptor("node1", "300m", "100"),
			evicted("pg-low-node1", "pg-low-node2"), notDeleting("pg-medium-node1", "pg-medium-node2"), nominated}},
		{name: "unsuccessful CPG preemption when freeing lower priority group is insufficient", steps: []step{
			node1, bigNode2, createGroups(cpgWhole("cpg-victim", low)), createGroups(child("pg-victim", "cpg-victim", low)), insufficient}},
		{name: "CPG victim across multiple nodes, DisruptionModeSingle enabled", steps: []step{
			node1, node2, createGroups(group{name: "cpg-single-multi", composite: true, priority: low}, child("pg-single-multi", "cpg-single-multi", low)),
			singleMulti}},
	}}
}
