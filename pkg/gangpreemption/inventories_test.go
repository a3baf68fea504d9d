package gangpreemption

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// TestANewShapeReadsOnlyWhatChanged: a decision of a shape not decided before, whose
// threshold an earlier decision read the racks for, reads no pod of a rack that did not
// change since (it bounds the rack from the kept inventory), only the pods of the racks that
// changed and of the racks it dry runs; a decision of another threshold reads every rack. Each
// chooses what a new evaluator chooses.
func TestANewShapeReadsOnlyWhatChanged(t *testing.T) {
	var nodes []*v1.Node
	var running []*v1.Pod
	var racks []Domain
	for r := range 6 {
		rack := Domain{Name: fmt.Sprintf("rack %d", r)}
		for h := range 2 {
			name := fmt.Sprintf("r%d-n%d", r, h)
			nodes = append(nodes, lt.MakeNode(name, "4").Obj())
			rack.Nodes = append(rack.Nodes, name)
			// Rack 0's pods are the cheapest victims: its dry run is the only one.
			running = append(running, lt.GroupPod("ns", "pod-"+name, "").Req(lt.CPU("4")).Priority(int32(min(r, 1))).Node(name).Obj())
		}
		racks = append(racks, rack)
	}
	c := newCluster(nodes, running, nil)
	e := New(noPlugins{}, c.trees, nil, nil)
	for _, step := range []struct {
		what     string
		cpu      string
		priority int32
		change   *v1.Pod
		// read are the pods the decision reads: those of the racks it bounds from their
		// nodes, and of rack 0, which it dry runs.
		read int
	}{
		{what: "the first decision", cpu: "4", priority: 100, read: 12},
		{what: "a new shape of its threshold", cpu: "3", priority: 100, read: 2},
		{what: "a new shape after a pod of rack 3 left and came back", cpu: "2", priority: 100, change: running[6], read: 4},
		{what: "the shape of the first decision again", cpu: "4", priority: 100, read: 2},
		{what: "another threshold", cpu: "4", priority: 50, read: 12},
	} {
		if step.change != nil {
			node := c.byPod[step.change.UID]
			c.remove(t, step.change)
			c.add(step.change, node)
		}
		tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 1, Pending: lt.Members("ns", "hi", 1, lt.CPU(step.cpu))}
		dry := &firstFit{tree: tree, domains: racks}
		p := podgroup.Preemptor{Root: tree.Key, Priority: step.priority}
		c.trees.asked = 0
		got := e.Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		if c.trees.asked != step.read {
			t.Errorf("%s read %d pods, want %d", step.what, c.trees.asked, step.read)
		}
		want := New(noPlugins{}, c.trees, nil, nil).Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		if got == nil || want == nil || got.Domain.Name != "rack 0" || got.Cost != want.Cost {
			t.Errorf("%s chose %v, a new evaluator %v; want rack 0 at the same cost", step.what, got, want)
		}
	}
}
