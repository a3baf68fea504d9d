package filing

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	batchlisters "k8s.io/client-go/listers/batch/v1"
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
//     it. When the workload controller creates that PodGroup, the pods wait for it, each for
//     its profile's jobGroupTimeout from the later of its own creation and the Job's last
//     (re)start (GroupWaitStart: however long Kueue kept the Job suspended): then they belong
//     to no group (they are scheduled without a gang, and the Job gets an event) until the
//     PodGroup appears. When nobody creates it (the controller is off), they wait for
//     nothing.
// Workloads decides between the last two when a pod has both (the launcher Job of an MPI
// job is its PodGroup's member; a JobSet's staged tree outranks the flat PodGroup Kubeflow
// Trainer makes for it).
//
// Membership depends on the pod, its Job, the objects its labels name, whether its PodGroup
// exists and the time, so the pods are filed again whenever any of these change: the Book
// remembers them per unit (their Job, the object their labels name) and which units are
// filed under each PodGroup.

// Unit is what a pod's filing depends on besides the pod: its Job, or the group object its
// labels name (and, for the timer of a labelled pod, the pod itself).
type Unit string

// JobUnit is the unit of a Job's pods.
func JobUnit(uid types.UID) Unit { return Unit("job/" + uid) }

// LabelledUnit is the unit of the pods whose labels name object (namespace/name).
func LabelledUnit(object string) Unit { return Unit("labelled/" + object) }

// PodUnit is the unit of one pod (a labelled pod waits for its object from its own creation).
func PodUnit(uid types.UID) Unit { return Unit("pod/" + uid) }

// Profiles are the scheduling profiles pods are filed for.
type Profiles interface {
	// Names are the schedulerNames served.
	Names() sets.Set[string]
	// GroupTimeout is how long pods of a profile wait for a PodGroup that is created for them
	// (jobGroupTimeoutSeconds).
	GroupTimeout(schedulerName string) time.Duration
}

// Book files pods and remembers the pods of each unit, so that they can be filed again when
// the unit or its PodGroup changes, and which units wait on a timer for a late PodGroup or
// object. It is not safe for concurrent use; the group model serializes access.
type Book struct {
	workloads Workloads
	jobs      batchlisters.JobLister
	// pods are the latest copies of the pods of each unit.
	pods map[Unit]map[types.UID]*v1.Pod
	// filed maps a PodGroup (namespace/name) to the units whose pods are filed under (or wait
	// for) it.
	filed map[string]sets.Set[Unit]
	// timers are the units with a timer for a late PodGroup or object.
	timers sets.Set[Unit]
}

// NewBook returns an empty book that files by workloads (nil: JobGangs of no controller).
func NewBook(workloads Workloads) *Book {
	if workloads == nil {
		workloads = JobGangs{Created: true}
	}
	return &Book{workloads: workloads, pods: map[Unit]map[types.UID]*v1.Pod{}, filed: map[string]sets.Set[Unit]{}, timers: sets.New[Unit]()}
}

// Sizes counts what the book keeps (diagnostics).
func (b *Book) Sizes() map[string]int {
	return map[string]int{"units": len(b.pods), "filed": len(b.filed), "timers": b.timers.Len()}
}

// Workloads returns the rules the book files by.
func (b *Book) Workloads() Workloads { return b.workloads }

// SetJobs gives the book the Jobs it files by.
func (b *Book) SetJobs(jobs batchlisters.JobLister) { b.jobs = jobs }

// UnitsOf returns the units a pod's filing depends on.
func (b *Book) UnitsOf(pod *v1.Pod) []Unit {
	var out []Unit
	if owner, ok := JobOwner(pod); ok {
		out = append(out, JobUnit(owner.UID))
	}
	if object, ok := b.workloads.Labelled(pod); ok {
		out = append(out, LabelledUnit(object))
	}
	return out
}

// Remember keeps the latest copy of a pod under its units.
func (b *Book) Remember(pod *v1.Pod) {
	for _, u := range b.UnitsOf(pod) {
		pods := b.pods[u]
		if pods == nil {
			pods = map[types.UID]*v1.Pod{}
			b.pods[u] = pods
		}
		pods[pod.UID] = pod
	}
}

// Forget drops a pod, and units left without pods.
func (b *Book) Forget(pod *v1.Pod) {
	for _, u := range b.UnitsOf(pod) {
		pods := b.pods[u]
		if pods == nil {
			continue
		}
		delete(pods, pod.UID)
		if len(pods) > 0 {
			continue
		}
		delete(b.pods, u)
		for k, units := range b.filed {
			units.Delete(u)
			if units.Len() == 0 {
				delete(b.filed, k)
			}
		}
	}
}

