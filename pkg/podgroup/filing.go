package podgroup

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// A pod of a served profile belongs to a PodGroup in one of two ways:
//   - its label scheduling.lockstep.dev/pod-group names the PodGroup (same namespace);
//   - its controller is a batch/v1 Job whose pods belong to a PodGroup by their owner (a Job
//     that gets a gang, or a Job a JobSet runs; Workloads says which): they need no change
//     to their pod template. While the Job is not seen yet its pods are taken to belong to
//     it. When the workload controller creates that PodGroup, the pods wait for it, until
//     the Job is older than its profile's jobGroupTimeout: then they belong to no group
//     (they are scheduled without a gang, and the Job gets an event) until the PodGroup
//     appears. When nobody creates it (the controller is off), they wait for nothing.
//
// Membership depends on the pod, its Job, whether the Job's PodGroup exists and the time, so
// the model files a Job's pods again whenever any of these change.

// Workloads says which PodGroup the pods of a Job belong to through their owner reference.
type Workloads interface {
	// GroupOfJob returns the name of the PodGroup in the Job's namespace its pods belong to,
	// "" for none, and whether lockstep's workload controller creates it (so that the pods
	// wait for it). schedulerNames are the profiles served.
	GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (name string, created bool)
}

// JobGangs files the pods of Jobs that get a gang by their own spec (GangForJob) under the
// Job's PodGroup, and no others; Created says whether a workload controller creates those
// PodGroups.
type JobGangs struct{ Created bool }

// GroupOfJob implements Workloads.
func (j JobGangs) GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (string, bool) {
	if gang, _ := GangForJob(job, schedulerNames); gang != nil {
		return gang.Name, j.Created
	}
	return "", false
}

// GroupNameOf returns the PodGroup a pod names through its label, if any.
func GroupNameOf(pod *v1.Pod) (string, bool) {
	name, ok := pod.Labels[v1alpha1.PodGroupLabel]
	return name, ok && name != ""
}

// labelKeyOf returns the key of the PodGroup a pod names through its label.
func labelKeyOf(pod *v1.Pod) (Key, bool) {
	name, ok := GroupNameOf(pod)
	if !ok {
		return Key{}, false
	}
	return PodGroupKey(pod.Namespace, name), true
}

// jobOwner returns the Job that controls a pod, if one does.
func jobOwner(pod *v1.Pod) (*metav1.OwnerReference, bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "Job" || !strings.HasPrefix(owner.APIVersion, "batch/") {
		return nil, false
	}
	return owner, true
}

// jobFiling remembers the pods of Jobs, so that they can be filed again when their Job or
// its PodGroup changes, and which Jobs wait for a late PodGroup.
type jobFiling struct {
	// pods are the latest copies of the pods each Job controls (by Job UID).
	pods map[types.UID]map[types.UID]*v1.Pod
	// groupJobs maps the PodGroup of a Job to the Job.
	groupJobs map[Key]types.UID
	// timers are the Jobs with a timer for a late PodGroup.
	timers sets.Set[types.UID]
}

func newJobFiling() *jobFiling {
	return &jobFiling{pods: map[types.UID]map[types.UID]*v1.Pod{}, groupJobs: map[Key]types.UID{}, timers: sets.New[types.UID]()}
}

// remember keeps the latest copy of a pod of a Job of a served profile.
func (j *jobFiling) remember(pod *v1.Pod, served bool) {
	owner, ok := jobOwner(pod)
	if !ok || !served {
		return
	}
	pods := j.pods[owner.UID]
	if pods == nil {
		pods = map[types.UID]*v1.Pod{}
		j.pods[owner.UID] = pods
	}
	pods[pod.UID] = pod
}

// filedUnder records that the pods of a Job are filed under (or wait for) PodGroup k.
func (j *jobFiling) filedUnder(k Key, job types.UID) {
	if _, ok := j.pods[job]; ok {
		j.groupJobs[k] = job
	}
}

func (j *jobFiling) forget(pod *v1.Pod) {
	owner, ok := jobOwner(pod)
	if !ok {
		return
	}
	if pods := j.pods[owner.UID]; pods != nil {
		delete(pods, pod.UID)
		if len(pods) == 0 {
			delete(j.pods, owner.UID)
			for k, uid := range j.groupJobs {
				if uid == owner.UID {
					delete(j.groupJobs, k)
				}
			}
		}
	}
}

