package jobframework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	lsinformers "github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions/scheduling/v1alpha1"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
)

// Name identifies the controller in events, logs and user agents.
const Name = "lockstep-workload-controller"

// byOwner indexes Workloads and groups by the UID of the object that controls them.
const byOwner = "byOwner"

// item is one object to sync: its adapter, by index, and namespace/name.
type item struct {
	kind int
	key  string
}

// Reconciler creates and syncs the Workloads and groups of workload objects, for every
// adapter it runs. It uses informers and a rate-limited workqueue, no polling and no
// finalizers: deleting an object deletes its groups through their owner references.
type Reconciler struct {
	client     versioned.Interface
	adapters   []Adapter
	names      sets.Set[string]
	workloads  listers.WorkloadLister
	podGroups  listers.PodGroupLister
	composites listers.CompositePodGroupLister
	indexers   []cache.Indexer // Workloads, CompositePodGroups, PodGroups
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[item]
	recorder   events.EventRecorder
	afterSync  func(schema.GroupVersionKind, Object) // Options.Synced

	// warned remembers the problems already reported, per object (and UID), so that an object
	// gets one event per problem, not one per sync.
	warnedMu sync.Mutex
	warned   map[item]sets.Set[string]
}

// GroupInformers are lockstep's informers the reconciler reads.
type GroupInformers struct {
	Workloads  lsinformers.WorkloadInformer
	Composites lsinformers.CompositePodGroupInformer
	PodGroups  lsinformers.PodGroupInformer
}

// NewReconciler builds a reconciler for adapters, on informers the caller starts; the
// profiles schedulerNames are those whose workloads get groups.
func NewReconciler(client versioned.Interface, adapters []Adapter, f Informers, groups GroupInformers,
	recorder events.EventRecorder, schedulerNames []string) (*Reconciler, error) {
	r := &Reconciler{
		client:     client,
		adapters:   adapters,
		names:      sets.New(schedulerNames...),
		workloads:  groups.Workloads.Lister(),
		podGroups:  groups.PodGroups.Lister(),
		composites: groups.Composites.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[item](),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "lockstep_workloads"}),
		recorder: recorder,
		warned:   map[item]sets.Set[string]{},
	}
	for _, inf := range []cache.SharedIndexInformer{groups.Workloads.Informer(), groups.Composites.Informer(), groups.PodGroups.Informer()} {
		if err := inf.AddIndexers(cache.Indexers{byOwner: indexByOwner}); err != nil {
			return nil, err
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    r.enqueueOwner,
			UpdateFunc: func(_, obj any) { r.enqueueOwner(obj) },
			DeleteFunc: r.enqueueOwner,
		})
		if err != nil {
			return nil, err
		}
		r.indexers = append(r.indexers, inf.GetIndexer())
		r.synced = append(r.synced, reg.HasSynced)
	}
	for i, a := range adapters {
		synced, err := a.Watch(f, func(key string) { r.queue.Add(item{kind: i, key: key}) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.GVK().Kind, err)
		}
		r.synced = append(r.synced, synced...)
	}
	return r, nil
}

