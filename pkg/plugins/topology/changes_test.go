package topology

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
)

func freeCPUOf(t *topology, i int) int64                     { return t.free[i].MilliCPU / 1000 }
func infoAt(infos []fwk.NodeInfo, i int) *framework.NodeInfo { return infos[i].(*framework.NodeInfo) }

// runOn puts a pod of cpu cores on node i of the snapshot, and returns it.
func runOn(infos []fwk.NodeInfo, nodes []testNode, i int, name string, cpu int64) *v1.Pod {
	p := podOf(name, cpu, 0)
	p.Spec.NodeName = nodes[i].name
	infoAt(infos, i).AddPod(p)
	return p
}

// toldTopology returns a topology cache told of changes by the NodeChanges it returns, on a
// clock the test steps.
func toldTopology() (*topologyCache, *NodeChanges, *testingclock.FakeClock) {
	clock := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	changes, _ := NewNodeChanges(nil, nil)
	return &topologyCache{changed: changes.subscribe(), now: clock.Now}, changes, clock
}

// A topology told which nodes changed reads those nodes only: a node changed without a word
// keeps what the topology read until the next check of every node (fullCheckInterval); a
// node told before its change reached the snapshot is read once it has.
func TestTopologyReadsTheNodesItWasTold(t *testing.T) {
	nodes := grid(1, 1, 2, 2, 8)
	infos := nodeInfos(nodes)
	tc, changes, clock := toldTopology()
	topo := tc.get(levels, infos)

	runOn(infos, nodes, 0, "quiet", 3)
	runOn(infos, nodes, 1, "told", 2)
	changes.Note(nodes[1].name)
	changes.Note(nodes[2].name) // told before its change reaches the snapshot
	clock.Step(fullCheckInterval / 2)
	if got := tc.get(levels, infos); got != topo {
		t.Fatal("a pod added rebuilt the topology")
	}
	if got := freeCPUOf(topo, 1); got != 6 {
		t.Errorf("node 1, told: %d cores free, want 6", got)
	}
	if got := freeCPUOf(topo, 0); got != 8 {
		t.Errorf("node 0, changed without a word within %v of the last full check: %d cores free, want 8 (read only at the next full check)", fullCheckInterval, got)
	}

	runOn(infos, nodes, 2, "late", 5)
	tc.get(levels, infos)
	if got := freeCPUOf(topo, 2); got != 3 {
		t.Errorf("node 2, told before its change reached the snapshot: %d cores free, want 3", got)
	}

	clock.Step(fullCheckInterval)
	tc.get(levels, infos)
	if got := freeCPUOf(topo, 0); got != 5 {
		t.Errorf("node 0 after a full check: %d cores free, want 5", got)
	}
}

