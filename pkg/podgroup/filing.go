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

// A pod of a served profile belongs to a PodGroup in one of three ways:
//   - its label scheduling.lockstep.dev/pod-group names the PodGroup (same namespace);
//   - its labels name a group object of another scheduler's API (a scheduler-plugins
//     PodGroup, scheduling.x-k8s.io/pod-group): lockstep's workload controller mirrors that
//     object as a PodGroup of the same name. While the object is not seen (not created yet,
//     its informer behind the pod's, its API not served or not yet watched), a pod younger
//     than its profile's jobGroupTimeout waits for it; after that the pod belongs to no
//     group, as under scheduler-plugins' coscheduling, until the object appears;
//   - its controller is a batch/v1 Job whose pods belong to a PodGroup by their owner (a Job
//     that gets a gang, or a Job a JobSet runs; Workloads says which): they need no change
//     to their pod template. While the Job is not seen yet its pods are taken to belong to
//     it. When the workload controller creates that PodGroup, the pods wait for it, until
//     the Job is older than its profile's jobGroupTimeout: then they belong to no group
//     (they are scheduled without a gang, and the Job gets an event) until the PodGroup
//     appears. When nobody creates it (the controller is off), they wait for nothing.
// Workloads decides between the last two when a pod has both (the launcher Job of an MPI
// job is its PodGroup's member; a JobSet's staged tree outranks the flat PodGroup Kubeflow
// Trainer makes for it).
//
// Membership depends on the pod, its Job, the objects its labels name, whether its PodGroup
// exists and the time, so the model files a pod again whenever any of these change: pods are
// remembered per unit (their Job, the object their labels name) and filed again per unit.

// Workloads says which PodGroup a pod belongs to through its workload: its Job, or a group
// object of another scheduler's API its labels name.
type Workloads interface {
	// GroupOfJob returns the name of the PodGroup in the Job's namespace its pods belong to,
	// "" for none, and whether lockstep's workload controller creates it (so that the pods
	// wait for it). schedulerNames are the profiles served.
	GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (name string, created bool)
	// GroupOfPod files a pod that names no lockstep PodGroup itself; job is its Job, nil when
	// it has none.
	GroupOfPod(pod *v1.Pod, job *batchv1.Job, schedulerNames sets.Set[string]) Filing
	// Labelled returns the namespace/name of the group object of another scheduler's API a
	// pod's labels name, if they name one, whether or not it exists.
	Labelled(pod *v1.Pod) (string, bool)
}

