package capacity

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

const gpu = v1.ResourceName("nvidia.com/gpu")

func TestArithmetic(t *testing.T) {
	free := Resources{MilliCPU: 8000, Memory: 16 << 30, Pods: 10, Scalar: map[v1.ResourceName]int64{gpu: 4}}
	tests := []struct {
		name   string
		need   Resources
		fits   bool
		copies int64
	}{
		{name: "cpu and gpu", need: Resources{MilliCPU: 2000, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 1}}, fits: true, copies: 4},
		{name: "gpu bound", need: Resources{MilliCPU: 1000, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 3}}, fits: true, copies: 1},
		{name: "too much memory", need: Resources{Memory: 32 << 30, Pods: 1}, fits: false, copies: 0},
		{name: "an extended resource the node lacks", need: Resources{Pods: 1, Scalar: map[v1.ResourceName]int64{"example.com/fpga": 1}}, fits: false, copies: 0},
		{name: "pod slots bound", need: Resources{MilliCPU: 100, Pods: 1}, fits: true, copies: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := free.Fits(tc.need); got != tc.fits {
				t.Errorf("Fits = %v, want %v", got, tc.fits)
			}
			if got := free.Copies(tc.need); got != tc.copies {
				t.Errorf("Copies = %d, want %d", got, tc.copies)
			}
		})
	}
	left := free.Clone()
	left.Sub(Resources{MilliCPU: 9000, Scalar: map[v1.ResourceName]int64{gpu: 1}})
	if free.MilliCPU != 8000 || free.Scalar[gpu] != 4 {
		t.Error("Sub on a clone changed the original")
	}
	if z := left.AtLeastZero(); z.MilliCPU != 0 || z.Scalar[gpu] != 3 || z.Memory != 16<<30 {
		t.Errorf("AtLeastZero = %+v", z)
	}
	left.Add(Resources{MilliCPU: 1000})
	if left.MilliCPU != 0 {
		t.Errorf("Add: %d milli-CPU, want 0", left.MilliCPU)
	}
	for _, z := range []struct {
		r    Resources
		want bool
	}{
		{Resources{}, true},
		{Resources{Scalar: map[v1.ResourceName]int64{gpu: 0}}, true},
		{Resources{Scalar: map[v1.ResourceName]int64{gpu: 1}}, false},
		{Resources{Pods: 1}, false},
		{Resources{MilliCPU: -1}, false},
	} {
		if got := z.r.IsZero(); got != z.want {
			t.Errorf("%+v.IsZero() = %v, want %v", z.r, got, z.want)
		}
	}
}

// Least is each resource's smaller amount, an extended resource only one side has left
// out; both needs cover it, so a node without room for it has room for neither.
func TestLeast(t *testing.T) {
	a := Resources{MilliCPU: 2000, Memory: 1 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 2, "example.com/fpga": 1}}
	b := Resources{MilliCPU: 1000, Memory: 2 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 1}}
	want := Resources{MilliCPU: 1000, Memory: 1 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 1}}
	for _, got := range []Resources{a.Least(b), b.Least(a)} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Least = %+v, want %+v", got, want)
		}
		if !a.Fits(got) || !b.Fits(got) {
			t.Errorf("%+v does not fit in both needs", got)
		}
	}
	if got := (Resources{MilliCPU: 1}).Least(Resources{MilliCPU: 2}); got.Scalar != nil {
		t.Errorf("Least of needs without extended resources has %v", got.Scalar)
	}
}

func TestAllocatable(t *testing.T) {
	node := &v1.Node{Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("3500m"),
		v1.ResourceMemory:           resource.MustParse("8Gi"),
		v1.ResourcePods:             resource.MustParse("110"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		gpu:                         resource.MustParse("8"),
	}}}
	want := Resources{MilliCPU: 3500, Memory: 8 << 30, Pods: 110, Scalar: map[v1.ResourceName]int64{gpu: 8}}
	if got := Allocatable(node); !reflect.DeepEqual(got, want) {
		t.Errorf("Allocatable = %+v, want %+v", got, want)
	}
}

// TestOfPodInfoIsPodRequests: the requests a PodInfo computes for NodeResourcesFit are those
// PodRequests reads from the spec (init containers and overhead counted).
func TestOfPodInfoIsPodRequests(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		Overhead: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("1Gi")}}}},
		Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("2Gi"), gpu: resource.MustParse("4")}}}},
	}}
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := Resources{MilliCPU: 3100, Memory: 2 << 30, Pods: 1, Scalar: map[v1.ResourceName]int64{gpu: 4}}
	if got := OfPodInfo(pi); !reflect.DeepEqual(got, want) {
		t.Errorf("OfPodInfo = %+v, want %+v", got, want)
	}
	if got := PodRequests(pod); !reflect.DeepEqual(got, want) {
		t.Errorf("PodRequests = %+v, want %+v", got, want)
	}
}
