package podgroup

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// The model files pods with its filing.Book (pkg/filing holds the rules), and files them
// again whenever what their filing depends on changes: their Job, the object their labels
// name, their PodGroup appearing or going, or the time (a late PodGroup).

// profilesLocked is the model's profiles as the book asks for them; valid under m.mu.
type profilesLocked struct{ m *Model }

func (p profilesLocked) Names() sets.Set[string] { return sets.KeySet(p.m.profiles) }

func (p profilesLocked) GroupTimeout(schedulerName string) time.Duration {
	if prof, ok := p.m.profiles[schedulerName]; ok {
		return prof.JobGroupTimeout
	}
	return 0
}

// fileLocked returns the PodGroup a pod belongs to, if any. A pod whose spec.schedulingGroup
// names a native PodGroup belongs to it, whatever its labels say: the field is the pod's own,
// set by whoever made the pod for that group (the Job controller, a user). One exception
// keeps lockstep's Jobs as they were: the Job controller (WorkloadWithJob) gives every Job a
// native group, basic when the Job has no spec.scheduling; the pods of such a Job that
// lockstep's rule makes a gang (GangForJob) belong to the Job's lockstep PodGroup.
func (m *Model) fileLocked(pod *v1.Pod) (Key, bool) {
	native, named := NativeGroupOf(pod)
	// spec.schedulingGroup is followed only where the model reads the native groups: one it
	// cannot see would hold the pod for ever (--native-groups=false, or no RBAC to list them).
	named = named && m.nativeKinds.Has(KindPodGroup)
	if named && m.nativeDecidesLocked(pod, native) {
		return native, m.servesLocked(pod)
	}
	name, ok := m.book.File(pod, profilesLocked{m}, m.clock.Now(), func(name string) bool {
		return m.index.Get(PodGroupKey(pod.Namespace, name)).Exists()
	})
	switch {
	case ok:
		return PodGroupKey(pod.Namespace, name), true
	case named:
		return native, m.servesLocked(pod) // nothing else files it
	}
	return Key{}, false
}

// nativeDecidesLocked reports whether the native group a pod's spec.schedulingGroup names
// decides its membership over lockstep's rules (a label naming a PodGroup, its Job's gang):
// when it is a gang, or when the pod's Job asked for it (spec.scheduling). The Job
// controller's WorkloadWithJob gives every Job a basic native group, which must not take the
// pods of a gang their labels or their Job name. A pod of a Job not seen yet is lockstep's
// rules' to file (it waits for the Job, as lockstep's pods do).
func (m *Model) nativeDecidesLocked(pod *v1.Pod, k Key) bool {
	if g := m.index.Get(k); g.Exists() && g.IsGang() {
		return true
	}
	job, seen := m.book.Job(pod)
	return seen && job.Spec.Scheduling != nil
}

// ReadNative records that the model reads the native groups of kind (a NativeSource watches
// them): pods naming one in spec.schedulingGroup belong to it.
func (m *Model) ReadNative(kind Kind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nativeKinds.Insert(kind)
}

// groupOfLocked: the member's group, or the group the filing rules give a pod not seen yet.
func (m *Model) groupOfLocked(pod *v1.Pod) (Key, bool) {
	if mem := m.members.Of(pod.UID); mem != nil {
		return mem.Group, true
	}
	return m.fileLocked(pod)
}

// OnJob files the pods of a Job again (it appeared or changed) and records how many of them
// completed: they count as having run.
func (m *Model) OnJob(obj any) {
	if job, ok := jobOf(obj); ok {
		m.fileJob(job, int(job.Status.Succeeded))
	}
}

// OnJobDelete files the pods of a deleted Job again and forgets how many of them completed.
func (m *Model) OnJobDelete(obj any) {
	if job, ok := jobOf(obj); ok {
		m.fileJob(job, 0)
	}
}

