package jobframework

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
)

// widgets is the resource of a kind whose CRD the tests install (or not).
var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}

// crd returns the CustomResourceDefinition of widgets: versions maps version names to whether
// they are served; established is the status of its Established condition ("" for none).
func crd(versions map[string]bool, established string) *unstructured.Unstructured {
	var vs []any
	for name, served := range versions {
		vs = append(vs, map[string]any{"name": name, "served": served, "storage": served})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": widgets.Resource + "." + widgets.Group},
		"spec": map[string]any{"group": widgets.Group, "versions": vs,
			"names": map[string]any{"plural": widgets.Resource, "kind": "Widget"}, "scope": "Namespaced"},
	}}
	conds := []any{map[string]any{"type": "NamesAccepted", "status": "True"}}
	if established != "" {
		conds = append(conds, map[string]any{"type": "Established", "status": established})
	}
	u.Object["status"] = map[string]any{"conditions": conds}
	return u
}

// discoveryServing is a discovery client that serves the resources of gvrs.
func discoveryServing(gvrs ...schema.GroupVersionResource) *fakediscovery.FakeDiscovery {
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	lists := map[string]*metav1.APIResourceList{}
	for _, gvr := range gvrs {
		gv := gvr.GroupVersion().String()
		if lists[gv] == nil {
			lists[gv] = &metav1.APIResourceList{GroupVersion: gv}
			d.Resources = append(d.Resources, lists[gv])
		}
		lists[gv].APIResources = append(lists[gv].APIResources, metav1.APIResource{Name: gvr.Resource, Namespaced: true})
	}
	return d
}

// crdAPI is a fake dynamic API serving CRDs (and widgets); watches counts the watches of CRDs
// begun, stopped those stopped, and started receives one value as each begins.
type crdAPI struct {
	dyn     *dynamicfake.FakeDynamicClient
	mu      sync.Mutex
	watches int
	stopped int
	started chan struct{}
}

func newCRDAPI(objs ...runtime.Object) *crdAPI {
	c := &crdAPI{started: make(chan struct{}, 10)}
	c.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{crds: "CustomResourceDefinitionList", widgets: "WidgetList"}, objs...)
	c.dyn.PrependWatchReactor(crds.Resource, func(action clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(clienttesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := c.dyn.Tracker().Watch(crds, action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		c.mu.Lock()
		c.watches++
		c.mu.Unlock()
		c.started <- struct{}{}
		return true, &stopCounter{Interface: w, api: c}, nil
	})
	return c
}

// stopCounter counts the Stop of a watch of CRDs.
type stopCounter struct {
	watch.Interface
	api  *crdAPI
	once sync.Once
}

func (s *stopCounter) Stop() {
	s.once.Do(func() {
		s.api.mu.Lock()
		s.api.stopped++
		s.api.mu.Unlock()
	})
	s.Interface.Stop()
}

func (c *crdAPI) watchCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watches
}

// watching returns how many watches of CRDs run.
func (c *crdAPI) watching() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watches - c.stopped
}

// waitForWatch waits until a watch of CRDs begins.
func (c *crdAPI) waitForWatch(t *testing.T) {
	t.Helper()
	select {
	case <-c.started:
	case <-time.After(10 * time.Second):
		t.Fatal("no watch of CRDs began")
	}
}

func (c *crdAPI) create(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := c.dyn.Resource(crds).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
}

func (c *crdAPI) update(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := c.dyn.Resource(crds).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the CRD: %v", err)
	}
}

// counter counts the calls of the start functions it makes, by name.
type counter struct {
	mu    sync.Mutex
	calls map[string]int
}

func newCounter() *counter { return &counter{calls: map[string]int{}} }

func (c *counter) start(name string) func() {
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.calls[name]++
	}
}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[name]
}

// waitChecked waits until a has looked at n events of the CRD it watches: a change that
// must start nothing has been seen.
func waitChecked(t *testing.T, a *APIs, n int64) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return a.checked.Load() >= n, nil
	}); err != nil {
		t.Fatalf("the CRD's watch looked at %d events, want %d", a.checked.Load(), n)
	}
}

