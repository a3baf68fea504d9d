package lws

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lwsadapter "github.com/lockstep-sched/lockstep/pkg/controller/jobs/leaderworkerset"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// LWS's own annotations on a LeaderWorkerSet (sigs.k8s.io/lws/api/leaderworkerset/v1), and its
// subgroup label on pods.
const (
	exclusiveTopologyAnnotation         = "leaderworkerset.sigs.k8s.io/exclusive-topology"
	subGroupExclusiveTopologyAnnotation = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
	subGroupIndexLabel                  = "leaderworkerset.sigs.k8s.io/subgroup-index"
)

// Two replicas of 4 pods (1 cpu), the LeaderWorkerSet asking lockstep for one rack per
// replica, on two racks of three 2-cpu hosts: each rack has room for one replica (6 pods) but
// not two, and the 8 pods would also fit pod by pod, replicas split across racks. Every replica binds whole (when its
// first pod bound all 4 existed, and all 4 were bound together), in one rack, the two in
// different racks; each is the gang of its leader, a PodGroup of minCount 4 named after the
// leader's UID, Scheduled.
func TestLWSReplicasBindWholeOneRackEach(t *testing.T) {
	e := startAll(t, "racks", lt.TopologyNodes(1, 1, 2, 3, "2")...)
	lws := newLWS(e.ns, "train", 2, 4)
	lws.SetAnnotations(map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lt.RackKey})
	created := e.create(lws)

	e.waitReplicasBound("train", 2, 4)
	groups := e.checkBoundWhole("train", 4)
	if len(groups) != 2 {
		t.Errorf("the watch saw %d group incarnations bind, want 2", len(groups))
	}
	racks := map[string]string{}
	for g := 0; g < 2; g++ {
		rack := e.oneDomain(e.replica("train", g), lt.RackKey)
		if other, ok := racks[rack]; ok {
			t.Errorf("replicas %s and %d both in rack %s", other, g, rack)
		}
		racks[rack] = fmt.Sprint(g)
	}
	e.waitGroups(created, 4, "train-0", "train-1")
}

// Two replicas of 4 pods (1 cpu) on two 4-cpu nodes, one cpu taken by a pod of another
// scheduler: room for one replica and 3 pods of the other. One replica binds whole; the other
// binds nothing (although 3 of its pods would fit) and its PodGroup says it cannot fit; once
// the other pod is gone, it binds whole.
func TestLWSReplicaWaitsWholeForRoom(t *testing.T) {
	e := startAll(t, "room", lt.MakeNode("node-a", "4").Obj(), lt.MakeNode("node-b", "4").Obj())
	e.CreatePods(t, filler(e.ns, "filler", "node-b", "1"))
	created := e.create(newLWS(e.ns, "serve", 2, 4))

	var waiting int
	testenv.Eventually(t, 90*time.Second, "one replica of serve bound whole", func() (bool, string) {
		var state []string
		full := -1
		for g := 0; g < 2; g++ {
			pods := e.replica("serve", g)
			state = append(state, fmt.Sprintf("replica %d: %v", g, placement(pods)))
			if len(pods) == 4 && bound(pods) == 4 {
				full = g
			}
		}
		waiting = 1 - full
		return full >= 0, strings.Join(state, "; ")
	})
	leader := e.leader("serve", waiting)
	waitingGroup := lwsadapter.GroupName("serve", fmt.Sprint(waiting), leader.UID)
	// Its workers may still be being created (the StatefulSet makes them one by one): once
	// all 4 exist, none binds.
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("the 4 pods of replica %d of serve", waiting), func() (bool, string) {
		pods := e.replica("serve", waiting)
		return len(pods) == 4, fmt.Sprint(placement(pods))
	})
	e.Settled(t, fmt.Sprintf("replica %d of serve waiting whole", waiting), func() (bool, string) {
		pods := e.replica("serve", waiting)
		return len(pods) == 4 && bound(pods) == 0, fmt.Sprint(placement(pods))
	})
	cond := e.WaitCondition(t, "PodGroup", e.ns, waitingGroup, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "could take 3")
	t.Logf("PodGroup %s of the waiting replica: %s", waitingGroup, cond.Message)

	e.DeletePods(t, e.ns, "filler")
	e.waitReplicasBound("serve", 2, 4)
	if groups := e.checkBoundWhole("serve", 4); len(groups) != 2 {
		t.Errorf("the watch saw %d group incarnations bind, want 2", len(groups))
	}
	e.waitGroups(created, 4, "serve-0", "serve-1")
}

