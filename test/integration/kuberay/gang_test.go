package kuberay

import (
	"fmt"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// A RayCluster of a head and 3 workers (minReplicas = replicas = 3), each pod 2 cpu, on three
// 2-cpu nodes: room for 3 of its 4 pods. Its one lockstep PodGroup is a gang of 4; no pod of it
// binds (the pod watch sees no bind at all, so none was bound even for an instant) and the
// PodGroup says it cannot fit. A fourth node is added: all 4 pods bind, one per node, and the
// watch saw the first bind only once every pod of the gang existed. Were Ray pods scheduled
// one by one, 3 would have bound before the node came.
func TestRayClusterBindsWholeOnlyOnceItsMinimumFits(t *testing.T) {
	e := start(t, nil, lt.MakeNode("node-a", "2").Obj(), lt.MakeNode("node-b", "2").Obj(), lt.MakeNode("node-c", "2").Obj())
	rc := e.create("RayCluster", "ray", nil, nil, clusterSpec("2", group{replicas: 3, minReplicas: 3, maxReplicas: 3}))

	pods := e.waitCluster("ray", 3, 0)
	for i := range pods {
		e.checkRayPod(&pods[i], rc)
	}
	pg := e.clusterGroup(rc, 4)
	c := e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	t.Logf("PodGroup %s with room for 3 of its 4 pods: %s %q", pg.Name, c.Reason, c.Message)
	e.Settled(t, "no pod of the RayCluster bound", func() (bool, string) {
		pods := e.pods(clusterSelector("ray", ""))
		return bound(pods) == 0 && len(e.watch.allBinds()) == 0, fmt.Sprint(placement(pods))
	})
	if binds := e.watch.allBinds(); len(binds) != 0 {
		t.Fatalf("the pod watch saw pod %s bound to %s while only 3 of the gang's 4 pods fit: %v", binds[0].pod, binds[0].node, binds[0].pods)
	}
	for _, p := range e.pods(clusterSelector("ray", "")) {
		e.checkPending(p.Name)
	}

	e.CreateNodes(t, lt.MakeNode("node-d", "2").Obj())
	pods = e.waitCluster("ray", 3, 4)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 4 {
		t.Errorf("pods on nodes %v, want one on each of the 4 nodes: %v", nodes, placement(pods))
	}
	e.checkBoundWhole("ray", 4)
	e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "child groups placed together")
}

