package upstream

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Upstream's TestPodGroupScheduling (podgroup_test.go): one node of 4 cpu; each case once
// (upstream runs most with TopologyAwareWorkloadScheduling on and off: lockstep reads the
// same objects either way).
func TestPodGroupScheduling(t *testing.T) { runSuite(t, casesPodGroupScheduling()) }

// casesPodGroupScheduling are the cases of upstream's TestPodGroupScheduling.
func casesPodGroupScheduling() suite {
	pg1 := group{name: "pg1", min: 3, priority: 100}
	pg2 := group{name: "pg2", min: 3, priority: 100}
	basic := group{name: "pg1", priority: 100}
	mutable := group{name: "pg-mutable", min: 5, priority: 100}
	mid := group{name: "mid-pg", min: 2, priority: 50}
	midZone := group{name: "mid-pg", min: 2, priority: 50, key: zone}
	member := func(name, g string) pod { return pod{name: name, group: g, cpu: "1", priority: 100} }
	p := func(i int) pod { return member(names("p", 4)[i-1], "pg1") }
	other := func(i int) pod { return member(names("other-p", 3)[i-1], "pg2") }
	mut := func(i int) pod { return member(names("mut-p", 5)[i-1], "pg-mutable") }
	blocker := pod{name: "blocker", cpu: "2", priority: 100, grace0: true}
	smallBlocker := pod{name: "small-blocker", cpu: "1", priority: 100, grace0: true}
	lowBlocker := pod{name: "low-priority-blocker", cpu: "2", priority: 10, grace0: true}
	low := func(i int) pod { return pod{name: names("low-p", 4)[i-1], cpu: "1", priority: 10, grace0: true} }
	veryLow := func(i int) pod { return pod{name: names("very-low-p", 2)[i-1], cpu: "1", priority: 5, grace0: true} }
	midPod := func(i int) pod { return pod{name: names("mid-p", 2)[i-1], group: "mid-pg", cpu: "1", priority: 50} }

	return suite{cases: []ucase{
		{name: "gang schedules when pod group and resources are available", steps: []step{
			createGroups(pg1), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"),
			groupCondition("pg1", metav1.ConditionTrue, v1alpha1.ReasonScheduled)}},
		{name: "any available pod group members get scheduled", steps: []step{
			createGroups(pg1), createPods(p(1), p(2), p(3)), scheduled("p1", "p2", "p3"),
			createPods(p(4)), scheduled("p1", "p2", "p3", "p4")}},
		{name: "gang waits for quorum to start, then schedules", steps: []step{
			createGroups(pg1), createPods(p(1), p(2)), unschedulablePods("p1", "p2"),
			createPods(p(3)), scheduled("p1", "p2", "p3")}},
		{name: "gang waits for pod group, then for resources, then schedules", steps: []step{
			createPods(blocker), scheduled("blocker"), createPods(p(1), p(2), p(3)), waitingForGroup("p1", "p2", "p3"),
			createGroups(pg1), unschedulablePods("p1", "p2", "p3"),
			groupCondition("pg1", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable),
			deletePods("blocker"), scheduled("p1", "p2", "p3"),
			groupCondition("pg1", metav1.ConditionTrue, v1alpha1.ReasonScheduled)}},
		{name: "minCount is scheduled, but one pod from a gang remain unschedulable until the blocked resources are released", steps: []step{
			createPods(smallBlocker), scheduled("small-blocker"), createPods(p(1), p(2), p(3), p(4)),
			createGroups(pg1), anyScheduled(3, "p1", "p2", "p3", "p4"),
			deletePods("small-blocker"), scheduled("p1", "p2", "p3", "p4")}},
		{name: "two gangs competing for the same resources shouldn't deadlock, reversed order", differs: "which gang wins: lockstep's queue " +
			"takes the older gang first, by its root's creation (pg1, made first, in the same second as pg2, so by name); pg2 wins only when the " +
			"scheduler takes other-p3 before the others are queued, as upstream, which orders by the pods, expects. Either way one gang binds whole " +
			"and the other waits: no deadlock", steps: []step{
			createGroups(pg1, pg2), createPods(other(3), p(3), other(2), p(2), other(1), p(1)),
			oneGangOf([]string{"other-p1", "other-p2", "other-p3"}, []string{"p1", "p2", "p3"})}},
		{name: "two gangs competing for the same resources shouldn't deadlock", steps: []step{
			createGroups(pg1, pg2), createPods(p(1), other(1), p(2), other(2), p(3), other(3)),
			scheduled("p1", "p2", "p3"), unschedulablePods("other-p1", "other-p2", "other-p3")}},
		{name: "pod group interleaving with an individual pod shouldn't deadlock nor livelock, and the individual pod gets scheduled", steps: []step{
			createGroups(pg1), createPods(blocker, p(1), p(2), p(3)),
			scheduled("blocker"), unschedulablePods("p1", "p2", "p3")}},
		{name: "basic group schedules when pod group and resources are available, without gang enforcement", steps: []step{
			createGroups(basic), createPods(p(1)), scheduled("p1"), createPods(p(2), p(3)), scheduled("p1", "p2", "p3")}},
		{name: "basic group waits for pod group, part of it waits for resources, then schedules", steps: []step{
			createPods(blocker), scheduled("blocker"), createPods(p(1), p(2), p(3)), waitingForGroup("p1", "p2", "p3"),
			createGroups(basic), anyScheduled(2, "p1", "p2", "p3"),
			deletePods("blocker"), scheduled("p1", "p2", "p3")}},
		{name: "basic group schedules with workload-aware preemption", steps: []step{
			createPods(lowBlocker), scheduled("low-priority-blocker"), createGroups(basic),
			createPods(p(1), p(2), p(3), p(4)), scheduled("p1", "p2", "p3", "p4"), removed("low-priority-blocker")}},
		{name: "gang schedules with workload-aware preemption", steps: []step{
			createPods(low(1), low(2), low(3), low(4)), scheduled("low-p1", "low-p2", "low-p3", "low-p4"),
			createGroups(pg1), createPods(p(1), p(2), p(3), p(4)), scheduled("p1", "p2", "p3", "p4"),
			groupCondition("pg1", metav1.ConditionTrue, v1alpha1.ReasonScheduled),
			removed("low-p1", "low-p2", "low-p3", "low-p4")}},
		{name: "gang schedules with partial workload-aware preemption", steps: []step{
			createPods(veryLow(1), veryLow(2), low(1), low(2)), scheduled("very-low-p1", "very-low-p2", "low-p1", "low-p2"),
			createGroups(mid), createPods(midPod(1), midPod(2)),
			scheduled("mid-p1", "mid-p2", "low-p1", "low-p2"), removed("very-low-p1", "very-low-p2")}},
		{name: "tas gang with constraint uses workload preemption", steps: []step{
			createPods(veryLow(1), veryLow(2), low(1), low(2)), scheduled("very-low-p1", "very-low-p2", "low-p1", "low-p2"),
			createGroups(midZone), createPods(midPod(1), midPod(2)),
			scheduled("mid-p1", "mid-p2", "low-p1", "low-p2"), removed("very-low-p1", "very-low-p2")}},
		{name: "gang pods are unschedulable due to lack of quorum, then scheduled when minCount is decreased", steps: []step{
			createGroups(mutable), createPods(mut(1), mut(2), mut(3), mut(4)), unschedulablePods("mut-p1", "mut-p2", "mut-p3", "mut-p4"),
			setMinCount("pg-mutable", 4), scheduled("mut-p1", "mut-p2", "mut-p3", "mut-p4")}},
		{name: "gang pods are unschedulable due to lack of space, then scheduled when minCount is decreased", steps: []step{
			createGroups(mutable), createPods(mut(1), mut(2), mut(3), mut(4), mut(5)),
			unschedulablePods("mut-p1", "mut-p2", "mut-p3", "mut-p4", "mut-p5"),
			setMinCount("pg-mutable", 4), scheduled("mut-p1", "mut-p2", "mut-p3", "mut-p4"), unschedulablePods("mut-p5")}},
		{name: "gang pods are unschedulable due to lack of quorum, and remain unschedulable without triggering reschedule when minCount is increased", steps: []step{
			createGroups(mutable), createPods(mut(1), mut(2), mut(3), mut(4)), unschedulablePods("mut-p1", "mut-p2", "mut-p3", "mut-p4"),
			setMinCount("pg-mutable", 6), noAttempts("pg-mutable", 6, "mut-p1", "mut-p2", "mut-p3", "mut-p4")}},
	}, common: []step{nodes(node("node", 4, zone, "zone1"))}}
}