// fileJob records that ran pods of a Job completed and files its pods again.
func (m *Model) fileJob(job *batchv1.Job, ran int) {
	m.update(m.logger, func(eff *effects) {
		if name, _ := m.book.Workloads().GroupOfJob(job, sets.KeySet(m.profiles)); name != "" {
			m.setRanLocked(eff, PodGroupKey(job.Namespace, name), ran)
		}
		m.refileUnitLocked(eff, filing.JobUnit(job.UID))
	})
}

// jobOf returns the Job an informer event is about.
func jobOf(obj any) (*batchv1.Job, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	job, ok := obj.(*batchv1.Job)
	return job, ok
}

// OnJobUpdate is OnJob for a Job that changed. A Job suspended (Kueue suspends a running Job
// to preempt it) loses its members waiting at Permit at once: none of its pods binds, and
// its tree is released if it can no longer be ready. A Job resumed has its pending pods
// tried again (they were held while it was suspended).
func (m *Model) OnJobUpdate(oldObj, obj any) {
	old, ok1 := oldObj.(*batchv1.Job)
	job, ok2 := obj.(*batchv1.Job)
	if !ok1 || !ok2 || filing.Suspended(old) == filing.Suspended(job) {
		m.OnJob(obj)
		return
	}
	m.OnJob(obj)
	m.update(m.logger, func(eff *effects) {
		unit := filing.JobUnit(job.UID)
		if !filing.Suspended(job) {
			for _, pod := range m.book.PodsOf(unit) {
				if pod.Spec.NodeName == "" && !terminated(pod) {
					eff.activate = append(eff.activate, pod)
				}
			}
			m.logger.V(4).Info("Job resumed: its pods are scheduled", "job", klog.KObj(job))
			return
		}
		why := fmt.Sprintf("Job %s was suspended", job.Name)
		for _, pod := range m.book.PodsOf(unit) {
			a := m.permits.attempts.Of(pod.UID)
			if a == nil || a.State != AttemptWaiting {
				continue
			}
			m.permits.attempts.Remove(pod.UID)
			eff.rejectPod(a.Pod, why)
			m.permits.releaseHopelessLocked(eff, m.logger, a.Root, why)
			if m.permits.attempts.Ended(a.Root) {
				eff.ended = append(eff.ended, a.Root)
			}
			m.logger.V(4).Info("Waiting member released: its Job was suspended", "pod", klog.KObj(pod), "group", a.Group, "root", a.Root)
		}
	})
}

// OnLabelled files again the pods whose labels name the group object namespace/name of
// another scheduler's API (it appeared, changed or is gone), and records how many of its
// pods completed (ran, from the object's status): they count for the gang of the PodGroup
// that mirrors it, which has its name.
func (m *Model) OnLabelled(namespace, name string, ran int) {
	m.update(m.logger, func(eff *effects) {
		m.setRanLocked(eff, PodGroupKey(namespace, name), ran)
		m.refileUnitLocked(eff, filing.LabelledUnit(namespace+"/"+name))
	})
}

// setRanLocked records how many pods of PodGroup k completed.
func (m *Model) setRanLocked(eff *effects, k Key, ran int) {
	if m.members.ran[k] != ran {
		m.members.SetRan(k, ran)
		eff.touch(m.index.TopOf(k))
	}
}

// refileGroupUnitsLocked files again the pods of the units filed under PodGroup k, if any:
// the PodGroup appeared (late) or is gone.
func (m *Model) refileGroupUnitsLocked(eff *effects, k Key) {
	if k.Kind != KindPodGroup || k.Native() {
		return
	}
	for _, u := range m.book.UnitsUnder(k.Namespace, k.Name) {
		m.refileUnitLocked(eff, u)
	}
}

