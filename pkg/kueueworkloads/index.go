// Package kueueworkloads finds the Kueue Workload that admits a workload object (a Job, a
// JobSet...), so that lockstep's events about the object's gang are told there too: Kueue
// users follow a queued job through its Workload (kubectl describe workload, Kueue's
// dashboards), where Kueue records admission, eviction and preemption, and should see there
// why lockstep has not placed an admitted gang yet.
//
// It reads Workloads' metadata only (a metadata informer: names, UIDs and owner references,
// not their specs or statuses), from the moment Kueue's CRD is served; without Kueue it holds
// nothing and costs nothing.
package kueueworkloads

import (
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
)

// GVR is Kueue's Workload resource. v1beta1 is served by every Kueue release since v0.3
// (v0.15 adds v1beta2 and still stores v1beta1); only metadata is read, which no version
// changes.
var GVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: "workloads"}

// byController indexes Workloads by the UID of the object that controls them (Kueue makes
// one Workload per job, controlled by it).
const byController = "controller"

// Index finds Kueue Workloads by the object that controls them.
type Index struct {
	// watching is nil until the Workload API is served.
	watching atomic.Pointer[watching]
}

type watching struct {
	indexer cache.Indexer
	synced  cache.InformerSynced
}

// New returns an Index that starts watching Workloads once apis reports them served, until
// apis is done.
func New(client metadata.Interface, apis *jobframework.APIs) *Index {
	x := &Index{}
	inf := metadatainformer.NewFilteredMetadataInformer(client, GVR, metav1.NamespaceAll, 0,
		cache.Indexers{byController: controllerUID}, nil).Informer()
	apis.When(GVR, func() {
		x.watching.Store(&watching{indexer: inf.GetIndexer(), synced: inf.HasSynced})
		go inf.Run(apis.Done())
	})
	return x
}

func controllerUID(obj any) ([]string, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// Of returns, as an object events can regard, the Kueue Workload in namespace controlled by
// the object whose UID is controller; nil if there is none (no Kueue, the object is not
// queued, or Kueue has not made its Workload yet).
func (x *Index) Of(namespace string, controller types.UID) runtime.Object {
	if x == nil {
		return nil
	}
	w := x.watching.Load()
	if w == nil || !w.synced() {
		return nil
	}
	objs, err := w.indexer.ByIndex(byController, string(controller))
	if err != nil {
		return nil
	}
	for _, obj := range objs {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok || m.Namespace != namespace {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(GVR.GroupVersion().String())
		u.SetKind("Workload")
		u.SetNamespace(m.Namespace)
		u.SetName(m.Name)
		u.SetUID(m.UID)
		return u
	}
	return nil
}
