package topology

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// node is one node as the planner sees it: its place in the topology.
type node struct {
	idx  int
	name string
	obj  *v1.Node
	// path holds the node's label value at each level, broadest first
	// (v1alpha1.NodeTopologyPath): "" at a level whose label it lacks, where it is in no
	// domain (a node without a rack label is in no rack, as upstream drops unlabeled nodes
	// from constrained placements), while still in the domains of the levels it has.
	path []string
	// keys holds the key of the node's domain at each level of path, "" where it is in none;
	// doms the domain itself, nil where it is in none.
	keys []string
	doms []*domain
	// cpu is the node's allocatable CPU in millicores, read once per Node object: plans
	// that break ties between domains by their size sum it over every domain.
	cpu int64
}

// setObj adopts a node's object.
func (n *node) setObj(obj *v1.Node) {
	n.obj, n.cpu = obj, 0
	if obj != nil {
		n.cpu = obj.Status.Allocatable.Cpu().MilliValue()
	}
}

// domain is a set of nodes that share their labels down to a level.
type domain struct {
	level int    // -1 for "anywhere"
	key   string // the path down to level, e.g. "zone-a/block-1/rack-3"; "" for anywhere
	// id is the domain's place in what its topology keeps by domain (versions, the rooms
	// of room.go): a plan that ranks every rack reads them from lists, not maps.
	id    int
	nodes []*node
	// cpu is the allocatable CPU of its nodes in millicores (node.cpu summed), kept as
	// Node objects change: a rack-required plan breaks ties between every rack of the
	// cluster by it.
	cpu int64
}

// name is how messages call the domain: its own label value.
func (d *domain) name() string {
	if i := strings.LastIndex(d.key, "/"); i >= 0 {
		return d.key[i+1:]
	}
	return d.key
}

// domainOf returns the key of the domain of a level a node is in, or false.
func (n *node) domainOf(level int) (string, bool) {
	if level < 0 {
		return "", true
	}
	if len(n.keys) <= level || n.keys[level] == "" {
		return "", false
	}
	return n.keys[level], true
}

// topology is the static part of a cluster: where each node is and which domains exist.
// It is built once and kept across plans while the nodes and their topology labels stay
// the same (a new Node object with the same labels does not rebuild it).
type topology struct {
	levels []string
	objs   []*v1.Node
	nodes  []*node
	byName map[string]*node
	// sub lists, per domain key ("" for anywhere) and deeper level, the domains inside it.
	sub map[string]map[int][]*domain
	// domains are the domains by key; anywhere is the domain of every node.
	domains  map[string]*domain
	anywhere *domain

	// mu guards what plans keep of the nodes across plans, so that a plan reads again only
	// the nodes that changed since the last one (sameAs, sameAt): each node's free capacity,
	// by the generation of its NodeInfo, and which nodes each pod spec may use (eligibility).
	mu   sync.Mutex
	gens []int64
	free []capacity.Resources
	elig *eligibility
	// versions gives each domain (by id) a new version whenever one of its nodes changed:
	// the rooms of domains cached for plans (room.go) are kept by version. base is every
	// domain's version when the topology was built (0 in versions: unchanged since), above
	// every version of the topology it replaced: no two states of a domain share a version
	// (versionOf).
	versions      []uint64
	version, base uint64
	// offered are the domains gang preemption is offered, by level (dryRun.Domains).
	offered map[int]*offered
	// ranking is bestFitFor's list of scored domains, reused from plan to plan (plans of a
	// topology run one at a time, as its eligibility already assumes): a rack-required gang
	// ranks every rack of the cluster, and a list made afresh at each plan was, after its
	// shapes' verdicts, what a plan allocated in proportion to the cluster. It holds only
	// this topology's domains.
	ranking []scoredDomain
}

// versionOf returns the version of d, one of t's domains: it changes whenever one of its
// nodes or their pods change, and never comes back (t.base for a domain t does not have).
// The caller holds t.mu.
func (t *topology) versionOf(d *domain) uint64 {
	if d != nil && t.versions[d.id] != 0 {
		return t.versions[d.id]
	}
	return t.base
}

