package topology

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
)

// gangSpec is one gang of a packing sequence.
type gangSpec struct {
	pods  int
	cpu   int64
	level string // "rack" or "block"
}

// fragmented returns a 2 zones × 2 blocks × 4 racks × 4 hosts cluster of 16-cpu nodes with a
// random amount (0-12 cpu) already used on each node.
func fragmented(r *rand.Rand) []testNode {
	nodes := grid(2, 2, 4, 4, 16)
	for i := range nodes {
		nodes[i].used = int64(r.Intn(4)) * 4
	}
	return nodes
}

// sequence returns n random gangs: 2-9 pods of 1, 2, 4 or 8 cpu, rack- or block-required
// (the largest fits an empty rack).
func sequence(r *rand.Rand, n int) []gangSpec {
	out := make([]gangSpec, n)
	for i := range out {
		level := "rack"
		if r.Intn(3) == 0 {
			level = "block"
		}
		out[i] = gangSpec{pods: 2 + r.Intn(8), cpu: []int64{1, 2, 4, 8}[r.Intn(4)], level: level}
	}
	return out
}

// placeWithPlanner places gangs one after the other with the planner, committing each plan,
// and returns how many were placed before the first refusal.
func placeWithPlanner(nodes []testNode, gangs []gangSpec) int {
	used := map[string]int64{}
	for _, n := range nodes {
		used[n.name] = n.used
	}
	for i, g := range gangs {
		cur := append([]testNode(nil), nodes...)
		for j := range cur {
			cur[j].used = used[cur[j].name]
		}
		root := gang(fmt.Sprintf("g%d", i), g.pods, g.cpu, g.level)
		c := clusterOf(nodeInfos(cur), nil)
		out := newPlanner(c, newSpecFitter(newEligibility(c.nodes)), time.Minute).plan(root)
		if !out.ok {
			return i
		}
		for _, p := range root.Pending {
			used[out.assign[p.UID].name] += g.cpu
		}
	}
	return len(gangs)
}

// placeFirstFit is the baseline: the first domain (by name) where the gang fits with each
// pod on the first node (by name) that has room.
func placeFirstFit(nodes []testNode, gangs []gangSpec) int {
	free := map[string]int64{}
	for _, n := range nodes {
		free[n.name] = n.cpu - n.used
	}
	for i, g := range gangs {
		placed := false
		for _, d := range domainsByName(nodes, g.level) {
			trial := map[string]int64{}
			ok := true
			for p := 0; p < g.pods && ok; p++ {
				ok = false
				for _, n := range d {
					if free[n]-trial[n] >= g.cpu {
						trial[n] += g.cpu
						ok = true
						break
					}
				}
			}
			if ok {
				for n, c := range trial {
					free[n] -= c
				}
				placed = true
				break
			}
		}
		if !placed {
			return i
		}
	}
	return len(gangs)
}