// Upstream's TestWorkloadAwarePreemptionInvocation: a gang of 3 (disruptionMode all) on a node
// full of four low-priority pods preempts; upstream reads a Preempted event whose message
// starts "Preempted by podgroup". lockstep's names the gang: "Preempted by gang PodGroup...".
func TestWorkloadAwarePreemptionInvocation(t *testing.T) {
	runSuite(t, casesWorkloadAwarePreemptionInvocation())
}

// casesWorkloadAwarePreemptionInvocation are the cases of upstream's TestWorkloadAwarePreemptionInvocation.
func casesWorkloadAwarePreemptionInvocation() suite {
	low := func(i int) pod { return pod{name: names("low-", 4)[i-1], cpu: "1", priority: 10} }
	high := func(i int) pod { return pod{name: names("high-", 3)[i-1], group: "pg1", cpu: "1", priority: 100} }
	return suite{cases: []ucase{{name: "TestWorkloadAwarePreemptionInvocation", steps: []step{
		nodes(node("node", 4)), createPods(low(1), low(2), low(3), low(4)), scheduled("low-1", "low-2", "low-3", "low-4"),
		createGroups(group{name: "pg1", min: 3, priority: 100, all: true}), createPods(high(1), high(2), high(3)),
		preemptedEvent("Preempted by gang PodGroup.scheduling.k8s.io", "low-1", "low-2", "low-3", "low-4")}}}}
}
