// Package jobgroups is lockstep's Job controller (KEP-5547 semantics): for every batch/v1
// Job that gets a gang (podgroup.GangForJob) it creates a Workload with one PodGroupTemplate
// and then a PodGroup, owned by the Job, and keeps their minCount in step with the Job. The
// Job's pods need no change: the scheduler files them under the PodGroup through their
// owner reference, and holds them until it exists.
//
// It uses client-go informers and a rate-limited workqueue, no polling and no finalizers:
// deleting the Job deletes both objects through their owner references.
package jobgroups

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	lsinformers "github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions/scheduling/v1alpha1"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Name identifies the controller in events, leases and user agents.
const Name = "lockstep-job-controller"

// byJobIndex indexes Workloads and PodGroups by the UID of the Job that controls them.
const byJobIndex = "byJob"

// Controller creates and syncs the groups of Jobs.
type Controller struct {
	client    versioned.Interface
	jobs      batchlisters.JobLister
	workloads listers.WorkloadLister
	podGroups listers.PodGroupLister
	wlIndex   cache.Indexer
	pgIndex   cache.Indexer
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	recorder  events.EventRecorder
	names     sets.Set[string]

	// warned remembers the annotation problems already reported, per Job UID, so that a
	// Job gets one event per problem, not one per sync.
	warnedMu sync.Mutex
	warned   map[string]bool
}

// New builds the controller on informers the caller starts.
func New(client versioned.Interface, jobs batchinformers.JobInformer, workloads lsinformers.WorkloadInformer,
	podGroups lsinformers.PodGroupInformer, recorder events.EventRecorder, schedulerNames []string) (*Controller, error) {
	c := &Controller{
		client:    client,
		jobs:      jobs.Lister(),
		workloads: workloads.Lister(),
		podGroups: podGroups.Lister(),
		wlIndex:   workloads.Informer().GetIndexer(),
		pgIndex:   podGroups.Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "lockstep_job_groups"}),
		recorder: recorder,
		names:    sets.New(schedulerNames...),
		warned:   map[string]bool{},
	}
	for _, inf := range []cache.SharedIndexInformer{workloads.Informer(), podGroups.Informer()} {
		if err := inf.AddIndexers(cache.Indexers{byJobIndex: indexByJob}); err != nil {
			return nil, err
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueueOwner,
			UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
			DeleteFunc: c.enqueueOwner,
		})
		if err != nil {
			return nil, err
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	reg, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueJob,
		UpdateFunc: func(_, obj any) { c.enqueueJob(obj) },
		DeleteFunc: c.forgetJob,
	})
	if err != nil {
		return nil, err
	}
	c.synced = append(c.synced, reg.HasSynced)
	return c, nil
}

// indexByJob files an object under the UID of the Job that controls it.
func indexByJob(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "Job" {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("not an object: %T", obj)
	}
	return m, nil
}

func (c *Controller) enqueueJob(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

func (c *Controller) forgetJob(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	c.warnedMu.Lock()
	defer c.warnedMu.Unlock()
	for k := range c.warned {
		if len(k) > len(m.GetUID()) && k[:len(m.GetUID())] == string(m.GetUID()) {
			delete(c.warned, k)
		}
	}
}

// enqueueOwner queues the Job that controls a Workload or PodGroup, so that one deleted or
// edited by hand is put back.
func (c *Controller) enqueueOwner(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	if ref := metav1.GetControllerOf(m); ref != nil && ref.Kind == "Job" {
		c.queue.Add(m.GetNamespace() + "/" + ref.Name)
	}
}

// Run syncs Jobs with workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting", "controller", Name)
	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), c.synced...) {
		return
	}
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.next(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	logger.Info("Stopping", "controller", Name)
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Retrying Job", "job", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync makes the groups of one Job match it.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	job, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // its groups go with it, by owner reference
	}
	if err != nil {
		return err
	}
	gang, problems := podgroup.GangForJob(job, c.names)
	c.report(job, problems)
	wls, err := c.owned(c.wlIndex, job)
	if err != nil {
		return err
	}
	pgs, err := c.owned(c.pgIndex, job)
	if err != nil {
		return err
	}
	if gang == nil {
		if len(pgs) == 0 {
			return nil
		}
		// The Job no longer matches the rule (e.g. parallelism changed alone) but has its
		// groups: they stay, and minCount keeps following parallelism.
		pg, err := c.podGroups.PodGroups(ns).Get(pgs[0])
		if err != nil {
			return err
		}
		gang = &podgroup.JobGang{Name: pg.Name, MinCount: max(ptr.Deref(job.Spec.Parallelism, 1), 1)}
		if pg.Spec.SchedulingConstraints != nil {
			gang.Topology = pg.Spec.SchedulingConstraints.Topology
		}
	}
	if len(pgs) == 0 && finished(job) {
		return nil // nothing left to schedule
	}
	wl, err := c.ensureWorkload(ctx, job, gang, wls)
	if err != nil {
		c.recorder.Eventf(job, nil, v1.EventTypeWarning, "FailedCreateWorkload", "Sync", "creating Workload %q: %v (retrying)", gang.Name, err)
		return err
	}
	pg, err := c.ensurePodGroup(ctx, job, gang, wl, pgs)
	if err != nil {
		c.recorder.Eventf(job, nil, v1.EventTypeWarning, "FailedCreatePodGroup", "Sync", "creating PodGroup %q: %v (retrying)", gang.Name, err)
		return err
	}
	return c.syncSpec(ctx, job, gang, wl, pg)
}

// owned returns the names of the objects of an index controlled by job, sorted.
func (c *Controller) owned(index cache.Indexer, job *batchv1.Job) ([]string, error) {
	objs, err := index.ByIndex(byJobIndex, string(job.UID))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, o := range objs {
		if m, err := metaOf(o); err == nil && m.GetNamespace() == job.Namespace {
			names = append(names, m.GetName())
		}
	}
	sort.Strings(names)
	return names, nil
}

// pick returns the object to reuse among those a Job owns: the one with the deterministic
// name if there is one, else the first; "" when there is none.
func pick(owned []string, want string) string {
	for _, n := range owned {
		if n == want {
			return n
		}
	}
	if len(owned) > 0 {
		return owned[0]
	}
	return ""
}

// report puts annotation problems on the Job, once each.
func (c *Controller) report(job *batchv1.Job, problems []string) {
	for _, p := range problems {
		key := string(job.UID) + "/" + p
		c.warnedMu.Lock()
		seen := c.warned[key]
		c.warned[key] = true
		c.warnedMu.Unlock()
		if !seen {
			c.recorder.Eventf(job, nil, v1.EventTypeWarning, "InvalidAnnotation", "Sync", "%s", p)
		}
	}
}

func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobRef(job *batchv1.Job) metav1.OwnerReference {
	return *metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))
}

func policyOf(gang *podgroup.JobGang) v1alpha1.PodGroupSchedulingPolicy {
	return v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: gang.MinCount}}
}

func constraintsOf(gang *podgroup.JobGang) *v1alpha1.SchedulingConstraints {
	if len(gang.Topology) == 0 {
		return nil
	}
	return &v1alpha1.SchedulingConstraints{Topology: gang.Topology}
}
