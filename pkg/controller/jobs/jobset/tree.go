package jobset

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// The tree of a JobSet:
//
//	stage root (CompositePodGroup, minGroupCount = its ReplicatedJobs)   JobSet topology
//	└── ReplicatedJob (CompositePodGroup, minGroupCount = replicas)      the rjob's topology
//	    └── child Job (PodGroup, minCount = the Job's parallelism)       exclusive topology
//
// A JobSet whose ReplicatedJobs all start together has one stage: it binds whole or not at
// all. ReplicatedJobs that start only after others are Ready or Complete (dependsOn, or
// startupPolicyOrder InOrder) are stages of their own, separate roots, so that a staged
// JobSet never waits for pods that cannot exist yet; ReplicatedJobs with the same
// dependencies share a stage. ReplicatedJobs whose pods use another scheduler are left out,
// and so are those whose pods name a lockstep PodGroup of their own (its label wins over the
// JobSet's tree): a JobSet left with none gets no groups and loses those it has.
//
// Every group is named for the JobSet's restart attempt: a restart recreates the child Jobs,
// and their pods get fresh groups (the reconciler deletes the previous attempt's).

// optedOut reports whether the JobSet asks to be left alone.
func optedOut(js *jobSet) bool {
	v, ok := js.Annotations[v1alpha1.JobGangAnnotation]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err == nil && !b
}

// names are the names of one restart attempt's groups.
type names struct {
	jobSet  string
	uid     types.UID
	attempt int
}

// of is a group name: prefix, cut to fit, and a hash of the JobSet's UID, the attempt and the
// whole prefix, so that names never collide across JobSets, attempts or long prefixes.
func (n names) of(prefix string) string {
	return filing.JobGroupName(prefix, types.UID(fmt.Sprintf("%s/%d/%s", n.uid, n.attempt, prefix)))
}

func (n names) workload() string { return filing.JobGroupName(n.jobSet, n.uid) }
func (n names) stage(first string) string {
	return filing.JobGroupName(n.jobSet+"-"+first+"-stage", types.UID(fmt.Sprintf("%s/%d/stage/%s", n.uid, n.attempt, first)))
}
func (n names) replicatedJob(rj string) string { return n.of(n.jobSet + "-" + rj) }
func (n names) podGroup(rj, index string) string {
	return n.of(n.jobSet + "-" + rj + "-" + index)
}

// group is the name of stage si's CompositePodGroup of a Kueue podset group: hashed apart
// from the same group name in other stages and from a ReplicatedJob named "group-<name>".
func (n names) group(si int, name string) string {
	return filing.JobGroupName(n.jobSet+"-group-"+name, types.UID(fmt.Sprintf("%s/%d/group/%d/%s", n.uid, n.attempt, si, name)))
}

// stagesOf splits the ReplicatedJobs into stages, in start order.
func stagesOf(js *jobSet, rjobs []replicatedJob) [][]replicatedJob {
	if p := js.Spec.StartupPolicy; p != nil && p.StartupPolicyOrder == InOrder {
		out := make([][]replicatedJob, len(rjobs))
		for i, rj := range rjobs {
			out[i] = []replicatedJob{rj}
		}
		return out
	}
	var out [][]replicatedJob
	byDeps := map[string]int{}
	for _, rj := range rjobs {
		var deps []string
		for _, d := range rj.DependsOn {
			deps = append(deps, d.Name+"="+d.Status)
		}
		key := strings.Join(deps, ",")
		i, ok := byDeps[key]
		if !ok {
			i = len(out)
			byDeps[key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], rj)
	}
	return out
}