// TestEstablished proves which CRDs make a version served: Established true, and the version
// listed as served.
func TestEstablished(t *testing.T) {
	tests := []struct {
		name     string
		crd      *unstructured.Unstructured
		version  string
		wantTrue bool
	}{
		{name: "established, version served", crd: crd(map[string]bool{"v1beta1": true}, "True"), version: "v1beta1", wantTrue: true},
		{name: "established, one of two versions served", crd: crd(map[string]bool{"v1alpha1": false, "v1beta1": true}, "True"), version: "v1beta1", wantTrue: true},
		{name: "established, version not served", crd: crd(map[string]bool{"v1beta1": false}, "True"), version: "v1beta1"},
		{name: "established, another version only", crd: crd(map[string]bool{"v1": true}, "True"), version: "v1beta1"},
		{name: "not established", crd: crd(map[string]bool{"v1beta1": true}, "False"), version: "v1beta1"},
		{name: "no Established condition", crd: crd(map[string]bool{"v1beta1": true}, ""), version: "v1beta1"},
		{name: "no status", crd: func() *unstructured.Unstructured {
			u := crd(map[string]bool{"v1beta1": true}, "True")
			delete(u.Object, "status")
			return u
		}(), version: "v1beta1"},
		{name: "no versions", crd: func() *unstructured.Unstructured {
			u := crd(nil, "True")
			unstructured.RemoveNestedField(u.Object, "spec", "versions")
			return u
		}(), version: "v1beta1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := established(tc.crd, tc.version); got != tc.wantTrue {
				t.Errorf("established = %v, want %v", got, tc.wantTrue)
			}
		})
	}
}

// TestWhenServedAtStart proves that When runs start before it returns, without watching
// anything, when discovery says the resource is served, and every later When too; and that
// a group version discovery serves without the resource, or a discovery error, is not taken
// as served.
func TestWhenServedAtStart(t *testing.T) {
	other := schema.GroupVersionResource{Group: widgets.Group, Version: widgets.Version, Resource: "gadgets"}
	tests := []struct {
		name       string
		disc       *fakediscovery.FakeDiscovery
		wantServed bool
	}{
		{name: "served", disc: discoveryServing(other, widgets), wantServed: true},
		{name: "group version served without the resource", disc: discoveryServing(other)},
		{name: "group version not served", disc: discoveryServing()},
		{name: "discovery fails", disc: func() *fakediscovery.FakeDiscovery {
			d := discoveryServing(widgets)
			d.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("the API server is down")
			})
			return d
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, tctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(tctx)
			defer cancel()
			api := newCRDAPI()
			a := NewAPIs(ctx, tc.disc, api.dyn)
			c := newCounter()
			a.When(widgets, c.start("first"))
			a.When(widgets, c.start("second"))
			want := 0
			if tc.wantServed {
				want = 1
			}
			if c.get("first") != want || c.get("second") != want {
				t.Errorf("start called %d and %d times by When's return; want %d each", c.get("first"), c.get("second"), want)
			}
			if tc.wantServed {
				if n := api.watchCount(); n != 0 {
					t.Errorf("%d watches of CRDs for a resource served at start; want none", n)
				}
				return
			}
			api.waitForWatch(t) // and waits for its CRD; the watch began once none was listed
			if c.get("first")+c.get("second") != 0 {
				t.Errorf("start called with no CRD: %v", c.calls)
			}
			if n := api.watchCount(); n != 1 {
				t.Errorf("%d watches of CRDs; want 1 for both waiters", n)
			}
		})
	}
}