// PodsOf returns the pods of a unit.
func (b *Book) PodsOf(u Unit) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(b.pods[u]))
	for _, p := range b.pods[u] {
		out = append(out, p)
	}
	return out
}

// UnitsUnder returns the units filed under PodGroup namespace/name.
func (b *Book) UnitsUnder(namespace, name string) []Unit {
	return sets.List(b.filed[namespace+"/"+name])
}

func (b *Book) fileUnder(namespace, name string, u Unit) {
	if _, ok := b.pods[u]; !ok {
		return
	}
	k := namespace + "/" + name
	if b.filed[k] == nil {
		b.filed[k] = sets.New[Unit]()
	}
	b.filed[k].Insert(u)
}

// Arm records that unit u has a timer, and reports whether it had none.
func (b *Book) Arm(u Unit) bool {
	if b.timers.Has(u) {
		return false
	}
	b.timers.Insert(u)
	return true
}

// Disarm records that unit u's timer fired.
func (b *Book) Disarm(u Unit) { b.timers.Delete(u) }

// Job returns the Job that controls a pod, if the book has it.
func (b *Book) Job(pod *v1.Pod) (*batchv1.Job, bool) {
	owner, ok := JobOwner(pod)
	if !ok || b.jobs == nil {
		return nil, false
	}
	j, err := b.jobs.Jobs(pod.Namespace).Get(owner.Name)
	if err != nil || j.UID != owner.UID {
		return nil, false
	}
	return j, true
}

// File returns the PodGroup (in the pod's namespace) a pod of a served profile belongs to,
// if any (see above); exists tells whether a PodGroup of the pod's namespace exists.
func (b *Book) File(pod *v1.Pod, profiles Profiles, now time.Time, exists func(name string) bool) (string, bool) {
	names := profiles.Names()
	if !names.Has(pod.Spec.SchedulerName) {
		return "", false
	}
	if name, ok := GroupNameOf(pod); ok {
		return name, true
	}
	var job *batchv1.Job
	if owner, ok := JobOwner(pod); ok && b.jobs != nil {
		if j, seen := b.Job(pod); seen {
			job = j
		} else if _, labelled := b.workloads.Labelled(pod); !labelled {
			// The Job is not seen yet: its pods are taken to belong to the PodGroup it
			// would get.
			return JobGroupName(owner.Name, owner.UID), true
		}
	}
	f := b.workloads.GroupOfPod(pod, job, names)
	if f.Name == "" {
		return "", false
	}
	for _, u := range b.UnitsOf(pod) {
		b.fileUnder(pod.Namespace, f.Name, u)
	}
	timeout := profiles.GroupTimeout(pod.Spec.SchedulerName)
	if f.Unseen {
		// Wait for the object a while: its informer may be behind the pod's.
		return f.Name, now.Sub(pod.CreationTimestamp.Time) <= timeout
	}
	if exists(f.Name) {
		return f.Name, true
	}
	if !f.Created {
		return "", false
	}
	if !f.Labelled && job != nil && now.Sub(GroupWaitStart(pod, job)) > timeout {
		return "", false
	}
	return f.Name, true
}

// GroupWaitStart is when a Job's pod started waiting for the Job's PodGroup: the later of
// the pod's creation and the Job's last (re)start. Never the Job's creation alone: a Job
// Kueue kept suspended for longer than jobGroupTimeoutSeconds (an ordinary queue time) is a
// gang once admitted like any other, its pods waiting for the PodGroup its controller makes.
func GroupWaitStart(pod *v1.Pod, job *batchv1.Job) time.Time {
	t := pod.CreationTimestamp.Time
	if job != nil && job.Status.StartTime != nil && job.Status.StartTime.After(t) {
		t = job.Status.StartTime.Time
	}
	return t
}

// Suspended reports whether a Job is suspended (spec.suspend: Kueue queues it, or suspends
// it to preempt it): none of its pods may bind.
func Suspended(job *batchv1.Job) bool {
	return job != nil && job.Spec.Suspend != nil && *job.Spec.Suspend
}

// Gated reports whether a pod has scheduling gates: whoever made it is not done with it.
func Gated(pod *v1.Pod) bool { return len(pod.Spec.SchedulingGates) > 0 }

// KueueGated reports whether a pod waits for Kueue to place it (Kueue's topology scheduling
// gate): Kueue is still setting its node selector.
func KueueGated(pod *v1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == KueueTopologySchedulingGate {
			return true
		}
	}
	return false
}
