package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// Room is how many of a group's pending pods each domain of the level its pods must share
// could take, counted from the API objects: nodes' allocatable less the requests of the pods
// bound to them. It runs what the scheduler's filters would that can be run from the objects
// alone — the pods' requests (every resource NodeResourcesFit counts, extended ones too),
// node selectors and required node affinity, the nodes' taints and cordons — and lists the
// nodes those refuse, and why, apart: a domain none of whose nodes the pods may use is not
// room. The filters it cannot run (inter-pod affinity, topology spread, volumes, DRA claims,
// host ports) are named in Unchecked when the pods use them, so it can only be more hopeful
// than the scheduler, and says where.
type Room struct {
	// Level is the node label key of the domains ("" for the whole cluster).
	Level string `json:"level,omitempty"`
	// Pods is how many pods are pending and Need how many of them must fit together.
	Pods int `json:"pods"`
	Need int `json:"need"`
	// Request is what each pending pod asks for (the largest of them, if they differ).
	Request v1.ResourceList `json:"request"`
	// Pinned: the group's bound pods hold a domain, the only one counted.
	Pinned   bool     `json:"pinned,omitempty"`
	Domains  []Domain `json:"domains"`
	Excluded string   `json:"excluded,omitempty"`
	// Refused are the nodes the pods may not use, by why (a cordon, a taint they do not
	// tolerate, their node selector or affinity): they are in no domain's count.
	Refused []Refusal `json:"refused,omitempty"`
	// Unchecked names the scheduler's filters the pods are subject to that are not run here.
	Unchecked []string `json:"unchecked,omitempty"`
	// Short, when no usable node could take a pod even empty, names what every usable node
	// has too little of ("16 cpu: the largest allocatable is 8").
	Short string `json:"short,omitempty"`
	// Absent names the resources the pods ask for that no node of the cluster lists in its
	// allocatable (or lists as 0): a typo in the resource's name or a device plugin that does
	// not run, not a lack of room.
	Absent []string `json:"absent,omitempty"`
}

// Refusal is why some nodes are refused to the pods: the deciding reason, and the others
// that hold on the same nodes (each must go for the pods to use them). The pods' node
// selector and required affinity decide first: a node they exclude is not one the pods
// should run on, whatever else refuses it.
type Refusal struct {
	Why   string   `json:"why"`
	Also  []string `json:"also,omitempty"`
	Nodes int      `json:"nodes"`
}

// Usable is how many nodes the pods may use.
func (r *Room) Usable() int {
	n := 0
	for _, d := range r.Domains {
		n += d.Nodes
	}
	return n
}

// Domain is one domain's room.
type Domain struct {
	// Name is the domain's label value; In, the values of the levels above it, broadest
	// first, where another domain has the same name (racks named alike in two zones).
	Name string `json:"name"`
	In   string `json:"in,omitempty"`
	// Nodes counts the domain's nodes the pods may use, and Free is their room.
	Nodes int             `json:"nodes"`
	Free  v1.ResourceList `json:"free"`
	// Fits is how many of the pending pods its nodes could take at once.
	Fits int `json:"fits"`
	// Lower counts the pods bound there whose priority is below the group's: what ending
	// (or preempting) them could free; FitsWithoutLower is how many of the pending pods the
	// domain could take once they were gone.
	Lower            int `json:"lower"`
	FitsWithoutLower int `json:"fitsWithoutLower"`
	// Running counts the pods bound there: what ending or moving pods there could free.
	Running int `json:"running"`
}

// title is how messages call the domain: its name, and where it is when another domain has
// the same name.
func (d *Domain) title() string {
	if d.In != "" {
		return d.Name + " (in " + d.In + ")"
	}
	return d.Name
}

// Roomiest is the domain that takes the most pods, nil if there is none.
func (r *Room) Roomiest() *Domain {
	if r == nil || len(r.Domains) == 0 {
		return nil
	}
	return &r.Domains[0]
}

