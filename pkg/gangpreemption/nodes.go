package gangpreemption

import (
	"sync"

	fwk "k8s.io/kube-scheduler/framework"
)

// indexOf maps each node's name to its place in infos.
func indexOf(infos []fwk.NodeInfo) map[string]int {
	out := make(map[string]int, len(infos))
	for i, ni := range infos {
		if n := ni.Node(); n != nil {
			out[n.Name] = i
		}
	}
	return out
}

// nodeNames keeps the index of the snapshot's nodes by name from one decision to the next:
// the scheduler's snapshot keeps its list of nodes while no node comes or goes.
type nodeNames struct {
	mu     sync.Mutex
	byName map[string]int
}

// get returns the index for one decision on infos.
func (n *nodeNames) get(infos []fwk.NodeInfo) *nodeIndex {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &nodeIndex{byName: n.byName, infos: infos, kept: n}
}

// nodeIndex finds a node's place in one decision's infos. Every answer is checked against the
// list; the first that is wrong or missing rebuilds the index, once a decision.
type nodeIndex struct {
	byName  map[string]int
	infos   []fwk.NodeInfo
	rebuilt bool
	kept    *nodeNames
}

// of returns the named node's place in infos, false if infos has no such node.
func (x *nodeIndex) of(name string) (int, bool) {
	if i, ok := x.byName[name]; ok && i < len(x.infos) {
		if n := x.infos[i].Node(); n != nil && n.Name == name {
			return i, true
		}
	}
	if x.rebuilt {
		return 0, false
	}
	x.rebuilt = true
	x.byName = indexOf(x.infos)
	x.kept.mu.Lock()
	x.kept.byName = x.byName
	x.kept.mu.Unlock()
	i, ok := x.byName[name]
	return i, ok
}
