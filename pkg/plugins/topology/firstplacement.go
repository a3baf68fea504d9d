package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// firstPlacement returns the node a plan of a basic tree gives pod, when the pod would be the
// first of its domain: a group on its path has a Required key and no placed member to anchor
// it (firstOfItsDomain). It returns "" where no group is so, where no plan places the tree,
// and where the plan leaves the pod out: the pod's domain is then left to Filter and Score,
// as before.
//
// Without it the first member of such a group picked its domain by node score alone: under
// the default LeastAllocated scoring, the emptiest domain, broken into for a few pods where a
// gang needing all of it would have fitted, and maybe too small for the group's other pending
// members, which then keep to it. The plan ranks domains as it does for gangs (bestFit): those
// that hold all the tree's pending members first, the tightest of them first, then those
// that hold the most; it counts what other trees' plans and reservations hold, and places
// members only where the profile's Filter plugins let them. That is the domain upstream's
// placement scoring chooses for a basic group (the most pods placed, then the most
// allocated). The plan is not stored: nothing is promised to a basic tree, whose members
// bind one by one. The member is narrowed to the domains that node is in (keepWithSiblings),
// where Filter and Score still choose its node, and its siblings keep to its domains once it
// is placed.
func (pl *Topology) firstPlacement(ctx context.Context, tree *podgroup.GroupView, pod *v1.Pod, sum podgroup.Summary, nodes []fwk.NodeInfo) string {
	if !firstOfItsDomain(tree, sum.Group) {
		return ""
	}
	logger := klog.FromContext(ctx)
	plan, why := pl.planTree(ctx, tree, nodes, nil)
	if plan == nil {
		logger.V(4).Info("No plan places the basic tree; its member's domain is left to Filter", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "why", why)
		return ""
	}
	pp, ok := plan.Pods[pod.UID]
	if !ok {
		logger.V(4).Info("The basic tree's plan leaves the member out; its domain is left to Filter", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root)
		return ""
	}
	logger.V(4).Info("First member of its domain goes where a plan of its basic tree places it", "pod", klog.KObj(pod), "group", sum.Group, "root", sum.Root, "node", pp.Node, "domains", chosenNames(plan.Chosen))
	return pp.Node
}

// firstOfItsDomain reports whether a member of group key would be the first placed in the
// domain of a Required key on its path: a group there has one (slices aside) and no placed
// member in its subtree.
func firstOfItsDomain(tree *podgroup.GroupView, key podgroup.Key) bool {
	return unanchoredBy(tree, key, requiresDomain) != nil
}

// requiresDomain reports whether g has a Required key that puts its pods in one domain (a
// slice constraint puts each slice in one).
func requiresDomain(g *podgroup.GroupView) bool {
	for _, t := range g.Topology {
		if t.Mode != v1alpha1.TopologyPreferred && t.SliceSize == nil {
			return true
		}
	}
	return false
}
