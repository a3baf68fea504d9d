package jobset

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
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
// dependencies share a stage. ReplicatedJobs whose pods use another scheduler are left out.
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
	return podgroup.JobGroupName(prefix, types.UID(fmt.Sprintf("%s/%d/%s", n.uid, n.attempt, prefix)))
}

func (n names) workload() string { return podgroup.JobGroupName(n.jobSet, n.uid) }
func (n names) stage(first string) string {
	return podgroup.JobGroupName(n.jobSet+"-"+first+"-stage", types.UID(fmt.Sprintf("%s/%d/stage/%s", n.uid, n.attempt, first)))
}
func (n names) replicatedJob(rj string) string { return n.of(n.jobSet + "-" + rj) }
func (n names) podGroup(rj, index string) string {
	return n.of(n.jobSet + "-" + rj + "-" + index)
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
	var problems []string
	if v, ok := js.Annotations[v1alpha1.JobGangAnnotation]; ok {
		if _, err := strconv.ParseBool(v); err != nil {
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not true or false; ignored", v1alpha1.JobGangAnnotation, v))
		}
	}
	var ours []replicatedJob
	for _, rj := range js.Spec.ReplicatedJobs {
		if schedulerNames.Has(rj.Template.Spec.Template.Spec.SchedulerName) {
			ours = append(ours, rj)
		}
	}
	if len(ours) == 0 {
		return nil, problems
	}
	rootTopology, bad := podgroup.TopologyFromAnnotations(js.Annotations)
	problems = append(problems, bad...)
	var exclusive []v1alpha1.TopologyConstraint
	if key, ok := js.Annotations[AnnotationExclusiveTopology]; ok {
		if c, bad := podgroup.TopologyFromAnnotations(map[string]string{v1alpha1.JobTopologyRequiredAnnotation: key}); len(bad) > 0 {
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
		root := jobframework.Group{Name: n.stage(stage[0].Name), Template: fmt.Sprintf("stage-%d", si), Min: int32(len(stage)), Topology: rootTopology}
		if len(stages) == 1 {
			root.Name, root.Template = n.of(js.Name), "jobset"
		}
		tmpl := v1alpha1.CompositePodGroupTemplate{Name: root.Template,
			SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: root.Min}},
			SchedulingConstraints: root.Constraints()}
		out.Composites = append(out.Composites, root)
		for _, rj := range stage {
			replicas := max(rj.Replicas, 1)
			topology, bad := podgroup.TopologyFromAnnotations(rj.Template.Annotations)
			problems = append(problems, bad...)
			pc := rj.Template.Spec.Template.Spec.PriorityClassName
			if priority == "" {
				priority = pc
			}
			mid := jobframework.Group{Name: n.replicatedJob(rj.Name), Parent: root.Name, Template: rj.Name, Min: replicas, Topology: topology, PriorityClassName: pc}
			out.Composites = append(out.Composites, mid)
			minCount := podsOf(rj)
			child := v1alpha1.PodGroupTemplate{Name: "job",
				SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}},
				SchedulingConstraints: (jobframework.Group{Topology: exclusive}).Constraints(), PriorityClassName: pc}
			if len(tmpl.CompositePodGroupTemplates) < v1alpha1.MaxTemplates {
				tmpl.CompositePodGroupTemplates = append(tmpl.CompositePodGroupTemplates, v1alpha1.CompositePodGroupTemplate{Name: rj.Name,
					SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: replicas}},
					SchedulingConstraints: mid.Constraints(), PriorityClassName: pc, PodGroupTemplates: []v1alpha1.PodGroupTemplate{child}})
			}
			for i := range replicas {
				out.PodGroups = append(out.PodGroups, jobframework.Group{Name: n.podGroup(rj.Name, strconv.Itoa(int(i))), Parent: mid.Name,
					Template: "job", Min: minCount, Topology: exclusive, PriorityClassName: pc})
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