// Whatever the order of changes, notes, plans and preemption dry runs, a topology told about
// its nodes' changes (possibly before they reach the snapshot) sees every told change at its
// next plan, and every change at the first plan a full check interval after it; a dry run sees
// the nodes it simulates as simulated and the others as a plan would, and the plan after it
// sees the snapshot's nodes again. The oracle keeps its own count of the cores each node's
// pods take.
func TestTopologyFollowsChangesItIsTold(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for round := 0; round < 20; round++ {
		nodes := grid(1, 2, 2, 3, 16)
		infos := nodeInfos(nodes)
		tc, changes, clock := toldTopology()
		tc.get(levels, infos)
		lastFull := clock.Now()
		used := make([]int64, len(nodes))     // cores taken, by the oracle
		unseen := make([]bool, len(nodes))    // changed without a word since the last full check
		pods := make([][]*v1.Pod, len(nodes)) // pods on each node
		pending := map[int]bool{}             // told, change still to come
		next := 0
		for step := 0; step < 200; step++ {
			i := rng.IntN(len(nodes))
			switch op := rng.IntN(7); {
			case op <= 1 && used[i] < 16: // a pod assumed or bound, told
				cpu := 1 + rng.Int64N(16-used[i])
				p := podOf(fmt.Sprintf("p%d", next), cpu, 0)
				next++
				p.Spec.NodeName = nodes[i].name
				infoAt(infos, i).AddPod(p)
				pods[i], used[i] = append(pods[i], p), used[i]+cpu
				changes.Note(nodes[i].name)
				delete(pending, i) // the plan reads the change this note told
			case op == 2 && len(pods[i]) > 0: // a pod gone, told
				p := pods[i][0]
				if err := infoAt(infos, i).RemovePod(klog.Background(), p); err != nil {
					t.Fatal(err)
				}
				pods[i], used[i] = pods[i][1:], used[i]-p.Spec.Containers[0].Resources.Requests.Cpu().Value()
				changes.Note(nodes[i].name)
				delete(pending, i)
			case op == 3: // told now, the change comes later (the informer ran first)
				changes.Note(nodes[i].name)
				pending[i] = true
			case op == 4 && len(pods[i]) > 0: // a pod gone without a word
				p := pods[i][len(pods[i])-1]
				if err := infoAt(infos, i).RemovePod(klog.Background(), p); err != nil {
					t.Fatal(err)
				}
				pods[i], used[i] = pods[i][:len(pods[i])-1], used[i]-p.Spec.Containers[0].Resources.Requests.Cpu().Value()
				if pending[i] {
					delete(pending, i) // the note told before covers it
				} else {
					unseen[i] = true
				}
			case op == 5: // a preemption dry run: copies of a few nodes, a pod taken out of each
				sim := slices.Clone(infos)
				simUsed := slices.Clone(used)
				var simulated []string
				for range 1 + rng.IntN(3) {
					j := rng.IntN(len(nodes))
					if len(pods[j]) == 0 || slices.Contains(simulated, nodes[j].name) {
						continue
					}
					sim[j] = infos[j].Snapshot()
					if err := sim[j].RemovePod(klog.Background(), pods[j][0]); err != nil {
						t.Fatal(err)
					}
					simUsed[j] -= pods[j][0].Spec.Containers[0].Resources.Requests.Cpu().Value()
					simulated = append(simulated, nodes[j].name)
				}
				topo := tc.getSimulated(levels, sim, simulated)
				if clock.Now().Sub(lastFull) >= fullCheckInterval {
					lastFull = clock.Now()
					clear(unseen)
					clear(pending)
				}
				for j := range nodes {
					if unseen[j] && !slices.Contains(simulated, nodes[j].name) {
						continue
					}
					if got, want := freeCPUOf(topo, j), 16-simUsed[j]; got != want {
						t.Fatalf("seed %d round %d step %d: dry run simulating %v: node %d has %d cores free in the topology, want %d", seed, round, step, simulated, j, got, want)
					}
				}
			default:
				clock.Step(time.Duration(rng.IntN(400)) * time.Millisecond)
			}
			topo := tc.get(levels, infos)
			full := clock.Now().Sub(lastFull) >= fullCheckInterval
			if full {
				lastFull = clock.Now()
				clear(unseen)
				clear(pending) // a full check forgets what it was told
			}
			for j := range nodes {
				if unseen[j] {
					continue
				}
				if got, want := freeCPUOf(topo, j), 16-used[j]; got != want {
					t.Fatalf("seed %d round %d step %d: node %d has %d cores free in the topology, want %d", seed, round, step, j, got, want)
				}
			}
		}
	}
}

