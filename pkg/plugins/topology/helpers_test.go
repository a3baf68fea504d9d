package topology

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

var (
	levels   = configv1.DefaultTopologyLevels
	zoneKey  = levels[0]
	blockKey = levels[1]
	rackKey  = levels[2]
	hostKey  = levels[3]
)

// testNode is a node of a synthetic cluster: its place and its cpu (free = cpu - used).
type testNode struct {
	zone, block, rack, name string
	cpu, used               int64 // cores
	gpus, gpusUsed          int64
}

// grid returns zones × blocks × racks × hosts nodes of cpu cores each, named z0-b0-r0-h0.
func grid(zones, blocks, racks, hosts int, cpu int64) []testNode {
	var out []testNode
	for z := 0; z < zones; z++ {
		for b := 0; b < blocks; b++ {
			for r := 0; r < racks; r++ {
				for h := 0; h < hosts; h++ {
					out = append(out, testNode{
						zone: fmt.Sprintf("z%d", z), block: fmt.Sprintf("z%d-b%d", z, b), rack: fmt.Sprintf("z%d-b%d-r%d", z, b, r),
						name: fmt.Sprintf("z%d-b%d-r%d-h%d", z, b, r, h), cpu: cpu,
					})
				}
			}
		}
	}
	return out
}

// nodeInfos turns test nodes into the scheduler's NodeInfos; used cpu is taken by a pod.
func nodeInfos(nodes []testNode) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		alloc := v1.ResourceList{
			v1.ResourceCPU:    *resource.NewQuantity(n.cpu, resource.DecimalSI),
			v1.ResourceMemory: resource.MustParse("512Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
		}
		if n.gpus > 0 {
			alloc["nvidia.com/gpu"] = *resource.NewQuantity(n.gpus, resource.DecimalSI)
		}
		labels := map[string]string{hostKey: n.name}
		if n.zone != "" {
			labels[zoneKey] = n.zone
		}
		if n.block != "" {
			labels[blockKey] = n.block
		}
		if n.rack != "" {
			labels[rackKey] = n.rack
		}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: labels}, Status: v1.NodeStatus{Allocatable: alloc, Capacity: alloc}}
		var pods []*v1.Pod
		if n.used > 0 || n.gpusUsed > 0 {
			p := podOf("used-"+n.name, n.used, n.gpusUsed)
			p.Spec.NodeName = n.name
			pods = append(pods, p)
		}
		ni := framework.NewNodeInfo(pods...)
		ni.SetNode(node)
		out = append(out, ni)
	}
	return out
}

func podOf(name string, cpu, gpus int64) *v1.Pod {
	req := v1.ResourceList{v1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI)}
	if gpus > 0 {
		req["nvidia.com/gpu"] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}},
	}
}

// gang returns a PodGroup view with n pending pods of cpu cores each and the given
// constraints ("rack", "~rack" for preferred, "rack/4" for slices of 4 pods per rack).
func gang(name string, n int, cpu int64, constraints ...string) *podgroup.GroupView {
	g := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", name), Gang: true, Min: n, Topology: topo(constraints...)}
	for i := 0; i < n; i++ {
		g.Pending = append(g.Pending, podOf(fmt.Sprintf("%s-%d", name, i), cpu, 0))
	}
	return g
}

// composite returns a CompositePodGroup view over children.
func composite(name string, minGroupCount int, children []*podgroup.GroupView, constraints ...string) *podgroup.GroupView {
	g := &podgroup.GroupView{Key: podgroup.CompositePodGroupKey("ns", name), Gang: true, Min: minGroupCount, Topology: topo(constraints...), Children: children}
	for _, c := range children {
		c.Parent = g
	}
	return g
}

func topo(constraints ...string) []v1alpha1.TopologyConstraint {
	keys := map[string]string{"zone": zoneKey, "block": blockKey, "rack": rackKey, "host": hostKey}
	var out []v1alpha1.TopologyConstraint
	for _, c := range constraints {
		mode := v1alpha1.TopologyRequired
		if c[0] == '~' {
			mode, c = v1alpha1.TopologyPreferred, c[1:]
		}
		var size *int32
		if level, n, ok := strings.Cut(c, "/"); ok {
			v, _ := strconv.Atoi(n)
			c, size = level, ptr.To(int32(v))
		}
		out = append(out, v1alpha1.TopologyConstraint{Key: keys[c], Mode: mode, SliceSize: size})
	}
	return out
}

// planOn plans a tree on nodes.
// planExpecting plans root on nodes and checks the outcome's kind: with fail set, that the
// plan failed with an explanation containing it (placed false); otherwise that it placed
// the tree (placed true), for the caller to check how.
func planExpecting(t *testing.T, nodes []testNode, root *podgroup.GroupView, fail string) (out outcome, c *cluster, placed bool) {
	t.Helper()
	out, c = planOn(t, nodes, root, nil)
	if fail != "" {
		if out.ok {
			t.Fatalf("placed %v, want failure", placementOf(out, root))
		}
		if msg := c.explain(root, out.failures); !strings.Contains(msg, fail) {
			t.Fatalf("explanation %q, want it to contain %q", msg, fail)
		}
		return out, c, false
	}
	if !out.ok {
		t.Fatalf("not placed: %s", c.explain(root, out.failures))
	}
	return out, c, true
}

func planOn(t *testing.T, nodes []testNode, root *podgroup.GroupView, promised map[string]capacity.Resources) (outcome, *cluster) {
	t.Helper()
	c := clusterOf(nodeInfos(nodes), promised)
	return newPlanner(c, newSpecFitter(newEligibility(c.nodes)), time.Minute).plan(root), c
}

// placementOf returns, per pod name, the node it was assigned.
func placementOf(out outcome, root *podgroup.GroupView) map[string]string {
	res := map[string]string{}
	root.Walk(func(g *podgroup.GroupView) {
		for _, p := range g.Pending {
			if n, ok := out.assign[p.UID]; ok {
				res[p.Name] = n.name
			}
		}
	})
	return res
}

// domainsOf returns the set of values of a level the pods of g landed in.
func domainsOf(out outcome, c *cluster, g *podgroup.GroupView, level int) map[string]bool {
	res := map[string]bool{}
	g.Walk(func(v *podgroup.GroupView) {
		for _, p := range v.Pending {
			if n, ok := out.assign[p.UID]; ok {
				k, _ := n.domainOf(level)
				res[k] = true
			}
		}
	})
	return res
}

// clusterOf builds a cluster of infos with the default levels.
func clusterOf(infos []fwk.NodeInfo, promised map[string]capacity.Resources) *cluster {
	return newCluster(buildTopology(levels, infos, nil), promised)
}