// indexByOwner files an object under the UID of its controller.
func indexByOwner(obj any) ([]string, error) {
	m, ok := metaOf(obj)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func metaOf(obj any) (metav1.Object, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	return m, ok
}

// enqueueOwner queues the object that controls a Workload or group, so that one deleted or
// edited by hand is put back.
func (r *Reconciler) enqueueOwner(obj any) {
	m, ok := metaOf(obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(m)
	if ref == nil {
		return
	}
	for i, a := range r.adapters {
		if gvk := a.GVK(); ref.Kind == gvk.Kind && strings.HasPrefix(ref.APIVersion, gvk.Group+"/") {
			r.queue.Add(item{kind: i, key: m.GetNamespace() + "/" + ref.Name})
		}
	}
}

// Run syncs objects with workers until ctx is done.
func (r *Reconciler) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer r.queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting", "controller", Name)
	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), r.synced...) {
		return
	}
	for range max(workers, 1) {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for r.next(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
	logger.Info("Stopping", "controller", Name)
}

func (r *Reconciler) next(ctx context.Context) bool {
	it, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(it)
	if err := r.sync(ctx, it); err != nil {
		klog.FromContext(ctx).V(2).Info("Retrying", "kind", r.adapters[it.kind].GVK().Kind, "object", it.key, "err", err)
		r.queue.AddRateLimited(it)
		return true
	}
	r.queue.Forget(it)
	return true
}

// sync makes the Workload and groups of one object match what its adapter says.
func (r *Reconciler) sync(ctx context.Context, it item) (err error) {
	a := r.adapters[it.kind]
	ns, name, err := cache.SplitMetaNamespaceKey(it.key)
	if err != nil {
		return nil
	}
	obj, err := a.Get(ns, name)
	if err != nil || obj == nil {
		if obj == nil && err == nil {
			r.forget(it)
		}
		return err // a deleted object's groups go with it, by owner reference
	}
	if r.afterSync != nil {
		defer func() {
			if err == nil {
				r.afterSync(a.GVK(), obj)
			}
		}()
	}
	owned, err := r.owned(obj)
	if err != nil {
		return err
	}
	if s, ok := a.(StatusSyncer); ok {
		defer func() {
			if serr := s.SyncStatus(ctx, obj, r.names); serr != nil && err == nil {
				err = serr
			}
		}()
	}
	want, problems := a.Groups(obj, owned.podGroups, r.names)
	r.report(it, obj, problems)
	if want != nil {
		for _, w := range want.Warnings {
			r.warn(it, obj, w)
		}
	}
	if want != nil && want.None {
		return r.deleteOwned(ctx, obj, owned)
	}
	if want == nil || (want.Finished && owned.empty()) {
		return nil
	}
	logger := klog.FromContext(ctx)
	wl, err := r.ensureWorkload(ctx, a, obj, want, owned.workloads)
	if err != nil {
		r.recorder.Eventf(obj, nil, v1.EventTypeWarning, "FailedCreateWorkload", "Sync", "creating Workload %q: %v (retrying)", want.Workload, err)
		return err
	}
	if want.Finished {
		return nil
	}
	for _, g := range want.Composites {
		if err := r.ensureComposite(ctx, it, a, obj, wl, g, owned.composites); err != nil {
			r.recorder.Eventf(obj, nil, v1.EventTypeWarning, "FailedCreateCompositePodGroup", "Sync", "creating CompositePodGroup %q: %v (retrying)", g.Name, err)
			return err
		}
	}
	for _, g := range want.PodGroups {
		if err := r.ensurePodGroup(ctx, it, a, obj, wl, g, owned.podGroups); err != nil {
			r.recorder.Eventf(obj, nil, v1.EventTypeWarning, "FailedCreatePodGroup", "Sync", "creating PodGroup %q: %v (retrying)", g.Name, err)
			return err
		}
	}
	if err := r.deleteObsolete(ctx, obj, want, owned, "no longer part of the workload"); err != nil {
		return err
	}
	logger.V(4).Info("Synced workload groups", "kind", a.GVK().Kind, "object", klog.KObj(obj), "workload", want.Workload,
		"composites", len(want.Composites), "podGroups", len(want.PodGroups))
	return nil
}

// ownedObjects are the Workloads and groups an object controls.
type ownedObjects struct {
	workloads  []*v1alpha1.Workload
	composites []*v1alpha1.CompositePodGroup
	podGroups  []*v1alpha1.PodGroup
}

func (o ownedObjects) empty() bool {
	return len(o.workloads)+len(o.composites)+len(o.podGroups) == 0
}

// owned returns what obj controls, by name.
func (r *Reconciler) owned(obj Object) (ownedObjects, error) {
	var out ownedObjects
	for _, idx := range r.indexers {
		objs, err := idx.ByIndex(byOwner, string(obj.GetUID()))
		if err != nil {
			return out, err
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *v1alpha1.Workload:
				out.workloads = append(out.workloads, o)
			case *v1alpha1.CompositePodGroup:
				out.composites = append(out.composites, o)
			case *v1alpha1.PodGroup:
				out.podGroups = append(out.podGroups, o)
			}
		}
	}
	sort.Slice(out.workloads, func(i, j int) bool { return out.workloads[i].Name < out.workloads[j].Name })
	sort.Slice(out.composites, func(i, j int) bool { return out.composites[i].Name < out.composites[j].Name })
	sort.Slice(out.podGroups, func(i, j int) bool { return out.podGroups[i].Name < out.podGroups[j].Name })
	return out, nil
}

// report puts problems on the object, once each.
func (r *Reconciler) report(it item, obj Object, problems []string) {
	for _, p := range problems {
		r.warn(it, obj, Warning{Reason: "InvalidAnnotation", Message: p})
	}
}

// warn records a Warning event on the object, once for each object (UID) and message.
func (r *Reconciler) warn(it item, obj Object, w Warning) {
	key := string(obj.GetUID()) + "/" + w.Reason + "/" + w.Message
	r.warnedMu.Lock()
	if r.warned[it] == nil {
		r.warned[it] = sets.New[string]()
	}
	seen := r.warned[it].Has(key)
	r.warned[it].Insert(key)
	r.warnedMu.Unlock()
	if !seen {
		r.recorder.Eventf(obj, nil, v1.EventTypeWarning, w.Reason, "Sync", "%s", w.Message)
	}
}

// forget drops what was reported about an object that is gone.
func (r *Reconciler) forget(it item) {
	r.warnedMu.Lock()
	defer r.warnedMu.Unlock()
	delete(r.warned, it)
}

// isNotFound is apierrors.IsNotFound, for deletes of objects already gone.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
