package jobframework

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// crds is the resource of CustomResourceDefinitions, read through the dynamic client.
var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// APIs tells adapters when a resource is served, for kinds whose CRD may be installed after
// lockstep starts (JobSets, scheduler-plugins PodGroups): an adapter registers its informer
// then, so that installing the CRD needs no restart and an absent CRD never holds start-up.
// A resource served at start is known at once (discovery); one that is not is watched for
// through its CustomResourceDefinition, until it is established.
type APIs struct {
	ctx  context.Context
	disc discovery.DiscoveryInterface
	dyn  dynamic.Interface

	mu      sync.Mutex
	served  map[schema.GroupVersionResource]bool
	waiting map[schema.GroupVersionResource][]func()
	// polling: discovery is asked again every Recheck for the resources still waiting.
	polling bool
	// Recheck is how often discovery is asked again for resources not served: built-in
	// kinds an apiserver starts serving when restarted with their feature gates (the native
	// scheduling.k8s.io kinds) have no CRD to watch.
	Recheck time.Duration
	// checked counts the CRD events looked at (tests wait for a change to have been seen).
	checked atomic.Int64
}

// DefaultRecheck is APIs.Recheck unless set.
const DefaultRecheck = time.Minute

// NewAPIs returns APIs that watch until ctx is done.
func NewAPIs(ctx context.Context, disc discovery.DiscoveryInterface, dyn dynamic.Interface) *APIs {
	return &APIs{ctx: ctx, disc: disc, dyn: dyn, served: map[schema.GroupVersionResource]bool{}, waiting: map[schema.GroupVersionResource][]func(){}, Recheck: DefaultRecheck}
}

// Done is closed when the APIs stop watching: the stop channel for informers started in a
// When callback.
func (a *APIs) Done() <-chan struct{} { return a.ctx.Done() }

// When calls start once gvr is served: before it returns when it is served already, else
// from the watch of its CRD when the CRD is established with gvr's version served.
func (a *APIs) When(gvr schema.GroupVersionResource, start func()) {
	a.mu.Lock()
	if a.served[gvr] {
		a.mu.Unlock()
		start()
		return
	}
	_, watching := a.waiting[gvr]
	a.waiting[gvr] = append(a.waiting[gvr], start)
	a.mu.Unlock()
	if !watching {
		if a.servedNow(gvr) {
			a.serve(gvr)
			return
		}
		a.watch(gvr)
	}
}

// servedNow asks discovery whether the API serves gvr.
func (a *APIs) servedNow(gvr schema.GroupVersionResource) bool {
	if a.disc == nil {
		return false
	}
	// The group's versions first: asking for a version the apiserver does not serve is a 404
	// that an apiserver with the mixed-version proxy forwards to its peers, every Recheck.
	groups, err := a.disc.ServerGroups()
	if err != nil {
		klog.FromContext(a.ctx).Error(err, "Cannot tell whether the API serves a workload kind; waiting for its CRD", "resource", gvr)
		return false
	}
	if !servesVersion(groups, gvr.GroupVersion()) {
		return false
	}
	list, err := a.disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		if !apierrors.IsNotFound(err) {
			klog.FromContext(a.ctx).Error(err, "Cannot tell whether the API serves a workload kind; waiting for its CRD", "resource", gvr)
		}
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true
		}
	}
	return false
}

// servesVersion reports whether the API groups list gv.
func servesVersion(groups *metav1.APIGroupList, gv schema.GroupVersion) bool {
	for _, g := range groups.Groups {
		if g.Name != gv.Group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == gv.Version {
				return true
			}
		}
	}
	return false
}

// serve runs the callbacks waiting for gvr, once.
func (a *APIs) serve(gvr schema.GroupVersionResource) {
	a.mu.Lock()
	if a.served[gvr] {
		a.mu.Unlock()
		return
	}
	a.served[gvr] = true
	starts := a.waiting[gvr]
	delete(a.waiting, gvr)
	a.mu.Unlock()
	klog.FromContext(a.ctx).V(2).Info("Workload kind served; watching it", "resource", gvr)
	for _, start := range starts {
		start()
	}
}

// poll asks discovery again, every Recheck, for the resources still waiting.
func (a *APIs) poll() {
	a.mu.Lock()
	if a.polling || a.disc == nil {
		a.mu.Unlock()
		return
	}
	a.polling = true
	a.mu.Unlock()
	go wait.UntilWithContext(a.ctx, func(context.Context) {
		a.mu.Lock()
		var waiting []schema.GroupVersionResource
		for gvr := range a.waiting {
			waiting = append(waiting, gvr)
		}
		a.mu.Unlock()
		for _, gvr := range waiting {
			if a.servedNow(gvr) {
				a.serve(gvr)
			}
		}
	}, a.Recheck)
}

// watch watches gvr's CRD (by name: <resource>.<group>) until it is established, and asks
// discovery again from time to time (poll).
func (a *APIs) watch(gvr schema.GroupVersionResource) {
	a.poll()
	if a.dyn == nil {
		return
	}
	name := gvr.Resource + "." + gvr.Group
	inf := dynamicinformer.NewFilteredDynamicInformer(a.dyn, crds, "", 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	})
	ctx, stop := context.WithCancel(a.ctx)
	check := func(obj any) {
		defer a.checked.Add(1)
		if u, ok := obj.(*unstructured.Unstructured); ok && established(u, gvr.Version) {
			a.serve(gvr)
			stop()
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
	}); err != nil {
		klog.FromContext(a.ctx).Error(err, "Cannot watch for a workload kind's CRD", "crd", name)
		stop()
		return
	}
	go inf.Informer().RunWithContext(ctx)
}

// established reports whether a CRD is established and serves version.
func established(crd *unstructured.Unstructured, version string) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	ok := false
	for _, c := range conds {
		if m, isMap := c.(map[string]any); isMap && m["type"] == "Established" && m["status"] == "True" {
			ok = true
		}
	}
	if !ok {
		return false
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if m, isMap := v.(map[string]any); isMap && m["name"] == version && m["served"] == true {
			return true
		}
	}
	return false
}

// ServedAPIs returns APIs that take exactly served as served, and never watch: for tests and
// callers that know.
func ServedAPIs(ctx context.Context, served ...schema.GroupVersionResource) *APIs {
	a := NewAPIs(ctx, nil, nil)
	for _, gvr := range served {
		a.served[gvr] = true
	}
	return a
}
