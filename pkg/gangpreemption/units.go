package gangpreemption

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Unit is what is evicted together: a running gang (every bound member of its disruption
// unit, podgroup.Unit) or one pod, as upstream's preemption.Victim, with the nodes it is on.
type Unit struct {
	// rooms is what its pods request on each node, read once (roomsByNode).
	rooms map[string]capacity.Resources
	preemption.Victim
	// Key is the gang's unit, or the pod's UID.
	Key  string
	Gang bool
	// Root is a gang's root group object, and RootKey its key (its preemption is told
	// there); nil for a pod.
	Root    runtime.Object
	RootKey podgroup.Key
	// Lasting: a pod of a controller that keeps its pods running (a ReplicaSet, StatefulSet,
	// DaemonSet...), which may never end by itself.
	Lasting bool
}

// On reports whether a pod of the unit is on node.
func (u *Unit) On(node string) bool {
	_, ok := u.roomsByNode()[node]
	return ok
}

// roomsByNode returns what the unit's pods request on each node they are on, read once.
func (u *Unit) roomsByNode() map[string]capacity.Resources {
	if u.rooms == nil {
		u.rooms = map[string]capacity.Resources{}
		for _, pi := range u.Pods() {
			n := pi.GetPod().Spec.NodeName
			r := u.rooms[n]
			r.Add(capacity.OfPodInfo(pi))
			u.rooms[n] = r
		}
	}
	return u.rooms
}

// lasting reports whether a pod belongs to a controller that keeps its pods running.
func lasting(pod *v1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			switch ref.Kind {
			case "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController", "LeaderWorkerSet":
				return true
			}
		}
	}
	return false
}

// onNode is a unit as one node holds it: the unit, and what its pods there request (the room
// its going gives on the node).
type onNode struct {
	unit *Unit
	room capacity.Resources
}

// nodeUnits is what one node of the snapshot holds for a decision: the units a tree of the
// decision's priority may take out (gangs whole, other pods one by one), and the pods already
// terminating or being evicted, or the tree's own pending members the snapshot holds
// (reserved in an attempt that failed), which count as gone at no cost. own: a pod of the
// tree itself is on the node, so what the node holds is the tree's alone (bounds.go keeps no
// bound that read it).
type nodeUnits struct {
	units   []onNode
	leaving []*v1.Pod
	own     bool
}

// classifier reads the snapshot's nodes for one decision, each node the first time the
// decision needs it: a decision whose tree requires a rack reads the racks it bounds or dry
// runs, not every node of the cluster (bounds.go keeps the other racks' bounds).
type classifier struct {
	e        *Evaluator
	infos    []fwk.NodeInfo
	index    *nodeIndex
	p        podgroup.Preemptor
	mode     Mode
	evicting sets.Set[types.UID]
	pending  map[types.UID]*v1.Pod
	// buf holds what each node holds, by place in infos (scratch.byNode).
	buf *scratch
	// gangs holds each running disruption unit (a gang, or a subtree whose top has
	// disruption mode all), nil for one that is no victim: a unit is looked at once, however
	// many members it has and however many nodes they are on. Members of trees whose groups
	// may be disrupted one by one are victims on their own.
	gangs map[podgroup.Key]*Unit
}

func (e *Evaluator) newClassifier(infos []fwk.NodeInfo, index *nodeIndex, p podgroup.Preemptor, mode Mode, evicting sets.Set[types.UID], pending map[types.UID]*v1.Pod, buf *scratch) *classifier {
	return &classifier{e: e, infos: infos, index: index, p: p, mode: mode, evicting: evicting, pending: pending,
		buf: buf, gangs: map[podgroup.Key]*Unit{}}
}

