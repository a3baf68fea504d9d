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

// hold records that node i holds pi, a pod of u: a unit is listed once per node, with the
// requests of all its pods there.
func hold(units [][]onNode, i int, u *Unit, pi fwk.PodInfo) {
	for k := range units[i] {
		if units[i][k].unit == u {
			units[i][k].room.Add(capacity.OfPodInfo(pi))
			return
		}
	}
	units[i] = append(units[i], onNode{unit: u, room: capacity.OfPodInfo(pi)})
}

// units returns, by node, the units that a tree of priority p.Priority may take out (gangs
// whole, other pods one by one), and the pods already terminating or being evicted, or the
// tree's own pending members the snapshot holds (reserved in an attempt that failed), which
// count as gone at no cost.
func (e *Evaluator) units(infos []fwk.NodeInfo, p podgroup.Preemptor, mode Mode, evicting sets.Set[types.UID], pending map[types.UID]*v1.Pod) (byNode [][]onNode, leaving map[string][]*v1.Pod, n int) {
	units := make([][]onNode, len(infos))
	leaving = map[string][]*v1.Pod{}
	// gangs holds each running disruption unit (a gang, or a subtree whose top has
	// disruption mode all), nil for one that is no victim: a unit is looked at once, however
	// many members it has. Members of trees whose groups may be disrupted one by one are
	// victims on their own.
	gangs := map[podgroup.Key]*runningGang{}
	for i, ni := range infos {
		if ni.Node() == nil {
			continue
		}
		name := ni.Node().Name
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if pod.DeletionTimestamp != nil || (len(evicting) > 0 && evicting.Has(pod.UID)) {
				leaving[name] = append(leaving[name], pod)
				continue
			}
			if pending[pod.UID] != nil {
				if !e.bound(pod) {
					// The tree's own member, reserved in the attempt that failed: its
					// reservation is being released.
					leaving[name] = append(leaving[name], pod)
				}
				continue
			}
			if !mode.takes(corev1helpers.PodPriority(pod), p.Priority) {
				continue // no victim (a gang is taken only if its pods may be): the model need not be asked
			}
			sum, member := e.trees.Summary(pod)
			if member && sum.Root == p.Root {
				if !e.bound(pod) {
					// The tree's own member, reserved in the attempt that failed: its
					// reservation is being released.
					leaving[name] = append(leaving[name], pod)
				}
				continue
			}
			var u *Unit
			if member && sum.Unit != (podgroup.Key{}) {
				rg, done := gangs[sum.Unit]
				if !done {
					if gang, ok := e.trees.UnitOf(pod); ok && takesAll(mode, gang, p.Priority) {
						rg = &runningGang{gang: gang, unit: &Unit{Key: sum.Unit.String(), Gang: true, Root: gang.Object, RootKey: gang.Root}}
					}
					gangs[sum.Unit] = rg
				}
				if rg == nil {
					continue
				}
				rg.held = append(rg.held, pi)
				u = rg.unit
			} else {
				v, err := preemption.NewVictim([]fwk.PodInfo{pi}, corev1helpers.PodPriority(pod), fwk.PodKeyType)
				if err != nil {
					continue
				}
				u = &Unit{Victim: v, Key: string(pod.UID), Lasting: lasting(pod)}
			}
			hold(units, i, u, pi)
			n++
		}
	}
	for _, rg := range gangs {
		if rg != nil {
			rg.unit.Victim = gangVictim(rg.gang, rg.held)
		}
	}
	return units, leaving, n
}

// runningGang is a gang victim while units reads the nodes: its unit, and its members'
// PodInfos as the snapshot holds them, which keep the requests the scheduler computed once
// (capacity.OfPodInfo) where a new PodInfo would compute them again.
type runningGang struct {
	unit *Unit
	gang podgroup.Unit
	held []fwk.PodInfo
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

// gangVictim makes a running gang one victim: of its members' PodInfos in the snapshot
// (held), and new ones for members the snapshot does not hold.
func gangVictim(gang podgroup.Unit, held []fwk.PodInfo) preemption.Victim {
	byUID := make(map[types.UID]fwk.PodInfo, len(held))
	for _, pi := range held {
		byUID[pi.GetPod().UID] = pi
	}
	pis := make([]fwk.PodInfo, 0, len(gang.Pods))
	for _, p := range gang.Pods {
		pi, ok := byUID[p.UID]
		if !ok {
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
