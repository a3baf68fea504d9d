package gangpreemption

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// cluster is a snapshot as the scheduler keeps it: one NodeInfo per node, changed in place, so
// that a change gives that node's NodeInfo a new generation and no other.
type cluster struct {
	infos []fwk.NodeInfo
	byPod map[types.UID]int
	trees *fakeTrees
}

func newCluster(nodes []*v1.Node, running []*v1.Pod, gangPriority map[string]int32) *cluster {
	c := &cluster{infos: nodeInfos(nodes, running), byPod: map[types.UID]int{}, trees: &fakeTrees{gangPriority: gangPriority}}
	index := indexOf(c.infos)
	for _, p := range running {
		c.byPod[p.UID] = index[p.Spec.NodeName]
		c.trees.pods = append(c.trees.pods, p)
	}
	return c
}

func (c *cluster) add(p *v1.Pod, node int) {
	pi, _ := framework.NewPodInfo(p)
	c.infos[node].AddPodInfo(pi)
	c.byPod[p.UID] = node
	c.trees.pods = append(c.trees.pods, p)
	c.trees.bound = nil
}

func (c *cluster) remove(t *testing.T, p *v1.Pod) {
	if err := c.infos[c.byPod[p.UID]].RemovePod(klog.Background(), p); err != nil {
		t.Fatal(err)
	}
	delete(c.byPod, p.UID)
	for i, q := range c.trees.pods {
		if q.UID == p.UID {
			c.trees.pods = append(c.trees.pods[:i], c.trees.pods[i+1:]...)
			break
		}
	}
	c.trees.bound = nil
}

// returns takes p off its node and puts it back: its node's NodeInfo has a new generation.
func (c *cluster) returns(t *testing.T, p *v1.Pod) {
	node := c.byPod[p.UID]
	c.remove(t, p)
	c.add(p, node)
}

// version gives each domain a Version as the topology plugin does: one that changes with any
// of its nodes and never comes back (their highest generation, plus one).
func (c *cluster) version(domains []Domain) {
	index := indexOf(c.infos)
	for i, d := range domains {
		domains[i].Version = 0
		for _, n := range d.Nodes {
			domains[i].Version = max(domains[i].Version, uint64(c.infos[index[n]].GetGeneration())+1)
		}
	}
}