// Filing is where Workloads files a pod.
type Filing struct {
	// Name is the PodGroup (in the pod's namespace), "" for none.
	Name string
	// Created: lockstep's workload controller creates it, so the pod waits for it.
	Created bool
	// Labelled: the pod is filed by the group object of another scheduler's API its labels
	// name, mirrored by PodGroup Name; the pod waits for the mirror.
	Labelled bool
	// Unseen: that object is not seen (yet); Name is the PodGroup it would get.
	Unseen bool
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

// GroupOfPod implements Workloads.
func (j JobGangs) GroupOfPod(_ *v1.Pod, job *batchv1.Job, schedulerNames sets.Set[string]) Filing {
	if job == nil {
		return Filing{}
	}
	name, created := j.GroupOfJob(job, schedulerNames)
	return Filing{Name: name, Created: created}
}

// Labelled implements Workloads: none.
func (JobGangs) Labelled(*v1.Pod) (string, bool) { return "", false }

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

// A unit is what a pod's filing depends on besides the pod: its Job, or the group object its
// labels name.
type unit string

func jobUnit(uid types.UID) unit      { return unit("job/" + uid) }
func labelledUnit(object string) unit { return unit("labelled/" + object) }

// filing remembers the pods of each unit, so that they can be filed again when the unit or
// its PodGroup changes, and which units wait for a late PodGroup or object.
type filing struct {
	// pods are the latest copies of the pods of each unit.
	pods map[unit]map[types.UID]*v1.Pod
	// groupUnits maps a PodGroup to the units whose pods are filed under (or wait for) it.
	groupUnits map[Key]sets.Set[unit]
	// timers are the units with a timer for a late PodGroup or object.
	timers sets.Set[unit]
}

func newFiling() *filing {
	return &filing{pods: map[unit]map[types.UID]*v1.Pod{}, groupUnits: map[Key]sets.Set[unit]{}, timers: sets.New[unit]()}
}

// unitsOf returns the units a pod's filing depends on.
func (m *Model) unitsOf(pod *v1.Pod) []unit {
	var out []unit
	if owner, ok := jobOwner(pod); ok {
		out = append(out, jobUnit(owner.UID))
	}
	if object, ok := m.workloads.Labelled(pod); ok {
		out = append(out, labelledUnit(object))
	}
	return out
}

// rememberLocked keeps the latest copy of a pod of a served profile under its units.
func (m *Model) rememberLocked(pod *v1.Pod) {
	if !m.servesLocked(pod) {
		return
	}
	for _, u := range m.unitsOf(pod) {
		pods := m.filing.pods[u]
		if pods == nil {
			pods = map[types.UID]*v1.Pod{}
			m.filing.pods[u] = pods
		}
		pods[pod.UID] = pod
	}
}

// filedUnder records that the pods of unit u are filed under (or wait for) PodGroup k.
func (f *filing) filedUnder(k Key, u unit) {
	if _, ok := f.pods[u]; !ok {
		return
	}
	if f.groupUnits[k] == nil {
		f.groupUnits[k] = sets.New[unit]()
	}
	f.groupUnits[k].Insert(u)
}

func (m *Model) forgetLocked(pod *v1.Pod) {
	for _, u := range m.unitsOf(pod) {
		pods := m.filing.pods[u]
		if pods == nil {
			continue
		}
		delete(pods, pod.UID)
		if len(pods) > 0 {
			continue
		}
		delete(m.filing.pods, u)
		for k, units := range m.filing.groupUnits {
			units.Delete(u)
			if units.Len() == 0 {
				delete(m.filing.groupUnits, k)
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
	var job *batchv1.Job
	if owner, ok := jobOwner(pod); ok && m.jobLister != nil {
		j, err := m.jobLister.Jobs(pod.Namespace).Get(owner.Name)
		if err != nil || j.UID != owner.UID {
			if _, labelled := m.workloads.Labelled(pod); !labelled {
				// The Job is not seen yet: its pods are taken to belong to the PodGroup it
				// would get.
				return PodGroupKey(pod.Namespace, JobGroupName(owner.Name, owner.UID)), true
			}
		} else {
			job = j
		}
	}
	f := m.workloads.GroupOfPod(pod, job, sets.KeySet(m.profiles))
	if f.Name == "" {
		return Key{}, false
	}
	k := PodGroupKey(pod.Namespace, f.Name)
	for _, u := range m.unitsOf(pod) {
		m.filing.filedUnder(k, u)
	}
	if f.Unseen {
		// Wait for the object a while: its informer may be behind the pod's.
		return k, m.clock.Now().Sub(pod.CreationTimestamp.Time) <= m.profiles[pod.Spec.SchedulerName].JobGroupTimeout
	}
	if m.index.Get(k).Exists() {
		return k, true
	}
	if !f.Created {
		return Key{}, false
	}
	if !f.Labelled && job != nil && m.clock.Now().Sub(job.CreationTimestamp.Time) > m.profiles[pod.Spec.SchedulerName].JobGroupTimeout {
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
		m.setRanLocked(&eff, PodGroupKey(job.Namespace, name), int(job.Status.Succeeded))
	}
	m.refileUnitLocked(&eff, jobUnit(job.UID))
	m.mu.Unlock()
	m.apply(eff)
}

// OnLabelled files again the pods whose labels name the group object namespace/name of
// another scheduler's API (it appeared, changed or is gone), and records how many of its
// pods completed (ran, from the object's status): they count for the gang of the PodGroup
// that mirrors it, which has its name.
func (m *Model) OnLabelled(namespace, name string, ran int) {
	m.mu.Lock()
	var eff effects
	m.setRanLocked(&eff, PodGroupKey(namespace, name), ran)
	m.refileUnitLocked(&eff, labelledUnit(namespace+"/"+name))
	m.mu.Unlock()
	m.apply(eff)
}

// setRanLocked records how many pods of PodGroup k completed.
func (m *Model) setRanLocked(eff *effects, k Key, ran int) {
	if m.members.ran[k] != ran {
		m.members.SetRan(k, ran)
		m.refreshLocked(eff, m.index.TopOf(k))
	}
}

// refileGroupUnitsLocked files again the pods of the units filed under PodGroup k, if any:
// the PodGroup appeared (late) or is gone.
func (m *Model) refileGroupUnitsLocked(eff *effects, k Key) {
	for _, u := range sets.List(m.filing.groupUnits[k]) {
		m.refileUnitLocked(eff, u)
	}
}

// refileUnitLocked files the pods of a unit again; those whose group changed are activated.
func (m *Model) refileUnitLocked(eff *effects, u unit) {
	for _, pod := range m.filing.pods[u] {
		before := m.members.Of(pod.UID)
		m.filePodLocked(eff, pod)
		after := m.members.Of(pod.UID)
		if (before == nil) != (after == nil) || (before != nil && before.Group != after.Group) {
			eff.activate = append(eff.activate, pod)
		}
	}
}

// awaitGroupLocked arranges, once per Job (once per pod for pods whose labels name an
// object), for the pods of a unit whose PodGroup (or labelled object) is late to be filed
// again when they stop waiting, and for the workload to say so then.
func (m *Model) awaitGroupLocked(pod *v1.Pod) {
	timeout := m.profiles[pod.Spec.SchedulerName].JobGroupTimeout
	if object, ok := m.workloads.Labelled(pod); ok && m.waitsForMirrorLocked(pod, object) {
		// Each pod waits from its own creation, so each gets a timer: one per object would
		// release only the pods as old as the first, and leave the younger waiting.
		timer := unit("pod/" + pod.UID)
		if m.filing.timers.Has(timer) {
			return
		}
		m.filing.timers.Insert(timer)
		wait := pod.CreationTimestamp.Add(timeout).Sub(m.clock.Now()) + time.Second
		m.clock.AfterFunc(wait, func() { m.labelledLate(pod, object, timer, timeout) })
		return
	}
	owner, ok := jobOwner(pod)
	if !ok || m.filing.timers.Has(jobUnit(owner.UID)) || m.jobLister == nil {
		return
	}
	job, err := m.jobLister.Jobs(pod.Namespace).Get(owner.Name)
	if err != nil || job.UID != owner.UID {
		return // filed again when the Job is seen
	}
	m.filing.timers.Insert(jobUnit(job.UID))
	wait := job.CreationTimestamp.Add(timeout).Sub(m.clock.Now()) + time.Second
	m.clock.AfterFunc(wait, func() { m.jobGroupLate(job, timeout) })
}

// waitsForMirrorLocked reports whether a pod is filed under the PodGroup mirroring object
// (rather than, say, its JobSet's).
func (m *Model) waitsForMirrorLocked(pod *v1.Pod, object string) bool {
	mem := m.members.Of(pod.UID)
	return mem != nil && mem.Group.Namespace+"/"+mem.Group.Name == object
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
	m.filing.timers.Delete(jobUnit(job.UID))
	m.refileUnitLocked(&eff, jobUnit(job.UID))
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

// labelledLate files the pods naming object again once it is late: those still without it
// are scheduled without gang semantics, as scheduler-plugins schedules pods whose PodGroup
// does not exist, and pod says why.
func (m *Model) labelledLate(pod *v1.Pod, object string, timer unit, timeout time.Duration) {
	m.mu.Lock()
	var eff effects
	m.filing.timers.Delete(timer)
	m.refileUnitLocked(&eff, labelledUnit(object))
	m.mu.Unlock()
	if len(eff.activate) > 0 {
		m.logger.V(2).Info("Group object named by pod labels is late; its pods are scheduled without a gang", "pod", klog.KObj(pod), "object", object, "timeout", timeout)
		if m.recorder != nil {
			m.recorder.Eventf(pod, nil, v1.EventTypeWarning, "PodGroupMissing", "Scheduling",
				"the group %q this pod's labels name was not seen within %s of its creation; its pods are scheduled without gang semantics until it appears", object, timeout)
		}
	}
	m.apply(eff)
}

// missingGroupMessage explains why a pod waits for a PodGroup that does not exist.
func (m *Model) missingGroupMessage(pod *v1.Pod, k Key) string {
	if _, labeled := labelKeyOf(pod); !labeled {
		if object, ok := m.workloads.Labelled(pod); ok && object == k.Namespace+"/"+k.Name {
			return fmt.Sprintf("waiting for %q, named by the pod's labels, and for lockstep's workload controller to mirror it as PodGroup %q", object, k.Name)
		}
		if owner, ok := jobOwner(pod); ok {
			return fmt.Sprintf("waiting for lockstep's workload controller to create PodGroup %q for Job %q", k.Name, owner.Name)
		}
	}
	return fmt.Sprintf("waiting for PodGroup %q to be created", k.Name)
}
