package filing

import (
	"fmt"
	"hash/fnv"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// JobGang is the gang a batch/v1 Job gets from lockstep's Job controller: one Workload and one
// PodGroup, both named Name, that the Job's pods join through their owner reference.
type JobGang struct {
	Name     string
	MinCount int32
	Topology []v1alpha1.TopologyConstraint
	// ScheduleTimeoutSeconds is the schedule-timeout-seconds annotation's, nil without it.
	ScheduleTimeoutSeconds *int32
}

// JobTemplateName is the name of the PodGroupTemplate in a Job's Workload.
const JobTemplateName = "pods"

// GangForJob decides whether a Job gets a gang, and which (KEP-5547's rule, with
// annotations to override it). It returns nil when lockstep leaves the Job alone:
//   - its pods use none of schedulerNames;
//   - it has a controller owner (JobSet, CronJob, TrainJob...), which manages groups itself;
//   - its pod template names a group of any supported kind: lockstep's PodGroup or a
//     scheduler-plugins PodGroup ("bring your own group", NamesGroup), or a native PodGroup
//     (spec.schedulingGroup): its pods join that one, and a group of the Job's would stay
//     empty for good;
//   - it has spec.scheduling: the Job controller makes its native Workload and PodGroup
//     (WorkloadWithJob), which its pods name.
//
// Otherwise a Job is a gang when the gang annotation says "true", or when it does not say
// "false" and parallelism > 1, completionMode is Indexed and completions == parallelism.
// A Job of several pods whose pod template carries Kueue's topology annotations is a gang
// too (unless the gang annotation says "false"): its topology needs a group. Its topology
// is lockstep's annotations on the Job, else Kueue's on the pod template (PodSetTopology).
// minCount is parallelism unless the min-count annotation sets it. Annotations with invalid
// values are ignored and returned as problems, for an event on the Job.
func GangForJob(job *batchv1.Job, schedulerNames sets.Set[string]) (*JobGang, []string) {
	tmpl := job.Spec.Template
	if !schedulerNames.Has(tmpl.Spec.SchedulerName) || metav1.GetControllerOf(job) != nil {
		return nil, nil
	}
	if NamesGroup(&tmpl) || job.Spec.Scheduling != nil {
		return nil, nil
	}
	var problems []string
	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	gang := parallelism > 1 && indexed && job.Spec.Completions != nil && *job.Spec.Completions == parallelism
	// Kueue's topology annotations on the pod template ask for the pods to be placed
	// together, which takes a group: they make a Job of several pods a gang (lockstep's own
	// topology annotations on the Job, which win over them, do not: as before, they only
	// shape a Job that is a gang anyway).
	kueue, kueueProblems := PodSetTopology(job.Annotations, job.Labels, &tmpl, parallelism, 0)
	if asked, _ := PodSetTopology(nil, job.Labels, &tmpl, parallelism, 0); len(asked.Constraints()) > 0 && parallelism > 1 {
		gang = true
	}
	if v, ok := job.Annotations[v1alpha1.JobGangAnnotation]; ok {
		if b, err := strconv.ParseBool(v); err != nil {
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not true or false; ignored", v1alpha1.JobGangAnnotation, v))
		} else {
			gang = b
		}
	}
	if !gang {
		return nil, problems
	}
	g := &JobGang{Name: JobGroupName(job.Name, job.UID), MinCount: max(parallelism, 1)}
	if v, ok := job.Annotations[v1alpha1.JobMinCountAnnotation]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		switch {
		case err != nil || n < 1:
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not a positive integer; minCount stays %d", v1alpha1.JobMinCountAnnotation, v, g.MinCount))
		case int32(n) > parallelism:
			problems = append(problems, fmt.Sprintf("annotation %s=%q exceeds parallelism %d and could never be met; minCount stays %d", v1alpha1.JobMinCountAnnotation, v, parallelism, g.MinCount))
		default:
			g.MinCount = int32(n)
		}
	}
	if v, ok := job.Annotations[v1alpha1.JobScheduleTimeoutAnnotation]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 1 {
			problems = append(problems, fmt.Sprintf("annotation %s=%q is not a positive number of seconds; the default timeout applies", v1alpha1.JobScheduleTimeoutAnnotation, v))
		} else {
			g.ScheduleTimeoutSeconds = ptr.To(int32(n))
		}
	}
	g.Topology = kueue.Constraints()
	problems = append(problems, kueueProblems...)
	return g, problems
}

// TopologyFromAnnotations reads the topology annotations of a workload object (a Job, a
// JobSet, a ReplicatedJob's template): Required and Preferred keys; values that are not
// label keys are left out and returned as problems.
func TopologyFromAnnotations(annotations map[string]string) ([]v1alpha1.TopologyConstraint, []string) {
	var out []v1alpha1.TopologyConstraint
	var problems []string
	for _, a := range []struct {
		annotation string
		mode       v1alpha1.TopologyMode
	}{
		{v1alpha1.JobTopologyRequiredAnnotation, v1alpha1.TopologyRequired},
		{v1alpha1.JobTopologyPreferredAnnotation, v1alpha1.TopologyPreferred},
	} {
		v, ok := annotations[a.annotation]
		if !ok {
			continue
		}
		if bad := notALabelKey(a.annotation, v); bad != "" {
			problems = append(problems, bad)
			continue
		}
		out = append(out, v1alpha1.TopologyConstraint{Key: v, Mode: a.mode})
	}
	return out, problems
}

// notALabelKey returns the problem of a topology annotation whose value is not a node label
// key (the annotation is then ignored), "" when it is one.
func notALabelKey(annotation, value string) string {
	if errs := metav1validation.ValidateLabelName(value, field.NewPath("")); len(errs) > 0 || value == "" {
		return fmt.Sprintf("annotation %s=%q is not a label key; ignored", annotation, value)
	}
	return ""
}

// JobGroupName is the name of a Job's Workload and PodGroup: the Job's name (cut to fit a
// label value) and a hash of its UID, so that a Job recreated under the same name does not
// meet the groups of its predecessor while they are being garbage collected.
func JobGroupName(jobName string, uid types.UID) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	suffix := fmt.Sprintf("%08x", h.Sum32())
	const maxName = 63 - 1 - 8
	if len(jobName) > maxName {
		jobName = jobName[:maxName]
	}
	return jobName + "-" + suffix
}