// lastVersion is the last version t gave.
func (t *topology) lastVersion() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.version
}

// fullCheckInterval is how often a topology told which nodes changed (NodeChanges) still
// checks every node: what it was told may miss a change for a moment (changes.go).
const fullCheckInterval = time.Second

// topologyCache keeps the topology of the last snapshot.
type topologyCache struct {
	mu   sync.Mutex
	last *topology
	// changed are the nodes that may have changed since the last plan; nil: every node is
	// checked at each plan.
	changed *changedNodes
	// simulated are the nodes the last plan read from a preemption dry run's copies: the next
	// plan reads them back from the snapshot.
	simulated []string
	// lastFull is when every node was last checked; now reads the clock.
	lastFull time.Time
	now      func() time.Time
}

// get returns the topology of infos, reusing the last one when the nodes and their
// topology labels did not change.
func (tc *topologyCache) get(levels []string, infos []fwk.NodeInfo) *topology {
	return tc.read(levels, infos, nil)
}

// getSimulated returns the topology of infos that a preemption dry run simulates: copies of
// the snapshot's NodeInfos of the simulated nodes, with victims taken out, which no informer
// tells of. The simulated nodes are read with the ones told changed, and the next plan reads
// them back from the snapshot: a dry run reads the nodes it simulates, not every node of the
// cluster.
func (tc *topologyCache) getSimulated(levels []string, infos []fwk.NodeInfo, simulated []string) *topology {
	return tc.read(levels, infos, simulated)
}

// read returns the topology of infos, in which the named nodes are simulated (none: infos
// are the snapshot's). It reads the nodes told changed, those the last plan read simulated and
// those simulated now, or every node when told to or once a fullCheckInterval.
func (tc *topologyCache) read(levels []string, infos []fwk.NodeInfo, simulated []string) *topology {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.changed == nil {
		return tc.checkAllLocked(levels, infos)
	}
	back := tc.simulated
	tc.simulated = simulated
	now := time.Now()
	if tc.now != nil {
		now = tc.now()
	}
	told, all := tc.changed.take()
	if t := tc.last; t != nil && !all && now.Sub(tc.lastFull) < fullCheckInterval {
		if unchanged, ok := t.sameAt(infos, sets.List(sets.New(told...).Insert(back...).Insert(simulated...))); ok {
			// A node told changed and read unchanged has its change still to come: it stays
			// told. So does one read from a copy, or read back from one: that it changed says
			// nothing of the change it was told of.
			stays := sets.New(back...).Insert(simulated...).Insert(unchanged...)
			tc.changed.keep(slices.DeleteFunc(told, func(n string) bool { return !stays.Has(n) }))
			return t
		}
	}
	tc.lastFull = now
	return tc.checkAllLocked(levels, infos)
}

// checkAllLocked returns the last topology brought up to date with every node of infos, or a
// new one when infos are not its nodes.
func (tc *topologyCache) checkAllLocked(levels []string, infos []fwk.NodeInfo) *topology {
	if t := tc.last; t != nil && t.sameAs(infos) {
		return t
	}
	base := uint64(1)
	if tc.last != nil {
		base = tc.last.lastVersion() + 1
	}
	tc.last = buildTopology(levels, infos, tc.last)
	tc.last.base, tc.last.version = base, base
	return tc.last
}