// fileLocked returns the PodGroup a pod belongs to, if any (see above).
func (m *Model) fileLocked(pod *v1.Pod) (Key, bool) {
	if !m.servesLocked(pod) {
		return Key{}, false
	}
	if k, ok := labelKeyOf(pod); ok {
		return k, true
	}
	owner, ok := jobOwner(pod)
	if !ok || m.jobLister == nil {
		return Key{}, false
	}
	job, err := m.jobLister.Jobs(pod.Namespace).Get(owner.Name)
	if err != nil || job.UID != owner.UID {
		// The Job is not seen yet: its pods are taken to belong to the PodGroup it would get.
		return PodGroupKey(pod.Namespace, JobGroupName(owner.Name, owner.UID)), true
	}
	name, created := m.workloads.GroupOfJob(job, sets.KeySet(m.profiles))
	if name == "" {
		return Key{}, false
	}
	k := PodGroupKey(pod.Namespace, name)
	m.jobs.filedUnder(k, job.UID)
	if m.index.Get(k).Exists() {
		return k, true
	}
	if !created || m.clock.Now().Sub(job.CreationTimestamp.Time) > m.profiles[pod.Spec.SchedulerName].JobGroupTimeout {
		return Key{}, false
	}
	return k, true
}

// OnJob files the pods of a Job again (it appeared, changed or is gone) and records how many
// of them completed: they count as having run.
func (m *Model) OnJob(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	m.mu.Lock()
	var eff effects
	if name, _ := m.workloads.GroupOfJob(job, sets.KeySet(m.profiles)); name != "" {
		k := PodGroupKey(job.Namespace, name)
		if m.members.ran[k] != int(job.Status.Succeeded) {
			m.members.SetRan(k, int(job.Status.Succeeded))
			m.refreshLocked(&eff, m.index.TopOf(k))
		}
	}
	m.refileJobLocked(&eff, job.UID)
	m.mu.Unlock()
	m.apply(eff)
}

// refileJobGroupLocked files again the pods of the Job whose PodGroup k is, if any: the
// PodGroup appeared (late) or is gone.
func (m *Model) refileJobGroupLocked(eff *effects, k Key) {
	if uid, ok := m.jobs.groupJobs[k]; ok {
		m.refileJobLocked(eff, uid)
	}
}

// refileJobLocked files the pods of a Job again; those whose group changed are activated.
func (m *Model) refileJobLocked(eff *effects, uid types.UID) {
	for _, pod := range m.jobs.pods[uid] {
		before := m.members.Of(pod.UID)
		m.filePodLocked(eff, pod)
		after := m.members.Of(pod.UID)
		if (before == nil) != (after == nil) || (before != nil && before.Group != after.Group) {
			eff.activate = append(eff.activate, pod)
		}
	}
}

// awaitJobGroupLocked arranges, once per Job, for its pods to be filed again when its
// PodGroup is late, and for the Job to say so then.
func (m *Model) awaitJobGroupLocked(pod *v1.Pod) {
	owner, ok := jobOwner(pod)
	if !ok || m.jobs.timers.Has(owner.UID) || m.jobLister == nil {
		return
	}
	job, err := m.jobLister.Jobs(pod.Namespace).Get(owner.Name)
	if err != nil || job.UID != owner.UID {
		return // filed again when the Job is seen
	}
	m.jobs.timers.Insert(owner.UID)
	timeout := m.profiles[pod.Spec.SchedulerName].JobGroupTimeout
	wait := job.CreationTimestamp.Add(timeout).Sub(m.clock.Now()) + time.Second
	m.clock.AfterFunc(wait, func() { m.jobGroupLate(job, timeout) })
}

// jobGroupName is the PodGroup the pods of a Job belong to.
func (m *Model) jobGroupName(job *batchv1.Job) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	name, _ := m.workloads.GroupOfJob(job, sets.KeySet(m.profiles))
	return name
}

// jobGroupLate files the pods of a Job again once its PodGroup is late: they are scheduled
// without gang semantics, and the Job says why.
func (m *Model) jobGroupLate(job *batchv1.Job, timeout time.Duration) {
	m.mu.Lock()
	var eff effects
	m.jobs.timers.Delete(job.UID)
	m.refileJobLocked(&eff, job.UID)
	m.mu.Unlock()
	if len(eff.activate) > 0 {
		m.logger.V(2).Info("PodGroup of Job is late; its pods are scheduled without a gang", "job", klog.KObj(job), "timeout", timeout)
		if m.recorder != nil {
			m.recorder.Eventf(job, nil, v1.EventTypeWarning, "PodGroupMissing", "Scheduling",
				"no PodGroup %q appeared within %s of the Job's creation (is lockstep's workload controller running?); its pods are scheduled without gang semantics",
				m.jobGroupName(job), timeout)
		}
	}
	m.apply(eff)
}

// missingGroupMessage explains why a pod waits for a PodGroup that does not exist.
func missingGroupMessage(pod *v1.Pod, k Key) string {
	if _, labeled := labelKeyOf(pod); !labeled {
		if owner, ok := jobOwner(pod); ok {
			return fmt.Sprintf("waiting for lockstep's workload controller to create PodGroup %q for Job %q", k.Name, owner.Name)
		}
	}
	return fmt.Sprintf("waiting for PodGroup %q to be created", k.Name)
}
