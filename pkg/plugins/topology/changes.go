package topology

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// NodeChanges tells the plugins' topologies which nodes may have changed since their last
// plan, so that a plan reads again only those nodes instead of checking every node's
// NodeInfo generation: at 65,000 nodes that check (a cache miss a node, for every gang) was
// the largest part of a plan, and it grew with the cluster.
//
// A node's NodeInfo changes when the node or a pod on it changes in the scheduler's cache,
// and NodeChanges follows both sources of those changes: the scheduler's informers (pods
// bound, updated or deleted, nodes updated; a node added or deleted marks every node), and
// the pods this process assumes and forgets (LockstepTopology's Reserve and Unreserve), which
// reach the next cycle's snapshot before any informer event. It keeps a superset: a node
// stays marked until its topology saw its NodeInfo change. One gap remains, the scheduler's
// own informer handler running before ours: a plan made in that moment reads the node as it
// was, Filter (which reads the snapshot) refuses a member it no longer fits, and the tree is
// planned again. A topology also checks every node at least once a second
// (fullCheckInterval), whatever it was told, and at each preemption dry run, which plans on
// copies of NodeInfos no informer tells of (topologyCache.getSimulated).
//
// One NodeChanges serves every profile of a scheduler, as its cache does.
type NodeChanges struct {
	mu   sync.Mutex
	subs []*changedNodes
}

// changedNodes are the nodes one topology cache has still to read again.
type changedNodes struct {
	mu    sync.Mutex
	names map[string]struct{}
	// all: every node may have changed (a node was added or deleted, or nothing was read yet).
	all bool
}

// NewNodeChanges returns NodeChanges fed by the scheduler's pod and node informers (nil
// informers: fed by this process only).
func NewNodeChanges(pods, nodes cache.SharedIndexInformer) (*NodeChanges, error) {
	c := &NodeChanges{}
	if pods != nil {
		if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { c.notePod(obj) },
			UpdateFunc: func(old, obj any) {
				c.notePod(old)
				c.notePod(obj)
			},
			DeleteFunc: func(obj any) { c.notePod(obj) },
		}); err != nil {
			return nil, err
		}
	}
	if nodes != nil {
		if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.NoteAll() },
			UpdateFunc: func(_, obj any) { c.noteNode(obj) },
			DeleteFunc: func(any) { c.NoteAll() },
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *NodeChanges) notePod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
		c.Note(pod.Spec.NodeName)
	}
}

func (c *NodeChanges) noteNode(obj any) {
	if n, ok := obj.(*v1.Node); ok {
		c.Note(n.Name)
	}
}

// Note marks a node as changed for every topology.
func (c *NodeChanges) Note(node string) {
	if c == nil || node == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		s.mu.Lock()
		s.names[node] = struct{}{}
		s.mu.Unlock()
	}
}

// NoteAll marks every node as changed for every topology.
func (c *NodeChanges) NoteAll() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		s.mu.Lock()
		s.all = true
		s.mu.Unlock()
	}
}

// subscribe returns the changes of one topology cache from now on; nil when c is nil (no
// changes are told: the topology checks every node at each plan).
func (c *NodeChanges) subscribe() *changedNodes {
	if c == nil {
		return nil
	}
	s := &changedNodes{names: map[string]struct{}{}, all: true}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs = append(c.subs, s)
	return s
}

// take returns the nodes marked since the last take, and whether every node may have
// changed; it forgets them. A caller that finds a node not yet changed puts it back (keep).
func (s *changedNodes) take() (names []string, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, s.all = s.all, false
	for n := range s.names {
		names = append(names, n)
	}
	clear(s.names)
	return names, all
}

// keep marks nodes again: their change has not reached the snapshot yet.
func (s *changedNodes) keep(names []string) {
	if len(names) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		s.names[n] = struct{}{}
	}
}

// reset marks every node: the topology could not use what it was told.
func (s *changedNodes) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = true
}
