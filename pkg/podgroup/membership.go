package podgroup

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// A pod belongs to a PodGroup in one of two ways:
//   - its label scheduling.lockstep.dev/pod-group names the PodGroup (same namespace);
//   - its controller is a batch/v1 Job that lockstep's Job controller gives a gang
//     (GangForJob): the pod belongs to that Job's PodGroup, found through the owner
//     reference, so that Jobs need no change to their pod template.

// KeyOf returns the PodGroup a pod belongs to.
func (m *Manager) KeyOf(pod *v1.Pod) (Key, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keyOfLocked(pod)
}

func (m *Manager) keyOfLocked(pod *v1.Pod) (Key, bool) {
	if k, ok := labelKeyOf(pod); ok {
		return k, true
	}
	k, _, ok := m.jobKeyLocked(pod)
	return k, ok
}

// jobOwner returns the Job that controls a pod, if one does.
func jobOwner(pod *v1.Pod) (*metav1.OwnerReference, bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "Job" || !strings.HasPrefix(owner.APIVersion, "batch/") {
		return nil, false
	}
	return owner, true
}

// jobKeyLocked returns the PodGroup of a pod controlled by a Job that gets a gang, and the
// Job's UID. A Job not seen yet is taken to get one (its pods wait until it is seen). A Job
// whose PodGroup has not appeared jobGroupTimeout after the Job was created no longer holds
// its pods: they are scheduled without gang semantics rather than blocked forever.
func (m *Manager) jobKeyLocked(pod *v1.Pod) (Key, types.UID, bool) {
	owner, ok := jobOwner(pod)
	if !ok || m.jobLister == nil {
		return Key{}, "", false
	}
	job, err := m.jobLister.Jobs(pod.Namespace).Get(owner.Name)
	if err != nil || job.UID != owner.UID {
		return PodGroupKey(pod.Namespace, JobGroupName(owner.Name, owner.UID)), owner.UID, true
	}
	gang, _ := GangForJob(job, m.schedulerNames)
	if gang == nil {
		return Key{}, "", false
	}
	k := PodGroupKey(pod.Namespace, gang.Name)
	if g := m.groups[k]; (g == nil || !g.exists()) && m.now().Sub(job.CreationTimestamp.Time) > m.jobGroupTimeout {
		return Key{}, "", false
	}
	return k, job.UID, true
}

// SetJobGroupTimeout sets how long pods of a Job that gets a gang wait for its PodGroup.
func (m *Manager) SetJobGroupTimeout(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobGroupTimeout = d
}

// rememberJobPodLocked keeps the latest copy of every pod a Job controls, so that the pods
// can be filed again when the Job changes (or its PodGroup is late).
func (m *Manager) rememberJobPodLocked(pod *v1.Pod, deleted bool) {
	owner, ok := jobOwner(pod)
	if !ok || !m.schedulerNames.Has(pod.Spec.SchedulerName) {
		return
	}
	pods := m.jobPods[owner.UID]
	if deleted {
		delete(pods, pod.UID)
		if len(pods) == 0 {
			delete(m.jobPods, owner.UID)
		}
		return
	}
	if pods == nil {
		pods = map[types.UID]*v1.Pod{}
		m.jobPods[owner.UID] = pods
	}
	pods[pod.UID] = pod
}

// refileJobLocked files the pods of a Job again (the Job appeared, changed or its PodGroup
// is late) and returns those whose group changed, to be activated.
func (m *Manager) refileJobLocked(uid types.UID) []*v1.Pod {
	var activate []*v1.Pod
	for _, pod := range m.jobPods[uid] {
		before, had := m.podKeys[pod.UID]
		activate = append(activate, m.upsertPodLocked(pod)...)
		if after, has := m.podKeys[pod.UID]; had != has || before != after {
			activate = append(activate, pod)
		}
	}
	return activate
}

func (m *Manager) onJob(obj any) {
	job, ok := asJob(obj)
	if !ok {
		return
	}
	m.mu.Lock()
	activate := m.refileJobLocked(job.UID)
	m.mu.Unlock()
	m.activate(activate)
}

func asJob(obj any) (*batchv1.Job, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	job, ok := obj.(*batchv1.Job)
	return job, ok
}

// awaitJobGroupLocked arranges, once per Job, for its pods to be filed again when its
// PodGroup is late, and says so on the Job then.
func (m *Manager) awaitJobGroupLocked(pod *v1.Pod) {
	owner, ok := jobOwner(pod)
	if !ok || m.jobTimers.Has(owner.UID) || m.jobLister == nil {
		return
	}
	job, err := m.jobLister.Jobs(pod.Namespace).Get(owner.Name)
	if err != nil || job.UID != owner.UID {
		return // filed again when the Job is seen
	}
	m.jobTimers.Insert(owner.UID)
	wait := job.CreationTimestamp.Add(m.jobGroupTimeout).Sub(m.now()) + time.Second
	// The callback runs on its own goroutine: a fake clock fires timers holding its lock.
	m.clock.AfterFunc(wait, func() { go m.jobGroupLate(job) })
}

// jobGroupLate files the pods of a Job again once its PodGroup is late: they are scheduled
// without gang semantics, and the Job says why.
func (m *Manager) jobGroupLate(job *batchv1.Job) {
	m.mu.Lock()
	activate := m.refileJobLocked(job.UID)
	m.jobTimers.Delete(job.UID)
	timeout := m.jobGroupTimeout
	m.mu.Unlock()
	if len(activate) > 0 && m.recorder != nil {
		m.recorder.Eventf(job, nil, v1.EventTypeWarning, "PodGroupMissing", "Scheduling",
			"no PodGroup %q appeared within %s of the Job's creation (is lockstep's Job controller running?); its pods are scheduled without gang semantics",
			JobGroupName(job.Name, job.UID), timeout)
	}
	m.activate(activate)
}

// missingGroupMessage explains why a pod waits for a PodGroup that does not exist.
func missingGroupMessage(pod *v1.Pod, k Key) string {
	if _, labeled := labelKeyOf(pod); !labeled {
		if owner, ok := jobOwner(pod); ok {
			return fmt.Sprintf("waiting for lockstep's Job controller to create PodGroup %q for Job %q", k.Name, owner.Name)
		}
	}
	return fmt.Sprintf("waiting for PodGroup %q to be created", k.Name)
}
