package testing

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
)

// MakeNode returns a Ready node with cpu cores, 64Gi of memory and 110 pod slots.
func MakeNode(name, cpu string) *st.NodeWrapper {
	return st.MakeNode().Name(name).Label(HostKey, name).Capacity(map[v1.ResourceName]string{
		v1.ResourceCPU: cpu, v1.ResourceMemory: "64Gi", v1.ResourcePods: "110"}).
		Condition(v1.NodeReady, v1.ConditionTrue, "", "")
}

// InTopology places a node: its zone, block and rack labels ("" leaves a level out).
func InTopology(n *st.NodeWrapper, zone, block, rack string) *st.NodeWrapper {
	for _, l := range []struct{ key, value string }{{ZoneKey, zone}, {BlockKey, block}, {RackKey, rack}} {
		if l.value != "" {
			n = n.Label(l.key, l.value)
		}
	}
	return n
}

// TopologyNodes returns zones × blocks × racks × hosts nodes of cpu cores, named
// z0-b0-r0-h0, labelled with their zone (z0), block (z0-b0) and rack (z0-b0-r0).
func TopologyNodes(zones, blocks, racks, hosts int, cpu string) []*v1.Node {
	var out []*v1.Node
	for z := 0; z < zones; z++ {
		for b := 0; b < blocks; b++ {
			for r := 0; r < racks; r++ {
				for h := 0; h < hosts; h++ {
					zone := fmt.Sprintf("z%d", z)
					block := fmt.Sprintf("%s-b%d", zone, b)
					rack := fmt.Sprintf("%s-r%d", block, r)
					out = append(out, InTopology(MakeNode(fmt.Sprintf("%s-h%d", rack, h), cpu), zone, block, rack).Obj())
				}
			}
		}
	}
	return out
}
