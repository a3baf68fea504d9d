package topology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

const anchorsKey fwk.StateKey = Name + "/anchors"

// anchors are the topology paths of the placed members a pod should be close to.
type anchors struct{ paths [][]string }

func (a *anchors) Clone() fwk.StateData { return a }

// PreScore finds the placed members an unplanned pod should join: those of its own group,
// else of the nearest ancestor's subtree that has any. Pods outside constrained trees skip
// scoring.
func (pl *Topology) PreScore(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	sum, ok := pl.trees.Summary(pod)
	if !ok || !sum.Topology {
		return fwk.NewStatus(fwk.Skip)
	}
	tree, ok := pl.trees.Tree(pod)
	if !ok {
		return fwk.NewStatus(fwk.Skip)
	}
	group := tree.Find(sum.Group)
	a := &anchors{}
	for g := group; g != nil && len(a.paths) == 0; g = g.Parent {
		g.Walk(func(v *podgroup.GroupView) {
			for _, name := range v.PlacedNodes {
				if ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(name); err == nil {
					a.paths = append(a.paths, pl.path(ni.Node()))
				}
			}
		})
	}
	if len(a.paths) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	state.Write(anchorsKey, a)
	return nil
}

// Score ranks a node by how deep it shares the topology with the pod's placed siblings: the
// same host scores 100, the same rack less, the same zone least, elsewhere 0.
func (pl *Topology) Score(_ context.Context, state fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	data, err := state.Read(anchorsKey)
	if err != nil {
		return 0, nil
	}
	path := pl.path(ni.Node())
	best := 0
	for _, anchor := range data.(*anchors).paths {
		// The deepest level whose domain the node shares with the anchor; a level neither
		// is labelled with is passed over, one only one of them has ends the match.
		for d := 0; d < len(path) && d < len(anchor) && path[d] == anchor[d]; d++ {
			if path[d] != "" && d+1 > best {
				best = d + 1
			}
		}
	}
	return int64(best) * fwk.MaxNodeScore / int64(len(pl.levels)), nil
}

// ScoreExtensions returns nil: scores are already in [0, 100].
func (pl *Topology) ScoreExtensions() fwk.ScoreExtensions { return nil }

// path returns a node's label value at each level, broadest first (pathOf).
func (pl *Topology) path(n *v1.Node) []string { return pathOf(n, pl.levels) }
