package kueue

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Kueue's topology-aware scheduling (TAS, on by default in v0.15) decides where, in which
// rack and on which hosts, and lockstep keeps the gang whole inside that: a Kueue Topology
// of racks and hosts matching lockstep's node labels, a TAS ResourceFlavor over the two
// racks of two 4-cpu nodes, and an Indexed Job of 4 pods x 2 cpu that requires one rack
// (Kueue's podset-required-topology annotation on its pod template). Kueue admits it with a
// topology assignment and starts it; the Job's pods are created behind Kueue's topology
// scheduling gate, which Kueue's ungater lifts while pinning each pod to its assigned
// domain with node selectors. All 4 pods bind, in one rack, each on a node its selectors
// match (lockstep never moves a pod out of Kueue's assignment), none before all 4 are
// ungated (the gang is all-or-nothing inside the assignment), and the Job's lockstep
// PodGroup says they were placed together.
func TestKueueTASAssignsLockstepKeepsTheGangWhole(t *testing.T) {
	e := start(t, "tas", lt.TopologyNodes(1, 1, 2, 2, "4")...)

	e.CreateTopology(t, "racks", lt.RackKey, lt.HostKey)
	e.CreateTASResourceFlavor(t, "tas", "racks", map[string]string{lt.ZoneKey: "z0"})
	e.CreateClusterQueue(t, "research", "tas", "16")
	e.CreateLocalQueue(t, e.ns, "team-a", "research")

	pods := e.watchPods()
	e.limitPods(3)
	job := e.submitJob(lt.MakeJob().Namespace(e.ns).Name("train").Indexed(4).Req(lt.CPU("2")).
		Label(testenv.KueueQueueLabel, "team-a").
		TemplateAnnotation(filing.KueuePodSetRequiredTopologyAnnotation, lt.RackKey).Obj())

	testenv.Eventually(t, 120*time.Second, job.Name+" admitted", func() (bool, string) {
		state, msg := e.admission(job)
		return state == "admitted", state + " " + msg
	})
	assignment := e.topologyAssignment(job)
	t.Logf("Kueue's topology assignment: %s", assignment)

	// A pod quota lets the Job controller create only 3 of the 4 pods: Kueue ungates and
	// pins those 3, and lockstep binds none of them while the gang is short of one.
	testenv.Eventually(t, 90*time.Second, "3 pods of "+job.Name+" created and ungated by Kueue", func() (bool, string) {
		states := pods.current()
		ungated := 0
		for _, s := range states {
			if !s.gated && s.pinned {
				ungated++
			}
		}
		return len(states) == 3 && ungated == 3, fmt.Sprint(states)
	})
	e.Settled(t, "no pod of the short gang bound", func() (bool, string) {
		states := pods.current()
		for _, s := range states {
			if s.node != "" {
				return false, fmt.Sprint(states)
			}
		}
		return len(states) == 3, fmt.Sprint(states)
	})
	if _, first := pods.observed(); first != nil {
		t.Fatalf("pod %s bound while the gang was short: %v", first.pod, first.pods)
	}
	t.Logf("held short of one pod: %v", pods.current())
	group := filing.JobGroupName(job.Name, job.UID)
	if c := e.GroupCondition(t, "PodGroup", e.ns, group); c == nil {
		t.Logf("PodGroup %s while the gang is short: no %s condition yet", group, v1alpha1.PodGroupInitiallyScheduled)
	} else {
		t.Logf("PodGroup %s while the gang is short: %s %s %q", group, c.Status, c.Reason, c.Message)
		if c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonScheduled {
			t.Errorf("PodGroup %s scheduled with 3 of 4 pods: %q", group, c.Message)
		}
	}
	if err := e.Client.CoreV1().ResourceQuotas(e.ns).Delete(context.Background(), "pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	placed := e.waitStarted(job)
	t.Logf("placement: %v", placed)

	// Where each pod went, against what Kueue pinned it to.
	list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	racks := map[string]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		racks[e.NodeDomain(e.t, p.Spec.NodeName, lt.RackKey)] = true
		if len(p.Spec.SchedulingGates) > 0 {
			t.Errorf("bound pod %s still has scheduling gates %v", p.Name, p.Spec.SchedulingGates)
		}
		if !pinned(p.Spec.NodeSelector) {
			t.Errorf("pod %s has no node selector of Kueue's topology levels: %v", p.Name, p.Spec.NodeSelector)
		}
		node, err := e.Client.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range p.Spec.NodeSelector {
			if node.Labels[k] != v {
				t.Errorf("pod %s bound to %s (%s=%q), out of Kueue's assignment %s=%q", p.Name, node.Name, k, node.Labels[k], k, v)
			}
		}
		t.Logf("pod %s: nodeSelector %v, node %s", p.Name, p.Spec.NodeSelector, p.Spec.NodeName)
	}
	if len(racks) != 1 {
		t.Errorf("Job %s's pods in racks %v, want one: %v", job.Name, racks, placed)
	}

	// What the pod watch saw: every pod was created behind Kueue's topology gate, and at the
	// first bind every pod of the gang had been ungated with its node selectors.
	created, firstBind := pods.observed()
	if len(created) != 4 {
		t.Errorf("watch saw %d pods created, want 4: %v", len(created), created)
	}
	for name, gates := range created {
		if !hasGate(gates, filing.KueueTopologySchedulingGate) {
			t.Errorf("pod %s created with gates %v, want Kueue's %s", name, gates, filing.KueueTopologySchedulingGate)
		}
	}
	if firstBind == nil {
		t.Errorf("watch saw no bind")
	} else {
		t.Logf("at the first bind (%s): %v", firstBind.pod, firstBind.pods)
		if len(firstBind.pods) != 4 {
			t.Errorf("pod %s bound while only %d pods of the gang existed: %v", firstBind.pod, len(firstBind.pods), firstBind.pods)
		}
		for name, s := range firstBind.pods {
			if s.gated || !s.pinned {
				t.Errorf("pod %s bound while pod %s was gated=%v pinned=%v: %v", firstBind.pod, name, s.gated, s.pinned, firstBind.pods)
			}
		}
	}

	e.WaitCondition(t, "PodGroup", e.ns, group, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed together")
}

// limitPods caps the pods of the test's namespace at n with a ResourceQuota named "pods". No
// quota controller runs here: its status (hard n, used 0) is set by hand, and the quota
// admission plugin keeps the usage as it admits pods.
func (e *kueueEnv) limitPods(n int64) {
	e.t.Helper()
	quotas := e.Client.CoreV1().ResourceQuotas(e.ns)
	q, err := quotas.Create(context.Background(), &v1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       v1.ResourceQuotaSpec{Hard: v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(n, resource.DecimalSI)}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	q.Status = v1.ResourceQuotaStatus{
		Hard: q.Spec.Hard,
		Used: v1.ResourceList{v1.ResourcePods: *resource.NewQuantity(0, resource.DecimalSI)},
	}
	if _, err := quotas.UpdateStatus(context.Background(), q, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// topologyAssignment waits until the Job's admitted Workload has a topology assignment for
// its pod set and returns it as JSON.
func (e *kueueEnv) topologyAssignment(job *batchv1.Job) string {
	e.t.Helper()
	var out string
	testenv.Eventually(e.t, 30*time.Second, job.Name+"'s Workload with a topology assignment", func() (bool, string) {
		wl := e.KueueWorkload(e.t, job)
		if wl == nil {
			return false, "no Workload"
		}
		psas, _, _ := unstructured.NestedSlice(wl.Object, "status", "admission", "podSetAssignments")
		if len(psas) != 1 {
			return false, fmt.Sprintf("%d pod set assignments", len(psas))
		}
		ta, ok, _ := unstructured.NestedMap(psas[0].(map[string]any), "topologyAssignment")
		if !ok {
			return false, fmt.Sprintf("pod set assignment without a topology assignment: %v", psas[0])
		}
		b, _ := json.Marshal(ta)
		out = string(b)
		return true, out
	})
	return out
}

// pinned reports whether a node selector holds a level of Kueue's topology (rack or host):
// what Kueue's ungater adds when it lifts the topology gate.
func pinned(sel map[string]string) bool {
	return sel[lt.RackKey] != "" || sel[lt.HostKey] != ""
}

func hasGate(gates []string, name string) bool {
	for _, g := range gates {
		if g == name {
			return true
		}
	}
	return false
}

// podState is what the watch last saw of a pod.
type podState struct {
	gated  bool // it has Kueue's topology gate
	pinned bool // it has node selectors of Kueue's topology levels
	node   string
}

func (s podState) String() string {
	return fmt.Sprintf("{gated:%v pinned:%v node:%q}", s.gated, s.pinned, s.node)
}

// bindSnapshot is the state of every pod the watch had seen when it first saw a pod bound.
type bindSnapshot struct {
	pod  string
	pods map[string]podState
}

// podWatch follows the pods of a namespace in the apiserver's order of writes.
type podWatch struct {
	mu        sync.Mutex
	created   map[string][]string // the scheduling gates each pod was first seen with
	state     map[string]podState
	firstBind *bindSnapshot
}

// current returns what the watch last saw of each pod.
func (w *podWatch) current() map[string]podState {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]podState{}
	for k, v := range w.state {
		out[k] = v
	}
	return out
}

// observed returns the gates each pod was created with and the snapshot at the first bind
// (nil if none yet).
func (w *podWatch) observed() (map[string][]string, *bindSnapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	created := map[string][]string{}
	for k, v := range w.created {
		created[k] = v
	}
	return created, w.firstBind
}

func (w *podWatch) see(p *v1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted {
		delete(w.state, p.Name)
		return
	}
	var gates []string
	for _, g := range p.Spec.SchedulingGates {
		gates = append(gates, g.Name)
	}
	sort.Strings(gates)
	if _, ok := w.created[p.Name]; !ok {
		w.created[p.Name] = gates
	}
	w.state[p.Name] = podState{gated: hasGate(gates, filing.KueueTopologySchedulingGate), pinned: pinned(p.Spec.NodeSelector), node: p.Spec.NodeName}
	if p.Spec.NodeName != "" && w.firstBind == nil {
		snap := &bindSnapshot{pod: p.Name, pods: map[string]podState{}}
		for k, v := range w.state {
			snap.pods[k] = v
		}
		w.firstBind = snap
	}
}

// watchPods starts following the pods of the test's namespace (none yet) from now until
// the test ends, in the apiserver's order of writes (testenv.FollowPods).
func (e *kueueEnv) watchPods() *podWatch {
	e.t.Helper()
	w := &podWatch{created: map[string][]string{}, state: map[string]podState{}}
	e.FollowPods(e.t, e.ns, w.see)
	return w
}
