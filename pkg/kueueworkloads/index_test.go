package kueueworkloads

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata/fake"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
)

func workload(ns, name string, controller types.UID) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: GVR.GroupVersion().String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: controller, Controller: ptr.To(true)}}},
	}
}

// A Workload is found by the UID of the object controlling it, in its namespace only; nothing
// is found while Kueue's API is not served.
func TestOf(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	objs := []runtime.Object{workload("team-a", "job-train-1a2b3", "uid-train"), workload("team-b", "job-eval-4c5d6", "uid-eval")}
	for _, tc := range []struct {
		name       string
		served     bool
		namespace  string
		controller types.UID
		want       string
	}{
		{name: "the Workload of a queued Job", served: true, namespace: "team-a", controller: "uid-train", want: "job-train-1a2b3"},
		{name: "another namespace", served: true, namespace: "team-a", controller: "uid-eval"},
		{name: "a Job Kueue does not manage", served: true, namespace: "team-a", controller: "uid-other"},
		{name: "Kueue not installed", namespace: "team-a", controller: "uid-train"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			apis := jobframework.ServedAPIs(ctx)
			if tc.served {
				apis = jobframework.ServedAPIs(ctx, GVR)
			}
			x := New(fake.NewSimpleMetadataClient(scheme, objs...), apis)
			if tc.served {
				if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					w := x.watching.Load()
					return w != nil && w.synced(), nil
				}); err != nil {
					t.Fatal("the Workload informer did not sync")
				}
			}
			got := x.Of(tc.namespace, tc.controller)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("Of = %v, want none", got)
				}
				return
			}
			m, ok := got.(metav1.Object)
			if !ok || m.GetName() != tc.want || m.GetNamespace() != tc.namespace || m.GetUID() != types.UID("uid-"+tc.want) ||
				got.GetObjectKind().GroupVersionKind().Kind != "Workload" {
				t.Fatalf("Of = %#v, want Workload %s/%s", got, tc.namespace, tc.want)
			}
		})
	}
}
