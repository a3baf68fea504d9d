package jobframework

import (
	"fmt"
	"maps"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// OptionalKind is the informer of a kind served by a CRD that may be installed after lockstep
// starts, or never: adapters of such kinds (JobSets, scheduler-plugins PodGroups) keep one.
// Until the kind is served it has no objects.
type OptionalKind struct {
	mu       sync.Mutex
	inf      informers.GenericInformer
	handlers []cache.ResourceEventHandler
}

// Watch registers the kind's informer with f's dynamic factory once gvr is served (at once
// if it is), calling enqueue (if not nil) with the namespace/name of every object added or
// updated, and returns what reports that it synced when it is served already.
func (k *OptionalKind) Watch(f Informers, gvr schema.GroupVersionResource, enqueue func(string)) []cache.InformerSynced {
	if f.Dynamic == nil || f.APIs == nil {
		return nil
	}
	var (
		mu     sync.Mutex // the callback may run later, on the CRD watch's goroutine
		synced []cache.InformerSynced
	)
	f.APIs.When(gvr, func() {
		mu.Lock()
		defer mu.Unlock()
		inf := f.Dynamic.ForResource(gvr)
		k.mu.Lock()
		k.inf = inf
		handlers := k.handlers
		k.mu.Unlock()
		synced = append(synced, inf.Informer().HasSynced)
		if enqueue != nil {
			s, err := EnqueueOn(inf.Informer(), enqueue)
			if err != nil {
				klog.Background().Error(err, "Cannot watch a workload kind", "resource", gvr)
				return
			}
			synced = append(synced, s)
		}
		for _, h := range handlers {
			k.add(inf, h)
		}
		f.Dynamic.Start(f.APIs.Done())
	})
	mu.Lock()
	defer mu.Unlock()
	return synced
}

// AddHandler adds h to the kind's informer, now if it runs, else when it starts.
func (k *OptionalKind) AddHandler(h cache.ResourceEventHandler) {
	k.mu.Lock()
	inf := k.inf
	if inf == nil {
		k.handlers = append(k.handlers, h)
	}
	k.mu.Unlock()
	if inf != nil {
		k.add(inf, h)
	}
}

func (k *OptionalKind) add(inf informers.GenericInformer, h cache.ResourceEventHandler) {
	if _, err := inf.Informer().AddEventHandler(h); err != nil {
		klog.Background().Error(err, "Cannot add a handler to a workload kind's informer")
	}
}

// Lister returns the kind's lister, nil while the kind is not served.
func (k *OptionalKind) Lister() cache.GenericLister {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inf == nil {
		return nil
	}
	return k.inf.Lister()
}

// Get returns an object of the kind, nil when it does not exist or the kind is not served:
// what an adapter's Get returns.
func (k *OptionalKind) Get(namespace, name string) (Object, error) {
	lister := k.Lister()
	if lister == nil {
		return nil, nil
	}
	obj, err := lister.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%s/%s: unexpected %T", namespace, name, obj)
	}
	return u, nil
}

// Decode reads an object of a kind lockstep keeps local types for (the fields it reads of a
// JobSet, a scheduler-plugins PodGroup) from the dynamic client's object.
func Decode[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Served reports whether the kind is served (its informer runs), and whether the informer
// has synced.
func (k *OptionalKind) Served() (served, synced bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inf == nil {
		return false, false
	}
	return true, k.inf.Informer().HasSynced()
}

// SpecOrAnnotationsChanged reports whether an update of an object of an optional kind may
// change how its pods are filed: a new generation (its spec) or other annotations. The
// status writes of its controller (replicas' readiness...) change neither, and Notifiers
// skip them rather than file every pod again at each.
func SpecOrAnnotationsChanged(old, obj any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := obj.(*unstructured.Unstructured)
	return !ok1 || !ok2 || o.GetGeneration() != n.GetGeneration() || !maps.Equal(o.GetAnnotations(), n.GetAnnotations())
}