// TestKeptBoundsAreFreshBounds, over seeded random clusters of racks holding gangs that reach
// across racks and pods of several priorities, and a sequence of decisions between which pods
// leave and come, other trees' preemptions evict, and the tree's own members are placed: no
// bound one evaluator kept and used is above the bound of its domain bounded afresh, in any
// field (it is the same, or, where a gang gained a member on a node its bound did not read,
// lower: still a bound), and that evaluator chooses as cheap a domain as a new evaluator, for
// trees of two shapes, preempting and reserving; with domains that have versions (read
// instead of their nodes) and domains that have none.
func TestKeptBoundsAreFreshBounds(t *testing.T) {
	same, lower, rooms := 0, 0, 0
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var nodes []*v1.Node
		var domains []Domain
		for r := range 3 + rng.Intn(4) {
			d := Domain{Name: fmt.Sprintf("rack %d", r)}
			for h := range 2 + rng.Intn(3) {
				name := fmt.Sprintf("r%d-n%d", r, h)
				nodes = append(nodes, lt.MakeNode(name, fmt.Sprint(4+rng.Intn(5))).Obj())
				d.Nodes = append(d.Nodes, name)
			}
			domains = append(domains, d)
		}
		prios := []int32{0, 1, 5, 10, 2000}
		gangPriority := map[string]int32{}
		c := newCluster(nodes, nil, gangPriority)
		pods := 0
		// place puts a pod of priority prio in group (none: "") on a random node with room.
		place := func(group string, prio int32) {
			cpu := int64(1 + rng.Intn(3))
			for range 10 {
				i := rng.Intn(len(nodes))
				if c.infos[i].GetAllocatable().GetMilliCPU()-c.infos[i].GetRequested().GetMilliCPU() < cpu*1000 {
					continue
				}
				pods++
				var p *v1.Pod
				if group == "" {
					w := lt.GroupPod("ns", fmt.Sprintf("p%d", pods), "").Req(lt.CPU(fmt.Sprint(cpu))).Priority(prio).Node(nodes[i].Name)
					if rng.Intn(3) == 0 {
						w = lt.ControlledBy(w, "apps/v1", "ReplicaSet", "rs", "rs-uid")
					}
					p = w.Obj()
				} else {
					p = lt.Member("ns", group, pods).Req(lt.CPU(fmt.Sprint(cpu))).Priority(prio).Node(nodes[i].Name).Obj()
				}
				c.add(p, i)
				return
			}
		}
		for g := range 2 + rng.Intn(5) {
			name := fmt.Sprintf("g%d", g)
			gangPriority[name] = prios[1+rng.Intn(3)]
			for range 1 + rng.Intn(5) {
				place(name, gangPriority[name])
			}
		}
		for range rng.Intn(12) {
			place("", prios[rng.Intn(len(prios))])
		}

		shapes := [][]string{{"2", "2", "1"}, {"3", "1"}, {"3", "3", "3"}}
		kept := New(noPlugins{}, c.trees, nil, nil)
		for step := range 12 {
			what := fmt.Sprintf("seed %d, step %d", seed, step)
			tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true}
			for m, cpu := range shapes[rng.Intn(len(shapes))] {
				tree.Pending = append(tree.Pending, lt.Member("ns", "hi", 100+m).Req(lt.CPU(cpu)).Obj())
			}
			tree.Min = len(tree.Pending)
			dry := &firstFit{tree: tree, domains: domains}
			switch rng.Intn(7) {
			case 0, 1: // a pod leaves
				if len(c.trees.pods) > 0 {
					c.remove(t, c.trees.pods[rng.Intn(len(c.trees.pods))])
				}
			case 2: // a pod comes, maybe a gang's new member
				if g := fmt.Sprintf("g%d", rng.Intn(len(gangPriority)+1)); gangPriority[g] != 0 {
					place(g, gangPriority[g])
				} else {
					place("", prios[rng.Intn(len(prios))])
				}
			case 3: // another tree's preemption evicts a pod
				if len(c.trees.pods) > 0 {
					p := c.trees.pods[rng.Intn(len(c.trees.pods))]
					dry.evicting = Evictions{Pods: sets.New(p.UID), Nodes: sets.New(p.Spec.NodeName)}
				}
			case 5: // a running gang's group is deleted: its pods run on, in no gang
				if g := fmt.Sprintf("g%d", rng.Intn(len(gangPriority))); !c.trees.dissolved[g] {
					c.trees.dissolve(g)
				}
			case 4: // the tree has a member placed
				place("hi", 1)
				for _, p := range c.trees.pods {
					if s, ok := c.trees.Summary(p); ok && s.Root == tree.Key {
						tree.PlacedNodes = append(tree.PlacedNodes, p.Spec.NodeName)
					}
				}
			}
			if seed%2 == 1 {
				c.version(domains)
			}
			for _, mode := range []Mode{Preempt, Reserve} {
				p := podgroup.Preemptor{Root: tree.Key, Priority: 100}
				if mode == Reserve {
					p.Priority = 5
				}
				what := fmt.Sprintf("%s, mode %d", what, mode)
				got := kept.Cheapest(context.Background(), dry, tree, p, c.infos, mode)
				fresh := New(noPlugins{}, c.trees, nil, nil)
				run := fresh.newDecision(dry, tree, p, c.infos, mode, newScratch(len(c.infos)))
				if used := kept.bounds.shapes[run.shape()]; used != nil {
					for i, d := range domains {
						b, ok := used.get(d.id(), i)
						if !ok {
							continue
						}
						floor, ok := run.lowerBound(d)
						if ok && !b.ok || b.cost.Priority > floor.Priority || b.cost.Gangs > floor.Gangs || b.cost.Pods > floor.Pods ||
							b.cost.Lasting > floor.Lasting || b.cost.PDB > floor.PDB {
							t.Errorf("%s, %s: kept bound %+v, %v is above the bound afresh %+v, %v", what, d.Name, b.cost, b.ok, floor, ok)
						}
						if floor == b.cost && ok == b.ok {
							same++
						} else {
							lower++
						}
					}
				}
				for _, k := range kept.bounds.inventories {
					n, _ := roomsKept(k)
					rooms += n
				}
				want := fresh.Cheapest(context.Background(), dry, tree, p, c.infos, mode)
				switch {
				case (got == nil) != (want == nil):
					t.Errorf("%s: chose %v with kept bounds, %v afresh", what, got, want)
				case got != nil && (mode.better(got.Cost, want.Cost) || mode.better(want.Cost, got.Cost)):
					t.Errorf("%s: chose %s at %+v with kept bounds, %s at %+v afresh", what, got.Domain.Name, got.Cost, want.Domain.Name, want.Cost)
				}
			}
		}
	}
	t.Logf("kept bounds: %d as bounded afresh, %d lower; rooms kept %d times", same, lower, rooms)
	if same == 0 || rooms == 0 {
		t.Error("no bound or no rooms were kept: the test does not test keeping")
	}
}