// treeOf returns the groups of a JobSet, nil when lockstep leaves it alone.
func treeOf(js *jobSet, schedulerNames sets.Set[string]) (*jobframework.Groups, []string) {
	if optedOut(js) {
		return nil, nil
	}
	if ptr.Deref(js.Spec.Suspend, false) {
		// As a suspended Job's (job.suspended): no pods, so no groups; those it had go, and
		// the resumed JobSet's pods are a fresh gang.
		return jobframework.NoGroups(), nil
	}
	var problems []string
	if v, ok := js.Annotations[v1alpha1.JobGangAnnotation]; ok {
		if _, err := strconv.ParseBool(v); err != nil {
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not true or false; ignored", v1alpha1.JobGangAnnotation, v))
		}
	}
	var ours []replicatedJob
	ownGroup := false
	for _, rj := range js.Spec.ReplicatedJobs {
		pod := rj.Template.Spec.Template
		switch {
		case !schedulerNames.Has(pod.Spec.SchedulerName):
		case namesOwnGroup(&pod):
			ownGroup = true
		default:
			ours = append(ours, rj)
		}
	}
	if len(ours) == 0 {
		if ownGroup {
			return jobframework.NoGroups(), problems
		}
		return nil, problems
	}
	rootTopology, bad := filing.TopologyFromAnnotations(js.Annotations)
	problems = append(problems, bad...)
	var exclusive []v1alpha1.TopologyConstraint
	if key, ok := js.Annotations[AnnotationExclusiveTopology]; ok {
		if c, bad := filing.TopologyFromAnnotations(map[string]string{v1alpha1.JobTopologyRequiredAnnotation: key}); len(bad) > 0 {
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not a label key; ignored", AnnotationExclusiveTopology, key))
		} else {
			c[0].Exclusive = true
			exclusive = c
		}
	}
	n := names{jobSet: js.Name, uid: js.UID, attempt: int(js.Status.Restarts)}
	out := &jobframework.Groups{Workload: n.workload(), Finished: finished(js)}
	priority := ""
	stages := stagesOf(js, ours)
	for si, stage := range stages {
		units, bad := unitsOf(js, stage)
		problems = append(problems, bad...)
		root := jobframework.Group{Name: n.stage(stage[0].Name), Template: fmt.Sprintf("stage-%d", si), Min: int32(len(units)), Topology: rootTopology}
		if len(stages) == 1 {
			root.Name, root.Template = n.of(js.Name), "jobset"
		}
		tmpl := v1alpha1.CompositePodGroupTemplate{Name: root.Template,
			SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: root.Min}},
			SchedulingConstraints: root.Constraints()}
		out.Composites = append(out.Composites, root)
		for _, u := range units {
			parent, into := root.Name, &tmpl.CompositePodGroupTemplates
			var groupTmpl *v1alpha1.CompositePodGroupTemplate
			if u.group != "" {
				// ReplicatedJobs of one Kueue podset group share a domain: a composite
				// above them carries their topology.
				g := jobframework.Group{Name: n.group(si, u.group), Parent: root.Name, Template: groupTemplate(stage, u.group),
					Min: int32(len(u.rjobs)), Topology: u.topology}
				out.Composites = append(out.Composites, g)
				groupTmpl = &v1alpha1.CompositePodGroupTemplate{Name: g.Template,
					SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: g.Min}},
					SchedulingConstraints: g.Constraints()}
				parent, into = g.Name, &groupTmpl.CompositePodGroupTemplates
			}
			for _, r := range u.rjobs {
				rj := r.rjob
				replicas := max(rj.Replicas, 1)
				pc := rj.Template.Spec.Template.Spec.PriorityClassName
				if priority == "" {
					priority = pc
				}
				mid := jobframework.Group{Name: n.replicatedJob(rj.Name), Parent: parent, Template: rj.Name, Min: replicas, Topology: r.topology.PodSet, PriorityClassName: pc}
				out.Composites = append(out.Composites, mid)
				minCount := podsOf(rj)
				childTopology, bad := jobTopology(rj, r.topology.Slice, exclusive)
				problems = append(problems, bad...)
				child := v1alpha1.PodGroupTemplate{Name: "job",
					SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}},
					SchedulingConstraints: (jobframework.Group{Topology: childTopology}).Constraints(), PriorityClassName: pc}
				if len(*into) < v1alpha1.MaxTemplates {
					*into = append(*into, v1alpha1.CompositePodGroupTemplate{Name: rj.Name,
						SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: replicas}},
						SchedulingConstraints: mid.Constraints(), PriorityClassName: pc, PodGroupTemplates: []v1alpha1.PodGroupTemplate{child}})
				}
				for i := range replicas {
					out.PodGroups = append(out.PodGroups, jobframework.Group{Name: n.podGroup(rj.Name, strconv.Itoa(int(i))), Parent: mid.Name,
						Template: "job", Min: minCount, Topology: childTopology, PriorityClassName: pc})
				}
			}
			if groupTmpl != nil && len(tmpl.CompositePodGroupTemplates) < v1alpha1.MaxTemplates {
				tmpl.CompositePodGroupTemplates = append(tmpl.CompositePodGroupTemplates, *groupTmpl)
			}
		}
		if len(stage) > v1alpha1.MaxTemplates {
			problems = append(problems, fmt.Sprintf("stage %d has %d ReplicatedJobs: its Workload template describes the first %d (the API's limit); every group is created all the same", si, len(stage), v1alpha1.MaxTemplates))
		}
		if len(out.Spec.CompositePodGroupTemplates) < v1alpha1.MaxTemplates {
			out.Spec.CompositePodGroupTemplates = append(out.Spec.CompositePodGroupTemplates, tmpl)
		}
	}
	if len(stages) > v1alpha1.MaxTemplates {
		problems = append(problems, fmt.Sprintf("%d stages: the Workload describes the first %d (the API's limit); every group is created all the same", len(stages), v1alpha1.MaxTemplates))
	}
	for i := range out.Composites {
		if out.Composites[i].Parent == "" {
			out.Composites[i].PriorityClassName = priority
		}
	}
	for i := range out.Spec.CompositePodGroupTemplates {
		out.Spec.CompositePodGroupTemplates[i].PriorityClassName = priority
	}
	return out, problems
}

// placed is a ReplicatedJob with the topology its annotations ask for.
type placed struct {
	rjob     replicatedJob
	topology filing.KueueTopology
}

