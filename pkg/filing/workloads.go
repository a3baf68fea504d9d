// Package filing decides which PodGroup a pod of a lockstep profile belongs to: the one its
// label names, the one a workload controller makes for its Job (KEP-5547's rule, lockstep's
// annotations, Kueue's topology annotations), or the mirror of another scheduler's group
// object its labels name. It holds the rules (Workloads and its JobGangs implementation,
// GangForJob, the Kueue annotations) and the Book, the memory of which pods each workload
// unit has, so that they are filed again when the unit changes. It knows nothing of
// readiness or of the scheduler; the group model (pkg/podgroup) files pods with it.
package filing

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

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

// FollowerShapes is implemented by Workloads that know the pods a group's workload makes
// after its leaders (a LeaderWorkerSet's workers), so that they are planned before they
// exist (a PodGroup's gang.leaders).
type FollowerShapes interface {
	// FollowerOf returns a pod shaped as the followers of a leader's group will be (their
	// spec: requests, node selection, tolerations), nil if unknown (the leader's shape is
	// used).
	FollowerOf(leader *v1.Pod) *v1.Pod
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

// SchedulerPluginsPodGroupLabel on a pod names its scheduler-plugins PodGroup
// (scheduling.x-k8s.io/v1alpha1, same namespace), which lockstep's workload controller
// mirrors.
const SchedulerPluginsPodGroupLabel = "scheduling.x-k8s.io/pod-group"

// NamesGroup reports whether a pod template names a group of a kind lockstep supports: its
// own PodGroup or a scheduler-plugins PodGroup (labels), a native scheduling.k8s.io PodGroup
// (spec.schedulingGroup). Its pods join that group, so the workload that makes them gets no
// group of its own ("bring your own group"), which its pods would never join.
func NamesGroup(tmpl *v1.PodTemplateSpec) bool {
	return tmpl.Labels[v1alpha1.PodGroupLabel] != "" || tmpl.Labels[SchedulerPluginsPodGroupLabel] != "" ||
		tmpl.Spec.SchedulingGroup != nil
}

// GroupNameOf returns the PodGroup a pod names through its label, if any.
func GroupNameOf(pod *v1.Pod) (string, bool) {
	name, ok := pod.Labels[v1alpha1.PodGroupLabel]
	return name, ok && name != ""
}

// JobOwner returns the Job that controls a pod, if one does.
func JobOwner(pod *v1.Pod) (*metav1.OwnerReference, bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "Job" || !strings.HasPrefix(owner.APIVersion, "batch/") {
		return nil, false
	}
	return owner, true
}
