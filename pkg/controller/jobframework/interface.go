// Package jobframework is lockstep's workload controller: one reconciler that turns a
// workload object (a batch/v1 Job, a JobSet, ...) into a Workload and a tree of groups
// (CompositePodGroups and PodGroups) and keeps them in step with it, and a thin Adapter per
// kind that says which tree an object gets. Kueue's pkg/controller/jobframework is the
// model: the reconciler knows nothing of any kind, an adapter knows nothing of the API
// calls.
//
// The same adapters tell the scheduler which PodGroup a Job's pods belong to (Filer): pods
// need no change to their template, they are filed through their owner reference.
package jobframework

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Object is a workload object: events are recorded on it, groups are owned by it.
type Object interface {
	metav1.Object
	runtime.Object
}

// Adapter is one kind of workload.
type Adapter interface {
	// GVK is the kind: owner references, the Workload's controllerRef, logs.
	GVK() schema.GroupVersionKind
	// Watch registers the informers the adapter reads with the factories (the caller starts
	// them) and calls enqueue with an object's namespace/name whenever the object, or
	// something its groups depend on, changes; enqueue may be nil (the scheduler's filing
	// only reads). It returns what reports the informers synced.
	Watch(f Informers, enqueue func(key string)) ([]cache.InformerSynced, error)
	// Get returns the object, nil if it does not exist.
	Get(namespace, name string) (Object, error)
	// Groups returns the groups obj should have for the profiles schedulerNames, nil when
	// lockstep leaves it alone; existing are the PodGroups it controls now. problems (bad
	// annotations...) become events on obj.
	Groups(obj Object, existing []*v1alpha1.PodGroup, schedulerNames sets.Set[string]) (*Groups, []string)
	// GroupOfJob returns the PodGroup the pods of job belong to when job is, or is run by,
	// an object of this kind that gets groups; ok false when the Job is none of its.
	GroupOfJob(job *batchv1.Job, schedulerNames sets.Set[string]) (name string, ok bool)
}

// Informers are the factories adapters register their informers with.
type Informers struct {
	Kube informers.SharedInformerFactory
	// Pods has the pods whose labels name a group of another scheduler's API
	// (scheduler-plugins' scheduling.x-k8s.io/pod-group), in every phase: the scheduler's
	// own pod informer leaves finished pods out, and their groups' statuses count them.
	Pods informers.SharedInformerFactory
	// Dynamic serves kinds lockstep has no typed client for (JobSet).
	Dynamic dynamicinformer.DynamicSharedInformerFactory
	// APIs says when a kind whose CRD may be installed later is served: its adapter
	// registers its informer with Dynamic then (and starts it, with APIs.Done()).
	APIs *APIs
}

// PodAdapter is an Adapter of a kind whose pods name their object by a label rather than
// through a Job (scheduler-plugins PodGroups). Its objects are mirrored by PodGroups of the
// same name.
type PodAdapter interface {
	Adapter
	// Labelled returns the namespace/name of the object a pod's labels name, if any.
	Labelled(pod *v1.Pod) (string, bool)
	// GroupOfPod files a pod whose labels name an object of this kind: ok false when they
	// name none. An object not seen (not created yet, or its kind not served) is
	// filing.Filing.Unseen: the pod waits for it a while.
	GroupOfPod(pod *v1.Pod, schedulerNames sets.Set[string]) (f filing.Filing, ok bool)
}

// StatusSyncer is an Adapter that keeps the status of its objects (a scheduler-plugins
// PodGroup's phase and counts) as the kind's own controller would; the reconciler calls it
// after every sync of an object.
type StatusSyncer interface {
	SyncStatus(ctx context.Context, obj Object, schedulerNames sets.Set[string]) error
}

// Notifier is an Adapter whose objects' changes the scheduler's group model must hear of:
// notify is called with an object's namespace, name and how many of its pods completed.
type Notifier interface {
	Notify(notify func(namespace, name string, ran int))
}

// Synced is an Adapter whose informers the scheduler's group model waits for before it
// files pods.
type Synced interface {
	HasSynced() bool
}

// Groups is the tree of groups one workload object gets: one Workload, and groups that
// point to its templates, all owned by the object (deleting it deletes them).
type Groups struct {
	// Workload is the name of the Workload; Templates its spec (the controllerRef is set by
	// the reconciler).
	Workload string
	Spec     v1alpha1.WorkloadSpec
	// Composites are the CompositePodGroups, parents before children; PodGroups come after.
	Composites []Group
	PodGroups  []Group
	// Finished: the object ran to its end. Groups that exist stay (completed members count
	// for their gangs); none is created.
	Finished bool
	// Warnings are told to the user as Warning events on the object, once each (e.g. a gang
	// Job that a preemption would fail).
	Warnings []Warning
	// None: the object must have no Workload or group, because its pods join groups of their
	// own (their labels name one); those it controls (made before its pods named a group, or
	// by an earlier release's rule) are deleted, since its pods would never join them.
	None bool
}

// NoGroups is the answer of an adapter whose object must have no groups (Groups.None).
func NoGroups() *Groups { return &Groups{None: true} }

// Warning is a Warning event the reconciler records on a workload object.
type Warning struct {
	Reason, Message string
}

// Group is one CompositePodGroup or PodGroup of a tree.
type Group struct {
	Name string
	// Parent is the CompositePodGroup above, "" for a root.
	Parent string
	// Template names the Workload template the group is made from.
	Template string
	// Min is the gang's minCount (PodGroup) or minGroupCount (CompositePodGroup).
	Min int32
	// Leaders is a PodGroup's gang.leaders: members that bind before the others exist;
	// FollowersTimeoutSeconds its gang.followersTimeoutSeconds (nil: the default).
	Leaders                 int32
	FollowersTimeoutSeconds *int32
	Topology                []v1alpha1.TopologyConstraint
	// PriorityClassName is the priority of the group (for preemption).
	PriorityClassName string
	// ScheduleTimeoutSeconds and MinResources are copied into a PodGroup (a scheduler-plugins
	// PodGroup's own).
	ScheduleTimeoutSeconds *int32
	MinResources           v1.ResourceList
}

// Constraints returns the group's scheduling constraints, nil for none.
func (g Group) Constraints() *v1alpha1.SchedulingConstraints {
	if len(g.Topology) == 0 {
		return nil
	}
	return &v1alpha1.SchedulingConstraints{Topology: g.Topology}
}

// EnqueueOn calls enqueue with the namespace/name of every object inf adds or updates (a
// deleted object's groups go with it, by owner reference); it returns what reports that the
// handler has seen the informer's objects. Adapters' Watch use it.
func EnqueueOn(inf cache.SharedIndexInformer, enqueue func(key string)) (cache.InformerSynced, error) {
	add := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			enqueue(key)
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
	})
	if err != nil {
		return nil, err
	}
	return reg.HasSynced, nil
}