// unit is what a stage root's child is: one ReplicatedJob, or the ReplicatedJobs of one
// Kueue podset group (podset-group-name) under a composite with their shared topology.
type unit struct {
	group    string
	topology []v1alpha1.TopologyConstraint
	rjobs    []placed
}

// unitsOf reads the topology of each ReplicatedJob of a stage (lockstep's annotations on
// its Job template, else Kueue's on its pod template) and gathers those of one Kueue podset
// group.
func unitsOf(js *jobSet, stage []replicatedJob) ([]unit, []string) {
	var out []unit
	var problems []string
	groups := map[string]int{}
	for _, rj := range stage {
		replicas := max(rj.Replicas, 1)
		// A slice is a whole child Job unless slice-size says otherwise (KEP-2724's default
		// for JobSet).
		kt, bad := filing.PodSetTopology(rj.Template.Annotations, js.Labels, &rj.Template.Spec.Template, replicas*podsOf(rj), podsOf(rj))
		problems = append(problems, bad...)
		if kt.GroupName != "" && len(validation.IsDNS1123Label("group-"+kt.GroupName)) > 0 {
			// The group's CompositePodGroup and template are named for it.
			problems = append(problems, fmt.Sprintf("ReplicatedJob %s: podset group name %q is not a lowercase DNS label of at most 57 characters; the group is ignored", rj.Name, kt.GroupName))
			kt.GroupName = ""
		}
		p := placed{rjob: rj, topology: kt}
		if kt.GroupName == "" {
			out = append(out, unit{rjobs: []placed{p}})
			continue
		}
		i, ok := groups[kt.GroupName]
		if !ok {
			groups[kt.GroupName] = len(out)
			out = append(out, unit{group: kt.GroupName, topology: kt.PodSet, rjobs: []placed{p}})
			continue
		}
		if !reflect.DeepEqual(out[i].topology, kt.PodSet) {
			problems = append(problems, fmt.Sprintf("ReplicatedJob %s is in podset group %q but asks for another topology than %s; the group's first topology holds",
				rj.Name, kt.GroupName, out[i].rjobs[0].rjob.Name))
		}
		out[i].rjobs = append(out[i].rjobs, p)
	}
	for i := range out {
		if out[i].group != "" && len(out[i].rjobs) == 1 {
			out[i].group, out[i].topology = "", nil // a group of one is its ReplicatedJob
		}
	}
	return out, problems
}

// groupTemplate is the Workload template name of a podset group's CompositePodGroup,
// "group-<name>", suffixed when a ReplicatedJob of the stage (a template beside it) has
// that name.
func groupTemplate(stage []replicatedJob, name string) string {
	taken := sets.New[string]()
	for _, rj := range stage {
		taken.Insert(rj.Name)
	}
	t := "group-" + name
	for i := 2; taken.Has(t); i++ {
		t = fmt.Sprintf("group-%s-%d", name, i)
	}
	return t
}

// jobTopology is the topology of each child Job's PodGroup: the exclusive-topology
// constraint, and Kueue's slices cut from the child Job's pods. A slice of the whole Job is
// a Required constraint on it; smaller slices that divide it are slices of its PodGroup;
// slices across child Jobs cannot be cut from per-Job PodGroups and are ignored, with a
// problem.
func jobTopology(rj replicatedJob, slice *v1alpha1.TopologyConstraint, exclusive []v1alpha1.TopologyConstraint) ([]v1alpha1.TopologyConstraint, []string) {
	if slice == nil {
		return exclusive, nil
	}
	pods := podsOf(rj)
	size := ptr.Deref(slice.SliceSize, 0)
	switch {
	case len(exclusive) > 0:
		return exclusive, []string{fmt.Sprintf("ReplicatedJob %s: Kueue slices cannot be combined with exclusive placement; slices ignored", rj.Name)}
	case size == pods:
		return []v1alpha1.TopologyConstraint{{Key: slice.Key, Mode: v1alpha1.TopologyRequired}}, nil
	case size < pods && pods%size == 0:
		return []v1alpha1.TopologyConstraint{*slice}, nil
	}
	return nil, []string{fmt.Sprintf("ReplicatedJob %s: slices of %d pods cannot be cut from its Jobs of %d pods (a slice must be a whole Job or divide it); slices ignored", rj.Name, size, pods)}
}

// podsOf is the minCount of a ReplicatedJob's child Job: the pods that run at once.
func podsOf(rj replicatedJob) int32 {
	n := ptr.Deref(rj.Template.Spec.Parallelism, 1)
	if c := rj.Template.Spec.Completions; c != nil && *c < n {
		n = *c
	}
	return max(n, 1)
}

// finished reports whether the JobSet reached its end.
func finished(js *jobSet) bool {
	if js.Status.TerminalState != "" {
		return true
	}
	for _, c := range js.Status.Conditions {
		if (c.Type == "Completed" || c.Type == "Failed") && c.Status == "True" {
			return true
		}
	}
	return false
}