// refileUnitLocked files the pods of a unit again; those whose group changed are activated.
func (m *Model) refileUnitLocked(eff *effects, u filing.Unit) {
	for _, pod := range m.book.PodsOf(u) {
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
	if object, ok := m.book.Workloads().Labelled(pod); ok && m.waitsForMirrorLocked(pod, object) {
		// Each pod waits from its own creation, so each gets a timer: one per object would
		// release only the pods as old as the first, and leave the younger waiting.
		timer := filing.PodUnit(pod.UID)
		if !m.book.Arm(timer) {
			return
		}
		wait := pod.CreationTimestamp.Add(timeout).Sub(m.clock.Now()) + time.Second
		m.clock.AfterFunc(wait, func() { m.labelledLate(pod, object, timer, timeout) })
		return
	}
	job, ok := m.book.Job(pod)
	if !ok || !m.book.Arm(filing.JobUnit(job.UID)) {
		return // filed again when the Job is seen, or its timer is armed
	}
	// One timer per Job, at the end of the wait of the pod that armed it (the pods of a Job
	// arrive in the order they were made); pods that still wait then arm it again.
	wait := filing.GroupWaitStart(pod, job).Add(timeout).Sub(m.clock.Now()) + time.Second
	m.clock.AfterFunc(wait, func() { m.jobGroupLate(job, timeout) })
}

// waitsForMirrorLocked reports whether a pod is filed under the PodGroup mirroring object
// (rather than, say, its JobSet's).
func (m *Model) waitsForMirrorLocked(pod *v1.Pod, object string) bool {
	mem := m.members.Of(pod.UID)
	return mem != nil && mem.Group.Namespace+"/"+mem.Group.Name == object
}

// jobGroupLate files the pods of a Job again once its PodGroup is late: they are scheduled
// without gang semantics, and the Job says why.
func (m *Model) jobGroupLate(job *batchv1.Job, timeout time.Duration) {
	var name string
	var late bool
	m.update(m.logger, func(eff *effects) {
		unit := filing.JobUnit(job.UID)
		m.book.Disarm(unit)
		m.refileUnitLocked(eff, unit)
		late = len(eff.activate) > 0
		name, _ = m.book.Workloads().GroupOfJob(job, sets.KeySet(m.profiles))
		// Pods made later than the one that armed the timer may still wait: the first of
		// them arms it again.
		var next *v1.Pod
		for _, pod := range m.book.PodsOf(unit) {
			mem := m.members.Of(pod.UID)
			if mem == nil || m.index.Get(mem.Group).Exists() {
				continue
			}
			if next == nil || pod.CreationTimestamp.Before(&next.CreationTimestamp) {
				next = pod
			}
		}
		if next != nil {
			m.awaitGroupLocked(next)
		}
	})
	if late {
		m.logger.V(2).Info("PodGroup of Job is late; its pods are scheduled without a gang", "job", klog.KObj(job), "timeout", timeout)
		if m.recorder != nil {
			m.recorder.Eventf(job, nil, v1.EventTypeWarning, "PodGroupMissing", "Scheduling",
				"no PodGroup %q appeared within %s of the later of its pods' creation and the Job's last (re)start (is lockstep's workload controller running and leading?): the pods that waited that long are scheduled without gang semantics; those not placed yet join the PodGroup if it appears",
				name, timeout)
		}
	}
}

// labelledLate files the pods naming object again once it is late: those still without it
// are scheduled without gang semantics, as scheduler-plugins schedules pods whose PodGroup
// does not exist, and pod says why.
func (m *Model) labelledLate(pod *v1.Pod, object string, timer filing.Unit, timeout time.Duration) {
	var late bool
	m.update(m.logger, func(eff *effects) {
		m.book.Disarm(timer)
		m.refileUnitLocked(eff, filing.LabelledUnit(object))
		late = len(eff.activate) > 0
	})
	if late {
		m.logger.V(2).Info("Group object named by pod labels is late; its pods are scheduled without a gang", "pod", klog.KObj(pod), "object", object, "timeout", timeout)
		if m.recorder != nil {
			m.recorder.Eventf(pod, nil, v1.EventTypeWarning, "PodGroupMissing", "Scheduling",
				"%q, the group this pod's labels name, was not seen within %s of the pod's creation (for a LeaderWorkerSet's or RayCluster's pod: the object its group is made from): this pod is scheduled without gang semantics, as scheduler-plugins schedules a pod whose PodGroup is missing; if that appears before the pod is placed, the pod waits for its group again", object, timeout)
		}
	}
}

// NativeGroupOf returns the native PodGroup a pod's spec.schedulingGroup names, if it names
// one.
func NativeGroupOf(pod *v1.Pod) (Key, bool) {
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return Key{Kind: KindPodGroup, Namespace: pod.Namespace, Name: *sg.PodGroupName, API: APINative}, true
	}
	return Key{}, false
}