// A rolling update with maxSurge 1 (and maxUnavailable 1) of a LeaderWorkerSet of 2 replicas
// of 3 pods, its pods running ready: LWS makes new leaders (the surge replica at index 2 among
// them) and removes the old ones. Every incarnation of every replica, old and new, surge
// included, bound whole; once the update is done, the LWS has exactly its 2 replicas of the
// new revision, and exactly 2 lockstep PodGroups, those of the new leaders, each with its 3
// pods bound; the groups of the old leaders and of the surge replica are gone.
func TestLWSRollingUpdate(t *testing.T) {
	e := startAll(t, "roll", lt.MakeNode("node-a", "8").Obj(), lt.MakeNode("node-b", "8").Obj())
	e.RunPods(t, e.ns, nil)
	lws := newLWS(e.ns, "roll", 2, 3)
	setNested(lws, map[string]any{"type": "RollingUpdate",
		"rollingUpdateConfiguration": map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(1)}}, "spec", "rolloutStrategy")
	created := e.create(lws)
	e.waitReplicasBound("roll", 2, 3)
	e.waitLWSReady("roll", 2)
	before := e.waitGroups(created, 3, "roll-0", "roll-1")
	oldRevision := e.leader("roll", 0).Labels[testenv.LWSRevisionLabel]

	patch := `{"spec":{"leaderWorkerTemplate":{"workerTemplate":{"metadata":{"labels":{"v":"2"}}},"leaderTemplate":{"metadata":{"labels":{"v":"2"}}}}}}`
	if _, err := e.lwses().Patch(context.Background(), "roll", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 3*time.Minute, "the rolling update done: 2 replicas of 3 pods of the new revision, bound and ready", func() (bool, string) {
		l := e.getLWS("roll")
		updated, _, _ := unstructured.NestedInt64(l.Object, "status", "updatedReplicas")
		ready, _, _ := unstructured.NestedInt64(l.Object, "status", "readyReplicas")
		pods := e.lwsPods("roll")
		state := fmt.Sprintf("updated %d ready %d; pods %v", updated, ready, describePods(pods))
		if updated != 2 || ready != 2 || len(pods) != 6 {
			return false, state
		}
		for _, p := range pods {
			if p.Labels[testenv.LWSRevisionLabel] == oldRevision || p.Spec.NodeName == "" || p.Labels[testenv.LWSGroupIndexLabel] == "2" {
				return false, state
			}
		}
		return true, ""
	})

	groups := e.checkBoundWhole("roll", 3)
	revisions := map[string]int{}
	surge := false
	for _, g := range groups {
		revisions[g.revision]++
		if g.group == "2" {
			surge = true
		}
	}
	t.Logf("incarnations bound, by revision: %v", revisions)
	if !surge {
		t.Errorf("the watch saw no surge replica (group index 2) bind: %v", describeGroups(groups))
	}
	if revisions[oldRevision] != 2 || len(groups) < 5 {
		t.Errorf("incarnations bound: %v (want the 2 old, 2 new and the surge replica)", describeGroups(groups))
	}
	after := e.waitGroups(created, 3, "roll-0", "roll-1")
	for _, pg := range before {
		if _, ok := after[pg.Name]; ok {
			t.Errorf("PodGroup %s of an old leader kept", pg.Name)
		}
	}
}

