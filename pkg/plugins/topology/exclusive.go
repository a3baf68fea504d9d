package topology

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Exclusive placement (JobSet's exclusive-topology; TopologyConstraint.exclusive): a group
// with an exclusive constraint takes one domain of that level to itself.
//   - The planner places it only in a domain that no other group holds or claimed in the
//     same plan, where no pod but its own members runs (DaemonSet and static pods aside) and
//     no other tree's plan promised room.
//   - A domain an exclusive group holds (members bound or reserved there, or planned by a
//     live plan) is closed to every other pod of the profile: plans leave its nodes out, and
//     Filter refuses them to the pods no plan placed. Pods of other schedulers are not
//     lockstep's to refuse.

// holdings are the domains exclusive groups hold, per level and domain key.
type holdings map[int]map[string]podgroup.Key

func (h holdings) set(level int, domain string, g podgroup.Key) {
	if h[level] == nil {
		h[level] = map[string]podgroup.Key{}
	}
	h[level][domain] = g
}

// holder returns the group holding node n's domain at some held level, other than the groups
// mine accepts.
func (h holdings) holder(n *node, mine func(podgroup.Key) bool) (podgroup.Key, bool) {
	for level, domains := range h {
		key, ok := n.domainOf(level)
		if !ok {
			continue
		}
		if g, held := domains[key]; held && !mine(g) {
			return g, true
		}
	}
	return podgroup.Key{}, false
}

// hold is one domain an exclusive group of a plan was placed in.
type hold struct {
	group  podgroup.Key
	level  int
	domain string
}

// holdings returns the domains exclusive groups hold: where their members are (the model)
// and where live plans of other trees put them.
func (pl *Topology) holdings(topo *topology, except podgroup.Key) holdings {
	return holdingsOf(topo, pl.trees.Exclusives(), pl.plans.Holds(except))
}

// holdingsOf places the exclusive groups' members and the plans' holds in topo's domains.
func holdingsOf(topo *topology, exclusives []podgroup.Exclusive, holds []hold) holdings {
	h := holdings{}
	for _, e := range exclusives {
		level := topo.levelOf(e.Key)
		if level < 0 {
			continue
		}
		for _, name := range e.Nodes {
			if n, ok := topo.byName[name]; ok {
				if key, ok := n.domainOf(level); ok {
					h.set(level, key, e.Group)
				}
			}
		}
	}
	for _, x := range holds {
		h.set(x.level, x.domain, x.group)
	}
	return h
}

// exclusiveLevel returns the level of a group's exclusive constraint, -1 for none.
func (t *topology) exclusiveLevel(g *podgroup.GroupView) int {
	if key := podgroup.ExclusiveKey(g.Topology); key != "" {
		return t.levelOf(key)
	}
	return -1
}

// foreignPods reports, for an exclusive group, the first pod in a domain that is not one
// of its members, if any: a pod of another workload (DaemonSet and static pods do not count)
// or capacity another tree's plan promised.
func (pl *Topology) foreignPods(infos []fwk.NodeInfo, promised map[string]capacity.Resources) func(d *domain, g podgroup.Key) string {
	return func(d *domain, g podgroup.Key) string {
		for _, n := range d.nodes {
			if p, ok := promised[n.name]; ok && (p.MilliCPU > 0 || p.Memory > 0 || p.Pods > 0) {
				return fmt.Sprintf("another gang's plan takes room on node %s", n.name)
			}
			for _, pi := range infos[n.idx].GetPods() {
				pod := pi.GetPod()
				if daemon(pod) {
					continue
				}
				if k, ok := pl.trees.GroupOf(pod); ok && k == g {
					continue
				}
				return fmt.Sprintf("pod %s/%s runs on node %s", pod.Namespace, pod.Name, n.name)
			}
		}
		return ""
	}
}

// daemon reports whether a pod runs on its node whatever the workloads: a DaemonSet's, or a
// static pod.
func daemon(pod *v1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && (ref.Kind == "DaemonSet" || ref.Kind == "Node") {
			return true
		}
	}
	return false
}

// closedKey is where PreFilter leaves the nodes closed to a pod, for Filter.
const closedKey fwk.StateKey = Name + "/closed"

// closedNodes are the nodes of domains exclusive groups hold, with why, closed to one pod.
type closedNodes map[string]string

// Clone implements fwk.StateData; the set is not changed after PreFilter.
func (c closedNodes) Clone() fwk.StateData { return c }

// closedTo returns the nodes closed to a pod: those in domains held by exclusive groups
// other than its own PodGroup (or its tree's root).
func (pl *Topology) closedTo(pod *v1.Pod, nodes []fwk.NodeInfo) closedNodes {
	exclusives, holds := pl.trees.Exclusives(), pl.plans.Holds(podgroup.Key{})
	if len(exclusives) == 0 && len(holds) == 0 {
		return nil
	}
	topo := pl.topology.get(pl.levels, nodes)
	h := holdingsOf(topo, exclusives, holds)
	sum, member := pl.trees.Summary(pod)
	mine := func(k podgroup.Key) bool { return member && (k == sum.Group || k == sum.Root) }
	out := closedNodes{}
	for _, n := range topo.nodes {
		if g, ok := h.holder(n, mine); ok {
			out[n.name] = fmt.Sprintf("node(s) held exclusively by %s", g)
		}
	}
	return out
}

// Filter refuses a pod the nodes exclusive groups hold (closedTo), and the room reservations
// of starving trees hold against it (reservations.go); planned members never get there,
// their plan having left them out.
func (pl *Topology) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if data, err := state.Read(closedKey); err == nil {
		if why, ok := data.(closedNodes)[ni.Node().Name]; ok {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
		}
	}
	if data, err := state.Read(reservedKey); err == nil {
		if why := data.(reserved).refusal(ni, capacity.PodRequests(pod)); why != "" {
			// Unschedulable, not Unresolvable: preemption by a pod of higher priority, or the
			// reservation's end, may change it.
			return fwk.NewStatus(fwk.Unschedulable, why)
		}
	}
	return nil
}