// on returns what node i holds, read on first use.
func (c *classifier) on(i int) *nodeUnits {
	if nu := c.buf.byNode[i]; nu != nil {
		return nu
	}
	nu := &nodeUnits{}
	c.buf.byNode[i] = nu
	c.buf.read = append(c.buf.read, i)
	if c.infos[i].Node() == nil {
		return nu
	}
	for _, pi := range c.infos[i].GetPods() {
		pod := pi.GetPod()
		if pod.DeletionTimestamp != nil && !Leaving(pod, c.e.bounds.now()) {
			continue // stuck terminating: it holds its room, and no eviction frees it
		}
		if pod.DeletionTimestamp != nil || (len(c.evicting) > 0 && c.evicting.Has(pod.UID)) {
			nu.leaving = append(nu.leaving, pod)
			continue
		}
		if c.pending[pod.UID] != nil {
			nu.own = true
			if !c.e.bound(pod) {
				// The tree's own member, reserved in the attempt that failed: its
				// reservation is being released.
				nu.leaving = append(nu.leaving, pod)
			}
			continue
		}
		if !c.mode.takes(corev1helpers.PodPriority(pod), c.p.Priority) {
			continue // no victim (a gang is taken only if its pods may be): the model need not be asked
		}
		sum, member := c.e.trees.Summary(pod)
		if member && sum.Root == c.p.Root {
			nu.own = true
			if !c.e.bound(pod) {
				nu.leaving = append(nu.leaving, pod)
			}
			continue
		}
		var u *Unit
		if member && sum.Unit != (podgroup.Key{}) {
			gu, done := c.gangs[sum.Unit]
			if !done {
				if gang, ok := c.e.trees.UnitOf(pod); ok && takesAll(c.mode, gang, c.p.Priority) {
					gu = &Unit{Victim: c.gangVictim(gang), Key: sum.Unit.String(), Gang: true, Root: gang.Object, RootKey: gang.Root}
				}
				c.gangs[sum.Unit] = gu
			}
			if gu == nil {
				continue
			}
			u = gu
		} else {
			v, err := preemption.NewVictim([]fwk.PodInfo{pi}, corev1helpers.PodPriority(pod), fwk.PodKeyType)
			if err != nil {
				continue
			}
			u = &Unit{Victim: v, Key: string(pod.UID), Lasting: lasting(pod)}
		}
		nu.hold(u, pi)
	}
	return nu
}

// hold records that the node holds pi, a pod of u: a unit is listed once per node, with the
// requests of all its pods there.
func (nu *nodeUnits) hold(u *Unit, pi fwk.PodInfo) {
	for k := range nu.units {
		if nu.units[k].unit == u {
			nu.units[k].room.Add(capacity.OfPodInfo(pi))
			return
		}
	}
	nu.units = append(nu.units, onNode{unit: u, room: capacity.OfPodInfo(pi)})
}

// takesAll reports whether a gang may be taken for a tree of priority of: its own priority
// and every one of its pods' may.
func takesAll(mode Mode, gang podgroup.Unit, of int32) bool {
	if !mode.takes(gang.Priority, of) {
		return false
	}
	for _, p := range gang.Pods {
		if !mode.takes(corev1helpers.PodPriority(p), of) {
			return false
		}
	}
	return true
}

// gangVictim makes a running gang one victim, of its members' PodInfos in the snapshot,
// which keep the requests the scheduler computed once (capacity.OfPodInfo), and new ones for
// members the snapshot does not hold.
func (c *classifier) gangVictim(gang podgroup.Unit) preemption.Victim {
	pis := make([]fwk.PodInfo, 0, len(gang.Pods))
	for _, p := range gang.Pods {
		pi := c.podInfo(p)
		if pi == nil {
			var err error
			if pi, err = framework.NewPodInfo(p); err != nil {
				continue
			}
		}
		pis = append(pis, pi)
	}
	kind := fwk.PodGroupKeyType
	if gang.Composite {
		kind = fwk.CompositePodGroupKeyType
	}
	v, _ := preemption.NewVictim(pis, gang.Priority, kind)
	return v
}

// podInfo returns the snapshot's PodInfo of a pod on its node, nil if the snapshot does not
// hold it there.
func (c *classifier) podInfo(p *v1.Pod) fwk.PodInfo {
	i, ok := c.index.of(p.Spec.NodeName)
	if !ok {
		return nil
	}
	for _, pi := range c.infos[i].GetPods() {
		if pi.GetPod().UID == p.UID {
			return pi
		}
	}
	return nil
}