// twoRacks is a cluster of two racks of one node: rack a's holds a gang pod of priority 1,
// rack b's a pod of priority 2000; and the tree of one 4-CPU member that may preempt the
// first, with the racks as its domains (no Versions).
func twoRacks() (c *cluster, running []*v1.Pod, tree *podgroup.GroupView, dry *firstFit) {
	nodes := []*v1.Node{lt.MakeNode("a0", "4").Obj(), lt.MakeNode("b0", "4").Obj()}
	running = []*v1.Pod{
		lt.Member("ns", "low", 0).Req(lt.CPU("4")).Priority(1).Node("a0").Obj(),
		lt.GroupPod("ns", "b0-pod", "").Req(lt.CPU("4")).Priority(2000).Node("b0").Obj(),
	}
	c = newCluster(nodes, running, map[string]int32{"low": 1})
	tree = &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 1, Pending: lt.Members("ns", "hi", 1, lt.CPU("4"))}
	dry = &firstFit{tree: tree, domains: []Domain{{Name: "rack a", Nodes: []string{"a0"}}, {Name: "rack b", Nodes: []string{"b0"}}}}
	return c, running, tree, dry
}

// TestKeptBoundLivesBoundTTL: what the group model says of a pod can change with no node
// changing (here a running gang's priority is raised above the tree's). The kept bound stands
// until boundTTL has passed since it was bounded; then the domain is bounded afresh, and
// nothing is chosen. A decision of another shape, or a domain whose node changed, never
// reads it.
func TestKeptBoundLivesBoundTTL(t *testing.T) {
	c, running, tree, dry := twoRacks()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := New(noPlugins{}, c.trees, nil, nil)
	e.bounds.now = func() time.Time { return now }
	p := podgroup.Preemptor{Root: tree.Key, Priority: 100}
	decide := func() (*Choice, int) {
		got := e.Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		return got, e.bounds.shapes[e.newDecision(dry, tree, p, c.infos, Preempt, newScratch(len(c.infos))).shape()].kept()
	}
	if got, kept := decide(); got == nil || got.Domain.Name != "rack a" || kept != 2 {
		t.Fatalf("chose %v keeping %d bounds, want rack a, both racks' bounds kept", got, kept)
	}
	c.trees.gangPriority["low"] = 1000 // the model's word changes; no node does
	life := reading{}.ttl(dry.domains[0].id())
	now = now.Add(life - time.Second)
	if got, _ := decide(); got != nil {
		// The kept bound still says rack a may hold the tree; its dry run, on the snapshot as
		// it is, finds no victim there.
		t.Fatalf("chose %s evicting %s, want nothing: the gang is above the tree now", got.Domain.Name, PodNames(got.Pods()))
	}
	if b, _ := e.bounds.shapes[e.newDecision(dry, tree, p, c.infos, Preempt, newScratch(len(c.infos))).shape()].get(dry.domains[0].id(), 0); !b.ok {
		t.Fatal("rack a's bound was renewed before its life passed")
	}
	now = now.Add(2 * time.Second)
	if got, _ := decide(); got != nil {
		t.Fatalf("chose %s, want nothing", got.Domain.Name)
	}
	if b, _ := e.bounds.shapes[e.newDecision(dry, tree, p, c.infos, Preempt, newScratch(len(c.infos))).shape()].get(dry.domains[0].id(), 0); b.ok {
		t.Error("rack a's bound was kept past its life")
	}
	// A change of the node: bounded afresh at once.
	c.trees.gangPriority["low"] = 1
	c.remove(t, running[1])
	if got, _ := decide(); got != nil {
		t.Fatalf("chose %s, want rack b free without victims (no choice to make)", got.Domain.Name)
	}
	if b, _ := e.bounds.shapes[e.newDecision(dry, tree, p, c.infos, Preempt, newScratch(len(c.infos))).shape()].get(dry.domains[1].id(), 1); !b.ok || b.cost != (Cost{}) {
		t.Errorf("rack b's bound %+v, %v after its pod left; want zero, true", b.cost, b.ok)
	}
}

