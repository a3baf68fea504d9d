package topology

import (
	"fmt"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// The room of a domain (room below) is what bestFitFor ranks candidate domains by: the free
// capacity and the slots of a group's largest shape on the nodes of the domain its pods may
// use. A rack-required gang ranks every rack of the cluster, so summing it node by node made
// each plan's cost grow with the cluster. The room of a domain none of whose nodes changed
// since it was summed is taken from a cache instead, kept per pod spec (eligible) and
// shape; the topology's refresh (refreshLocked) gives a domain a new version when any of its
// nodes changes. A domain is summed node by node when the plan sees its nodes differently
// from the topology: capacity promised elsewhere or taken by the plan (dirty), nodes
// excluded for this plan (a fitter that wraps the pod spec's eligibility), or exclusively
// held domains.

// maxRoomShapes bounds the shapes a pod spec keeps the rooms of domains for: a cluster
// whose gangs keep asking for new requests forgets them all and starts again.
const maxRoomShapes = 32

// roomOf is the cached room of one domain; known once summed.
type roomOf struct {
	total   capacity.Resources
	slots   int64
	version uint64
	known   bool
}

// freeAt returns the free capacity of the node of index i as the plan left it.
func (p *planner) freeAt(i int) capacity.Resources {
	if r, ok := p.taken[i]; ok {
		return r
	}
	return p.c.freeAt(i)
}

// markDirty counts a node whose free capacity the plan sees differently from the topology
// (by d: 1 or -1) in each of its domains.
func (p *planner) markDirty(n *node, d int) {
	p.dirty[p.c.anywhere.id] += d
	for _, dom := range n.doms {
		if dom != nil {
			p.dirty[dom.id] += d
		}
	}
}

// rooms returns the cache of the rooms of domains for the group's representative member rep
// and shape, nil when the plan cannot take rooms from the cache (a domain is then summed node
// by node). One cache serves every domain a plan ranks, by domain id.
func (p *planner) rooms(rep *pending, shape capacity.Resources) []roomOf {
	if rep == nil || !p.cached || len(p.held) > 0 || len(p.claims) > 0 {
		return nil
	}
	el, key := rep.shape.elig, roomKey(shape)
	byDomain := el.rooms[key]
	if len(byDomain) != len(p.c.versions) {
		if len(el.rooms) >= maxRoomShapes {
			clear(el.rooms)
		}
		byDomain = make([]roomOf, len(p.c.versions))
		el.rooms[key] = byDomain
	}
	return byDomain
}

// room returns the free capacity and the slots of shape (counted when count > 0) on the
// nodes of d the group's representative member rep may use; from the cache rooms when it
// holds d as the topology has it now.
func (p *planner) room(rooms []roomOf, d *domain, g *podgroup.GroupView, rep *pending, shape capacity.Resources, count int64) (capacity.Resources, int64) {
	if rooms == nil || (len(p.dirty) > 0 && p.dirty[d.id] > 0) {
		return p.sum(d, g, rep, shape, count)
	}
	version := p.c.versions[d.id]
	r := &rooms[d.id]
	if !r.known || r.version != version {
		r.total, r.slots = p.sum(d, g, rep, shape, 1)
		r.version, r.known = version, true
	}
	if count == 0 {
		return r.total, 0
	}
	return r.total, r.slots
}

// sum is room counted node by node.
func (p *planner) sum(d *domain, g *podgroup.GroupView, rep *pending, shape capacity.Resources, count int64) (capacity.Resources, int64) {
	var total capacity.Resources
	var slots int64
	for _, n := range d.nodes {
		if rep != nil && (!p.fit.eligible(rep.shape, n) || p.closed(n, g.Key)) {
			continue
		}
		free := p.freeAt(n.idx)
		total.Add(free)
		if count > 0 {
			slots += free.Copies(shape)
		}
	}
	return total, slots
}

// roomKey is a shape as a key of the cache.
func roomKey(shape capacity.Resources) string {
	return fmt.Sprintf("%d/%d/%d/%v", shape.MilliCPU, shape.Memory, shape.Pods, shape.Scalar)
}
