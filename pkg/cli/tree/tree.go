// Package tree builds and renders the view `kubectl lockstep get` shows: gang trees
// (CompositePodGroups, PodGroups, member pods) with their policies, counts, conditions and
// each pod's place in the topology.
package tree

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/coscheduling"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/leaderworkerset"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/raycluster"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Inputs are the objects a view is built from.
type Inputs struct {
	PodGroups  []v1alpha1.PodGroup
	Composites []v1alpha1.CompositePodGroup
	Pods       []v1.Pod
	Nodes      []v1.Node
	// Levels are the topology label keys, broadest first.
	Levels []string
}

// Group is one PodGroup or CompositePodGroup and what lies below it.
type Group struct {
	Kind string `json:"kind"`
	// API is the group's API when it is not lockstep's: scheduling.k8s.io for a native group.
	API       string     `json:"api,omitempty"`
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Policy    string     `json:"policy"` // gang or basic
	Min       int32      `json:"min"`    // minCount or minGroupCount; 1 for basic
	Topology  []string   `json:"topology,omitempty"`
	Pods      *Counts    `json:"pods,omitempty"`
	Condition *Condition `json:"condition,omitempty"`
	// Owner is the object the group was made for (a Job, a JobSet, a scheduler-plugins
	// PodGroup...): its controller. Workload is the Workload it was stamped from.
	Owner    *Owner `json:"owner,omitempty"`
	Workload string `json:"workload,omitempty"`
	// Problem is set on a group the scheduler never tries as it stands, shown as a root: its
	// parent is missing, is itself, or its parents form a cycle; or it does not exist at all
	// (Missing) and pods name it.
	Problem string `json:"problem,omitempty"`
	// Parent is the CompositePodGroup the group's spec names as its parent
	// (parentCompositePodGroupName, which cannot be changed once set).
	Parent string `json:"parent,omitempty"`
	// Missing: no such PodGroup exists; the group is shown for the pods that name it.
	Missing  bool     `json:"missing,omitempty"`
	Children []*Group `json:"children,omitempty"`
	Members  []Member `json:"members,omitempty"`
}

// Owner is a group's controller.
type Owner struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// ownerOf is an object's controller, nil if it has none.
func ownerOf(obj metav1.Object) *Owner {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return &Owner{Kind: ref.Kind, Name: ref.Name}
	}
	return nil
}

func workloadOf(ref *v1alpha1.WorkloadReference) string {
	if ref == nil {
		return ""
	}
	return ref.WorkloadName
}

// Counts are the pods of a PodGroup.
type Counts struct {
	Exist int `json:"exist"`
	Bound int `json:"bound"`
}

// Condition is what a group's conditions say of it now: its PodGroupInitiallyScheduled
// condition, or, while its DisruptionTarget condition is True (it was preempted or released
// and its pods are not placed again) or its Short condition is True (it runs short of its
// minimum), that one as a False status: the first stays True for good.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Member is one pod of a PodGroup.
type Member struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Node  string `json:"node,omitempty"`
	// Path is the pod's node's label value at each topology level it is labelled with,
	// broadest first.
	Path []string `json:"path,omitempty"`
	// Via says how the pod joined: "label" or "job".
	Via string `json:"via"`
}