// domainsByName returns the node names of each domain of a level, in name order.
func domainsByName(nodes []testNode, level string) [][]string {
	var keys []string
	byKey := map[string][]string{}
	for _, n := range nodes {
		k := n.rack
		if level == "block" {
			k = n.block
		}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], n.name)
	}
	out := make([][]string, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// On a fragmented cluster, the planner (best-fit domains, packing into the fullest
// sub-domains first) places at least as many gangs of a fixed random sequence as a first-fit
// baseline before its first refusal. Over 100 more fixed sequences it places at least as
// many in total (a greedy heuristic can lose on a single sequence: the counts are logged).
func TestPackingQualityVersusFirstFit(t *testing.T) {
	run := func(seed int64) (int, int) {
		r := rand.New(rand.NewSource(seed))
		nodes := fragmented(r)
		gangs := sequence(r, 200)
		return placeWithPlanner(nodes, gangs), placeFirstFit(nodes, gangs)
	}
	const fixed = 20261122
	p, f := run(fixed)
	t.Logf("seed %d: gangs placed before the first refusal: planner %d, first-fit %d", fixed, p, f)
	if p < f {
		t.Errorf("seed %d: planner placed %d gangs before its first refusal, first-fit %d", fixed, p, f)
	}
	var planned, firstFit, ahead, behind int
	for seed := int64(1); seed <= 100; seed++ {
		p, f := run(seed)
		planned, firstFit = planned+p, firstFit+f
		switch {
		case p > f:
			ahead++
		case p < f:
			behind++
		}
	}
	t.Logf("seeds 1-100: gangs placed before the first refusal: planner %d, first-fit %d; planner ahead on %d sequences, behind on %d", planned, firstFit, ahead, behind)
	if planned < firstFit {
		t.Errorf("over 100 sequences the planner placed %d gangs, first-fit %d", planned, firstFit)
	}
}

// packOrder reads each node's free room once and sorts by what it read. It must order nodes
// exactly as comparing them afresh at every step does (packOrderByComparison, the order as
// it was first written): seeded random clusters with nodes used at random, capacity taken by
// the plan, labels missing at some levels, and GPU and CPU shapes.
func TestPackOrderIsTheComparisonsOrder(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		nodes := grid(1+r.Intn(2), 1+r.Intn(3), 1+r.Intn(4), 1+r.Intn(5), 16)
		for i := range nodes {
			nodes[i].used = int64(r.Intn(17))
			if r.Intn(3) == 0 {
				nodes[i].gpus, nodes[i].gpusUsed = 8, int64(r.Intn(9))
			}
			switch r.Intn(8) {
			case 0:
				nodes[i].rack = ""
			case 1:
				nodes[i].block = ""
			case 2:
				nodes[i].zone, nodes[i].block, nodes[i].rack = "", "", ""
			}
		}
		c := clusterOf(nodeInfos(nodes), nil)
		p := newPlanner(c, newSpecFitter(newEligibility(c.nodes)), time.Minute)
		for _, n := range c.nodes {
			if r.Intn(4) == 0 {
				free := p.freeAt(n.idx)
				free.MilliCPU = int64(r.Intn(int(free.MilliCPU) + 1))
				p.taken[n.idx] = free
			}
		}
		needs := []capacity.Resources{
			{MilliCPU: 1000 * int64(1+r.Intn(8)), Memory: 1 << 30, Pods: 1},
			{MilliCPU: 1000, Pods: 1, Scalar: map[v1.ResourceName]int64{"nvidia.com/gpu": int64(1 + r.Intn(8))}},
			{},
		}
		in := append([]*node(nil), c.nodes...)
		r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		for _, need := range needs {
			got, want := names(p.packOrder(in, need)), names(packOrderByComparison(p, in, need))
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, need %v: packOrder\n%v\nwant\n%v", seed, need, got, want)
			}
		}
	}
}

func names(nodes []*node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.name
	}
	return out
}

// packOrderByComparison is packOrder as first written: every comparison reads the nodes'
// free room and their domains' sums again.
func packOrderByComparison(p *planner, nodes []*node, need capacity.Resources) []*node {
	depth := len(p.c.levels)
	slots := func(n *node) int64 {
		if need.MilliCPU == 0 && need.Memory == 0 && len(need.Scalar) == 0 {
			return p.freeAt(n.idx).MilliCPU
		}
		return p.freeAt(n.idx).Copies(need)
	}
	sums := map[string][2]int64{}
	for _, n := range nodes {
		s := slots(n)
		for l := 0; l < len(n.path) && l < depth; l++ {
			k, ok := n.domainOf(l)
			if !ok {
				continue
			}
			v := sums[k]
			sums[k] = [2]int64{v[0] + s, v[1] + p.freeAt(n.idx).MilliCPU}
		}
	}
	out := append([]*node(nil), nodes...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		for l := 0; l < depth-1; l++ {
			ka, oka := a.domainOf(l)
			kb, okb := b.domainOf(l)
			if !oka && !okb && l < len(a.path) && l < len(b.path) {
				continue
			}
			if !oka || !okb {
				break
			}
			if ka == kb {
				continue
			}
			if sa, sb := sums[ka], sums[kb]; sa != sb {
				if sa[0] != sb[0] {
					return sa[0] < sb[0]
				}
				return sa[1] < sb[1]
			}
			return ka < kb
		}
		if sa, sb := slots(a), slots(b); sa != sb {
			return sa < sb
		}
		if fa, fb := p.freeAt(a.idx).MilliCPU, p.freeAt(b.idx).MilliCPU; fa != fb {
			return fa < fb
		}
		return a.name < b.name
	})
	return out
}