// TestWhenCRDEstablished proves that When, for a resource not served when it is called, runs
// every waiter's start exactly once as soon as the resource's CRD is established with the
// version served, whether the CRD is created so or comes to be, and not before; that it stops
// watching then; and that a When after that runs start at once.
func TestWhenCRDEstablished(t *testing.T) {
	servedNow := crd(map[string]bool{"v1beta1": true}, "True")
	tests := []struct {
		name string
		// before are the states the CRD goes through (created, then updated) that must not
		// start anything; then it is created or updated to servedNow.
		before  []*unstructured.Unstructured
		initial bool // the CRD exists, established, before When is called
	}{
		{name: "created established"},
		{name: "exists established, discovery not caught up yet", initial: true},
		{name: "established after its creation", before: []*unstructured.Unstructured{
			crd(map[string]bool{"v1beta1": true}, ""),
			crd(map[string]bool{"v1beta1": true}, "False"),
		}},
		{name: "the version served after the CRD is established", before: []*unstructured.Unstructured{
			crd(map[string]bool{"v1alpha1": true}, "True"),
			crd(map[string]bool{"v1alpha1": true, "v1beta1": false}, "True"),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, tctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(tctx)
			defer cancel()
			var objs []runtime.Object
			if tc.initial {
				objs = append(objs, servedNow.DeepCopy())
			}
			api := newCRDAPI(objs...)
			a := NewAPIs(ctx, discoveryServing(), api.dyn)
			c := newCounter()
			a.When(widgets, c.start("first"))
			a.When(widgets, c.start("second"))
			api.waitForWatch(t)
			if !tc.initial {
				for i, u := range tc.before {
					if i == 0 {
						api.create(t, u)
					} else {
						api.update(t, u)
					}
					waitChecked(t, a, int64(i+1))
					if c.get("first")+c.get("second") != 0 {
						t.Fatalf("start called with the CRD at state %d (%v)", i, u.Object["status"])
					}
				}
				if len(tc.before) == 0 {
					api.create(t, servedNow.DeepCopy())
				} else {
					api.update(t, servedNow.DeepCopy())
				}
			}
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return c.get("first") > 0 && c.get("second") > 0, nil
			}); err != nil {
				t.Fatalf("start not called for every waiter once the CRD is established: %v", c.calls)
			}
			// More changes of the CRD start nothing again.
			again := servedNow.DeepCopy()
			again.SetLabels(map[string]string{"changed": "yes"})
			api.update(t, again)
			a.When(widgets, c.start("later"))
			if c.get("later") != 1 {
				t.Errorf("When after the resource is served: start called %d times by its return, want 1", c.get("later"))
			}
			// The CRD is no longer watched (while the context lasts): no change of it can
			// start anything.
			if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return api.watching() == 0, nil
			}); err != nil {
				t.Errorf("the CRD is still watched after its resource is served")
			}
			for _, name := range []string{"first", "second", "later"} {
				if n := c.get(name); n != 1 {
					t.Errorf("start %q called %d times, want exactly once", name, n)
				}
			}
			if n := api.watchCount(); n != 1 {
				t.Errorf("%d watches of CRDs, want 1", n)
			}
		})
	}
}

// TestWhenCRDNeverServed proves that start never runs for a CRD that exists but is not
// established, or does not serve the version, however long it stays so.
func TestWhenCRDNeverServed(t *testing.T) {
	for name, u := range map[string]*unstructured.Unstructured{
		"not established":    crd(map[string]bool{"v1beta1": true}, "False"),
		"version not served": crd(map[string]bool{"v1beta1": false, "v1": true}, "True"),
	} {
		t.Run(name, func(t *testing.T) {
			_, tctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(tctx)
			defer cancel()
			api := newCRDAPI(u)
			a := NewAPIs(ctx, discoveryServing(), api.dyn)
			c := newCounter()
			a.When(widgets, c.start("start"))
			api.waitForWatch(t)
			waitChecked(t, a, 1) // the CRD as listed
			changed := u.DeepCopy()
			changed.SetLabels(map[string]string{"changed": "yes"})
			api.update(t, changed)
			waitChecked(t, a, 2) // and changed
			if n := c.get("start"); n != 0 {
				t.Errorf("start called %d times, want never", n)
			}
			if n := api.watching(); n != 1 {
				t.Errorf("%d watches of the CRD run, want 1 until the resource is served", n)
			}
		})
	}
}