// missingGroupMessage explains why a pod waits for a PodGroup that does not exist.
func (m *Model) missingGroupMessage(pod *v1.Pod, k Key) string {
	if k.Native() {
		return fmt.Sprintf("waiting for PodGroup %q to be created (%s, named by the pod's spec.schedulingGroup)", k.Name, k.API)
	}
	if _, labeled := filing.GroupNameOf(pod); !labeled {
		if object, ok := m.book.Workloads().Labelled(pod); ok && object == k.Namespace+"/"+k.Name {
			return fmt.Sprintf("waiting for %q, named by the pod's labels, and for lockstep's workload controller to mirror it as PodGroup %q", object, k.Name)
		}
		if owner, ok := filing.JobOwner(pod); ok {
			return fmt.Sprintf("waiting for lockstep's workload controller to create PodGroup %q for Job %q", k.Name, owner.Name)
		}
	}
	return fmt.Sprintf("waiting for PodGroup %q to be created", k.Name)
}

// Events of a pod whose PodGroup does not exist. A group lockstep's workload controller
// creates (a Job's gang, the mirror of the object the pod's labels name) appears moments
// after the pods, which all wait for it meanwhile: that wait is told as a Normal event,
// WaitingForPodGroup, and a Warning, PodGroupNotFound, comes only once it lasts longer than
// the controller should need (missingGroupWarnAfter) — a Warning on every pod of every
// healthy Job would fire every alert on Warning events. A group the pod's own label names
// is the user's to create: no controller is about to, and the Warning comes at once.
const (
	ReasonWaitingForPodGroup = "WaitingForPodGroup"
	ReasonPodGroupNotFound   = "PodGroupNotFound"
)

// missingGroupWarnAfter is how long a pod may wait for the PodGroup the workload controller
// creates for it before it is warned: a quarter of its profile's jobGroupTimeout (30 s of
// the default 120). The controller creates a group within a second or two of the workload
// when it runs and leads; a quarter of the timeout is well past that, scales with what the
// operator allowed for a slow controller, and leaves most of the wait, after the Warning,
// before the pods are scheduled without a gang (PodGroupMissing).
func (m *Model) missingGroupWarnAfter(pod *v1.Pod) time.Duration {
	timeout := 2 * time.Minute
	if prof := m.profiles[pod.Spec.SchedulerName]; prof != nil && prof.JobGroupTimeout > 0 {
		timeout = prof.JobGroupTimeout
	}
	return timeout / 4
}

// createdGroupLocked reports whether the missing PodGroup k of a pod is one lockstep's
// workload controller creates, and if so the unit whose pods wait for it and since when the
// pod does: the mirror of the object its labels name (from the pod's creation), or its Job's
// gang (GroupWaitStart; the Job may not be seen yet). A PodGroup the pod's label names is
// not.
func (m *Model) createdGroupLocked(pod *v1.Pod, k Key) (filing.Unit, time.Time, bool) {
	if _, labeled := filing.GroupNameOf(pod); labeled || k.Native() {
		return "", time.Time{}, false
	}
	if object, ok := m.book.Workloads().Labelled(pod); ok && object == k.Namespace+"/"+k.Name {
		return filing.LabelledUnit(object), pod.CreationTimestamp.Time, true
	}
	if owner, ok := filing.JobOwner(pod); ok {
		job, _ := m.book.Job(pod)
		return filing.JobUnit(owner.UID), filing.GroupWaitStart(pod, job), true
	}
	return "", time.Time{}, false
}