// roomFor computes the room of the pending pods of a group whose pods must share one domain
// of level (every node when level is ""), need of them together, on nodes holding running.
// A domain is the nodes that share their path of levels down to level, as the scheduler's
// (two racks of one name in two zones are two racks). pinned, when set, is the path of the
// only domain allowed (the group's pods already bound are there).
func roomFor(pending []*v1.Pod, need int, levels []string, level string, pinned []string, nodes []v1.Node, running []v1.Pod) *Room {
	r := &Room{Level: level, Pods: len(pending), Need: need, Request: largestRequest(pending), Pinned: len(pinned) > 0}
	priority := int32(0)
	for _, p := range pending {
		priority = max(priority, corev1helpers.PodPriority(p))
	}
	free := map[string]v1.ResourceList{}
	freeOfLower := map[string]v1.ResourceList{} // free were the lower-priority pods gone
	lower := map[string]int{}
	bound := map[string]int{}
	for i := range nodes {
		free[nodes[i].Name] = allocatable(&nodes[i])
		freeOfLower[nodes[i].Name] = allocatable(&nodes[i])
	}
	for i := range running {
		p := &running[i]
		f, ok := free[p.Spec.NodeName]
		if !ok || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		subtract(f, request(p))
		bound[p.Spec.NodeName]++
		if corev1helpers.PodPriority(p) < priority {
			lower[p.Spec.NodeName]++
		} else {
			subtract(freeOfLower[p.Spec.NodeName], request(p))
		}
	}
	byDomain := map[string][]*v1.Node{}
	paths := map[string][]string{}
	unlabelled := 0
	refused := map[string]*Refusal{}
	var usable []*v1.Node
	for i := range nodes {
		n := &nodes[i]
		if whys := refusal(n, pending); len(whys) > 0 {
			k := strings.Join(whys, "\x00")
			if refused[k] == nil {
				refused[k] = &Refusal{Why: whys[0], Also: whys[1:]}
			}
			refused[k].Nodes++
			continue
		}
		usable = append(usable, n)
		path := []string{"cluster"}
		if level != "" {
			path = domainPath(n, levels, level)
			if path == nil {
				unlabelled++
				continue
			}
		}
		if len(pinned) > 0 && !slices.Equal(path, pinned) {
			continue
		}
		k := strings.Join(path, "/")
		byDomain[k], paths[k] = append(byDomain[k], n), path
	}
	if unlabelled > 0 {
		r.Excluded = fmt.Sprintf("%d nodes without the label %s", unlabelled, level)
	}
	for _, f := range refused {
		if len(f.Also) == 0 {
			f.Also = nil
		}
		r.Refused = append(r.Refused, *f)
	}
	// The nodes the pods select but something else refuses first: that is what keeps the
	// pods off the nodes they ask for. Then the most nodes first.
	sort.Slice(r.Refused, func(i, j int) bool {
		a, b := r.Refused[i], r.Refused[j]
		if (a.Why == whyAffinity) != (b.Why == whyAffinity) {
			return b.Why == whyAffinity
		}
		if a.Nodes != b.Nodes {
			return a.Nodes > b.Nodes
		}
		return strings.Join(append([]string{a.Why}, a.Also...), ",") < strings.Join(append([]string{b.Why}, b.Also...), ",")
	})
	r.Unchecked = unchecked(pending)
	r.Short = short(pending, usable)
	r.Absent = absent(r.Request, nodes)
	named := map[string]int{}
	for _, path := range paths {
		named[path[len(path)-1]]++
	}
	for k, ns := range byDomain {
		path := paths[k]
		d := Domain{Name: path[len(path)-1], Nodes: len(ns), Free: v1.ResourceList{}}
		if named[d.Name] > 1 {
			var above []string
			for _, v := range path[:len(path)-1] {
				if v != "" {
					above = append(above, v)
				}
			}
			d.In = strings.Join(above, "/")
		}
		left := map[string]v1.ResourceList{}
		leftOfLower := map[string]v1.ResourceList{}
		for _, n := range ns {
			left[n.Name] = free[n.Name].DeepCopy()
			leftOfLower[n.Name] = freeOfLower[n.Name].DeepCopy()
			add(d.Free, free[n.Name])
			d.Lower += lower[n.Name]
			d.Running += bound[n.Name]
		}
		d.Fits = fits(pending, ns, left)
		d.FitsWithoutLower = d.Fits
		if d.Lower > 0 {
			d.FitsWithoutLower = fits(pending, ns, leftOfLower)
		}
		r.Domains = append(r.Domains, d)
	}
	sort.Slice(r.Domains, func(i, j int) bool {
		a, b := r.Domains[i], r.Domains[j]
		if a.Fits != b.Fits {
			return a.Fits > b.Fits
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.In < b.In
	})
	return r
}

// domainPath is a node's topology path (v1alpha1.NodeTopologyPath) down to level, nil if the
// node has no value there. A level that is not one of levels is a domain of its own, named
// by the node's value alone.
func domainPath(n *v1.Node, levels []string, level string) []string {
	i := slices.Index(levels, level)
	if i < 0 {
		if v := n.Labels[level]; v != "" {
			return []string{v}
		}
		return nil
	}
	path := v1alpha1.NodeTopologyPath(n, levels)
	if i >= len(path) || path[i] == "" {
		return nil
	}
	return path[:i+1]
}

// fits places pods, largest first, on the first node with room that takes them, and counts
// them.
func fits(pods []*v1.Pod, nodes []*v1.Node, left map[string]v1.ResourceList) int {
	sorted := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := request(sorted[i]), request(sorted[j])
		return a.Cpu().Cmp(*b.Cpu()) > 0
	})
	n := 0
	for _, p := range sorted {
		req := request(p)
		for _, node := range nodes {
			if !admits(node, p) || !covers(left[node.Name], req) {
				continue
			}
			subtract(left[node.Name], req)
			n++
			break
		}
	}
	return n
}