// TestServedAPIs proves that ServedAPIs serves what it is given at once, and never anything
// else (it has nothing to watch with).
func TestServedAPIs(t *testing.T) {
	other := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	a := ServedAPIs(context.Background(), widgets)
	c := newCounter()
	a.When(widgets, c.start("widgets"))
	a.When(other, c.start("gadgets"))
	if c.get("widgets") != 1 || c.get("gadgets") != 0 {
		t.Errorf("start calls %v; want widgets once, gadgets never", c.calls)
	}
}

// TestOptionalKindServedLater proves that an OptionalKind watched before its kind is served
// has no lister and is not served; that once the kind's CRD is established, its informer
// runs (started by Watch's callback), the handlers added before and after see its objects,
// and enqueue hears of them.
func TestOptionalKindServedLater(t *testing.T) {
	_, tctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(tctx)
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgets.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"namespace": "ns", "name": "w1"},
	}}
	api := newCRDAPI(widget)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(api.dyn, 0)
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	f := Informers{Dynamic: factory, APIs: NewAPIs(ctx, discoveryServing(), api.dyn)}
	var k OptionalKind
	var mu sync.Mutex
	var enqueued, before, after []string
	record := func(into *[]string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			key, _ := cache.MetaNamespaceKeyFunc(obj)
			mu.Lock()
			defer mu.Unlock()
			*into = append(*into, key)
		}}
	}
	synced := k.Watch(f, widgets, func(key string) {
		mu.Lock()
		defer mu.Unlock()
		enqueued = append(enqueued, key)
	})
	if len(synced) != 0 {
		t.Errorf("Watch of a kind not served returned %d synced funcs, want none to wait for", len(synced))
	}
	k.AddHandler(record(&before))
	if k.Lister() != nil {
		t.Error("Lister of a kind not served is not nil")
	}
	if served, _ := k.Served(); served {
		t.Error("Served = true for a kind not served")
	}
	api.waitForWatch(t)
	api.create(t, crd(map[string]bool{"v1beta1": true}, "True"))
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		served, synced := k.Served()
		return served && synced, nil
	}); err != nil {
		t.Fatalf("the kind's informer did not run and sync once its CRD was established")
	}
	k.AddHandler(record(&after))
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(enqueued) > 0 && len(before) > 0 && len(after) > 0, nil
	}); err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("not every handler saw the widget: enqueued %v, handler added before %v, after %v", enqueued, before, after)
	}
	if _, err := k.Lister().ByNamespace("ns").Get("w1"); err != nil {
		t.Errorf("Lister: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for what, keys := range map[string][]string{"enqueued": enqueued, "handler added before": before, "handler added after": after} {
		if len(keys) != 1 || keys[0] != "ns/w1" {
			t.Errorf("%s: %v, want [ns/w1]", what, keys)
		}
	}
}

// TestUnservedVersionIsNotAskedFor proves that discovery is asked for a group version's
// resources only when the API lists that version: a request for a version it does not serve
// is a 404 that an apiserver with the mixed-version proxy forwards to its peers, and
// lockstep asks again every Recheck for the native kinds a cluster does not serve.
func TestUnservedVersionIsNotAskedFor(t *testing.T) {
	other := schema.GroupVersionResource{Group: widgets.Group, Version: "v9", Resource: widgets.Resource}
	_, tctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(tctx)
	defer cancel()
	disc := discoveryServing(other)
	a := NewAPIs(ctx, disc, newCRDAPI().dyn)
	if a.servedNow(widgets) {
		t.Fatalf("%v served by a discovery listing only %v", widgets, other.GroupVersion())
	}
	for _, action := range disc.Actions() {
		if action.GetResource().Resource == "resource" {
			t.Errorf("discovery was asked for the resources of a version it does not list (%v)", action)
		}
	}
	if !a.servedNow(other) {
		t.Errorf("%v not served by a discovery listing it", other)
	}
}