// RecreateGroupOnPodRestart: a replica of 4 pods is bound; one of its workers is deleted and
// LWS recreates the whole group (the same pod names, new UIDs, a new leader). The nodes are
// cordoned meanwhile, then filled by pods of another scheduler so that 3 of the 4 would fit,
// and uncordoned: the recreated group binds nothing — it is a fresh gang with a PodGroup of
// its own (named after its new leader's UID), not replacements of a group already scheduled,
// which would go one by one — and the old group is deleted. Once room appears, it binds whole.
func TestLWSRecreateGroupOnPodRestartIsAFreshGang(t *testing.T) {
	e := startAll(t, "recreate", lt.MakeNode("node-a", "4").Obj(), lt.MakeNode("node-b", "4").Obj())
	e.RunPods(t, e.ns, nil)
	lws := newLWS(e.ns, "rec", 1, 4)
	setNested(lws, "RecreateGroupOnPodRestart", "spec", "leaderWorkerTemplate", "restartPolicy")
	created := e.create(lws)
	e.waitReplicasBound("rec", 1, 4)
	first := e.waitGroups(created, 4, "rec-0")
	oldUIDs := uids(e.replica("rec", 0))
	oldGroup := lwsadapter.GroupName("rec", "0", e.leader("rec", 0).UID)

	e.setUnschedulable(true, "node-a", "node-b")
	e.DeletePods(t, e.ns, "rec-0-1")
	var recreated []*v1.Pod
	testenv.Eventually(t, 90*time.Second, "replica 0 of rec recreated whole: 4 pods, new UIDs", func() (bool, string) {
		recreated = e.replica("rec", 0)
		state := describePods(recreated)
		if len(recreated) != 4 {
			return false, state
		}
		for _, p := range recreated {
			if oldUIDs[p.UID] {
				return false, state
			}
		}
		return true, ""
	})
	if names := sortedNames(recreated); fmt.Sprint(names) != "[rec-0 rec-0-1 rec-0-2 rec-0-3]" {
		t.Errorf("recreated pods %v, want the same names", names)
	}
	newGroup := lwsadapter.GroupName("rec", "0", e.leader("rec", 0).UID)
	if newGroup == oldGroup {
		t.Fatalf("the recreated group's PodGroup name %s is the old one's", newGroup)
	}
	e.CreatePods(t, filler(e.ns, "filler-a", "node-a", "4"), filler(e.ns, "filler-b", "node-b", "1"))
	e.setUnschedulable(false, "node-a", "node-b")
	e.Settled(t, "the recreated group waiting whole (room for 3 of 4)", func() (bool, string) {
		pods := e.replica("rec", 0)
		return len(pods) == 4 && bound(pods) == 0, describePods(pods)
	})
	cond := e.WaitCondition(t, "PodGroup", e.ns, newGroup, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "could take 3")
	t.Logf("PodGroup %s of the recreated group: %s", newGroup, cond.Message)
	testenv.Eventually(t, 60*time.Second, "the old group's PodGroup "+oldGroup+" deleted", func() (bool, string) {
		groups := e.lwsGroups(created)
		_, old := groups[oldGroup]
		_, fresh := groups[newGroup]
		return !old && fresh && len(groups) == 1, fmt.Sprint(sortedKeys(groups))
	})
	if _, ok := first[oldGroup]; !ok {
		t.Errorf("the first group was %v, want %s", sortedKeys(first), oldGroup)
	}

	e.DeletePods(t, e.ns, "filler-b")
	e.waitReplicasBound("rec", 1, 4)
	if groups := e.checkBoundWhole("rec", 4); len(groups) != 2 {
		t.Errorf("the watch saw %d group incarnations bind, want 2: %v", len(groups), describeGroups(groups))
	}
	e.waitGroups(created, 4, "rec-0")
}

// Scaling a LeaderWorkerSet of replicas of 3 pods from 1 to 2: the new replica is a gang of
// its own and binds whole; from 2 to 1: the removed replica's PodGroup is deleted, and the
// remaining replica is untouched (the same pods on the same nodes, the same PodGroup).
func TestLWSScaleUpAndDown(t *testing.T) {
	e := startAll(t, "scale", lt.MakeNode("node-a", "4").Obj(), lt.MakeNode("node-b", "4").Obj())
	created := e.create(newLWS(e.ns, "scale", 1, 3))
	e.waitReplicasBound("scale", 1, 3)
	e.waitGroups(created, 3, "scale-0")

	e.scale("scale", 2)
	e.waitReplicasBound("scale", 2, 3)
	if groups := e.checkBoundWhole("scale", 3); len(groups) != 2 {
		t.Errorf("the watch saw %d group incarnations bind, want 2: %v", len(groups), describeGroups(groups))
	}
	two := e.waitGroups(created, 3, "scale-0", "scale-1")
	kept := placement(e.replica("scale", 0))
	keptUIDs := uids(e.replica("scale", 0))
	keptGroup := lwsadapter.GroupName("scale", "0", e.leader("scale", 0).UID)

	e.scale("scale", 1)
	testenv.Eventually(t, 60*time.Second, "replica 1 of scale gone, with its PodGroup", func() (bool, string) {
		groups := e.lwsGroups(created)
		pods := e.lwsPods("scale")
		return len(pods) == 3 && len(groups) == 1, fmt.Sprintf("pods %v; groups %v", describePods(pods), sortedKeys(groups))
	})
	one := e.waitGroups(created, 3, "scale-0")
	if one[keptGroup] == nil || one[keptGroup].UID != two[keptGroup].UID {
		t.Errorf("replica 0's PodGroup %s replaced or gone: %v", keptGroup, sortedKeys(one))
	}
	pods := e.replica("scale", 0)
	if got := placement(pods); fmt.Sprint(got) != fmt.Sprint(kept) {
		t.Errorf("replica 0 of scale moved: was %v, now %v", kept, got)
	}
	if got := uids(pods); fmt.Sprint(got) != fmt.Sprint(keptUIDs) {
		t.Errorf("replica 0 of scale's pods replaced: were %v, now %v", keptUIDs, got)
	}
}