// A domain's Version moves at every read of a node the topology keeps, a preemption's dry run
// reading its simulated nodes from copies and back included: a kept bound whose domain's
// Version moved while its nodes' generations did not still stands (it is not read again), and
// one whose node changed is read afresh.
func TestKeptBoundStandsWhileItsNodesDo(t *testing.T) {
	c, running, tree, dry := twoRacks()
	c.version(dry.domains)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := New(noPlugins{}, c.trees, nil, nil)
	e.bounds.now = func() time.Time { return now }
	p := podgroup.Preemptor{Root: tree.Key, Priority: 100}
	readAt := func() time.Time {
		t.Helper()
		if got := e.Cheapest(context.Background(), dry, tree, p, c.infos, Preempt); got == nil || got.Domain.Name != "rack a" {
			t.Fatalf("chose %v, want rack a", got)
		}
		b, ok := e.bounds.shapes[e.newDecision(dry, tree, p, c.infos, Preempt, newScratch(len(c.infos))).shape()].get(dry.domains[0].id(), 0)
		if !ok || b.reading.version != dry.domains[0].Version {
			t.Fatalf("rack a's bound kept %v at version %d, want kept at %d", ok, b.reading.version, dry.domains[0].Version)
		}
		return b.reading.at
	}
	first := readAt()
	now = now.Add(time.Second)
	for i := range dry.domains {
		dry.domains[i].Version += 10 // a dry run's read and read back; no node changed
	}
	if at := readAt(); !at.Equal(first) {
		t.Errorf("rack a bounded again at %v after its Version moved with no node changed; want its bound of %v", at, first)
	}
	now = now.Add(time.Second)
	c.returns(t, running[0])
	c.version(dry.domains)
	if at := readAt(); !at.Equal(now) {
		t.Errorf("rack a's bound read at %v after its node changed; want read afresh at %v", at, now)
	}
}