// noticeMissingGroupLocked tells a pod whose PodGroup k does not exist why it waits (msg), by
// one event of each type at most: Normal while the workload controller may still be creating
// k, Warning once the pod has waited missingGroupWarnAfter, or at once when no controller
// creates k. For a pod told Normal it returns its unit and when to look at it again (zero
// otherwise).
func (m *Model) noticeMissingGroupLocked(logger klog.Logger, pod *v1.Pod, k Key, msg string) (filing.Unit, time.Time) {
	told := m.noticed[pod.UID]
	if m.recorder == nil || told == v1.EventTypeWarning {
		return "", time.Time{}
	}
	unit, since, created := m.createdGroupLocked(pod, k)
	if !created {
		m.noticed[pod.UID] = v1.EventTypeWarning
		m.recorder.Eventf(pod, nil, v1.EventTypeWarning, ReasonPodGroupNotFound, "Scheduling", "%s", msg)
		return "", time.Time{}
	}
	after := m.missingGroupWarnAfter(pod)
	if waited := m.clock.Now().Sub(since); waited >= after {
		m.noticed[pod.UID] = v1.EventTypeWarning
		logger.V(4).Info("Pod still waits for the PodGroup the workload controller creates; warned", "pod", klog.KObj(pod), "group", k, "waited", waited.Round(time.Second))
		m.recorder.Eventf(pod, nil, v1.EventTypeWarning, ReasonPodGroupNotFound, "Scheduling",
			"%s: still missing after %s (is lockstep's workload controller running and leading? see its log and the workload's events)", msg, waited.Round(time.Second))
		return "", time.Time{}
	}
	if told == "" {
		m.noticed[pod.UID] = v1.EventTypeNormal
		logger.V(4).Info("Pod waits for the PodGroup the workload controller creates", "pod", klog.KObj(pod), "group", k, "warnAfter", after)
		m.recorder.Eventf(pod, nil, v1.EventTypeNormal, ReasonWaitingForPodGroup, "Scheduling", "%s", msg)
	}
	return unit, since.Add(after)
}

// armGroupWarningLocked makes unit u's timer look at its pods waiting for their PodGroup at
// at, unless it looks sooner already: one timer per unit, not per pod, whatever the number
// of its pods.
func (m *Model) armGroupWarningLocked(u filing.Unit, at time.Time) {
	if armed, ok := m.groupWarnings[u]; ok && !at.Before(armed) {
		return
	}
	m.groupWarnings[u] = at
	m.clock.AfterFunc(at.Sub(m.clock.Now()), func() { m.groupStillMissing(u, at) })
}

// groupStillMissing warns the pods of unit u still waiting for the PodGroup the workload
// controller creates that waited longer than it should need, and arms the unit's timer
// again for the next of them, if any. Pods rejected at PreEnqueue are not looked at again
// without news, so the Warning is the timer's. A timer that a sooner one replaced does
// nothing.
func (m *Model) groupStillMissing(u filing.Unit, at time.Time) {
	m.update(m.logger, func(*effects) {
		if armed, ok := m.groupWarnings[u]; !ok || !armed.Equal(at) {
			return
		}
		delete(m.groupWarnings, u)
		next := map[filing.Unit]time.Time{}
		for _, pod := range m.book.PodsOf(u) {
			mem := m.members.Of(pod.UID)
			if mem == nil || pod.Spec.NodeName != "" || terminated(pod) || m.index.Get(mem.Group).Exists() {
				continue
			}
			if pu, again := m.noticeMissingGroupLocked(m.logger, pod, mem.Group, m.missingGroupMessage(pod, mem.Group)); !again.IsZero() {
				if t, ok := next[pu]; !ok || again.Before(t) {
					next[pu] = again
				}
			}
		}
		for pu, t := range next {
			m.armGroupWarningLocked(pu, t)
		}
	})
}