// startupPolicy LeaderReady: LWS makes a replica's workers only once its leader is ready, so
// the replica's PodGroup lets the leader bind first (leaders 1): the leader binds only where
// its whole replica fits — planned with its workers, which do not exist yet — and their room
// is held for them until they come. Two replicas of 3 pods (1 cpu) on a 3-cpu and a 2-cpu
// node: room for exactly one replica. One leader binds; the other does not (its replica
// would not fit beside the first one's held room), nor does it ever while the first runs.
// Before the first leader is ready (no worker exists yet), three plain pods of lockstep's
// profile come: two bind into the room nobody holds, the third waits, refused the held room.
// Once the leader runs ready, LWS makes its workers and they bind into that room: the replica
// is whole. Pod by pod, both leaders would bind at once and a plain pod would take a worker's
// room.
func TestLWSLeaderReadyBindsTheLeaderWhereTheReplicaFits(t *testing.T) {
	e := startAll(t, "leader-ready", lt.MakeNode("node-a", "3").Obj(), lt.MakeNode("node-b", "2").Obj())
	serve := newLWS(e.ns, "serve", 2, 3)
	setNested(serve, "LeaderReady", "spec", "startupPolicy")
	created := e.create(serve)

	var first, second int
	testenv.Eventually(t, 90*time.Second, "one leader of serve bound", func() (bool, string) {
		pods := e.lwsPods("serve")
		if bound(pods) != 1 {
			return false, describePods(pods)
		}
		for g := 0; g < 2; g++ {
			if l := e.leaderOrNil("serve", g); l != nil && l.Spec.NodeName != "" {
				first, second = g, 1-g
			}
		}
		return true, describePods(pods)
	})
	leader := e.leader("serve", first)
	group := lwsadapter.GroupName("serve", fmt.Sprint(first), leader.UID)
	testenv.Eventually(t, 60*time.Second, "PodGroup "+group+", a gang of 3 whose leader binds first", func() (bool, string) {
		pg := e.lwsGroups(created)[group]
		if pg == nil {
			return false, "none"
		}
		gang := pg.Spec.SchedulingPolicy.Gang
		return gang != nil && gang.MinCount == 3 && gang.Leaders == 1, fmt.Sprintf("%+v", gang)
	})
	e.WaitCondition(t, "PodGroup", e.ns, group, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "leaders placed, room held for the others")

	// Plain pods of lockstep's profile: two take the room nobody holds, the third is refused
	// the room held for the first replica's workers.
	var plain []*v1.Pod
	for i := range 3 {
		plain = append(plain, lt.MakePod().Namespace(e.ns).Name(fmt.Sprintf("plain-%d", i)).SchedulerName(lt.SchedulerName).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj())
	}
	e.CreatePods(t, plain...)
	testenv.Eventually(t, 60*time.Second, "two plain pods bound, the third refused the held room", func() (bool, string) {
		pods := e.livePods("!" + testenv.LWSNameLabel)
		waiting := ""
		for _, p := range pods {
			for _, c := range p.Status.Conditions {
				if p.Spec.NodeName == "" && c.Type == v1.PodScheduled && strings.Contains(c.Message, "reserved for gang "+group) {
					waiting = p.Name
				}
			}
		}
		return bound(pods) == 2 && waiting != "", fmt.Sprintf("%v; waiting %q", placement(pods), waiting)
	})
	e.Settled(t, "the second leader unbound, no worker yet", func() (bool, string) {
		pods := e.lwsPods("serve")
		return len(pods) == 2 && e.leader("serve", second).Spec.NodeName == "", describePods(pods)
	})

	// The first leader runs ready: its workers come and bind into the held room.
	e.RunPods(t, e.ns, nil)
	testenv.Eventually(t, 90*time.Second, "the first replica whole", func() (bool, string) {
		pods := e.replica("serve", first)
		return len(pods) == 3 && bound(pods) == 3, describePods(pods)
	})
	e.WaitCondition(t, "PodGroup", e.ns, group, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed together")
	// From the watch: one replica bound (its leader first, by design), all 3 of its pods.
	groups := e.watch.groups("serve")
	for _, g := range groups {
		if g.binds != 3 || g.maxBound != 3 {
			t.Errorf("replica %s: %d binds, %d bound at once; want its 3 pods", g.group, g.binds, g.maxBound)
		}
	}
	if len(groups) != 1 {
		t.Errorf("the watch saw %d replicas bind, want 1: %s", len(groups), describeGroups(groups))
	}
	e.Settled(t, "the second replica waits whole", func() (bool, string) {
		pods := e.replica("serve", second)
		return bound(pods) == 0, describePods(pods)
	})
	if n := bound(e.livePods("!" + testenv.LWSNameLabel)); n != 2 {
		t.Errorf("%d plain pods bound, want the 2 that fit outside the held room", n)
	}
}

// LWS's exclusive-topology annotation: LWS makes a replica's workers only once its leader is
// scheduled, and pins them to the leader's rack. The replica's PodGroup asks for a rack of its
// own (Required, exclusive) and lets the leader bind first, planned with its workers: two
// replicas of 3 pods (1 cpu) on two racks of two 2-cpu hosts bind whole, each in a rack of its
// own — the leader never in a rack its workers would not fit.
func TestLWSExclusiveTopologyLeaderFirst(t *testing.T) {
	e := startAll(t, "exclusive", lt.TopologyNodes(1, 1, 2, 2, "2")...)
	excl := newLWS(e.ns, "excl", 2, 3)
	excl.SetAnnotations(map[string]string{exclusiveTopologyAnnotation: lt.RackKey})
	created := e.create(excl)
	e.waitReplicasBound("excl", 2, 3)
	racks := map[string]bool{}
	for g := 0; g < 2; g++ {
		racks[e.oneDomain(e.replica("excl", g), lt.RackKey)] = true
	}
	if len(racks) != 2 {
		t.Errorf("the two replicas share a rack: %v", racks)
	}
	for name, pg := range e.waitGroups(created, 3, "excl-0", "excl-1") {
		c := pg.Spec.SchedulingConstraints
		if pg.Spec.SchedulingPolicy.Gang.Leaders != 1 || c == nil || len(c.Topology) != 1 || c.Topology[0].Key != lt.RackKey || !c.Topology[0].Exclusive {
			t.Errorf("PodGroup %s: %+v, want a gang of 3 whose leader binds first, in a rack of its own", name, pg.Spec)
		}
	}
}

// subGroupSize 2 of replicas of 4 pods with the subgroup-exclusive-topology annotation on the
// hostname: each replica is a CompositePodGroup of two PodGroups (sg0: the leader and worker
// 1, sg1: workers 2 and 3, as LWS assigns them), each taking a host to itself. Two replicas on
// three 2-cpu hosts (labelled with every level of lockstep's topology: a node without a
// broader level's label is in no host domain either): one replica binds whole, each subgroup
// on a host of its own; the other
// binds nothing (one of its subgroups would fit on the free host); once a fourth host is
// added, it binds whole too, and the 4 subgroups are on 4 different hosts.
func TestLWSSubGroupsEachTakeAHost(t *testing.T) {
	e := startAll(t, "subgroups", lt.TopologyNodes(1, 1, 1, 3, "2")...)
	lws := newLWS(e.ns, "sub", 2, 4)
	lws.SetAnnotations(map[string]string{subGroupExclusiveTopologyAnnotation: lt.HostKey})
	setNested(lws, map[string]any{"subGroupSize": int64(2)}, "spec", "leaderWorkerTemplate", "subGroupPolicy")
	created := e.create(lws)

	var waiting int
	testenv.Eventually(t, 90*time.Second, "one replica of sub bound whole", func() (bool, string) {
		var state []string
		full := -1
		for g := 0; g < 2; g++ {
			pods := e.replica("sub", g)
			state = append(state, fmt.Sprintf("replica %d: %v", g, placement(pods)))
			if len(pods) == 4 && bound(pods) == 4 {
				full = g
			}
		}
		waiting = 1 - full
		return full >= 0, strings.Join(state, "; ")
	})
	e.Settled(t, fmt.Sprintf("replica %d of sub waiting whole", waiting), func() (bool, string) {
		pods := e.replica("sub", waiting)
		return len(pods) == 4 && bound(pods) == 0, fmt.Sprint(placement(pods))
	})
	e.checkSubgroups(created, 1-waiting)

	e.CreateNodes(t, lt.InTopology(lt.MakeNode("z0-b0-r0-h3", "2"), "z0", "z0-b0", "z0-b0-r0").Obj())
	e.waitReplicasBound("sub", 2, 4)
	if groups := e.checkBoundWhole("sub", 4); len(groups) != 2 {
		t.Errorf("the watch saw %d group incarnations bind, want 2: %v", len(groups), describeGroups(groups))
	}
	hosts := map[string]string{}
	for g := 0; g < 2; g++ {
		for sg, host := range e.checkSubgroups(created, g) {
			if other, ok := hosts[host]; ok {
				t.Errorf("subgroups %s and %d/%s share host %s", other, g, sg, host)
			}
			hosts[host] = fmt.Sprintf("%d/%s", g, sg)
		}
	}
}

// checkSubgroups checks that replica g of a LeaderWorkerSet with subGroupSize 2 of size 4 is
// bound with each subgroup (by LWS's subgroup-index label: sg0 the leader and worker 1, sg1
// workers 2 and 3) on one host of its own (by node name), and that lockstep made its tree —
// a CompositePodGroup named after its leader's UID, Scheduled, and a PodGroup per subgroup
// of minCount 2, Scheduled; it returns each subgroup's host.
func (e *lwsEnv) checkSubgroups(lws *unstructured.Unstructured, g int) map[string]string {
	e.t.Helper()
	pods := e.replica(lws.GetName(), g)
	hosts := map[string]map[string]bool{}
	want := map[string]string{"0": "0", "1": "0", "2": "1", "3": "1"}
	for _, p := range pods {
		sg := p.Labels[subGroupIndexLabel]
		if w := p.Labels[testenv.LWSWorkerIndexLabel]; want[w] != sg {
			e.t.Errorf("pod %s (worker %s) in subgroup %q, want %q", p.Name, w, sg, want[w])
		}
		if hosts[sg] == nil {
			hosts[sg] = map[string]bool{}
		}
		hosts[sg][p.Spec.NodeName] = true
	}
	out := map[string]string{}
	seen := map[string]string{}
	for sg, hs := range hosts {
		if len(hs) != 1 {
			e.t.Errorf("replica %d subgroup %s on hosts %v, want one: %v", g, sg, sortedKeys(hs), placement(pods))
			continue
		}
		host := sortedKeys(hs)[0]
		if other, ok := seen[host]; ok {
			e.t.Errorf("replica %d subgroups %s and %s share host %s", g, other, sg, host)
		}
		seen[host], out[sg] = sg, host
	}
	base := lwsadapter.GroupName(lws.GetName(), fmt.Sprint(g), e.leader(lws.GetName(), g).UID)
	e.WaitCondition(e.t, "CompositePodGroup", e.ns, base, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 child groups placed together")
	for sg := 0; sg < 2; sg++ {
		name := fmt.Sprintf("%s-sg%d", base, sg)
		e.WaitCondition(e.t, "PodGroup", e.ns, name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 pods placed together")
		pg, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 2 {
			e.t.Errorf("PodGroup %s: %+v, want a gang of 2", name, pg.Spec.SchedulingPolicy)
		}
	}
	return out
}

// newLWS is a LeaderWorkerSet ns/name of replicas groups of size pods (a leader and size-1
// workers) of 1 cpu, lockstep's in both templates.
func newLWS(ns, name string, replicas, size int64) *unstructured.Unstructured {
	template := func(role string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"role": role}},
			"spec": map[string]any{
				"schedulerName": lt.SchedulerName,
				"containers": []any{map[string]any{
					"name":      "main",
					"image":     "busybox",
					"command":   []any{"sh", "-c", "sleep 3600"},
					"resources": map[string]any{"requests": map[string]any{"cpu": "1"}},
				}},
			},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": testenv.LeaderWorkerSetGVR.GroupVersion().String(),
		"kind":       "LeaderWorkerSet",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": replicas,
			"leaderWorkerTemplate": map[string]any{
				"size":           size,
				"leaderTemplate": template("leader"),
				"workerTemplate": template("worker"),
			},
		},
	}}
}

