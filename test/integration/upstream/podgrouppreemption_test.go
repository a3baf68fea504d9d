package upstream

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// Upstream's test/integration/scheduler/preemption/podgroup/podgrouppreemption_test.go
// (k8s.io/kubernetes v1.37.1), run against lockstep. What differs for all its cases, besides
// what harness_test.go lists:
//   - upstream starts a scheduler per case with mock plugins that only observe (a Bind
//     plugin recording each pod's nominatedNodeName when bound, a PodGroupPostFilter plugin
//     recording its calls and returning Unschedulable): their records are read from the API
//     here (watchPods: the binds and preemptions in the apiserver's order, the pods seen
//     nominated while unbound);
//   - cases whose outcome a test plugin decides (a preset Score plugin choosing the victim,
//     a Reserve/Filter plugin rationing pods) cannot run: lockstep's binary takes no test
//     plugins (cannotRun); where the preset Score plugin only confirms the one outcome
//     possible, the case runs without it;
//   - upstream flips PodGroupPreemptionPolicy per case, which decides whether its scheduler
//     reads the group's spec.preemptionPolicy or its pods'. lockstep reads the pods' and the
//     root's PriorityClass's; the apiserver here runs with the gate off, so the groups'
//     field cannot be set (it is forbidden then). In every such case upstream's pods say the
//     same policy as their groups, through a PriorityClass here (neverClass): the outcome
//     does not depend on the gate;
//   - upstream waits for each preemptor pod to be in its scheduler's queue before creating
//     the next (preemptorPodsQueuedInCreationOrder); here they are created one after the
//     other, and lockstep orders a tree's members by their creation;
//   - upstream's tempRemovePG deletes the groups while the preemptors are created and waits
//     for them in its queue's incompletePodGroupPods; here the same deletion and recreation,
//     with the wait read from the API (heldWithin);
//   - upstream's "topology-key" nodes label is lockstep's zone level (a group's keys must be
//     among its levels);
//   - upstream's scheduler backs off 1 s at most (WithPodMaxBackoffSeconds(1)); lockstep runs
//     with its shipped configuration (gangs back off 10 s, retried at once on news).

// Upstream's TestPodGroupPreemption: gangs and basic groups preempting lower-priority pods
// and groups, on nodes of 1 to 16 cpu.
func TestPodGroupPreemption(t *testing.T) { runSuite(t, casesPodGroupPreemption()) }