// request is what a pod takes from a node: its requests and one pod slot.
func request(p *v1.Pod) v1.ResourceList {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	req[v1.ResourcePods] = resource.MustParse("1")
	return req
}

// admits reports whether a node takes the pod as far as its cordon, taints, node selector and
// required node affinity go.
func admits(n *v1.Node, p *v1.Pod) bool { return len(refuses(n, p)) == 0 }

// Why a node refuses a pod, as the scheduler's filters say it, and the prefixes next matches.
const (
	whyCordoned = "cordoned (unschedulable)"
	whyTaint    = "a taint the pods do not tolerate"
	whyAffinity = "the pods' node selector or required node affinity does not match"
)

// refuses says every reason a node does not take the pod (none if it does), the deciding
// one first: its node selector and required node affinity (a node they exclude is not one
// the pod asks for), then the node's cordon, then each taint (NoSchedule, NoExecute) it does
// not tolerate — the filters NodeAffinity, NodeUnschedulable and TaintToleration.
func refuses(n *v1.Node, p *v1.Pod) []string {
	var whys []string
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil || !ok {
		whys = append(whys, whyAffinity)
	}
	if n.Spec.Unschedulable {
		tolerated := false
		for _, t := range p.Spec.Tolerations {
			if t.ToleratesTaint(klog.Background(), &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}, true) {
				tolerated = true
			}
		}
		if !tolerated {
			whys = append(whys, whyCordoned)
		}
	}
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), p.Spec.Tolerations, t, true) {
			whys = append(whys, fmt.Sprintf("%s: %s", whyTaint, t.ToString()))
		}
	}
	return whys
}

// refusal says why a node takes none of the pods (nothing if it takes any): the first pod's
// reasons.
func refusal(n *v1.Node, pods []*v1.Pod) []string {
	var first []string
	for i, p := range pods {
		whys := refuses(n, p)
		if len(whys) == 0 {
			return nil
		}
		if i == 0 {
			first = whys
		}
	}
	return first
}

// unchecked names the filters the pods are subject to that room does not run.
func unchecked(pods []*v1.Pod) []string {
	var affinity, spread, volumes, claims, ports bool
	for _, p := range pods {
		if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
			affinity = true
		}
		spread = spread || len(p.Spec.TopologySpreadConstraints) > 0
		claims = claims || len(p.Spec.ResourceClaims) > 0
		for _, v := range p.Spec.Volumes {
			volumes = volumes || v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil
		}
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				ports = ports || port.HostPort > 0
			}
		}
	}
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{affinity, "inter-pod affinity"}, {spread, "topology spread"}, {volumes, "volumes"}, {claims, "DRA claims"}, {ports, "host ports"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return out
}

