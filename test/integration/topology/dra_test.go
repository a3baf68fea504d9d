package topology

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

const gpuDriver = "gpu.example.com"

// claimPod returns a member whose GPUs come from its own ResourceClaim of 8 devices.
func claimPod(t *testing.T, env *testenv.Env, ns, group string, i int) *v1.Pod {
	t.Helper()
	name := fmt.Sprintf("%s-%d", group, i)
	claim := podgrouptest.ResourceClaim(ns, name+"-gpus", gpuDriver, 8)
	claim.UID = ""
	if _, err := env.Client.ResourceV1().ResourceClaims(ns).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return podgrouptest.WithClaim(lt.GroupPod(ns, name, group).Req(lt.CPU("1")).Obj(), claim.Name)
}

// A gang whose GPUs come from DRA ResourceClaims: the plan places each member only where its
// claim can be allocated (nodes whose driver publishes 8 free GPUs), and never two members on
// one node whose devices would not hold both. The scheduler's DRA plugin allocates the claims.
func TestDRAClaimGangBindsWhereItsClaimsFit(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "dra")
	nodes := lt.TopologyNodes(1, 1, 2, 4, "64") // racks z0-b0-r0 and z0-b0-r1 of 4 nodes
	env.CreateNodes(t, nodes...)
	if _, err := env.Client.ResourceV1().DeviceClasses().Create(context.Background(), podgrouptest.DeviceClass(gpuDriver), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Only two nodes of rack r1 have GPUs; rack r0 has more CPU and none.
	gpuNodes := map[string]bool{"z0-b0-r1-h1": true, "z0-b0-r1-h3": true}
	for n := range gpuNodes {
		if _, err := env.Client.ResourceV1().ResourceSlices().Create(context.Background(), podgrouptest.ResourceSlice(gpuDriver, n, 8), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("llm").Gang(2).Topology(lt.Required(lt.RackKey)).Obj())
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