// sameAs reports whether infos are the nodes of t, in order, with the same paths, and brings
// what t keeps of each node up to date: a Node object that changed without changing its path
// is adopted (and checked again for eligibility), and a node's free capacity is read again.
// Only nodes whose NodeInfo has a new generation are looked at: the scheduler's cache gives a
// NodeInfo a new one at every change of its node or its pods.
func (t *topology) sameAs(infos []fwk.NodeInfo) bool {
	if len(infos) != len(t.objs) {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, ni := range infos {
		if _, ok := t.refreshLocked(i, ni); !ok {
			return false
		}
	}
	return true
}

// sameAt is sameAs for the named nodes only, the ones that may have changed since the last
// plan (NodeChanges). It returns the names whose NodeInfo did not change yet (their change
// is still to reach the snapshot), and false when infos are not the nodes of t or a named
// node is not where t has it.
func (t *topology) sameAt(infos []fwk.NodeInfo, names []string) (pending []string, ok bool) {
	if len(infos) != len(t.objs) {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range names {
		nd := t.byName[name]
		if nd == nil {
			pending = append(pending, name) // a node the snapshot does not have yet
			continue
		}
		ni := infos[nd.idx]
		if n := ni.Node(); n == nil || n.Name != name {
			return nil, false
		}
		changed, ok := t.refreshLocked(nd.idx, ni)
		if !ok {
			return nil, false
		}
		if !changed {
			pending = append(pending, name)
		}
	}
	return pending, true
}

// refreshLocked reads node i again if its NodeInfo has a new generation (changed); false ok
// when it is no longer the node t has at i, or its path changed.
func (t *topology) refreshLocked(i int, ni fwk.NodeInfo) (changed, ok bool) {
	g := ni.GetGeneration()
	if g == t.gens[i] && g != 0 {
		return false, true
	}
	if n := ni.Node(); n != t.objs[i] {
		if n == nil || n.Name != t.nodes[i].name || !equalPaths(pathOf(n, t.levels), t.nodes[i].path) {
			return false, false
		}
		t.objs[i] = n
		was := t.nodes[i].cpu
		t.nodes[i].setObj(n)
		t.anywhere.cpu += t.nodes[i].cpu - was
		for _, d := range t.nodes[i].doms {
			if d != nil {
				d.cpu += t.nodes[i].cpu - was
			}
		}
		t.nodeChangedLocked(i)
	}
	t.gens[i], t.free[i] = g, freeOf(ni)
	t.version++
	t.versions[t.anywhere.id] = t.version
	for _, d := range t.nodes[i].doms {
		if d != nil {
			t.versions[d.id] = t.version
		}
	}
	return true, true
}

// nodeChangedLocked forgets which pod specs may use node i, after its Node object changed.
func (t *topology) nodeChangedLocked(i int) {
	if t.elig == nil {
		return
	}
	for _, e := range t.elig.cache {
		e.state[i] = 0
	}
}

// freeOf is FreeOn of a node, nothing where the node is gone.
func freeOf(ni fwk.NodeInfo) capacity.Resources {
	if ni.Node() == nil {
		return capacity.Resources{}
	}
	return capacity.FreeOn(ni)
}

// buildTopology builds the topology of infos. prev, if not nil, is the topology of the same
// levels that infos replace (a node added or deleted since): what it read of a Node object
// infos still hold (its path and size, and which pod specs may use it) is taken from it, not
// read again. A node added to a cluster of 15,000 made the next plan read every node's
// labels and check every node's eligibility again, on the path from the node's arrival to
// the gang bound on it (test/integration/gang's TestReactionUnderLoad).
func buildTopology(levels []string, infos []fwk.NodeInfo, prev *topology) *topology {
	t := &topology{levels: levels, objs: make([]*v1.Node, len(infos)), byName: make(map[string]*node, len(infos)),
		sub:  map[string]map[int][]*domain{},
		gens: make([]int64, len(infos)), free: make([]capacity.Resources, len(infos))}
	var was []int // the index in prev of each node prev read from the same object; -1 for none
	if prev != nil {
		prev.mu.Lock() // its objects and eligibility, which plans refresh under it
		defer prev.mu.Unlock()
		was = make([]int, len(infos))
	}
	for i, ni := range infos {
		n := ni.Node()
		t.objs[i], t.gens[i], t.free[i] = n, ni.GetGeneration(), freeOf(ni)
		nd := &node{idx: i}
		if was != nil {
			was[i] = -1
		}
		switch old := prev.sameNode(n); {
		case old != nil:
			nd.name, nd.path, nd.keys, nd.obj, nd.cpu = old.name, old.path, old.keys, old.obj, old.cpu
			was[i] = old.idx
		case n != nil:
			nd.name, nd.path = n.Name, pathOf(n, levels)
			nd.setObj(n)
			nd.keys = make([]string, len(nd.path))
			for l, v := range nd.path {
				if v != "" {
					nd.keys[l] = strings.Join(nd.path[:l+1], "/")
				}
			}
		}
		t.nodes = append(t.nodes, nd)
		if n != nil {
			t.byName[n.Name] = nd
		}
	}
	domains := map[string]*domain{}
	t.domains, t.anywhere = domains, &domain{level: -1, nodes: t.nodes}
	for _, n := range t.nodes {
		t.anywhere.cpu += n.cpu
	}
	add := func(parent string, d *domain) {
		if t.sub[parent] == nil {
			t.sub[parent] = map[int][]*domain{}
		}
		t.sub[parent][d.level] = append(t.sub[parent][d.level], d)
	}
	for _, n := range t.nodes {
		for l, k := range n.keys {
			if k == "" {
				continue
			}
			d := domains[k]
			if d == nil {
				d = &domain{level: l, key: k, id: len(domains) + 1} // anywhere is 0
				domains[k] = d
				add("", d)
				for pl := 0; pl < l; pl++ {
					if n.keys[pl] != "" {
						add(n.keys[pl], d)
					}
				}
			}
			d.nodes = append(d.nodes, n)
			d.cpu += n.cpu
			if n.doms == nil {
				n.doms = make([]*domain, len(n.keys))
			}
			n.doms[l] = d
		}
	}
	t.versions = make([]uint64, len(domains)+1)
	for _, byLevel := range t.sub {
		for _, ds := range byLevel {
			slices.SortFunc(ds, func(a, b *domain) int { return strings.Compare(a.key, b.key) })
		}
	}
	if prev != nil && prev.elig != nil {
		t.elig = prev.elig.carried(t.nodes, was)
	}
	return t
}

// sameNode returns t's node read from Node object n, nil if t has none (or t is nil). The
// caller holds t.mu.
func (t *topology) sameNode(n *v1.Node) *node {
	if t == nil || n == nil {
		return nil
	}
	if old := t.byName[n.Name]; old != nil && t.objs[old.idx] == n {
		return old
	}
	return nil
}

func pathOf(n *v1.Node, levels []string) []string {
	return v1alpha1.NodeTopologyPath(n, levels)
}

func equalPaths(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cluster is the topology of one scheduling cycle and the free capacity of its nodes: each
// node's allocatable minus what its pods (bound and assumed) request and what other trees'
// plans promised. It reads the topology's free capacity of the nodes (which the topology's
// next refresh changes: a cluster serves one plan) and keeps its own where something is
// promised.
type cluster struct {
	*topology
	base []capacity.Resources
	over map[int]capacity.Resources
}

// infoOf returns the named node's info in infos, a list of t's nodes in t's order (the
// snapshot's, or a dry run's copy of it): found by t's index, not by reading the list, so
// that what reservations hold is read on their nodes alone, not on every node of the
// cluster. Nil if infos has no such node.
func (t *topology) infoOf(infos []fwk.NodeInfo, name string) fwk.NodeInfo {
	if nd, ok := t.byName[name]; ok && nd.idx < len(infos) {
		if n := infos[nd.idx].Node(); n != nil && n.Name == name {
			return infos[nd.idx]
		}
	}
	for _, ni := range infos { // infos are not t's nodes: a topology being replaced
		if n := ni.Node(); n != nil && n.Name == name {
			return ni
		}
	}
	return nil
}

// newCluster adds the free capacity of this cycle to t, as topologyCache.get refreshed it
// from the cycle's snapshot, and what other trees' plans promised.
func newCluster(t *topology, promised map[string]capacity.Resources) *cluster {
	t.mu.Lock()
	c := &cluster{topology: t, base: t.free, over: map[int]capacity.Resources{}}
	t.mu.Unlock()
	for name, p := range promised {
		if n, ok := t.byName[name]; ok && t.objs[n.idx] != nil {
			r := c.base[n.idx].Clone()
			r.Sub(p)
			c.over[n.idx] = r
		}
	}
	return c
}

// freeAt returns the free capacity of the node of index i.
func (c *cluster) freeAt(i int) capacity.Resources {
	if r, ok := c.over[i]; ok {
		return r
	}
	return c.base[i]
}

// within returns the domains of a level inside d, in a stable order.
func (t *topology) within(d *domain, level int) []*domain {
	return t.sub[d.key][level]
}

// constraintLevels returns the levels of a group's Required and Preferred keys, -1 if unset.
// A slice constraint (sliceSize) is not the group's Required level: it constrains its
// slices, not the group (sliceOf).
func (t *topology) constraintLevels(g *podgroup.GroupView) (required, preferred int) {
	required, preferred = -1, -1
	for _, c := range g.Topology {
		if c.SliceSize != nil {
			continue
		}
		l := t.levelOf(c.Key)
		if c.Mode == v1alpha1.TopologyPreferred {
			preferred = l
		} else {
			required = l
		}
	}
	return required, preferred
}

// levelOf returns the index of a label key among the levels, or -1.
func (t *topology) levelOf(key string) int {
	for i, l := range t.levels {
		if l == key {
			return i
		}
	}
	return -1
}

// anchor returns the first of the named nodes the topology has: where a group's placed
// members are, read from one that is not gone. Nil when every one is gone.
func (t *topology) anchor(names []string) *node {
	for _, name := range names {
		if n, ok := t.byName[name]; ok {
			return n
		}
	}
	return nil
}

// levelName is how messages call a level: the name part of its label key ("rack"), with the
// hostname level called "node".
func levelName(key string) string {
	if key == v1.LabelHostname {
		return "node"
	}
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return key[i+1:]
	}
	return key
}

// eligibility caches which nodes a pod may use at all, by the parts of its spec that decide
// it without looking at other pods: node selector and required node affinity, tolerations
// (of taints and of cordoning). Filter still checks everything on the chosen node; this
// keeps plans away from nodes that could never pass it. Nodes are checked when first asked
// about, so a plan that looks at one rack does not check the whole cluster, and the answers
// are kept across plans (topology.eligibility) until the node's object changes. Plans run one
// at a time, in the scheduling cycle.
type eligibility struct {
	nodes []*node
	cache map[string]*eligible
}

func newEligibility(nodes []*node) *eligibility {
	return &eligibility{nodes: nodes, cache: map[string]*eligible{}}
}

// maxEligibilitySpecs bounds the pod specs a topology keeps eligibility for across plans (a
// byte per node each).
const maxEligibilitySpecs = 256

// eligibility returns the topology's eligibility, kept across plans.
func (t *topology) eligibility() *eligibility {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.elig == nil || len(t.elig.cache) >= maxEligibilitySpecs {
		t.elig = newEligibility(t.nodes)
	}
	return t.elig
}

// eligible answers for one pod spec, node by node.
type eligible struct {
	pe      podEligibility
	nodes   []*node
	state   []int8 // 0 unknown (or its Node object changed since), 1 allowed, 2 refused
	reasons map[int]string
	// rooms caches, per shape (roomKey) and domain key, the room of the domain on the nodes
	// the spec may use (room.go).
	rooms map[string][]roomOf
}

// allows reports whether the pod may run on the node of index i.
func (e *eligible) allows(i int) bool {
	if e.state[i] == 0 {
		e.state[i] = 2
		why := "node not found"
		if n := e.nodes[i].obj; n != nil {
			why = e.pe.refusal(n)
		}
		if why == "" {
			e.state[i] = 1
			delete(e.reasons, i)
		} else {
			e.reasons[i] = why
		}
	}
	return e.state[i] == 1
}

// why says why the pod may not run on the node of index i, "" if it may.
func (e *eligible) why(i int) string {
	if e.allows(i) {
		return ""
	}
	return e.reasons[i]
}

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// eligibilityKey is what decides where a pod may run, as a cache key: its node selector,
// required node affinity and tolerations.
func eligibilityKey(pod *v1.Pod) string {
	var required *v1.NodeSelector
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	key, err := json.Marshal(struct {
		Selector    map[string]string `json:"s,omitempty"`
		Required    *v1.NodeSelector  `json:"r,omitempty"`
		Tolerations []v1.Toleration   `json:"t,omitempty"`
	}{pod.Spec.NodeSelector, required, pod.Spec.Tolerations})
	if err != nil {
		return string(pod.UID) // cannot happen; a key of its own is always right
	}
	return string(key)
}

// carried returns e for nodes, of which the i-th was e's node was[i] (-1: a node e has not
// checked, or whose Node object changed since): the answers for those nodes are kept, the
// others are checked when first asked about. Rooms are not kept: they are by domain, and
// nodes are in new domains.
func (e *eligibility) carried(nodes []*node, was []int) *eligibility {
	out := newEligibility(nodes)
	for key, old := range e.cache {
		el := newEligible(old.pe, nodes)
		for i, j := range was {
			if j < 0 {
				continue
			}
			el.state[i] = old.state[j]
			if why, ok := old.reasons[j]; ok {
				el.reasons[i] = why
			}
		}
		out.cache[key] = el
	}
	return out
}

// of returns where pod may run.
func (e *eligibility) of(pod *v1.Pod) *eligible {
	key := eligibilityKey(pod)
	if el, hit := e.cache[key]; hit {
		return el
	}
	el := newEligible(newPodEligibility(pod), e.nodes)
	e.cache[key] = el
	return el
}

// newEligible answers for pe on nodes, none checked yet.
func newEligible(pe podEligibility, nodes []*node) *eligible {
	return &eligible{pe: pe, nodes: nodes, state: make([]int8, len(nodes)), reasons: map[int]string{}, rooms: map[string][]roomOf{}}
}

// podEligibility checks one pod against nodes.
type podEligibility struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []v1.Toleration
}

func newPodEligibility(pod *v1.Pod) podEligibility {
	return podEligibility{affinity: nodeaffinity.GetRequiredNodeAffinity(pod), tolerations: pod.Spec.Tolerations}
}

// refusal says why the pod may not run on the node, in the words of the upstream Filter
// plugin that would refuse it ("" if it may): its selector and required affinity must match
// the node and its tolerations cover the node's NoSchedule and NoExecute taints and
// cordoning.
func (e podEligibility) refusal(n *v1.Node) string {
	if match, err := e.affinity.Match(n); err != nil || !match {
		return selectorMismatch
	}
	if n.Spec.Unschedulable {
		if _, tolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), []v1.Taint{unschedulableTaint}, e.tolerations, nil, true); tolerated {
			return "node(s) were unschedulable"
		}
	}
	noSchedule := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, e.tolerations, noSchedule, true); untolerated {
		// The taint is named (upstream's TaintToleration does not): it is what a person
		// tolerates or removes.
		return untoleratedTaint + " " + t.ToString()
	}
	return ""
}