// short names what no usable node has enough of for even one pod with nothing running on it
// ("" when some node could take one of the pods): what the pods must ask less of, or the
// nodes offer more of.
func short(pods []*v1.Pod, nodes []*v1.Node) string {
	if len(nodes) == 0 || len(pods) == 0 {
		return ""
	}
	for _, p := range pods {
		for _, n := range nodes {
			if admits(n, p) && covers(allocatable(n), request(p)) {
				return ""
			}
		}
	}
	req := request(pods[0])
	var lacking []string
	for _, name := range sortedNames(req) {
		q := req[name]
		if q.IsZero() || name == v1.ResourcePods {
			continue
		}
		var largest resource.Quantity
		enough := false
		for _, n := range nodes {
			a := n.Status.Allocatable[name]
			if a.Cmp(q) >= 0 {
				enough = true
				break
			}
			if a.Cmp(largest) > 0 {
				largest = a.DeepCopy()
			}
		}
		switch {
		case enough:
		case largest.IsZero():
			lacking = append(lacking, fmt.Sprintf("%s %s (no node the pods may use has any)", q.String(), name))
		default:
			lacking = append(lacking, fmt.Sprintf("%s %s (the most a node the pods may use has is %s)", q.String(), name, largest.String()))
		}
	}
	if len(lacking) == 0 {
		return "no single node the pods may use has all they ask for"
	}
	return strings.Join(lacking, ", ")
}

// absent names the resources of req that no node lists in its allocatable with more than 0
// (cpu, memory and pods aside: every node has those).
func absent(req v1.ResourceList, nodes []v1.Node) []string {
	var out []string
	for _, name := range sortedNames(req) {
		q := req[name]
		if q.IsZero() || name == v1.ResourceCPU || name == v1.ResourceMemory || name == v1.ResourcePods || name == v1.ResourceEphemeralStorage {
			continue
		}
		has := false
		for i := range nodes {
			if a, ok := nodes[i].Status.Allocatable[name]; ok && !a.IsZero() {
				has = true
				break
			}
		}
		if !has {
			out = append(out, string(name))
		}
	}
	return out
}

// sortedNames lists a resource list's names, cpu and memory first.
func sortedNames(l v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return order(string(names[i])) < order(string(names[j])) })
	return names
}

func allocatable(n *v1.Node) v1.ResourceList {
	out := v1.ResourceList{}
	for k, q := range n.Status.Allocatable {
		out[k] = q.DeepCopy()
	}
	return out
}

// covers reports whether free holds req (a resource the node does not list counts as none).
func covers(free, req v1.ResourceList) bool {
	for k, q := range req {
		if q.IsZero() {
			continue
		}
		f, ok := free[k]
		if !ok || f.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

func subtract(from, req v1.ResourceList) {
	for k, q := range req {
		if f, ok := from[k]; ok {
			f.Sub(q)
			from[k] = f
		}
	}
}

func add(to, more v1.ResourceList) {
	for k, q := range more {
		f := to[k]
		f.Add(q)
		to[k] = f
	}
}

// largestRequest is the largest of each resource the pods request (the pod slot aside).
func largestRequest(pods []*v1.Pod) v1.ResourceList {
	out := v1.ResourceList{}
	for _, p := range pods {
		for k, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			if cur, ok := out[k]; !ok || q.Cmp(cur) > 0 {
				out[k] = q.DeepCopy()
			}
		}
	}
	return out
}

// describe renders a resource list for people: "32 cpu, 64Gi memory, 8 nvidia.com/gpu",
// restricted to the resources in keys when keys is set.
func describe(l v1.ResourceList, keys v1.ResourceList) string {
	var names []string
	for k := range l {
		if k == v1.ResourcePods {
			continue
		}
		if _, ok := keys[k]; keys != nil && !ok {
			continue
		}
		names = append(names, string(k))
	}
	sort.Slice(names, func(i, j int) bool { return order(names[i]) < order(names[j]) })
	var parts []string
	for _, k := range names {
		q := l[v1.ResourceName(k)]
		parts = append(parts, q.String()+" "+k)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// order puts cpu and memory first, then the rest by name.
func order(name string) string {
	switch name {
	case string(v1.ResourceCPU):
		return "0"
	case string(v1.ResourceMemory):
		return "1"
	}
	return "2" + name
}