// casesPodGroupPreemption are the cases of upstream's TestPodGroupPreemption.
func casesPodGroupPreemption() suite {
	// p is a pod of the table: cpu, priority, group ("" none), grace period 0.
	p := func(name, g, cpu string, prio int32) pod {
		return pod{name: name, group: g, cpu: cpu, priority: prio, grace0: true}
	}
	on := func(pd pod, node string) pod { pd.node = node; return pd }
	gang := func(name string, min, prio int32) group { return group{name: name, min: min, priority: prio} }
	basic := func(name string, prio int32) group { return group{name: name, priority: prio} }
	n1cpu := func(names ...string) step {
		var ns []*v1.Node
		for _, n := range names {
			ns = append(ns, node(n, 1))
		}
		return nodes(ns...)
	}
	lows3 := createPods(p("low-1", "", "1", 10), p("low-2", "", "1", 10), p("low-3", "", "1", 10))
	highs3 := createPods(p("high-1", "pg1", "1", 100), p("high-2", "pg1", "1", 100), p("high-3", "pg1", "1", 100))
	low, high := names("low-", 3), names("high-", 3)
	// The four 1-cpu nodes of the "schedule as many pods as possible" cases: p1, p2 of
	// priority 10 and p3, p4 of priority 200 on them.
	fourTaken := seq(n1cpu("node1", "node2", "node3", "node4"),
		createPods(on(p("p1", "", "1", 10), "node1"), on(p("p2", "", "1", 10), "node2"), on(p("p3", "", "1", 200), "node3"), on(p("p4", "", "1", 200), "node4")),
		scheduledWithin(upstreamWait, "p1", "p2", "p3", "p4"))
	pabc := createPods(p("p-a", "preemptor-pg", "1", 100), p("p-b", "preemptor-pg", "1", 100), p("p-c", "preemptor-pg", "1", 100))
	// The victims of the "do not reprieve" cases: v1, v2 of victim-pg (priority 50, disrupted
	// whole), v3 alone (priority 10), one per node.
	victims3 := createPods(on(p("v1", "victim-pg", "1", 50), "node1"), on(p("v2", "victim-pg", "1", 50), "node2"), on(p("v3", "", "1", 10), "node3"))
	// The victims of the "do not schedule full pod group" cases: victim-pg (priority 50) on
	// node1, node2 and victim-pg2 (priority 200) on node3, node4.
	victims4 := createPods(on(p("v1", "victim-pg", "1", 50), "node1"), on(p("v2", "victim-pg", "1", 50), "node2"),
		on(p("v3", "victim-pg2", "1", 200), "node3"), on(p("v4", "victim-pg2", "1", 200), "node4"))
	twoNodes := func(cpu int) step { return nodes(node("node1", cpu), node("node2", cpu)) }
	preemptors := func(mod func(pod) pod, cpu string) step {
		return createPods(mod(p("preemptor-1", "preemptor-pg", cpu, 100)), mod(p("preemptor-2", "preemptor-pg", cpu, 100)))
	}
	same := func(pd pod) pod { return pd }
	onNode1 := func(pd pod) pod { return selecting(pd, lt.HostKey, "node1") }
	fooOnNode1 := func(pd pod) pod { return spreadFooOnHosts(onNode1(labeled(pd, "app", "foo"))) }
	prs := []string{"preemptor-1", "preemptor-2"}
	zoned := func(name, z string) step { return nodes(node(name, 1, zone, z)) }
	tasPG := group{name: "pg1", min: 2, priority: 100, key: zone}
	high2 := createPods(p("high-1", "pg1", "1", 100), p("high-2", "pg1", "1", 100))
	h12 := []string{"high-1", "high-2"}

	return suite{cases: []ucase{
		{name: "Full PodGroup Preemption", differs: nominatesScoutOnly, steps: []step{
			nodes(node("node1", 3)), createGroups(gang("pg1", 3, 100)), lows3, scheduledWithin(upstreamWait, low...),
			highs3,
			eachPreemptedBy(upstreamWait, byGroup, low...), scheduledWithin(upstreamWait, high...),
			preemptedWithin(upstreamShortWait, low...), scoutNominatedBeforeBind(high...)}},
		{name: "Full PodGroup Preemption for basic policy", differs: basicByPod + "; " + nominatesScoutOnly, steps: []step{
			nodes(node("node1", 3)), createGroups(basic("pg1", 100)), lows3, scheduledWithin(upstreamWait, low...),
			highs3,
			eachPreemptedBy(upstreamWait, byPod, low...), scheduledWithin(upstreamWait, high...),
			preemptedWithin(upstreamShortWait, low...), scoutNominatedBeforeBind(high...)}},
		{name: "Partial Preemption", differs: nominatesScoutOnly, steps: []step{
			// Upstream adds a preset Score plugin preferring node1; the outcome is the only one
			// possible without it too: evicting low-2 alone frees 1 cpu of the 2 missing.
			twoNodes(2), createGroups(gang("pg1", 3, 100)),
			createPods(on(p("low-1", "", "2", 10), "node1"), on(p("low-2", "", "1", 10), "node2")), scheduledWithin(upstreamWait, "low-1", "low-2"),
			highs3,
			eachPreemptedBy(upstreamWait, byGroup, "low-1"), scheduledWithin(upstreamWait, "high-1", "high-2", "high-3", "low-2"),
			preemptedWithin(upstreamShortWait, "low-1"), scoutNominatedBeforeBind(high...)}},
		{name: "PDB Violation Handling (Reprieve)", differs: nominatesScoutOnly, steps: []step{
			nodes(node("node1", 3)), pdb("foo-pdb", 2, "foo"), createGroups(gang("pg1", 2, 100)),
			createPods(labeled(p("low-1", "", "1", 10), "app", "foo"), labeled(p("low-2", "", "1", 10), "app", "foo"), p("low-3", "", "1", 10)),
			scheduledWithin(upstreamWait, low...),
			createPods(p("high-1", "pg1", "0.5", 100), p("high-2", "pg1", "0.5", 100)),
			eachPreemptedBy(upstreamWait, byGroup, "low-3"), scheduledWithin(upstreamWait, h12...),
			preemptedWithin(upstreamShortWait, "low-3"), scoutNominatedBeforeBind(h12...)}},
		{name: "Multi-node Preemption", differs: nominatesScoutOnly, steps: []step{
			twoNodes(2), createGroups(gang("pg1", 4, 100)),
			createPods(on(p("low-1", "", "1", 10), "node1"), on(p("low-2", "", "1", 10), "node1"), on(p("low-3", "", "1", 10), "node2"), on(p("low-4", "", "1", 10), "node2")),
			scheduledWithin(upstreamWait, names("low-", 4)...),
			createPods(p("high-1", "pg1", "1", 100), p("high-2", "pg1", "1", 100), p("high-3", "pg1", "1", 100), p("high-4", "pg1", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroup, names("low-", 4)...), scheduledWithin(upstreamWait, names("high-", 4)...),
			preemptedWithin(upstreamShortWait, names("low-", 4)...), scoutNominatedBeforeBind(names("high-", 4)...)}},
		{name: "Insufficient Resources (No Preemption)", steps: []step{
			nodes(node("node1", 3)), createGroups(gang("pg1", 3, 100)),
			createPods(p("mid-1", "", "1", 500), p("low-1", "", "1", 10), p("low-2", "", "1", 10)), scheduledWithin(upstreamWait, "mid-1", "low-1", "low-2"),
			highs3,
			refusedWithin(upstreamWait, high...), scheduledWithin(upstreamWait, "mid-1", "low-1", "low-2")}},
		{name: "Priority-based Victim Selection", differs: nominatesScoutOnly, steps: []step{
			nodes(node("node1", 3)), createGroups(gang("pg1", 2, 100)),
			createPods(p("mid-1", "", "1", 50), p("low-1", "", "1", 10), p("low-2", "", "1", 10)), scheduledWithin(upstreamWait, "mid-1", "low-1", "low-2"),
			high2,
			eachPreemptedBy(upstreamWait, byGroup, "low-1", "low-2"), scheduledWithin(upstreamWait, "high-1", "high-2", "mid-1"),
			preemptedWithin(upstreamShortWait, "low-1", "low-2"), scoutNominatedBeforeBind(h12...)}},
		{name: "Preempt the whole PodGroup even if preempting a single Pod would suffice", steps: []step{
			nodes(node("node1", 3)), createGroups(gang("pg1", 1, 100), disruptAll(gang("pg2", 3, 10))),
			createPods(p("low-1", "pg2", "1", 10), p("low-2", "pg2", "1", 10), p("low-3", "pg2", "1", 10)), scheduledWithin(upstreamWait, low...),
			createPods(p("high-1", "pg1", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroup, low...), scheduledWithin(upstreamWait, "high-1"),
			preemptedWithin(upstreamShortWait, low...), nominatedBeforeBind("high-1")}},
		{name: "Preempt the whole basic PodGroup with a PodGroup disruption mode", steps: []step{
			nodes(node("node1", 3)), createGroups(gang("pg1", 1, 100), disruptAll(basic("pg2", 10))),
			createPods(p("low-1", "pg2", "1", 10), p("low-2", "pg2", "1", 10), p("low-3", "pg2", "1", 10)), scheduledWithin(upstreamWait, low...),
			createPods(p("high-1", "pg1", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroup, low...), scheduledWithin(upstreamWait, "high-1"),
			preemptedWithin(upstreamShortWait, low...), nominatedBeforeBind("high-1")}},
		{name: "Gang scheduling: schedule as many pods as possible without preempting higher priority pods, but still more than minCount", differs: nominatesScoutOnly, steps: []step{fourTaken,
			createGroups(gang("preemptor-pg", 1, 100)), pabc,
			eachPreemptedBy(upstreamWait, byGroup, "p1", "p2"), refusedWithin(upstreamWait, "p-c"),
			scheduledWithin(upstreamWait, "p-a", "p-b", "p3", "p4"), preemptedWithin(upstreamShortWait, "p1", "p2"),
			scoutNominatedBeforeBind("p-a", "p-b")}},
		{name: "Gang scheduling: do not reprieve victim pod group of lower priority", differs: nominatesScoutOnly, steps: []step{
			n1cpu("node1", "node2", "node3"), createGroups(disruptAll(gang("victim-pg", 1, 50)), gang("preemptor-pg", 3, 100)),
			victims3, scheduledWithin(upstreamWait, "v1", "v2", "v3"),
			pabc,
			eachPreemptedBy(upstreamWait, byGroup, "v1", "v2", "v3"), scheduledWithin(upstreamWait, "p-a", "p-b", "p-c"),
			preemptedWithin(upstreamShortWait, "v1", "v2", "v3"), scoutNominatedBeforeBind("p-a", "p-b", "p-c")}},
		{name: "Gang scheduling: preempt a pod group victim but do not schedule full pod group", steps: []step{
			n1cpu("node1", "node2", "node3", "node4"),
			createGroups(disruptAll(gang("victim-pg", 2, 50)), disruptAll(gang("victim-pg2", 2, 200)), disruptAll(gang("preemptor-pg", 1, 100))),
			victims4, scheduledWithin(upstreamWait, "v1", "v2", "v3", "v4"),
			pabc,
			eachPreemptedBy(upstreamWait, byGroup, "v1", "v2"), refusedWithin(upstreamWait, "p-c"),
			scheduledWithin(upstreamWait, "p-a", "p-b", "v3", "v4"), preemptedWithin(upstreamShortWait, "v1", "v2"),
			nominatedBeforeBind("p-a")}},
		{name: "Basic scheduling: schedule as many pods as possible without preempting higher priority pods", differs: basicByPod + "; " + nominatesScoutOnly, steps: []step{fourTaken,
			createGroups(basic("preemptor-pg", 100)), pabc,
			eachPreemptedBy(upstreamWait, byPod, "p1", "p2"), refusedWithin(upstreamWait, "p-c"),
			scheduledWithin(upstreamWait, "p-a", "p-b", "p3", "p4"), preemptedWithin(upstreamShortWait, "p1", "p2"),
			scoutNominatedBeforeBind("p-a", "p-b")}},
		{name: "Basic scheduling: do not reprieve victim pod group of lower priority", differs: basicByPod, steps: []step{
			n1cpu("node1", "node2", "node3"), createGroups(disruptAll(gang("victim-pg", 1, 50)), basic("preemptor-pg", 100)),
			victims3, scheduledWithin(upstreamWait, "v1", "v2", "v3"),
			pabc,
			// Upstream expects no nomination: how many pods its cycle preempts for varies.
			eachPreemptedBy(upstreamWait, byPod, "v1", "v2", "v3"), scheduledWithin(upstreamWait, "p-a", "p-b", "p-c"),
			preemptedWithin(upstreamShortWait, "v1", "v2", "v3")}},
		{name: "Basic scheduling: preempt a pod group victim but do not schedule full pod group", differs: basicByPod, steps: []step{
			n1cpu("node1", "node2", "node3", "node4"),
			createGroups(disruptAll(gang("victim-pg", 2, 50)), disruptAll(gang("victim-pg2", 2, 200)), disruptAll(basic("preemptor-pg", 100))),
			victims4, scheduledWithin(upstreamWait, "v1", "v2", "v3", "v4"),
			pabc,
			eachPreemptedBy(upstreamWait, byPod, "v1", "v2"), refusedWithin(upstreamWait, "p-c"),
			scheduledWithin(upstreamWait, "p-a", "p-b", "v3", "v4"), preemptedWithin(upstreamShortWait, "v1", "v2"),
			nominatedBeforeBind("p-a")}},
		{name: "PodGroup with PreemptNever preemption policy does not perform preemption, with PodGroupPreemptionPolicy enabled", steps: []step{
			// Upstream's pg1 says preemptionPolicy Never itself (the gate on); here its pods say
			// it, as upstream's do too.
			nodes(node("node1", 3)), neverClass(100), createGroups(gang("pg1", 3, 100)), lows3, scheduledWithin(upstreamWait, low...),
			createPods(never(p("high-1", "pg1", "1", 100)), never(p("high-2", "pg1", "1", 100)), never(p("high-3", "pg1", "1", 100))),
			refusedWithin(upstreamWait, high...), scheduledWithin(upstreamWait, low...)}},
		{name: "PodGroup with PreemptLowerPriority preemption policy performs preemption, with PodGroupPreemptionPolicy enabled", steps: []step{
			// Upstream's pg1 says PreemptLowerPriority itself; here its PriorityClass's default.
			nodes(node("node1", 3)), createGroups(gang("pg1", 3, 100)), lows3, scheduledWithin(upstreamWait, low...),
			highs3,
			eachPreemptedBy(upstreamWait, byGroup, low...), scheduledWithin(upstreamWait, high...), preemptedWithin(upstreamShortWait, low...)}},
		{name: "PodGroup with default preemption policy performs preemption, with PodGroupPreemptionPolicy enabled", steps: []step{
			nodes(node("node1", 3)), createGroups(gang("pg1", 3, 100)), lows3, scheduledWithin(upstreamWait, low...),
			highs3,
			eachPreemptedBy(upstreamWait, byGroup, low...), scheduledWithin(upstreamWait, high...), preemptedWithin(upstreamShortWait, low...)}},
		{name: "PodGroup with PreemptNever preemption policy in all pods does not perform preemption, with PodGroupPreemptionPolicy disabled", steps: []step{
			nodes(node("node1", 3)), neverClass(100), createGroups(gang("pg1", 3, 100)), lows3, scheduledWithin(upstreamWait, low...),
			createPods(never(p("high-1", "pg1", "1", 100)), never(p("high-2", "pg1", "1", 100)), never(p("high-3", "pg1", "1", 100))),
			refusedWithin(upstreamWait, high...), scheduledWithin(upstreamWait, low...)}},
		{name: "Gang scheduling: preemption with node resources", differs: nominatesScoutOnly, steps: []step{
			twoNodes(2), createGroups(gang("preemptor-pg", 2, 100)),
			createPods(on(labeled(p("initial-pod", "", "2", 10), "app", "initial"), "node1")), scheduledWithin(upstreamWait, "initial-pod"),
			preemptors(same, "2"),
			eachPreemptedBy(upstreamWait, byGroup, "initial-pod"), scheduledWithin(upstreamWait, prs...),
			preemptedWithin(upstreamShortWait, "initial-pod"), scoutNominatedBeforeBind(prs...)}},
		{name: "Gang scheduling: preemption with node resources, prioritizes reprieval of higher priority pods", differs: nominatesScoutOnly, steps: []step{
			twoNodes(2), createGroups(gang("preemptor-pg", 2, 100)),
			createPods(on(labeled(p("initial-pod-1", "", "1", 5), "app", "initial"), "node1"), on(labeled(p("initial-pod-2", "", "1", 10), "app", "initial"), "node1")),
			scheduledWithin(upstreamWait, "initial-pod-1", "initial-pod-2"),
			createPods(selecting(p("preemptor-1", "preemptor-pg", "1", 100), lt.HostKey, "node1"), selecting(p("preemptor-2", "preemptor-pg", "1", 100), lt.HostKey, "node2")),
			eachPreemptedBy(upstreamWait, byGroup, "initial-pod-1"), scheduledWithin(upstreamWait, prs...),
			preemptedWithin(upstreamShortWait, "initial-pod-1"), scoutNominatedBeforeBind(prs...)}},
		{name: "Gang scheduling: preemption with pod level resources", differs: nominatesScoutOnly, steps: []step{
			twoNodes(2), createGroups(gang("preemptor-pg", 2, 100)),
			createPods(on(podLevel(labeled(p("initial-pod", "", "2", 10), "app", "initial")), "node1")), scheduledWithin(upstreamWait, "initial-pod"),
			preemptors(func(pd pod) pod { return antiAffinityToApp(podLevel(pd)) }, "2"),
			eachPreemptedBy(upstreamWait, byGroup, "initial-pod"), scheduledWithin(upstreamWait, prs...),
			preemptedWithin(upstreamShortWait, "initial-pod"), scoutNominatedBeforeBind(prs...)}},
		{name: "Gang scheduling: preemption with pod anti-affinity constraints", differs: nominatesScoutOnly, steps: []step{
			twoNodes(2), createGroups(gang("preemptor-pg", 2, 100)),
			createPods(on(labeled(p("initial-pod", "", "0.25", 10), "app", "initial"), "node1")), scheduledWithin(upstreamWait, "initial-pod"),
			preemptors(antiAffinityToApp, "1.5"),
			eachPreemptedBy(upstreamWait, byGroup, "initial-pod"), scheduledWithin(upstreamWait, prs...),
			preemptedWithin(upstreamShortWait, "initial-pod"), scoutNominatedBeforeBind(prs...)}},
		{name: "Gang scheduling: preemption with pod node port", differs: nominatesScoutOnly, steps: []step{
			twoNodes(2), createGroups(gang("preemptor-pg", 2, 100)),
			createPods(on(hostPort(p("initial-pod", "", "0.25", 10), 8080), "node1")), scheduledWithin(upstreamWait, "initial-pod"),
			preemptors(func(pd pod) pod { return hostPort(pd, 8080) }, "1.5"),
			eachPreemptedBy(upstreamWait, byGroup, "initial-pod"), scheduledWithin(upstreamWait, prs...),
			preemptedWithin(upstreamShortWait, "initial-pod"), scoutNominatedBeforeBind(prs...)}},
		{name: "Gang scheduling: preemption with pod topology spread constraints", differs: nominatesScoutOnly, steps: []step{
			twoNodes(16), createGroups(gang("preemptor-pg", 2, 100)),
			createPods(on(labeled(p("initial-pod", "", "1", 10), "app", "foo"), "node1")), scheduledWithin(upstreamWait, "initial-pod"),
			preemptors(fooOnNode1, "1"),
			eachPreemptedBy(upstreamWait, byGroup, "initial-pod"), scheduledWithin(upstreamWait, prs...),
			preemptedWithin(upstreamShortWait, "initial-pod"), scoutNominatedBeforeBind(prs...)}},
		{name: "Gang scheduling: preemption with pod topology spread constraints, single reprieve", differs: nominatesScoutOnly, steps: []step{
			twoNodes(16), createGroups(gang("preemptor-pg", 2, 100)),
			createPods(on(labeled(p("initial-pod", "", "1", 10), "app", "foo"), "node1"), on(labeled(p("initial-pod-2", "", "1", 5), "app", "foo"), "node2")),
			scheduledWithin(upstreamWait, "initial-pod", "initial-pod-2"),
			preemptors(fooOnNode1, "1"),
			eachPreemptedBy(upstreamWait, byGroup, "initial-pod"), scheduledWithin(upstreamWait, prs...),
			preemptedWithin(upstreamShortWait, "initial-pod"), scoutNominatedBeforeBind(prs...)}},
		{name: "Binding first before preemption for gang policy", differs: joinerByPod, steps: []step{
			nodes(node("node1", 4)), createGroups(gang("pg1", 2, 100)),
			createPods(p("pg-pod-1", "pg1", "1", 100), p("pg-pod-2", "pg1", "1", 100), p("low-1", "", "1", 10)),
			scheduledWithin(upstreamWait, "pg-pod-1", "pg-pod-2", "low-1"), clearJournal(),
			deletePodGroup("pg1"), high2, heldWithin(upstreamWait, h12...), createGroups(gang("pg1", 2, 100)),
			eachPreemptedBy(upstreamWait, byPod, "low-1"), scheduledWithin(upstreamWait, "pg-pod-1", "pg-pod-2", "high-1", "high-2"),
			preemptedWithin(upstreamShortWait, "low-1"),
			// Upstream: Bind:high-1, PodGroupPostFilter:pg1, Bind:high-2 (one preemption
			// attempt, between the binds); the attempt shows here by what it evicts.
			journalHolds("Bind:high-1", "Preempted:low-1", "Bind:high-2")}},
		{name: "Binding first before preemption for basic policy", differs: basicByPod + "; its members are tried in the queue's order, " +
			"so high-2's preemption may come before high-1's bind (upstream tries the group in one cycle: it binds what fits, then preempts): " +
			"the same pods bound, the same victim, in either order", steps: []step{
			nodes(node("node1", 4)), createGroups(basic("pg1", 100)),
			createPods(p("pg-pod-1", "pg1", "1", 100), p("pg-pod-2", "pg1", "1", 100), p("low-1", "", "1", 10)),
			scheduledWithin(upstreamWait, "pg-pod-1", "pg-pod-2", "low-1"), clearJournal(),
			deletePodGroup("pg1"), high2, heldWithin(upstreamWait, h12...), createGroups(basic("pg1", 100)),
			eachPreemptedBy(upstreamWait, byPod, "low-1"), scheduledWithin(upstreamWait, "pg-pod-1", "pg-pod-2", "high-1", "high-2"),
			preemptedWithin(upstreamShortWait, "low-1"),
			journalHolds("Bind:high-1", "Preempted:low-1", "Bind:high-2")}},
		{name: "Topology-Aware Preemption: single topology domain", differs: nominatesScoutOnly, steps: []step{
			zoned("node1", "zone1"), zoned("node2", "zone1"), createGroups(tasPG),
			createPods(on(p("low-1", "", "1", 10), "node1"), on(p("low-2", "", "1", 10), "node2")), scheduledWithin(upstreamWait, "low-1", "low-2"),
			deletePodGroup("pg1"), high2, heldWithin(upstreamWait, h12...), createGroups(tasPG),
			eachPreemptedBy(upstreamWait, byGroup, "low-1", "low-2"), scheduledWithin(upstreamWait, h12...),
			preemptedWithin(upstreamShortWait, "low-1", "low-2"), scoutNominatedBeforeBind(h12...)}},
		{name: "Topology-Aware Preemption: two topologies, only one eligible", differs: nominatesScoutOnly, steps: []step{
			zoned("node1", "zone1"), zoned("node2", "zone1"), zoned("node3", "zone2"), zoned("node4", "zone2"), createGroups(tasPG),
			createPods(on(p("low-1", "", "1", 10), "node1"), on(p("low-2", "", "1", 10), "node2"),
				on(p("high-priority-initial-1", "", "1", 200), "node3"), on(p("high-priority-initial-2", "", "1", 200), "node4")),
			scheduledWithin(upstreamWait, "low-1", "low-2", "high-priority-initial-1", "high-priority-initial-2"),
			deletePodGroup("pg1"), high2, heldWithin(upstreamWait, h12...), createGroups(tasPG),
			eachPreemptedBy(upstreamWait, byGroup, "low-1", "low-2"),
			scheduledWithin(upstreamWait, "high-1", "high-2", "high-priority-initial-1", "high-priority-initial-2"),
			preemptedWithin(upstreamShortWait, "low-1", "low-2"), scoutNominatedBeforeBind(h12...)}},
		{name: "Topology-Aware Preemption: insufficient capacity across all topologies, no preemption performed", steps: []step{
			zoned("node1", "zone1"), zoned("node2", "zone1"), zoned("node3", "zone2"), zoned("node4", "zone2"), createGroups(tasPG),
			createPods(on(p("low-1", "", "1", 10), "node1"), on(p("high-priority-initial-1", "", "1", 200), "node2"),
				on(p("low-2", "", "1", 10), "node3"), on(p("high-priority-initial-2", "", "1", 200), "node4")),
			scheduledWithin(upstreamWait, "low-1", "high-priority-initial-1", "low-2", "high-priority-initial-2"),
			deletePodGroup("pg1"), high2, heldWithin(upstreamWait, h12...), createGroups(tasPG),
			scheduledWithin(upstreamWait, "low-1", "low-2", "high-priority-initial-1", "high-priority-initial-2")}},
	}, common: []step{watchPods()}}
}

// Upstream's TestPodGroupPreemptionStatus: a gang of one preempting a pod of a 30 s grace
// period says so in its PodGroup's condition while the victim terminates.
func TestPodGroupPreemptionStatus(t *testing.T) { runSuite(t, casesPodGroupPreemptionStatus()) }

// casesPodGroupPreemptionStatus are the cases of upstream's TestPodGroupPreemptionStatus.
func casesPodGroupPreemptionStatus() suite {
	return suite{cases: []ucase{{name: "TestPodGroupPreemptionStatus", differs: "the group's condition while its victims leave is " +
		"False/Preempting, not Unschedulable (the gang is not refused: it has room, once its victims are gone), and its message names " +
		"the domain and the victims (\"taking the cluster: evicting 1 pods of priority up to 10\"); upstream: Unschedulable, " +
		"\"minCount (1) cannot be satisfied ... preempting 1 victims\"", steps: []step{
		nodes(node("node-1", 1)),
		createPods(pod{name: "low-1", cpu: "1", priority: 10}), scheduledWithin(upstreamWait, "low-1"),
		createGroups(group{name: "pg1", min: 1, priority: 100}), createPods(pod{name: "high-1", group: "pg1", cpu: "1", priority: 100}),
		deletingWithin(upstreamWait, "low-1"),
		groupSaysWithin(upstreamShortWait, "pg1", metav1.ConditionFalse, v1alpha1.ReasonPreempting, "taking the cluster: evicting 1 pods of priority up to 10")}}}}
}

// Upstream's TestPodGroupPreemption_NominatedNodeNameRespected: a gang of two nominated to
// the nodes it preempts on keeps its nominations when a better node frees up while its
// victims terminate. Upstream adds a preset Score plugin that makes node1 the best node;
// lockstep's binary takes no test plugins, so node1 tempts it only as far as its own scoring
// prefers an empty node.
func TestPodGroupPreemption_NominatedNodeNameRespected(t *testing.T) {
	runSuite(t, casesPodGroupPreemption_NominatedNodeNameRespected())
}

// casesPodGroupPreemption_NominatedNodeNameRespected are the cases of upstream's TestPodGroupPreemption_NominatedNodeNameRespected.
func casesPodGroupPreemption_NominatedNodeNameRespected() suite {
	prs := []string{"preemptor-1", "preemptor-2"}
	return suite{cases: []ucase{{name: "TestPodGroupPreemption_NominatedNodeNameRespected", differs: nominatesScoutOnly, steps: []step{
		nodes(node("node1", 1), node("node2", 1), node("node3", 1)),
		createGroups(group{name: "pg1", min: 2, priority: 50}),
		createPods(pod{name: "pod1", cpu: "1", priority: 100, grace0: true, node: "node1"},
			pod{name: "pod2", cpu: "1", priority: 10, node: "node2"}, pod{name: "pod3", cpu: "1", priority: 10, node: "node3"}),
		scheduledWithin(upstreamWait, "pod1", "pod2", "pod3"),
		createPods(pod{name: "preemptor-1", group: "pg1", cpu: "1", priority: 50}, pod{name: "preemptor-2", group: "pg1", cpu: "1", priority: 50}),
		scoutNominatedWithin(upstreamWait, prs...), notNominatedTo("node1", prs...),
		deletePods("pod1"), goneWithin(upstreamWait, "pod1"),
		onceIdle(present("pod2", "pod3"), notBoundTo("node1", prs...), nominationsKept(prs...))}}}}
}

// Upstream's TestCompositePodGroupPreemption: trees of CompositePodGroups as preemptors and
// as victims (their disruption modes resolved up the tree), and pods alone preempting them.
func TestCompositePodGroupPreemption(t *testing.T) { runSuite(t, casesCompositePodGroupPreemption()) }

// casesCompositePodGroupPreemption are the cases of upstream's TestCompositePodGroupPreemption.
func casesCompositePodGroupPreemption() suite {
	p := func(name, g, cpu string, prio int32) pod {
		return pod{name: name, group: g, cpu: cpu, priority: prio, grace0: true}
	}
	on := func(pd pod, node string) pod { pd.node = node; return pd }
	cpgBasicP := func(name, parent string, prio int32) group {
		return group{name: name, composite: true, parent: parent, priority: prio}
	}
	cpgGangP := func(name string, min, prio int32) group {
		return group{name: name, composite: true, min: min, priority: prio}
	}
	pgGangP := func(name, parent string, min, prio int32) group {
		return group{name: name, parent: parent, min: min, priority: prio}
	}
	twoNodes := func(cpu int) step { return nodes(node("node1", cpu), node("node2", cpu)) }
	lows3 := createPods(p("low-1", "", "1", 10), p("low-2", "", "1", 10), p("low-3", "", "1", 10))
	lows3On1 := createPods(on(p("low-1", "", "1", 10), "node1"), on(p("low-2", "", "1", 10), "node1"), on(p("low-3", "", "1", 10), "node1"))
	low, high := names("low-", 3), names("high-", 3)
	// The victims spread over two nodes: low-1, low-2 of pg1 on node1, node2, low-3 of pg2 on
	// node2; the preemptor needs node1 whole.
	spread := createPods(on(p("low-1", "pg1", "1", 10), "node1"), on(p("low-2", "pg1", "1", 10), "node2"), on(p("low-3", "pg2", "1", 10), "node2"))
	high1OnNode1 := createPods(selecting(p("high-1", "", "2", 100), lt.HostKey, "node1"))
	pdbPods := createPods(on(labeled(p("pod-pdb-1", "pg-pdb", "1", 10), "app", "foo"), "node1"), on(labeled(p("pod-pdb-2", "pg-pdb", "1", 10), "app", "foo"), "node1"),
		on(p("pod-no-pdb-1", "pg-no-pdb", "1", 10), "node1"))
	highPreemptor := func(cpu string) step { return createPods(p("high-preemptor", "", cpu, 100)) }
	prs := []string{"preemptor-1", "preemptor-2"}
	h4 := names("high-", 4)
	victimPair := createPods(on(p("low-1", "pg-victim", "1", 10), "node1"), on(p("low-2", "pg-victim", "1", 10), "node2"))
	high4 := createPods(p("high-1", "pg-preemptor", "1", 100), p("high-2", "pg-preemptor", "1", 100), p("high-3", "pg-preemptor", "1", 100), p("high-4", "pg-preemptor", "1", 100))

	return suite{cases: []ucase{
		{name: "CPG Partial Preemption", steps: []step{
			// Upstream adds a preset Score plugin preferring node1; the outcome is the only one
			// possible without it too (see "Partial Preemption").
			twoNodes(2), createGroups(cpgBasicP("cpg1", "", 100), pgGangP("pg1", "cpg1", 3, 100)),
			createPods(on(p("low-1", "", "2", 10), "node1"), on(p("low-2", "", "1", 10), "node2")), scheduledWithin(upstreamWait, "low-1", "low-2"),
			createPods(p("high-1", "pg1", "1", 100), p("high-2", "pg1", "1", 100), p("high-3", "pg1", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "low-1"), scheduledWithin(upstreamWait, "high-1", "high-2", "high-3", "low-2"),
			preemptedWithin(upstreamShortWait, "low-1")}},
		{name: "CPG Victim Across Multiple Nodes, CPG DisruptionModeAll", steps: []step{
			twoNodes(2), createGroups(disruptAll(cpgBasicP("cpg1", "", 10))), createGroups(pgGangP("pg1", "cpg1", 2, 10), pgGangP("pg2", "cpg1", 1, 10)),
			spread, scheduledWithin(upstreamWait, low...),
			high1OnNode1,
			eachPreemptedBy(upstreamWait, byGroupOrPod, low...), scheduledWithin(upstreamWait, "high-1"), preemptedWithin(upstreamShortWait, low...)}},
		{name: "CPG Victim Across Multiple Nodes, CPG DisruptionModeSingle", steps: []step{
			// disruptionMode single is the default: upstream sets it, here it is left unset.
			twoNodes(2), createGroups(cpgBasicP("cpg1", "", 10), pgGangP("pg1", "cpg1", 2, 10), pgGangP("pg2", "cpg1", 1, 10)),
			spread, scheduledWithin(upstreamWait, low...),
			high1OnNode1,
			eachPreemptedBy(upstreamWait, byGroupOrPod, "low-1"), scheduledWithin(upstreamWait, "high-1", "low-2", "low-3"), preemptedWithin(upstreamShortWait, "low-1")}},
		{name: "CPG Preemption aborted if victim yields insufficient resources", steps: []step{
			nodes(node("node1", 2)), createGroups(cpgBasicP("cpg-victim", "", 10), pgGangP("pg-victim", "cpg-victim", 1, 10)),
			createPods(on(p("low-pod", "pg-victim", "1", 10), "node1")), scheduledWithin(upstreamWait, "low-pod"),
			highPreemptor("3"),
			refusedWithin(upstreamWait, "high-preemptor")}},
		{name: "CPG Tie-Breaking: PodGroup chosen over CompositePodGroup", steps: []step{
			nodes(node("node1", 2)), createGroups(disruptAll(cpgBasicP("cpg-victim", "", 10))),
			createGroups(pgGangP("pg-victim-standalone", "", 1, 10), pgGangP("pg-victim-child", "cpg-victim", 1, 10), pgGangP("pg-preemptor", "", 1, 100)),
			createPods(on(p("low-pg", "pg-victim-standalone", "1", 10), "node1"), on(p("low-cpg", "pg-victim-child", "1", 10), "node1")),
			scheduledWithin(upstreamWait, "low-pg", "low-cpg"),
			createPods(p("high-preemptor", "pg-preemptor", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "low-pg"), scheduledWithin(upstreamWait, "high-preemptor"), preemptedWithin(upstreamShortWait, "low-pg")}},
		{name: "Scheduler targets lower-priority CPG over higher-priority CPG", steps: []step{
			nodes(node("node1", 3)),
			createGroups(cpgBasicP("cpg-lower", "", 10), cpgBasicP("cpg-higher", "", 20), pgGangP("pg-lower", "cpg-lower", 1, 10), pgGangP("pg-higher", "cpg-higher", 1, 20)),
			createPods(on(p("lower-pod", "pg-lower", "1", 10), "node1"), on(p("higher-pod", "pg-higher", "1", 20), "node1")),
			scheduledWithin(upstreamWait, "lower-pod", "higher-pod"),
			highPreemptor("2"),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "lower-pod"), scheduledWithin(upstreamWait, "high-preemptor", "higher-pod"),
			preemptedWithin(upstreamShortWait, "lower-pod")}},
		{name: "PDB Violation reprieves the entire CPG victim (DisruptionModeAll)", steps: []step{
			nodes(node("node1", 3)), createGroups(disruptAll(cpgBasicP("cpg-pdb", "", 10)), disruptAll(cpgBasicP("cpg-no-pdb", "", 10))),
			createGroups(pgGangP("pg-pdb", "cpg-pdb", 2, 10), pgGangP("pg-no-pdb", "cpg-no-pdb", 1, 10)), pdb("pdb", 2, "foo"),
			pdbPods, scheduledWithin(upstreamWait, "pod-pdb-1", "pod-pdb-2", "pod-no-pdb-1"),
			highPreemptor("1"),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "pod-no-pdb-1"), scheduledWithin(upstreamWait, "high-preemptor", "pod-pdb-1", "pod-pdb-2"),
			preemptedWithin(upstreamShortWait, "pod-no-pdb-1")}},
		{name: "PDB Violation reprieves only the child PG (DisruptionModeSingle)", steps: []step{
			nodes(node("node1", 3)),
			createGroups(cpgBasicP("cpg-single", "", 10), pgGangP("pg-pdb", "cpg-single", 2, 10), pgGangP("pg-no-pdb", "cpg-single", 1, 10)), pdb("pdb", 2, "foo"),
			pdbPods, scheduledWithin(upstreamWait, "pod-pdb-1", "pod-pdb-2", "pod-no-pdb-1"),
			highPreemptor("1"),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "pod-no-pdb-1"), scheduledWithin(upstreamWait, "high-preemptor", "pod-pdb-1", "pod-pdb-2"),
			preemptedWithin(upstreamShortWait, "pod-no-pdb-1")}},
		{name: "3-Level Nested CPG resolves DisruptionMode up to the grandparent", steps: []step{
			twoNodes(2), createGroups(disruptAll(cpgBasicP("cpg-grandparent", "", 10))),
			createGroups(cpgBasicP("cpg-parent", "cpg-grandparent", 10), pgGangP("pg1", "cpg-parent", 2, 10), pgGangP("pg2", "cpg-parent", 1, 10)),
			spread, scheduledWithin(upstreamWait, low...),
			high1OnNode1,
			eachPreemptedBy(upstreamWait, byGroupOrPod, low...), scheduledWithin(upstreamWait, "high-1"), preemptedWithin(upstreamShortWait, low...)}},
		{name: "Hierarchical DisruptionMode - Grandparent Single, Parent All", steps: []step{
			twoNodes(2), createGroups(cpgBasicP("cpg-grandparent", "", 10)), createGroups(disruptAll(cpgBasicP("cpg-parent", "cpg-grandparent", 10))),
			createGroups(pgGangP("pg1", "cpg-parent", 2, 10), pgGangP("pg2", "cpg-grandparent", 1, 10)),
			spread, scheduledWithin(upstreamWait, low...),
			high1OnNode1,
			eachPreemptedBy(upstreamWait, byGroupOrPod, "low-1", "low-2"), scheduledWithin(upstreamWait, "high-1", "low-3"),
			preemptedWithin(upstreamShortWait, "low-1", "low-2")}},
		{name: "CPG with default preemption policy performs preemption, with PodGroupPreemptionPolicy enabled", steps: []step{
			nodes(node("node1", 3)), createGroups(cpgBasicP("cpg1", "", 100), pgGangP("pg1", "cpg1", 3, 100)),
			lows3, scheduledWithin(upstreamWait, low...),
			createPods(p("high-1", "pg1", "1", 100), p("high-2", "pg1", "1", 100), p("high-3", "pg1", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, low...), scheduledWithin(upstreamWait, high...), preemptedWithin(upstreamShortWait, low...)}},
		{name: "CPG with PreemptNever Policy", steps: []step{
			// Upstream's groups say preemptionPolicy Never themselves (the gate on); here their
			// pods say it, as upstream's do too.
			nodes(node("node1", 3)), neverClass(100),
			createGroups(cpgBasicP("cpg1", "", 100), pgGangP("pg1", "cpg1", 2, 100), pgGangP("pg2", "cpg1", 1, 100)),
			lows3, scheduledWithin(upstreamWait, low...),
			createPods(never(p("high-1", "pg1", "1", 100)), never(p("high-2", "pg1", "1", 100)), never(p("high-3", "pg2", "1", 100))),
			refusedWithin(upstreamWait, high...), scheduledWithin(upstreamWait, low...)}},
		{name: "CPG with PreemptLowerPriority Policy", differs: nominatesScoutOnly, steps: []step{
			// Upstream's groups and pods say PreemptLowerPriority; here their PriorityClass's default.
			nodes(node("node1", 3)),
			createGroups(cpgBasicP("cpg1", "", 100), pgGangP("pg1", "cpg1", 2, 100), pgGangP("pg2", "cpg1", 1, 100)),
			lows3, scheduledWithin(upstreamWait, low...),
			createPods(p("high-1", "pg1", "1", 100), p("high-2", "pg1", "1", 100), p("high-3", "pg2", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, low...), scheduledWithin(upstreamWait, high...), preemptedWithin(upstreamShortWait, low...),
			scoutNominatedBeforeBind(high...)}},
		{name: "CPG PreemptionPolicy PreemptNever prevents preemption", steps: []step{
			nodes(node("node1", 3)), neverClass(100),
			createGroups(cpgBasicP("cpg-preempt-never", "", 100), pgGangP("pg-preempt-never", "cpg-preempt-never", 2, 100)),
			lows3On1, scheduledWithin(upstreamWait, low...),
			createPods(never(p("high-1", "pg-preempt-never", "2", 100)), never(p("high-2", "pg-preempt-never", "1", 100))),
			refusedWithin(upstreamWait, "high-1", "high-2"), scheduledWithin(upstreamWait, low...)}},
		{name: "CPG PreemptionPolicy PreemptLowerPriority allows preemption", differs: nominatesScoutOnly, steps: []step{
			nodes(node("node1", 3)),
			createGroups(cpgBasicP("cpg-preempt-lower", "", 100), pgGangP("pg-preempt-lower", "cpg-preempt-lower", 2, 100)),
			lows3On1, scheduledWithin(upstreamWait, low...),
			createPods(p("high-1", "pg-preempt-lower", "2", 100), p("high-2", "pg-preempt-lower", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, low...), scheduledWithin(upstreamWait, "high-1", "high-2"), preemptedWithin(upstreamShortWait, low...),
			scoutNominatedBeforeBind("high-1", "high-2")}},
		{name: "CPG with PreemptNever preemption policy in all pods does not perform preemption, with PodGroupPreemptionPolicy disabled", steps: []step{
			nodes(node("node1", 3)), neverClass(100), createGroups(cpgBasicP("cpg1", "", 100), pgGangP("pg1", "cpg1", 3, 100)),
			lows3, scheduledWithin(upstreamWait, low...),
			createPods(never(p("high-1", "pg1", "1", 100)), never(p("high-2", "pg1", "1", 100)), never(p("high-3", "pg1", "1", 100))),
			refusedWithin(upstreamWait, high...), scheduledWithin(upstreamWait, low...)}},
		{name: "CPG Gang scheduling: preemption with pod anti-affinity constraints", steps: []step{
			twoNodes(2), createGroups(cpgBasicP("preemptor-cpg", "", 100), pgGangP("preemptor-pg", "preemptor-cpg", 2, 100)),
			createPods(on(labeled(p("initial-pod", "", "0.25", 10), "app", "initial"), "node1")), scheduledWithin(upstreamWait, "initial-pod"),
			createPods(antiAffinityToApp(p("preemptor-1", "preemptor-pg", "1.5", 100)), antiAffinityToApp(p("preemptor-2", "preemptor-pg", "1.5", 100))),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "initial-pod"), scheduledWithin(upstreamWait, prs...), preemptedWithin(upstreamShortWait, "initial-pod")}},
		{name: "CPG Gang scheduling: preemption with pod node port", steps: []step{
			twoNodes(2), createGroups(cpgBasicP("preemptor-cpg", "", 100), pgGangP("preemptor-pg", "preemptor-cpg", 2, 100)),
			createPods(on(hostPort(p("initial-pod", "", "0.25", 10), 8080), "node1")), scheduledWithin(upstreamWait, "initial-pod"),
			createPods(hostPort(p("preemptor-1", "preemptor-pg", "1.5", 100), 8080), hostPort(p("preemptor-2", "preemptor-pg", "1.5", 100), 8080)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "initial-pod"), scheduledWithin(upstreamWait, prs...), preemptedWithin(upstreamShortWait, "initial-pod")}},
		{name: "Binding first before preemption for gang policy", steps: []step{
			twoNodes(2),
			createGroups(cpgGangP("cpg-victim", 1, 10), cpgGangP("cpg-preemptor", 1, 100), pgGangP("pg-victim", "cpg-victim", 4, 10), pgGangP("pg-preemptor", "cpg-preemptor", 4, 100)),
			victimPair, scheduledWithin(upstreamWait, "low-1", "low-2"),
			// Upstream's tempRemoveCPG: the trees gone while the preemptors are created.
			deleteCompositePodGroup("cpg-victim"), deleteCompositePodGroup("cpg-preemptor"), deletePodGroup("pg-victim"), deletePodGroup("pg-preemptor"),
			high4, heldWithin(upstreamWait, h4...),
			createGroups(cpgGangP("cpg-victim", 1, 10), cpgGangP("cpg-preemptor", 1, 100), pgGangP("pg-victim", "cpg-victim", 4, 10), pgGangP("pg-preemptor", "cpg-preemptor", 4, 100)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "low-1", "low-2"), scheduledWithin(upstreamWait, h4...), preemptedWithin(upstreamShortWait, "low-1", "low-2")}},
		{name: "Binding first before preemption for CPG", steps: []step{
			twoNodes(2),
			createGroups(cpgBasicP("cpg-victim", "", 10), cpgBasicP("cpg-preemptor", "", 100), pgGangP("pg-victim", "cpg-victim", 4, 10), pgGangP("pg-preemptor", "cpg-preemptor", 4, 100)),
			victimPair, scheduledWithin(upstreamWait, "low-1", "low-2"),
			high4,
			eachPreemptedBy(upstreamWait, byGroupOrPod, "low-1", "low-2"), scheduledWithin(upstreamWait, h4...), preemptedWithin(upstreamShortWait, "low-1", "low-2")}},
		{name: "CPG Missing Parent Reference Fallback", steps: []step{
			nodes(node("node1", 2)),
			createGroups(cpgBasicP("cpg-victim", "", 10), cpgBasicP("cpg-preemptor", "", 100), pgGangP("pg-victim", "cpg-victim", 2, 10), pgGangP("pg-preemptor", "cpg-preemptor", 2, 100)),
			createPods(on(p("low-1", "pg-victim", "1", 10), "node1"), on(p("low-2", "pg-victim", "1", 10), "node1")), scheduledWithin(upstreamWait, "low-1", "low-2"),
			// Upstream's removeCPGNameBeforePreemption: pg-victim's parent deleted.
			deleteCompositePodGroup("cpg-victim"),
			createPods(p("high-1", "pg-preemptor", "1", 100), p("high-2", "pg-preemptor", "1", 100)),
			eachPreemptedBy(upstreamWait, byGroupOrPod, "low-1", "low-2"), scheduledWithin(upstreamWait, "high-1", "high-2"),
			preemptedWithin(upstreamShortWait, "low-1", "low-2")}},
	}, common: []step{watchPods()}}
}