func setNested(obj *unstructured.Unstructured, value any, fields ...string) {
	if err := unstructured.SetNestedField(obj.Object, value, fields...); err != nil {
		panic(err)
	}
}

// create creates a LeaderWorkerSet through LWS's webhooks.
func (e *lwsEnv) create(obj *unstructured.Unstructured) *unstructured.Unstructured {
	e.t.Helper()
	created, err := e.lwses().Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating LeaderWorkerSet %s: %v", obj.GetName(), err)
	}
	return created
}

// getLWS reads LeaderWorkerSet name.
func (e *lwsEnv) getLWS(name string) *unstructured.Unstructured {
	e.t.Helper()
	l, err := e.lwses().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// scale sets a LeaderWorkerSet's replicas.
func (e *lwsEnv) scale(name string, replicas int) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.lwses().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitLWSReady waits until LeaderWorkerSet name counts ready replicas.
func (e *lwsEnv) waitLWSReady(name string, replicas int64) {
	e.t.Helper()
	testenv.Eventually(e.t, 90*time.Second, fmt.Sprintf("LeaderWorkerSet %s counts %d ready replicas", name, replicas), func() (bool, string) {
		l := e.getLWS(name)
		ready, _, _ := unstructured.NestedInt64(l.Object, "status", "readyReplicas")
		return ready == replicas, fmt.Sprintf("status %v", l.Object["status"])
	})
}

// lwsPods returns the live (not terminating) pods of LeaderWorkerSet name, by name.
func (e *lwsEnv) lwsPods(name string) []*v1.Pod {
	e.t.Helper()
	return e.livePods(testenv.LWSNameLabel + "=" + name)
}

// replica returns the live pods of replica g of LeaderWorkerSet name.
func (e *lwsEnv) replica(name string, g int) []*v1.Pod {
	e.t.Helper()
	return e.livePods(fmt.Sprintf("%s=%s,%s=%d", testenv.LWSNameLabel, name, testenv.LWSGroupIndexLabel, g))
}

func (e *lwsEnv) livePods(selector string) []*v1.Pod {
	e.t.Helper()
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*v1.Pod
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// leaderOrNil returns the live leader pod of replica g of LeaderWorkerSet name, nil if none.
func (e *lwsEnv) leaderOrNil(name string, g int) *v1.Pod {
	e.t.Helper()
	for _, p := range e.replica(name, g) {
		if p.Labels[testenv.LWSWorkerIndexLabel] == "0" {
			return p
		}
	}
	return nil
}

// leader returns the live leader pod of replica g of LeaderWorkerSet name.
func (e *lwsEnv) leader(name string, g int) *v1.Pod {
	e.t.Helper()
	l := e.leaderOrNil(name, g)
	if l == nil {
		e.t.Fatalf("no leader of replica %d of %s", g, name)
	}
	return l
}

// waitReplicasBound waits until LeaderWorkerSet name has replicas groups of size live pods,
// all bound.
func (e *lwsEnv) waitReplicasBound(name string, replicas, size int) {
	e.t.Helper()
	testenv.Eventually(e.t, 90*time.Second, fmt.Sprintf("%d replicas of %s, %d pods each, bound", replicas, name, size), func() (bool, string) {
		pods := e.lwsPods(name)
		byGroup := map[string]int{}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				byGroup[p.Labels[testenv.LWSGroupIndexLabel]]++
			}
		}
		ok := len(pods) == replicas*size && len(byGroup) == replicas
		for _, n := range byGroup {
			ok = ok && n == size
		}
		return ok, describePods(pods)
	})
}