// The bounds a shape's first decision reads, one per domain, all at once, expire a few at a
// time over the last quarter of boundTTL, not all in one decision that reads every domain
// again; each domain is bounded again once, with a life of its own, so they stay spread.
func TestKeptBoundsExpireAFewAtATime(t *testing.T) {
	var nodes []*v1.Node
	var running []*v1.Pod
	var domains []Domain
	for i := range 40 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, lt.MakeNode(name, "4").Obj())
		running = append(running, lt.Member("ns", "low", i).Req(lt.CPU("4")).Priority(1).Node(name).Obj())
		domains = append(domains, Domain{Name: "rack " + name, Nodes: []string{name}})
	}
	c := newCluster(nodes, running, map[string]int32{"low": 1})
	tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 1, Pending: lt.Members("ns", "hi", 1, lt.CPU("4"))}
	dry := &firstFit{tree: tree, domains: domains}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := New(noPlugins{}, c.trees, nil, nil)
	e.bounds.now = func() time.Time { return now }
	p := podgroup.Preemptor{Root: tree.Key, Priority: 100}
	// boundedAt decides once and returns, by domain, when its kept bound was read.
	boundedAt := func() []time.Time {
		t.Helper()
		e.Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		kept := e.bounds.shapes[e.newDecision(dry, tree, p, c.infos, Preempt, newScratch(len(c.infos))).shape()]
		var at []time.Time
		for i, d := range domains {
			b, ok := kept.get(d.id(), i)
			if !ok {
				t.Fatalf("%s: no bound kept", d.Name)
			}
			at = append(at, b.at)
		}
		return at
	}
	start := now
	for i, at := range boundedAt() {
		if !at.Equal(start) {
			t.Fatalf("%s bounded at %s, want at the first decision", domains[i].Name, at)
		}
	}
	now = start.Add(boundTTL * 7 / 8)
	mid := now
	again := 0
	for _, at := range boundedAt() {
		if at.Equal(mid) {
			again++
		}
	}
	if again == 0 || again == len(domains) {
		t.Fatalf("%d of %d domains bounded again at 7/8 of boundTTL, want some, not all", again, len(domains))
	}
	now = start.Add(boundTTL + time.Second)
	end := now
	for i, at := range boundedAt() {
		switch {
		case at.Equal(mid), at.Equal(end):
		default:
			t.Errorf("%s bounded at %s: want once after its life, at 7/8 of boundTTL or after boundTTL", domains[i].Name, at.Sub(start))
		}
	}
}

// TestKeptShapesAreFew: bounds are kept for maxShapes shapes of trees at most, inventories for
// maxInventories thresholds, the least recently used forgotten first, and only for the
// domains the last decision was offered.
func TestKeptShapesAreFew(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := boundCache{now: func() time.Time { return now }}
	for i := range maxShapes + 3 {
		now = now.Add(time.Second)
		domains := []Domain{{Name: "rack"}}
		k := c.forDecision(fmt.Sprint(i), fmt.Sprint(i), domains)
		k.inventory, k.inventories = true, keptFor(c.inventories, fmt.Sprint(i), now, domains)
		k.bounds.has[0], k.inventories.has[0] = true, true
		c.done(k)
	}
	last := fmt.Sprint(maxShapes + 2)
	if len(c.shapes) != maxShapes || c.shapes["0"] != nil || c.shapes[last] == nil {
		t.Errorf("%d shapes kept, want the %d most recent", len(c.shapes), maxShapes)
	}
	if len(c.inventories) != maxInventories || c.inventories[fmt.Sprint(maxShapes+2-maxInventories)] != nil || c.inventories[last] == nil {
		t.Errorf("%d thresholds' inventories kept, want the %d most recent", len(c.inventories), maxInventories)
	}
	other := []Domain{{Name: "other rack"}}
	k := c.forDecision(last, last, other)
	k.inventory, k.inventories = true, keptFor(c.inventories, last, now, other)
	c.done(k)
	if c.shapes[last].kept() != 0 || c.inventories[last].kept() != 0 {
		t.Error("a domain no longer offered is still kept")
	}
}