// Why the pods may not use a node, in the words of upstream's Filter plugins; a taint's
// reason names the taint.
const (
	selectorMismatch = podgroup.SelectorMismatch
	untoleratedTaint = "node(s) had untolerated taint"
)

// listReasons renders every reason given and how many nodes gave it, the deciding first:
// "3 node(s) had untolerated taint gpu=true:NoSchedule, 5 node(s) didn't match Pod's node
// affinity/selector".
func listReasons(reasons map[string]int) string {
	whys := podgroup.DecidingFirst(reasons)
	for i, why := range whys {
		whys[i] = fmt.Sprintf("%d %s", reasons[why], why)
	}
	return strings.Join(whys, ", ")
}

// absent names the extended resources need asks for that no node of the cluster lists in
// its allocatable (or lists as 0): a typo in the resource's name, or a device plugin that
// does not run — no amount of room elsewhere would help.
func (t *topology) absent(need capacity.Resources) []string {
	var out []string
	for name, v := range need.Scalar {
		if v <= 0 {
			continue
		}
		has := false
		for _, n := range t.nodes {
			if n.obj == nil {
				continue
			}
			if q, ok := n.obj.Status.Allocatable[name]; ok && !q.IsZero() {
				has = true
				break
			}
		}
		if !has {
			out = append(out, string(name))
		}
	}
	sort.Strings(out)
	return out
}