// The gang of a RayCluster (a head and minReplicas 2 workers, 2 cpu each) binds on two 4-cpu
// nodes, room for one pod more. The Ray autoscaler raises the worker group's replicas to 4: of
// the two new workers, one binds without waiting for the other, which stays pending with a
// reason, and the gang's pods are untouched (same pods, same nodes, none deleted). The
// autoscaler then removes both new workers by name (workersToDelete): exactly those go, the
// PodGroup is still scheduled with minCount 3, and a worker added again binds alone in the
// room they left.
func TestRayAutoscalerWorkersJoinOneByOne(t *testing.T) {
	e := start(t, nil, lt.MakeNode("node-a", "4").Obj(), lt.MakeNode("node-b", "4").Obj())
	rc := e.create("RayCluster", "ray", nil, nil, clusterSpec("2", group{replicas: 2, minReplicas: 2, maxReplicas: 4}))

	gang := e.waitCluster("ray", 2, 3)
	for i := range gang {
		e.checkRayPod(&gang[i], rc)
	}
	e.checkBoundWhole("ray", 3)
	pg := e.clusterGroup(rc, 3)
	e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "child groups placed together")
	gangPods := map[string]v1.Pod{}
	for _, p := range gang {
		gangPods[p.Name] = p
	}
	checkGangUntouched := func() {
		t.Helper()
		now := map[string]v1.Pod{}
		for _, p := range e.pods(clusterSelector("ray", "")) {
			now[p.Name] = p
		}
		for name, was := range gangPods {
			p, ok := now[name]
			if !ok || p.UID != was.UID || p.Spec.NodeName != was.Spec.NodeName {
				t.Errorf("gang pod %s (uid %s) was on %s; now present %v, uid %s, node %q", name, was.UID, was.Spec.NodeName, ok, p.UID, p.Spec.NodeName)
			}
			if d, ok := e.watch.deletedPods()[name]; ok {
				t.Errorf("gang pod %s deleted (last seen %v)", name, d)
			}
		}
	}

	// Scale up by 2 with room for 1.
	e.setWorkers("ray", 4, nil)
	var extra []v1.Pod
	testenv.Eventually(t, 60*time.Second, "two new workers, one bound", func() (bool, string) {
		extra = nil
		for _, p := range e.pods(clusterSelector("ray", "worker")) {
			if _, ok := gangPods[p.Name]; !ok {
				extra = append(extra, p)
			}
		}
		return len(extra) == 2 && bound(extra) == 1, fmt.Sprint(placement(extra))
	})
	sort.Slice(extra, func(i, j int) bool { return extra[i].Spec.NodeName > extra[j].Spec.NodeName })
	joined, pending := extra[0], extra[1]
	t.Logf("scaled up: %s bound to %s, %s pending", joined.Name, joined.Spec.NodeName, pending.Name)
	e.checkPending(pending.Name)
	e.Settled(t, "the gang and the joined worker bound, the other new worker pending", func() (bool, string) {
		pods := e.pods(clusterSelector("ray", ""))
		p := placement(pods)
		return len(pods) == 5 && bound(pods) == 4 && p[pending.Name] == "" && p[joined.Name] == joined.Spec.NodeName, fmt.Sprint(p)
	})
	checkGangUntouched()
	e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	// Scale down by naming both new workers.
	e.setWorkers("ray", 2, []string{joined.Name, pending.Name})
	pods := e.waitCluster("ray", 2, 3)
	for _, p := range pods {
		if _, ok := gangPods[p.Name]; !ok {
			t.Errorf("after the scale-down, pod %s is not one of the gang's %v", p.Name, placement(gang))
		}
	}
	deleted := e.watch.deletedPods()
	for _, name := range []string{joined.Name, pending.Name} {
		if _, ok := deleted[name]; !ok {
			t.Errorf("worker %s named in workersToDelete: the watch saw no deletion", name)
		}
	}
	checkGangUntouched()
	pg = e.clusterGroup(rc, 3)
	if c := e.GroupCondition(t, "CompositePodGroup", e.ns, pg.Name); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("PodGroup %s after the scale-down: %+v, want still scheduled", pg.Name, c)
	}

	// The autoscaler adds a worker again (workersToDelete emptied): it binds alone.
	e.setWorkers("ray", 3, []string{})
	pods = e.waitCluster("ray", 3, 4)
	checkGangUntouched()
	t.Logf("scaled up again: %v", placement(pods))
}

// A RayCluster annotated scheduling.lockstep.dev/topology-required: rack, a head and 3
// workers of 2 cpu, on rack r0 of two 4-cpu nodes (room for the 4 pods) and rack r1 of three
// 2-cpu nodes (room for 3): all 4 pods bind in r0, as the nodes' labels say, though packing
// alone would rather fill r1's small nodes. A fifth worker the autoscaler adds stays pending:
// r0 is full and the cluster's rack is r0, though r1 has room.
func TestRayClusterRackRequired(t *testing.T) {
	var nodes []*v1.Node
	for i := 0; i < 2; i++ {
		nodes = append(nodes, lt.InTopology(lt.MakeNode(fmt.Sprintf("r0-n%d", i), "4"), "z0", "z0-b0", "r0").Obj())
	}
	for i := 0; i < 3; i++ {
		nodes = append(nodes, lt.InTopology(lt.MakeNode(fmt.Sprintf("r1-n%d", i), "2"), "z0", "z0-b0", "r1").Obj())
	}
	e := start(t, nil, nodes...)
	rc := e.create("RayCluster", "ray", nil, map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lt.RackKey},
		clusterSpec("2", group{replicas: 3, minReplicas: 3, maxReplicas: 4}))

	pods := e.waitCluster("ray", 3, 4)
	pg := e.clusterGroup(rc, 4)
	if c := pg.Spec.SchedulingConstraints; c == nil || len(c.Topology) != 1 || c.Topology[0].Key != lt.RackKey {
		t.Errorf("PodGroup %s constraints %+v, want %s required", pg.Name, c, lt.RackKey)
	}
	racks := map[string]bool{}
	for _, p := range pods {
		racks[e.NodeDomain(t, p.Spec.NodeName, lt.RackKey)] = true
	}
	if len(racks) != 1 || !racks["r0"] {
		t.Errorf("pods in racks %v, want all in r0 (the only rack with room for 4): %v", racks, placement(pods))
	}
	e.checkBoundWhole("ray", 4)
	e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "child groups placed together")

	e.setWorkers("ray", 4, nil)
	pods = e.waitCluster("ray", 4, 4)
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			e.checkPending(p.Name)
			e.Settled(t, "the fifth worker pending", func() (bool, string) {
				pods := e.pods(clusterSelector("ray", ""))
				return bound(pods) == 4 && placement(pods)[p.Name] == "", fmt.Sprint(placement(pods))
			})
		}
	}
}