// A kept bound whose gangs reach more nodes outside its domain than it watches (maxWatched)
// is partial: those nodes' changes are seen only when it is bounded again, after partialTTL;
// every other bound lives boundTTL.
func TestKeptBoundBeyondTheWatchedNodesIsPartial(t *testing.T) {
	nodes := []*v1.Node{lt.MakeNode("a0", "4").Obj()}
	running := []*v1.Pod{lt.Member("ns", "wide", 0).Req(lt.CPU("4")).Priority(1).Node("a0").Obj()}
	var wide []string
	for i := range maxWatched + 1 {
		name := fmt.Sprintf("b%d", i)
		nodes = append(nodes, lt.MakeNode(name, "1").Obj())
		wide = append(wide, name)
		running = append(running, lt.Member("ns", "wide", i+1).Req(lt.CPU("1")).Priority(1).Node(name).Obj())
	}
	c := newCluster(nodes, running, map[string]int32{"wide": 1})
	tree := &podgroup.GroupView{Key: podgroup.PodGroupKey("ns", "hi"), Gang: true, Min: 1, Pending: lt.Members("ns", "hi", 1, lt.CPU("4"))}
	dry := &firstFit{tree: tree, domains: []Domain{{Name: "rack a", Nodes: []string{"a0"}}, {Name: "rack b", Nodes: wide}}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := New(noPlugins{}, c.trees, nil, nil)
	e.bounds.now = func() time.Time { return now }
	p := podgroup.Preemptor{Root: tree.Key, Priority: 100}
	kept := func() (a, b keptBound) {
		t.Helper()
		e.Cheapest(context.Background(), dry, tree, p, c.infos, Preempt)
		kept := e.bounds.shapes[e.newDecision(dry, tree, p, c.infos, Preempt, newScratch(len(c.infos))).shape()]
		a, okA := kept.get(dry.domains[0].id(), 0)
		b, okB := kept.get(dry.domains[1].id(), 1)
		if !okA || !okB {
			t.Fatalf("bounds kept: rack a %v, rack b %v; want both", okA, okB)
		}
		return a, b
	}
	start := now
	a, b := kept()
	within := func(life, most time.Duration) bool { return life > most*3/4 && life <= most }
	if lifeA := a.ttl(dry.domains[0].id()); !a.partial || !within(lifeA, partialTTL) {
		t.Errorf("rack a, whose gang reaches %d nodes outside it: partial %v, lives %s; want partial, the last quarter of %s", maxWatched+1, a.partial, lifeA, partialTTL)
	}
	if lifeB := b.ttl(dry.domains[1].id()); b.partial || !within(lifeB, boundTTL) {
		t.Errorf("rack b, whose gang reaches one node outside it: partial %v, lives %s; want whole, the last quarter of %s", b.partial, lifeB, boundTTL)
	}
	now = now.Add(partialTTL + time.Second)
	if a, b = kept(); !a.at.Equal(now) || !b.at.Equal(start) {
		t.Errorf("after %s: rack a bounded at %s, rack b at %s; want rack a bounded again, rack b's bound kept", partialTTL+time.Second, a.at.Sub(start), b.at.Sub(start))
	}
}

// Kept bounds are read by place among the offered domains; when the offered domains change
// (a rack added, the topology rebuilt in another order), each kept bound moves with its
// domain's id, and one no longer offered is forgotten.
func TestKeptBoundsFollowTheirDomains(t *testing.T) {
	c := boundCache{now: time.Now}
	a, b, x := Domain{Name: "rack a", Key: "z/a"}, Domain{Name: "rack b", Key: "z/b"}, Domain{Name: "rack x", Key: "z/x"}
	d := c.forDecision("s", "t", []Domain{a, b, x})
	for i, cost := range []int{1, 2, 3} {
		d.bounds.set(i, keptBound{cost: Cost{Pods: cost}, ok: true})
	}
	c.done(d)
	c2 := Domain{Name: "rack c", Key: "z/c"}
	k := c.forDecision("s", "t", []Domain{c2, b, a}).bounds
	for i, want := range []struct {
		d    Domain
		pods int
		kept bool
	}{{c2, 0, false}, {b, 2, true}, {a, 1, true}} {
		got, ok := k.get(want.d.id(), i)
		if ok != want.kept || got.cost.Pods != want.pods {
			t.Errorf("%s at %d: kept %v, %d pods; want %v, %d", want.d.Name, i, ok, got.cost.Pods, want.kept, want.pods)
		}
	}
	if n := k.kept(); n != 2 {
		t.Errorf("%d bounds kept, want 2 (rack x is no longer offered)", n)
	}
	if _, ok := k.get(a.id(), 0); ok {
		t.Error("a bound read at another domain's place")
	}
	k.forget(a.id(), 0) // not at its place: found by id
	if _, ok := k.get(a.id(), 2); ok {
		t.Error("rack a's bound kept after it was forgotten")
	}
}
