// Package jobset is the workload framework's adapter for JobSets (jobset.x-k8s.io/v1alpha2):
// a JobSet whose pods use lockstep gets a Workload and a tree of groups, so that it binds
// whole or not at all, stage by stage, with exclusive placement enforced by the planner
// instead of a pod webhook and pod affinity. tree.go says which tree.
//
// The JobSet's child Jobs and their pods need no change: a pod is filed under the PodGroup
// of its Job, found from the Job's owner (the JobSet) and labels (replicated Job, index,
// restart attempt).
package jobset

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
)

// Adapter is the JobSet adapter.
type Adapter struct {
	// jobSets are the JobSets, once their API is served.
	jobSets jobframework.OptionalKind
}

var _ jobframework.Adapter = &Adapter{}

// New returns the JobSet adapter; Watch connects it to a JobSet informer.
func New() *Adapter { return &Adapter{} }

// GVK implements jobframework.Adapter.
func (a *Adapter) GVK() schema.GroupVersionKind { return GVK }

// Watch implements jobframework.Adapter. The JobSet CRD may be installed after lockstep
// starts: until it is served, there are no JobSets and nothing to wait for; once it is, they
// are watched, with no restart.
func (a *Adapter) Watch(f jobframework.Informers, enqueue func(string)) ([]cache.InformerSynced, error) {
	return a.jobSets.Watch(f, GVR, enqueue), nil
}

// Get implements jobframework.Adapter.
func (a *Adapter) Get(namespace, name string) (jobframework.Object, error) {
	return a.jobSets.Get(namespace, name)
}

// Groups implements jobframework.Adapter.
func (a *Adapter) Groups(obj jobframework.Object, _ []*v1alpha1.PodGroup, schedulerNames sets.Set[string]) (*jobframework.Groups, []string) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	js, err := decode(u)
	if err != nil {
		return nil, []string{fmt.Sprintf("cannot read the JobSet: %v", err)}
	}
	return treeOf(js, schedulerNames)
}

// namesOwnGroup reports whether a ReplicatedJob's pod template names a group its pods join
// instead of the JobSet's tree: a lockstep PodGroup (label) or a native PodGroup
// (spec.schedulingGroup). A scheduler-plugins PodGroup label does not count here: Kubeflow
// Trainer's coscheduling policy puts one on every pod of a TrainJob, initializers and
// trainer nodes alike, where the JobSet's tree gangs each ReplicatedJob in its turn.
func namesOwnGroup(tmpl *v1.PodTemplateSpec) bool {
	return tmpl.Labels[v1alpha1.PodGroupLabel] != "" || tmpl.Spec.SchedulingGroup != nil
}

// GroupOfJob implements jobframework.Adapter: a Job the JobSet controller runs for a JobSet
// that gets groups belongs to its PodGroup. While the JobSet is not seen, its Jobs are taken
// to belong to it.
func (a *Adapter) GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (string, bool) {
	owner := metav1.GetControllerOf(job)
	if owner == nil || owner.Kind != GVK.Kind || !strings.HasPrefix(owner.APIVersion, GVK.Group+"/") {
		return "", false
	}
	if !schedulerNames.Has(job.Spec.Template.Spec.SchedulerName) || namesOwnGroup(&job.Spec.Template) {
		return "", false // another scheduler's, or its pods name their own group (treeOf)
	}
	rjob, index := job.Labels[LabelReplicatedJob], job.Labels[LabelJobIndex]
	if rjob == "" || index == "" {
		return "", false
	}
	if js, ok := a.get(job.Namespace, owner.Name, owner.UID); ok && optedOut(js) {
		return "", false
	}
	attempt, _ := strconv.Atoi(job.Labels[LabelRestartAttempt])
	n := names{jobSet: owner.Name, uid: owner.UID, attempt: attempt}
	return n.podGroup(rjob, index), true
}

// PodGroupOfPod returns the PodGroup of a pod of a JobSet's child Job from the labels the
// JobSet controller puts on it, for readers that see pods only (kubectl lockstep).
func PodGroupOfPod(pod *v1.Pod) (string, bool) {
	l := pod.Labels
	name, uid, rjob, index := l[LabelJobSetName], l[LabelJobSetUID], l[LabelReplicatedJob], l[LabelJobIndex]
	if name == "" || uid == "" || rjob == "" || index == "" {
		return "", false
	}
	attempt, _ := strconv.Atoi(l[LabelRestartAttempt])
	return names{jobSet: name, uid: types.UID(uid), attempt: attempt}.podGroup(rjob, index), true
}

// get returns the JobSet with uid, if seen.
func (a *Adapter) get(namespace, name string, uid types.UID) (*jobSet, bool) {
	obj, err := a.Get(namespace, name)
	if err != nil || obj == nil || obj.GetUID() != uid {
		return nil, false
	}
	js, err := decode(obj.(*unstructured.Unstructured))
	return js, err == nil
}
