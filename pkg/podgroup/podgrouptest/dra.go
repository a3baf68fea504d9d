package podgrouptest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// DeviceClass returns a DeviceClass, named for driver, of every device of driver.
func DeviceClass(driver string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", driver)}}}},
	}
}

// ResourceSlice returns the ResourceSlice a DRA driver's kubelet plugin publishes for n
// devices on node.
func ResourceSlice(driver, node string, n int) *resourcev1.ResourceSlice {
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   driver,
			NodeName: ptr.To(node),
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := 0; i < n; i++ {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("dev-%d", i)})
	}
	return slice
}

// ResourceClaim returns a claim in ns for count devices of the class DeviceClass(driver).
func ResourceClaim(ns, name, driver string, count int64) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("claim-" + name)},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "devices",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: driver,
				AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count},
		}}}},
	}
}

// WithClaim makes the pod's first container use the named ResourceClaim.
func WithClaim(p *v1.Pod, claim string) *v1.Pod {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: claim, ResourceClaimName: ptr.To(claim)})
	p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: claim})
	return p
}
