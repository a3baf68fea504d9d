package topology

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

const gpuDriver = "gpu.example.com"

// gpuClass is the DeviceClass of the example GPU driver.
func gpuClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuDriver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", gpuDriver)}}}},
	}
}

// gpuSlice is the ResourceSlice a DRA driver publishes for n devices on a node.
func gpuSlice(node string, n int) *resourcev1.ResourceSlice {
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   gpuDriver,
			NodeName: ptr.To(node),
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := 0; i < n; i++ {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return slice
}

// gpuClaim is a ResourceClaim in namespace "ns" for count devices of the example driver.
func gpuClaim(name string, count int64) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + name)},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpus",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: gpuDriver,
				AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count},
		}}}},
	}
}

// withClaims gives each member its own claim of count devices (named <pod>-gpus) and returns
// the claims.
func withClaims(pods []*v1.Pod, count int64) []runtime.Object {
	var claims []runtime.Object
	for _, p := range pods {
		c := gpuClaim(p.Name+"-gpus", count)
		claims = append(claims, c)
		p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(c.Name)}}
		p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpus"}}
	}
	return claims
}

// Members whose GPUs come from DRA ResourceClaims are planned only where the scheduler's DRA
// plugin can allocate their claims, counting the devices the members planned before them
// hold: never two 8-device claims on one node of 8 devices.
func TestPlansAllocateResourceClaims(t *testing.T) {
	tests := []struct {
		name    string
		members int
		count   int64
		slices  map[string]int // devices per node
		in      sets.Set[string]
		perNode int // most members on one node
		refused string
	}{
		{
			name:    "8-device claims: one member per 8-device node, never on nodes without devices",
			members: 2, count: 8,
			slices:  map[string]int{"r1-n1": 8, "r1-n3": 8},
			in:      sets.New("r1-n1", "r1-n3"),
			perNode: 1,
		},
		{
			name:    "4-device claims: two members share an 8-device node",
			members: 4, count: 4,
			slices:  map[string]int{"r0-n2": 8, "r1-n0": 8, "r1-n2": 8},
			in:      sets.New("r1-n0", "r1-n2"),
			perNode: 2,
		},
		{
			name:    "more 8-device claims than 8-device nodes in any rack: refused",
			members: 3, count: 8,
			slices:  map[string]int{"r0-n0": 8, "r1-n0": 8, "r1-n1": 8},
			refused: "no rack has room for 3 pods",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods := gangPods("llm", tc.members, func(w *st.PodWrapper) *st.PodWrapper {
				return w.Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"})
			})
			objects := append(withClaims(pods, tc.count), gpuClass())
			for node, n := range tc.slices {
				objects = append(objects, gpuSlice(node, n))
			}
			group := podgrouptest.WithTopology(podgrouptest.Gang("llm", int32(tc.members), ""), constraint(rackKey, v1alpha1.TopologyRequired))
			got, s := planIn(t, podgrouptest.Options{Filters: true, DRA: true, Objects: objects}, group, pods, rackNodes("64", "", 4, 4))
			if tc.refused != "" {
				if s.IsSuccess() || !strings.Contains(s.Message(), tc.refused) {
					t.Fatalf("PreFilter = %v, want refused with %q", s, tc.refused)
				}
				return
			}
			if s != nil {
				t.Fatalf("PreFilter refused: %v", s)
			}
			if len(got) != tc.members {
				t.Fatalf("planned %v, want all %d members", got, tc.members)
			}
			perNode := map[string]int{}
			for _, n := range got {
				perNode[n]++
				if !tc.in.Has(n) {
					t.Errorf("member planned on %s, want one of %v", n, sets.List(tc.in))
				}
			}
			for n, k := range perNode {
				if k > tc.perNode {
					t.Errorf("%d members planned on %s, whose devices hold %d: %v", k, n, tc.perNode, got)
				}
			}
		})
	}
}
