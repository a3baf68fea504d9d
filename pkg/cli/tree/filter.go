package tree

import (
	"fmt"
	"sort"
	"strings"
)

// Ref is what `kubectl lockstep get` is asked for: NAME or TYPE/NAME.
type Ref struct {
	// Kind is canonical (Pod, PodGroup, CompositePodGroup, Workload, Job, JobSet, ...), or
	// empty for a bare NAME.
	Kind string
	Name string
}

func (r Ref) String() string {
	if r.Kind == "" {
		return r.Name
	}
	return strings.ToLower(r.Kind) + "/" + r.Name
}

// kinds maps what a user may type (kubectl's resource names, plurals and short names) to
// the kind it means.
var kinds = map[string]string{
	"pod": "Pod", "pods": "Pod", "po": "Pod",
	"podgroup": "PodGroup", "podgroups": "PodGroup", "lspg": "PodGroup", "lspgs": "PodGroup", "pg": "PodGroup", "pgs": "PodGroup",
	"compositepodgroup": "CompositePodGroup", "compositepodgroups": "CompositePodGroup", "lscpg": "CompositePodGroup", "lscpgs": "CompositePodGroup",
	"workload": "Workload", "workloads": "Workload", "lswl": "Workload",
	"job": "Job", "jobs": "Job",
	"jobset": "JobSet", "jobsets": "JobSet",
	"trainjob": "TrainJob", "trainjobs": "TrainJob",
	"raycluster": "RayCluster", "rayclusters": "RayCluster",
	"leaderworkerset": "LeaderWorkerSet", "leaderworkersets": "LeaderWorkerSet", "lws": "LeaderWorkerSet",
}

// ParseRef reads NAME or TYPE/NAME (TYPE may be qualified: jobs.batch/NAME).
func ParseRef(arg string) (Ref, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok {
		return Ref{Name: arg}, nil
	}
	if name == "" || strings.Contains(name, "/") {
		return Ref{}, fmt.Errorf("%q: want NAME or TYPE/NAME", arg)
	}
	resource, _, _ := strings.Cut(strings.ToLower(typ), ".")
	kind, ok := kinds[resource]
	if !ok {
		var known []string
		for k, v := range kinds {
			if strings.ToLower(v) == k {
				known = append(known, k)
			}
		}
		sort.Strings(known)
		return Ref{}, fmt.Errorf("%q: unknown type %q; one of %s", arg, typ, strings.Join(known, ", "))
	}
	return Ref{Kind: kind, Name: name}, nil
}

// Filter keeps the trees that hold what any of refs names: a group of that name (or made for
// an object of that name: a Job's groups are found by the Job's name), a Workload's groups,
// or a pod's group. With no refs, every tree.
func Filter(roots []*Group, refs []Ref) []*Group {
	if len(refs) == 0 {
		return roots
	}
	var out []*Group
	for _, root := range roots {
		if holds(root, refs) {
			out = append(out, root)
		}
	}
	return out
}

func holds(g *Group, refs []Ref) bool {
	for _, r := range refs {
		if matches(g, r) {
			return true
		}
	}
	for _, c := range g.Children {
		if holds(c, refs) {
			return true
		}
	}
	return false
}

func matches(g *Group, r Ref) bool {
	switch r.Kind {
	case "":
		return g.Name == r.Name || (g.Owner != nil && g.Owner.Name == r.Name)
	case "Pod":
		for _, m := range g.Members {
			if m.Name == r.Name {
				return true
			}
		}
		return false
	case "Workload":
		return g.Workload == r.Name
	case g.Kind:
		if g.Name == r.Name {
			return true
		}
	}
	return g.Owner != nil && g.Owner.Kind == r.Kind && g.Owner.Name == r.Name
}