// A RayCluster created suspended (spec.suspend, as Kueue queues it) has no pods and no
// lockstep Workload or PodGroup. Resumed, it gets one PodGroup of head + minReplicas and binds
// whole on room for exactly that.
func TestSuspendedRayClusterHasNoGroupUntilResumed(t *testing.T) {
	e := start(t, nil, lt.MakeNode("node-a", "4").Obj(), lt.MakeNode("node-b", "2").Obj())
	spec := clusterSpec("2", group{replicas: 2, minReplicas: 2, maxReplicas: 2})
	spec["suspend"] = true
	rc := e.create("RayCluster", "ray", nil, nil, spec)

	e.noGroups(testenv.RayClusterGVR, rc, "RayCluster suspended")
	if pods := e.pods(clusterSelector("ray", "")); len(pods) != 0 {
		t.Errorf("suspended RayCluster has pods %v", placement(pods))
	}

	e.updateCluster("ray", func(rc *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(rc.Object, false, "spec", "suspend"); err != nil {
			t.Fatal(err)
		}
	})
	pg := e.clusterGroup(rc, 3)
	pods := e.waitCluster("ray", 2, 3)
	for i := range pods {
		e.checkRayPod(&pods[i], rc)
	}
	e.checkBoundWhole("ray", 3)
	e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "child groups placed together")
}

// A RayCluster created above its minimum (replicas 3, minReplicas 2) whose head (4 cpu) does
// not fit while its workers (1 cpu) do: one 3-cpu node. Its gang is the head and 2 workers;
// 3 workers are not a Ray cluster (they wait for the head's GCS), so no pod may bind: the pod
// watch sees no bind while the head has no room. A 4-cpu node is added: the head and the
// workers bind, the head among the first binds' gang.
func TestRayClusterNeverStartsWithoutItsHead(t *testing.T) {
	e := start(t, nil, lt.MakeNode("node-a", "3").Obj())
	spec := clusterSpec("1", group{replicas: 3, minReplicas: 2, maxReplicas: 3})
	headSpec, _, _ := unstructured.NestedMap(spec, "headGroupSpec", "template", "spec")
	headSpec["containers"] = []any{rayContainer("ray-head", "4")}
	if err := unstructured.SetNestedMap(spec, headSpec, "headGroupSpec", "template", "spec"); err != nil {
		t.Fatal(err)
	}
	rc := e.create("RayCluster", "ray", nil, nil, spec)

	pg := e.clusterGroup(rc, 3)
	testenv.Eventually(t, 60*time.Second, "the head and 3 workers created", func() (bool, string) {
		pods := e.pods(clusterSelector("ray", ""))
		return len(pods) == 4, fmt.Sprint(placement(pods))
	})
	e.Settled(t, "no pod of the RayCluster bound while its head has no room", func() (bool, string) {
		pods := e.pods(clusterSelector("ray", ""))
		if binds := e.watch.allBinds(); len(binds) != 0 {
			return false, fmt.Sprintf("the watch saw %s bound to %s while %v; PodGroup %s: %+v",
				binds[0].pod, binds[0].node, binds[0].pods, pg.Name, e.GroupCondition(t, "CompositePodGroup", e.ns, pg.Name))
		}
		return bound(pods) == 0, fmt.Sprint(placement(pods))
	})
	e.CreateNodes(t, lt.MakeNode("node-b", "4").Obj())
	pods := e.waitCluster("ray", 3, 4)
	t.Logf("placement: %v", placement(pods))
	e.checkBoundWhole("ray", 3)
}