// Build arranges the objects as trees, roots sorted by namespace and name.
func Build(in Inputs) []*Group {
	byKey := map[podgroup.Key]*Group{}
	parents := map[podgroup.Key]podgroup.Key{}
	pgByName := map[podgroup.Key]*v1alpha1.PodGroup{}
	for i := range in.Composites {
		c := &in.Composites[i]
		k, _ := podgroup.KeyOfObject(c)
		g := &Group{Kind: "CompositePodGroup", API: string(k.API), Namespace: c.Namespace, Name: c.Name, Policy: "basic", Min: 1,
			Topology: topology(c.Spec.SchedulingConstraints), Condition: condition(c.Status.Conditions),
			Owner: ownerOf(c), Workload: workloadOf(c.Spec.WorkloadRef)}
		if gang := c.Spec.SchedulingPolicy.Gang; gang != nil {
			g.Policy, g.Min = "gang", gang.MinGroupCount
		}
		byKey[k] = g
		if p := c.Spec.ParentCompositePodGroupName; p != nil {
			parents[k] = k.As(podgroup.KindCompositePodGroup, *p)
		}
	}
	for i := range in.PodGroups {
		pg := &in.PodGroups[i]
		k, _ := podgroup.KeyOfObject(pg)
		g := &Group{Kind: "PodGroup", API: string(k.API), Namespace: pg.Namespace, Name: pg.Name, Policy: "basic", Min: 1,
			Topology: topology(pg.Spec.SchedulingConstraints), Condition: condition(pg.Status.Conditions), Pods: &Counts{},
			Owner: ownerOf(pg), Workload: workloadOf(pg.Spec.WorkloadRef)}
		if gang := pg.Spec.SchedulingPolicy.Gang; gang != nil {
			g.Policy, g.Min = "gang", gang.MinCount
		}
		byKey[k] = g
		pgByName[k] = pg
		if p := pg.Spec.ParentCompositePodGroupName; p != nil {
			parents[k] = k.As(podgroup.KindCompositePodGroup, *p)
		}
	}

	nodes := map[string]*v1.Node{}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	pods := map[string]*v1.Pod{}
	for i := range in.Pods {
		pods[in.Pods[i].Namespace+"/"+in.Pods[i].Name] = &in.Pods[i]
	}
	for i := range in.Pods {
		p := &in.Pods[i]
		k, via, ok := memberOf(p, pgByName, func(name string) *v1.Pod { return pods[p.Namespace+"/"+name] })
		if !ok {
			if k, ok = namesMissing(p, pgByName); !ok {
				continue
			}
			if byKey[k] == nil {
				byKey[k] = &Group{Kind: "PodGroup", API: string(k.API), Namespace: k.Namespace, Name: k.Name, Policy: "basic", Min: 1, Pods: &Counts{}, Missing: true}
			}
			via = "label"
			if k.Native() {
				via = "schedulingGroup"
			}
		}
		g := byKey[k]
		m := Member{Name: p.Name, Phase: string(p.Status.Phase), Node: p.Spec.NodeName, Via: via}
		if n, ok := nodes[p.Spec.NodeName]; ok {
			m.Path = path(n, in.Levels)
		}
		g.Members = append(g.Members, m)
		if p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			g.Pods.Exist++
			if p.Spec.NodeName != "" {
				g.Pods.Bound++
			}
		}
	}

	var roots []*Group
	for k, g := range byKey {
		sort.Slice(g.Members, func(i, j int) bool { return g.Members[i].Name < g.Members[j].Name })
		if g.Missing {
			g.Problem = missingProblem(g)
			roots = append(roots, g)
			continue
		}
		pk, ok := parents[k]
		if !ok {
			roots = append(roots, g)
			continue
		}
		g.Parent = pk.Name
		parent, ok := byKey[pk]
		switch {
		case !ok:
			g.Problem = "parent CompositePodGroup " + pk.Name + " not found"
		case pk == k:
			g.Problem = "its parent is itself (parentCompositePodGroupName: " + pk.Name + ")"
		default:
			if cycle := cycleFrom(k, parents); cycle != nil {
				g.Problem = "its parents form a cycle: " + strings.Join(cycle, " → ")
				break
			}
			parent.Children = append(parent.Children, g)
			continue
		}
		roots = append(roots, g)
	}
	for _, g := range byKey {
		sortGroups(g.Children)
	}
	sortGroups(roots)
	return roots
}

// cycleFrom returns the names around the cycle of parents k is on, k first and last
// ("a → b → a"), nil if k is not on one (a group below a cycle is not on it).
func cycleFrom(k podgroup.Key, parents map[podgroup.Key]podgroup.Key) []string {
	names := []string{k.Name}
	seen := map[podgroup.Key]bool{k: true}
	for cur := k; ; {
		next, ok := parents[cur]
		if !ok {
			return nil
		}
		names = append(names, next.Name)
		if next == k {
			return names
		}
		if seen[next] {
			return nil // a cycle above k, which k is not on
		}
		seen[next] = true
		cur = next
	}
}

// namesMissing reports the PodGroup a pod's label names when no such PodGroup exists.
func namesMissing(p *v1.Pod, pgs map[podgroup.Key]*v1alpha1.PodGroup) (podgroup.Key, bool) {
	k, ok := podgroup.NativeGroupOf(p)
	if !ok {
		name, labelled := filing.GroupNameOf(p)
		if !labelled {
			return podgroup.Key{}, false
		}
		k = podgroup.PodGroupKey(p.Namespace, name)
	}
	if _, exists := pgs[k]; exists {
		return podgroup.Key{}, false
	}
	return k, true
}

// maxNamedPods bounds the pods a problem names.
const maxNamedPods = 5

// missingProblem says that a group does not exist, and which pods name it.
func missingProblem(g *Group) string {
	var names []string
	for i, m := range g.Members {
		if i == maxNamedPods {
			names = append(names, fmt.Sprintf("and %d more", len(g.Members)-maxNamedPods))
			break
		}
		names = append(names, m.Name)
	}
	pods := "1 pod names it"
	if len(g.Members) != 1 {
		pods = fmt.Sprintf("%d pods name it", len(g.Members))
	}
	if g.API != "" {
		return fmt.Sprintf("PodGroup %s (%s) does not exist; %s (spec.schedulingGroup): %s", g.Name, g.API, pods, strings.Join(names, ", "))
	}
	return fmt.Sprintf("PodGroup %s does not exist; %s (label %s): %s", g.Name, pods, v1alpha1.PodGroupLabel, strings.Join(names, ", "))
}