// lwsGroups returns the PodGroups controlled by a LeaderWorkerSet, by name.
func (e *lwsEnv) lwsGroups(lws *unstructured.Unstructured) map[string]*v1alpha1.PodGroup {
	e.t.Helper()
	list, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]*v1alpha1.PodGroup{}
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil && ref.UID == lws.GetUID() {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

// waitGroups waits until the PodGroups of a LeaderWorkerSet are exactly those of the given
// leader pods (live, by name): each named after its replica and leader's UID, a gang of size,
// whose size pods (the leader and the workers of its worker StatefulSet) are all bound, and
// Scheduled. It returns them by name.
func (e *lwsEnv) waitGroups(lws *unstructured.Unstructured, size int, leaders ...string) map[string]*v1alpha1.PodGroup {
	e.t.Helper()
	var groups map[string]*v1alpha1.PodGroup
	testenv.Eventually(e.t, 60*time.Second, fmt.Sprintf("the PodGroups of %s: those of leaders %v", lws.GetName(), leaders), func() (bool, string) {
		groups = e.lwsGroups(lws)
		var want []string
		for _, name := range leaders {
			p, err := e.Client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			want = append(want, lwsadapter.GroupName(lws.GetName(), p.Labels[testenv.LWSGroupIndexLabel], p.UID))
		}
		sort.Strings(want)
		got := sortedKeys(groups)
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("PodGroups %v, want %v", got, want)
	})
	for _, name := range leaders {
		leader, err := e.Client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		g := leader.Labels[testenv.LWSGroupIndexLabel]
		group := lwsadapter.GroupName(lws.GetName(), g, leader.UID)
		pg := groups[group]
		if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != int32(size) {
			e.t.Errorf("PodGroup %s: %+v, want a gang of %d", group, pg.Spec.SchedulingPolicy, size)
		}
		members := 0
		for _, p := range e.livePods(fmt.Sprintf("%s=%s,%s=%s", testenv.LWSNameLabel, lws.GetName(), testenv.LWSGroupIndexLabel, g)) {
			if p.Spec.NodeName == "" {
				e.t.Errorf("pod %s of group %s unbound", p.Name, group)
			}
			if p.UID == leader.UID || p.Annotations[testenv.LWSLeaderAnnotation] == name {
				members++
			}
		}
		if members != size {
			e.t.Errorf("group %s has %d live pods, want %d", group, members, size)
		}
		e.WaitCondition(e.t, "PodGroup", e.ns, group, metav1.ConditionTrue, v1alpha1.ReasonScheduled, fmt.Sprintf("%d pods placed together", size))
	}
	return groups
}

// oneDomain checks that pods are bound in one domain of level (from the nodes' labels in the
// API) and returns it.
func (e *lwsEnv) oneDomain(pods []*v1.Pod, level string) string {
	e.t.Helper()
	domains := map[string]bool{}
	for _, p := range pods {
		domains[e.NodeDomain(e.t, p.Spec.NodeName, level)] = true
	}
	if len(domains) != 1 {
		e.t.Errorf("pods in %s domains %v, want one: %v", level, sortedKeys(domains), placement(pods))
	}
	return sortedKeys(domains)[0]
}

// setUnschedulable cordons or uncordons nodes.
func (e *lwsEnv) setUnschedulable(on bool, nodes ...string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
	for _, n := range nodes {
		if _, err := e.Client.CoreV1().Nodes().Patch(context.Background(), n, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// filler is a pod of another scheduler taking cpu on node (bound by its nodeName).
func filler(ns, name, node, cpu string) *v1.Pod {
	return lt.MakePod().Namespace(ns).Name(name).SchedulerName("default-scheduler").Node(node).Req(map[v1.ResourceName]string{v1.ResourceCPU: cpu}).Obj()
}

func placement(pods []*v1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

func bound(pods []*v1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func uids(pods []*v1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range pods {
		out[p.UID] = true
	}
	return out
}

func sortedNames(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// describePods is each pod's name, UID, revision and node.
func describePods(pods []*v1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s{uid:%s rev:%s node:%q}", p.Name, short(p.UID), p.Labels[testenv.LWSRevisionLabel], p.Spec.NodeName))
	}
	return strings.Join(out, " ")
}

func describeGroups(groups map[types.UID]*groupBinds) string {
	var out []string
	for inc, g := range groups {
		out = append(out, fmt.Sprintf("group %s rev %s leader %s: %d binds, %d live at first, %d bound at once", g.group, g.revision, short(inc), g.binds, g.liveAtFirst, g.maxBound))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
