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
// bound to them. It honors the pods' requests, node selectors and required node affinity,
// the nodes' taints and cordons; it does not run the scheduler's other filters (pod affinity,
// spread, volumes, DRA), so it can only be more hopeful than the scheduler.
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
}

// Domain is one domain's room.
type Domain struct {
	// Name is the domain's label value; In, the values of the levels above it, broadest
	// first, where another domain has the same name (racks named alike in two zones).
	Name  string          `json:"name"`
	In    string          `json:"in,omitempty"`
	Nodes int             `json:"nodes"`
	Free  v1.ResourceList `json:"free"`
	// Fits is how many of the pending pods its nodes could take at once.
	Fits int `json:"fits"`
	// Lower counts the pods bound there whose priority is below the group's: what ending
	// (or preempting) them could free.
	Lower int `json:"lower"`
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
	lower := map[string]int{}
	for i := range nodes {
		free[nodes[i].Name] = allocatable(&nodes[i])
	}
	for i := range running {
		p := &running[i]
		f, ok := free[p.Spec.NodeName]
		if !ok || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		subtract(f, resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		subtract(f, v1.ResourceList{v1.ResourcePods: resource.MustParse("1")})
		if corev1helpers.PodPriority(p) < priority {
			lower[p.Spec.NodeName]++
		}
	}
	byDomain := map[string][]*v1.Node{}
	paths := map[string][]string{}
	unlabelled := 0
	for i := range nodes {
		n := &nodes[i]
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
		for _, n := range ns {
			left[n.Name] = free[n.Name].DeepCopy()
			add(d.Free, free[n.Name])
			d.Lower += lower[n.Name]
		}
		d.Fits = fits(pending, ns, left)
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
func admits(n *v1.Node, p *v1.Pod) bool {
	if n.Spec.Unschedulable {
		return false
	}
	noSchedule := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, noSchedule, true); untolerated {
		return false
	}
	ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n)
	return err == nil && ok
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