// memberOf finds the PodGroup of a pod as the scheduler files it: by label, as a pod of a
// JobSet's child Job (from the JobSet controller's labels), as a pod of a RayCluster (KubeRay's
// labels and owner; the PodGroup controlled by the RayCluster), as a pod of a LeaderWorkerSet
// (its replica's group, named after the leader pod pod finds), by a scheduler-plugins PodGroup's
// label (its mirror, controlled by it), or as a pod of a Job through the Job's PodGroup
// (named after the Job and controlled by it).
func memberOf(p *v1.Pod, pgs map[podgroup.Key]*v1alpha1.PodGroup, pod func(name string) *v1.Pod) (podgroup.Key, string, bool) {
	if k, ok := podgroup.NativeGroupOf(p); ok {
		if jk, ok := jobGroupOf(p, pgs); ok {
			// A Job lockstep gives a gang, whose basic native group the Job controller made.
			return jk, "job", true
		}
		_, exists := pgs[k]
		return k, "schedulingGroup", exists
	}
	if name, ok := filing.GroupNameOf(p); ok {
		k := podgroup.PodGroupKey(p.Namespace, name)
		_, exists := pgs[k]
		return k, "label", exists
	}
	if name, ok := jobset.PodGroupOfPod(p); ok {
		k := podgroup.PodGroupKey(p.Namespace, name)
		if pg, exists := pgs[k]; exists {
			if ref := metav1.GetControllerOf(pg); ref != nil && string(ref.UID) == p.Labels[jobset.LabelJobSetUID] {
				return k, "jobset", true
			}
		}
		return podgroup.Key{}, "", false
	}
	if name, uid, ok := raycluster.PodGroupOfPod(p); ok {
		k := podgroup.PodGroupKey(p.Namespace, name)
		if pg, exists := pgs[k]; exists {
			if ref := metav1.GetControllerOf(pg); ref != nil && ref.UID == uid {
				return k, "raycluster", true
			}
		}
	}
	if names, set, ok := leaderworkerset.PodGroupsOfPod(p, pod); ok {
		for _, name := range names {
			k := podgroup.PodGroupKey(p.Namespace, name)
			if pg, exists := pgs[k]; exists {
				if ref := metav1.GetControllerOf(pg); ref != nil && ref.Kind == leaderworkerset.GVK.Kind && ref.Name == set {
					return k, "leaderworkerset", true
				}
			}
		}
	}
	if name := p.Labels[coscheduling.Label]; name != "" {
		k := podgroup.PodGroupKey(p.Namespace, name)
		if pg, exists := pgs[k]; exists {
			if ref := metav1.GetControllerOf(pg); ref != nil && ref.Kind == coscheduling.GVK.Kind && strings.HasPrefix(ref.APIVersion, coscheduling.GVK.Group+"/") {
				return k, "scheduler-plugins", true
			}
		}
	}
	if k, ok := jobGroupOf(p, pgs); ok {
		return k, "job", true
	}
	return podgroup.Key{}, "", false
}

// jobGroupOf finds the lockstep PodGroup of a pod's Job: named after the Job and controlled
// by it.
func jobGroupOf(p *v1.Pod, pgs map[podgroup.Key]*v1alpha1.PodGroup) (podgroup.Key, bool) {
	owner := metav1.GetControllerOf(p)
	if owner == nil || owner.Kind != "Job" {
		return podgroup.Key{}, false
	}
	k := podgroup.PodGroupKey(p.Namespace, filing.JobGroupName(owner.Name, owner.UID))
	pg, ok := pgs[k]
	if !ok {
		return podgroup.Key{}, false
	}
	if ref := metav1.GetControllerOf(pg); ref == nil || ref.UID != owner.UID {
		return podgroup.Key{}, false
	}
	return k, true
}

func sortGroups(gs []*Group) {
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].Namespace != gs[j].Namespace {
			return gs[i].Namespace < gs[j].Namespace
		}
		if gs[i].Kind != gs[j].Kind {
			return gs[i].Kind < gs[j].Kind
		}
		return gs[i].Name < gs[j].Name
	})
}

func topology(c *v1alpha1.SchedulingConstraints) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, t := range c.Topology {
		s := t.Key
		switch {
		case t.Mode == v1alpha1.TopologyPreferred:
			s = "~" + s
		case t.SliceSize != nil:
			s = fmt.Sprintf("%s#%d", s, *t.SliceSize)
		}
		out = append(out, s)
	}
	return out
}

func condition(conds []metav1.Condition) *Condition {
	if d := meta.FindStatusCondition(conds, v1alpha1.DisruptionTarget); d != nil && d.Status == metav1.ConditionTrue {
		return &Condition{Status: string(metav1.ConditionFalse), Reason: d.Reason, Message: d.Message}
	}
	if s := meta.FindStatusCondition(conds, v1alpha1.Short); s != nil && s.Status == metav1.ConditionTrue {
		return &Condition{Status: string(metav1.ConditionFalse), Reason: s.Reason, Message: s.Message}
	}
	c := meta.FindStatusCondition(conds, v1alpha1.PodGroupInitiallyScheduled)
	if c == nil {
		return nil
	}
	return &Condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
}

// path is a node's label values of levels it has, broadest first.
func path(n *v1.Node, levels []string) []string {
	var out []string
	for _, v := range v1alpha1.NodeTopologyPath(n, levels) {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
