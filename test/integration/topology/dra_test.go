package topology

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

const gpuDriver = "gpu.example.com"

// publishGPUs publishes a ResourceSlice of n devices of the example GPU driver on a node, as a
// DRA driver's kubelet plugin would.
func publishGPUs(t *testing.T, env *testenv.Env, node string, n int) {
	t.Helper()
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
	if _, err := env.Client.ResourceV1().ResourceSlices().Create(context.Background(), slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// claimPod returns a member whose GPUs come from its own ResourceClaim of 8 devices.
func claimPod(t *testing.T, env *testenv.Env, ns, group string, i int) *v1.Pod {
	t.Helper()
	name := fmt.Sprintf("%s-%d", group, i)
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-gpus"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpus",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: gpuDriver,
				AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 8},
		}}}},
	}
	if _, err := env.Client.ResourceV1().ResourceClaims(ns).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := testenv.Pod(ns, name, group, "1")
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(claim.Name)}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpus"}}
	return p
}

// A gang whose GPUs come from DRA ResourceClaims: the plan places each member only where its
// claim can be allocated (nodes whose driver publishes 8 free GPUs), and never two members on
// one node whose devices would not hold both. The scheduler's DRA plugin allocates the claims.
func TestDRAClaimGangBindsWhereItsClaimsFit(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "dra")
	nodes := testenv.TopologyNodes(1, 1, 2, 4, "64") // racks z0-b0-r0 and z0-b0-r1 of 4 nodes
	env.CreateNodes(t, nodes...)
	if _, err := env.Client.ResourceV1().DeviceClasses().Create(context.Background(), &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuDriver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", gpuDriver)}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Only two nodes of rack r1 have GPUs; rack r0 has more CPU and none.
	gpuNodes := map[string]bool{"z0-b0-r1-h1": true, "z0-b0-r1-h3": true}
	for n := range gpuNodes {
		publishGPUs(t, env, n, 8)
	}
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, testenv.Constrain(testenv.Gang(ns, "llm", 2, ""), "rack"))
	env.CreatePods(t, claimPod(t, env, ns, "llm", 0), claimPod(t, env, ns, "llm", 1))
	placed := env.WaitBound(t, ns, names(2, "llm")...)
	if placed["llm-0"] == placed["llm-1"] || !gpuNodes[placed["llm-0"]] || !gpuNodes[placed["llm-1"]] {
		t.Errorf("placement %v, want one member on each GPU node", placed)
	}
	env.WaitCondition(t, "PodGroup", ns, "llm", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 pods placed together")
	for i := 0; i < 2; i++ {
		claim, err := env.Client.ResourceV1().ResourceClaims(ns).Get(context.Background(), fmt.Sprintf("llm-%d-gpus", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if claim.Status.Allocation == nil || len(claim.Status.Allocation.Devices.Results) != 8 {
			t.Errorf("claim %s not allocated 8 devices: %+v", claim.Name, claim.Status.Allocation)
		}
	}
}
