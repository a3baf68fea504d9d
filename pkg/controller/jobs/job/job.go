// Package job is the workload framework's adapter for batch/v1 Jobs (KEP-5547 semantics): a
// Job that gets a gang (filing.GangForJob) gets a Workload with one PodGroupTemplate and
// one PodGroup, both named after the Job, whose minCount follows the Job's parallelism. The
// Job's pods join the PodGroup through their owner reference.
package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Adapter is the Job adapter.
type Adapter struct {
	jobs batchlisters.JobLister
}

var _ jobframework.Adapter = &Adapter{}

// New returns the Job adapter; Watch connects it to the Job informer.
func New() *Adapter { return &Adapter{} }

// GVK implements jobframework.Adapter.
func (a *Adapter) GVK() schema.GroupVersionKind { return batchv1.SchemeGroupVersion.WithKind("Job") }

// Watch implements jobframework.Adapter.
func (a *Adapter) Watch(f jobframework.Informers, enqueue func(string)) ([]cache.InformerSynced, error) {
	jobs := f.Kube.Batch().V1().Jobs()
	a.jobs = jobs.Lister()
	if enqueue == nil {
		return []cache.InformerSynced{jobs.Informer().HasSynced}, nil
	}
	synced, err := jobframework.EnqueueOn(jobs.Informer(), enqueue)
	if err != nil {
		return nil, err
	}
	return []cache.InformerSynced{synced}, nil
}

// Get implements jobframework.Adapter.
func (a *Adapter) Get(namespace, name string) (jobframework.Object, error) {
	job, err := a.jobs.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return job, nil
}

// Groups implements jobframework.Adapter: the Job's gang, if it gets one. A Job that no
// longer matches the rule (e.g. parallelism changed alone) keeps the PodGroup it has, and
// minCount keeps following parallelism. A Job whose pods name a group of their own gets none,
// and loses those it has (filing.NamesGroup). So does a suspended Job (see suspended).
func (a *Adapter) Groups(obj jobframework.Object, existing []*v1alpha1.PodGroup, schedulerNames sets.Set[string]) (*jobframework.Groups, []string) {
	job := obj.(*batchv1.Job)
	gang, problems := filing.GangForJob(job, schedulerNames)
	if (gang == nil && filing.NamesGroup(&job.Spec.Template)) || (suspended(job) && (gang != nil || len(existing) > 0)) {
		return jobframework.NoGroups(), problems
	}
	if gang == nil {
		if len(existing) == 0 {
			return nil, problems
		}
		pg := existing[0]
		gang = &filing.JobGang{Name: pg.Name, MinCount: max(ptr.Deref(job.Spec.Parallelism, 1), 1), ScheduleTimeoutSeconds: pg.Spec.ScheduleTimeoutSeconds}
		if pg.Spec.SchedulingConstraints != nil {
			gang.Topology = pg.Spec.SchedulingConstraints.Topology
		}
	} else if len(existing) > 0 {
		gang.Name = existing[0].Name // the one it has, whatever its name
	}
	g := jobframework.Group{
		Name:              gang.Name,
		Template:          filing.JobTemplateName,
		Min:               gang.MinCount,
		Topology:          gang.Topology,
		PriorityClassName: job.Spec.Template.Spec.PriorityClassName,
		// The Job's annotation; a Job that no longer gets a gang of its own keeps what its
		// group was made with.
		ScheduleTimeoutSeconds: gang.ScheduleTimeoutSeconds,
	}
	return &jobframework.Groups{
		Workload: gang.Name,
		Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
			Name:                  filing.JobTemplateName,
			SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: g.Min}},
			SchedulingConstraints: g.Constraints(),
			PriorityClassName:     g.PriorityClassName,
		}}},
		PodGroups: []jobframework.Group{g},
		Finished:  finished(job),
		Warnings:  preemptionWarnings(job, g.Min),
	}, problems
}

// suspended reports whether a Job is suspended (by its owner, or by Kueue while it waits in a
// queue or after Kueue evicted it). It has no pods, so a group of its would only say it waits
// for them (a False condition for as long as the Job is queued), and one it had is dropped:
// the pods of the resumed Job are a fresh gang, placed together again, which a group already
// scheduled would not ask of them. The groups are made again when the Job is resumed; its
// pods wait for them meanwhile.
func suspended(job *batchv1.Job) bool { return ptr.Deref(job.Spec.Suspend, false) }

// ReasonFailsOnPreemption is the Warning event on a gang Job that one preemption of its gang
// would fail.
const ReasonFailsOnPreemption = "GangJobFailsOnPreemption"

// preemptionWarnings warns about a gang Job that a preemption would fail: gang preemption
// evicts every pod of a gang at once, and without a podFailurePolicy rule that ignores
// DisruptionTarget each eviction counts against backoffLimit (6 by default). A Job whose
// backoffLimit is below its gang's minimum fails at the first preemption.
func preemptionWarnings(job *batchv1.Job, min int32) []jobframework.Warning {
	if ignoresDisruptions(job) || job.Spec.BackoffLimitPerIndex != nil {
		return nil
	}
	limit := ptr.Deref(job.Spec.BackoffLimit, 6)
	if limit >= min {
		return nil
	}
	return []jobframework.Warning{{Reason: ReasonFailsOnPreemption, Message: fmt.Sprintf(
		"a preemption of this gang evicts its %d pods at once and each eviction counts against backoffLimit (%d): the Job would fail. "+
			"Add spec.podFailurePolicy.rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}] (docs/usage.md, \"Preemption and your Jobs\")",
		min, limit)}}
}

// ignoresDisruptions reports whether the Job's podFailurePolicy does not count pods that
// failed for a disruption (preemption, eviction).
func ignoresDisruptions(job *batchv1.Job) bool {
	if job.Spec.PodFailurePolicy == nil {
		return false
	}
	for _, rule := range job.Spec.PodFailurePolicy.Rules {
		if rule.Action != batchv1.PodFailurePolicyActionIgnore {
			continue
		}
		for _, c := range rule.OnPodConditions {
			if c.Type == v1.DisruptionTarget && c.Status != v1.ConditionFalse {
				return true
			}
		}
	}
	return false
}

// GroupOfJob implements jobframework.Adapter: a Job that gets a gang by its own spec.
func (a *Adapter) GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (string, bool) {
	if gang, _ := filing.GangForJob(job, schedulerNames); gang != nil {
		return gang.Name, true
	}
	return "", false
}

func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}