// A preemption dry run reads the nodes it simulates from its copies, and the plan after it
// reads them back from the snapshot; a node told changed before its change reached the
// snapshot stays told through both, though both read it as changed.
func TestDryRunReadsItsCopiesAndKeepsWhatItWasTold(t *testing.T) {
	nodes := grid(1, 1, 2, 2, 8)
	infos := nodeInfos(nodes)
	tc, changes, _ := toldTopology()
	topo := tc.get(levels, infos)
	running := runOn(infos, nodes, 0, "running", 3)
	changes.Note(nodes[0].name)
	if tc.get(levels, infos); freeCPUOf(topo, 0) != 5 {
		t.Fatalf("node 0: %d cores free, want 5", freeCPUOf(topo, 0))
	}

	other := runOn(infos, nodes, 1, "other", 6)
	changes.Note(nodes[1].name)
	tc.get(levels, infos)

	changes.Note(nodes[0].name) // its change comes after the dry run and the plan after it
	sim := slices.Clone(infos)
	for i, p := range []*v1.Pod{running, other} {
		sim[i] = infos[i].Snapshot()
		if err := sim[i].RemovePod(klog.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if got := tc.getSimulated(levels, sim, []string{nodes[0].name, nodes[1].name}); got != topo || freeCPUOf(topo, 0) != 8 || freeCPUOf(topo, 1) != 8 {
		t.Fatalf("dry run: nodes 0 and 1 have %d and %d cores free, want 8 and 8 (their victims taken out)", freeCPUOf(topo, 0), freeCPUOf(topo, 1))
	}
	if tc.get(levels, infos); freeCPUOf(topo, 0) != 5 || freeCPUOf(topo, 1) != 2 {
		t.Errorf("plan after the dry run: nodes 0 and 1 have %d and %d cores free, want 5 and 2 (read back from the snapshot)", freeCPUOf(topo, 0), freeCPUOf(topo, 1))
	}
	runOn(infos, nodes, 0, "late", 4)
	if tc.get(levels, infos); freeCPUOf(topo, 0) != 1 {
		t.Errorf("node 0, told before the dry run, changed after: %d cores free, want 1", freeCPUOf(topo, 0))
	}
}

// A node added or deleted rebuilds the topology at the next plan, told or not.
func TestTopologyRebuiltWhenNodesComeAndGo(t *testing.T) {
	nodes := grid(1, 1, 1, 3, 8)
	infos := nodeInfos(nodes)
	tc, changes, _ := toldTopology()
	tc.get(levels, infos)
	more := append(slices.Clone(nodes), testNode{zone: "z0", block: "z0-b0", rack: "z0-b0-r0", name: "added", cpu: 8})
	if got := tc.get(levels, nodeInfos(more)); got.byName["added"] == nil {
		t.Error("a node added (not told) is not in the next plan's topology")
	}
	// Same number of nodes, one replaced by another: told by the node informer (NoteAll).
	swapped := append(slices.Clone(nodes[:2]), testNode{zone: "z0", block: "z0-b0", rack: "z0-b0-r0", name: "other", cpu: 8})
	tc.get(levels, nodeInfos(nodes))
	changes.NoteAll()
	if got := tc.get(levels, nodeInfos(swapped)); got.byName["other"] == nil || got.byName[nodes[2].name] != nil {
		t.Error("a node replaced by another is not in the next plan's topology")
	}
}

// The scheduler's informers tell NodeChanges the nodes of pods bound, changed and deleted, and
// of nodes changed; a node added or deleted marks every node.
func TestNodeChangesFollowInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewSimpleClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	changes, err := NewNodeChanges(factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer())
	if err != nil {
		t.Fatal(err)
	}
	s := changes.subscribe()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	s.take()

	expect := func(what string, wantNames []string, wantAll bool) {
		t.Helper()
		var names []string
		var all bool
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			n, a := s.take()
			names, all = append(names, n...), all || a
			slices.Sort(names)
			names = slices.Compact(names)
			return slices.Equal(names, wantNames) && all == wantAll, nil
		})
		if err != nil {
			t.Fatalf("%s: told %v (every node: %v), want %v (every node: %v)", what, names, all, wantNames, wantAll)
		}
	}
	pods := client.CoreV1().Pods("ns")
	nodes := client.CoreV1().Nodes()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{NodeName: "a"}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("pod bound to a", []string{"a"}, false)
	pod.Labels = map[string]string{"changed": "yes"}
	if _, err := pods.Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("pod on a changed", []string{"a"}, false)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("pod on a deleted", []string{"a"}, false)
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	if _, err := nodes.Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("node b added", nil, true)
	node.Spec.Unschedulable = true
	if _, err := nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("node b cordoned", []string{"b"}, false)
	if err := nodes.Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("node b deleted", nil, true)
}

// A domain's version (what gang preemption keeps a domain's bound by) changes when one of its
// nodes changes and not when another domain's does, and a rebuilt topology gives every domain
// a version above any the topology it replaced gave.
func TestDomainVersionsNeverComeBack(t *testing.T) {
	nodes := grid(1, 1, 2, 2, 8) // racks z0-b0-r0 and z0-b0-r1
	infos := nodeInfos(nodes)
	tc, changes, _ := toldTopology()
	versionOf := func(topo *topology, rack string) uint64 {
		topo.mu.Lock()
		defer topo.mu.Unlock()
		return topo.versionOf(topo.domains["z0/z0-b0/"+rack])
	}
	topo := tc.get(levels, infos)
	if topo.domains["z0/z0-b0/z0-b0-r0"] == nil {
		t.Fatal("no rack z0-b0-r0")
	}
	r0, r1 := versionOf(topo, "z0-b0-r0"), versionOf(topo, "z0-b0-r1")
	if r0 == 0 || r1 == 0 {
		t.Fatalf("versions %d and %d, want neither 0 (unknown)", r0, r1)
	}

	p := podOf("p", 2, 0)
	p.Spec.NodeName = nodes[3].name // rack r1
	infoAt(infos, 3).AddPod(p)
	changes.Note(nodes[3].name)
	tc.get(levels, infos)
	if got := versionOf(topo, "z0-b0-r0"); got != r0 {
		t.Errorf("rack r0's version %d after a change in rack r1, want %d", got, r0)
	}
	if got := versionOf(topo, "z0-b0-r1"); got <= r1 {
		t.Errorf("rack r1's version %d after a change of its node, want above %d", got, r1)
	}

	highest := topo.lastVersion()
	rebuilt := tc.get(levels, nodeInfos(append(slices.Clone(nodes), testNode{zone: "z0", block: "z0-b0", rack: "z0-b0-r1", name: "added", cpu: 8})))
	if rebuilt == topo {
		t.Fatal("a node added did not rebuild the topology")
	}
	for _, rack := range []string{"z0-b0-r0", "z0-b0-r1"} {
		if got := versionOf(rebuilt, rack); got <= highest {
			t.Errorf("rebuilt: rack %s's version %d, want above %d (the last the replaced topology gave)", rack, got, highest)
		}
	}
}
