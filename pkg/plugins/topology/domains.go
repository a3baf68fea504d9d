package topology

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// node is one node as the planner sees it: its place in the topology and its free capacity.
type node struct {
	idx  int
	name string
	obj  *v1.Node
	// path holds the node's label value at each level, broadest first; it is cut at the
	// first missing label, so a node without a rack label belongs to no rack (nor host
	// below it), as upstream drops unlabeled nodes from constrained placements.
	path []string
	free podgroup.Resources
	// empty: no pod runs on the node and no plan promised it anything.
	empty bool
}

// cluster is the topology of the nodes of one scheduling cycle.
type cluster struct {
	levels []string
	nodes  []*node
	byName map[string]*node
	// members lists the nodes of every domain, by domain key.
	members map[string][]*node
}

// newCluster indexes nodes by topology path, with their free capacity minus what other
// trees' plans promised.
func newCluster(levels []string, infos []fwk.NodeInfo, promised map[string]podgroup.Resources) *cluster {
	c := &cluster{levels: levels, nodes: make([]*node, 0, len(infos)), byName: make(map[string]*node, len(infos))}
	for _, ni := range infos {
		n := ni.Node()
		if n == nil {
			continue
		}
		path := make([]string, 0, len(levels))
		for _, l := range levels {
			v, ok := n.Labels[l]
			if !ok || v == "" {
				break
			}
			path = append(path, v)
		}
		free := podgroup.FreeOn(ni)
		_, isPromised := promised[n.Name]
		if isPromised {
			free.Sub(promised[n.Name])
		}
		nd := &node{idx: len(c.nodes), name: n.Name, obj: n, path: path, free: free, empty: len(ni.GetPods()) == 0 && !isPromised}
		c.nodes = append(c.nodes, nd)
		c.byName[n.Name] = nd
	}
	c.members = map[string][]*node{}
	for _, n := range c.nodes {
		for l := range n.path {
			k, _ := n.domainOf(l)
			c.members[k] = append(c.members[k], n)
		}
	}
	return c
}

// levelOf returns the index of a label key among the levels, or -1.
func (c *cluster) levelOf(key string) int {
	for i, l := range c.levels {
		if l == key {
			return i
		}
	}
	return -1
}

// domain is a set of nodes that share their labels down to a level.
type domain struct {
	level int    // -1 for "anywhere"
	key   string // the path down to level, e.g. "zone-a/block-1/rack-3"
	nodes []*node
}

// name is how messages call the domain: its own label value.
func (d *domain) name() string {
	if i := strings.LastIndex(d.key, "/"); i >= 0 {
		return d.key[i+1:]
	}
	return d.key
}

// split returns the domains of a level among nodes, in a stable order.
func split(nodes []*node, level int) []*domain {
	byKey := map[string]*domain{}
	var out []*domain
	for _, n := range nodes {
		if len(n.path) <= level {
			continue
		}
		key := strings.Join(n.path[:level+1], "/")
		d := byKey[key]
		if d == nil {
			d = &domain{level: level, key: key}
			byKey[key] = d
			out = append(out, d)
		}
		d.nodes = append(d.nodes, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// domainOf returns the key of the domain of a level a node is in, or false.
func (n *node) domainOf(level int) (string, bool) {
	if level < 0 {
		return "", true
	}
	if len(n.path) <= level {
		return "", false
	}
	return strings.Join(n.path[:level+1], "/"), true
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
// keeps plans away from nodes that could never pass it.
type eligibility struct {
	nodes []*node
	cache map[string][]bool
}

func newEligibility(nodes []*node) *eligibility {
	return &eligibility{nodes: nodes, cache: map[string][]bool{}}
}

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// of returns, indexed by node, whether pod may run there.
func (e *eligibility) of(pod *v1.Pod) []bool {
	key := fmt.Sprintf("%v|%v|%v", pod.Spec.NodeSelector, pod.Spec.Affinity, pod.Spec.Tolerations)
	if ok, hit := e.cache[key]; hit {
		return ok
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	noSchedule := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	ok := make([]bool, len(e.nodes))
	for i, n := range e.nodes {
		if match, err := affinity.Match(n.obj); err != nil || !match {
			continue
		}
		taints := n.obj.Spec.Taints
		if n.obj.Spec.Unschedulable {
			taints = append(append([]v1.Taint(nil), taints...), unschedulableTaint)
		}
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, pod.Spec.Tolerations, noSchedule, true); untolerated {
			continue
		}
		ok[i] = true
	}
	e.cache[key] = ok
	return ok
}
