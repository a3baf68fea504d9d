package topology

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

const gpu v1.ResourceName = "nvidia.com/gpu"

// withGPUs gives nodes 8 GPUs each.
func withGPUs(nodes []*v1.Node) []*v1.Node {
	for _, n := range nodes {
		n.Status.Capacity[gpu] = resource.MustParse("8")
		n.Status.Allocatable[gpu] = resource.MustParse("8")
	}
	return nodes
}

// A rack-required gang whose pods refuse to share a node (required hostname anti-affinity,
// the usual way to spread training workers) binds one pod per node of one rack.
func TestAntiAffinityGangBindsOnePodPerNode(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "anti")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 4, "64")...) // two racks of 4 large nodes
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(4).Topology(lt.Required(lt.RackKey)).Obj())
	for i := 0; i < 4; i++ {
		env.CreatePods(t, lt.Member(ns, "train", i).Req(lt.CPU("4")).Label("app", "train").
			PodAntiAffinity(lt.HostKey, &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}}, st.PodAntiAffinityWithRequiredReq).Obj())
	}
	placed := env.WaitBound(t, ns, names(4, "train")...)
	assertOneDomain(t, placed, names(4, "train"), lt.RackKey)
	if got := domains(placed, names(4, "train"), lt.HostKey); len(got) != 4 {
		t.Errorf("pods on %v, want four nodes", got)
	}
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
}

// A gang of host-network pods with a host port (MPI launchers and workers) binds, one pod
// per node.
func TestHostPortGangBinds(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "ports")
	env.CreateNodes(t, lt.TopologyNodes(1, 1, 2, 4, "64")...)
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("mpi").Gang(4).Topology(lt.Required(lt.RackKey)).Obj())
	for i := 0; i < 4; i++ {
		env.CreatePods(t, lt.Member(ns, "mpi", i).Req(lt.CPU("1")).
			ContainerPort([]v1.ContainerPort{{ContainerPort: 2222, HostPort: 2222, Protocol: v1.ProtocolTCP}}).Obj())
	}
	placed := env.WaitBound(t, ns, names(4, "mpi")...)
	assertOneDomain(t, placed, names(4, "mpi"), lt.RackKey)
	if got := domains(placed, names(4, "mpi"), lt.HostKey); len(got) != 4 {
		t.Errorf("pods on %v, want four nodes", got)
	}
}

// A gang of 2 × 8-GPU pods lands in the rack it fills exactly (2 GPU nodes), not in the rack of
// 8 GPU nodes it would fragment, though that rack has more free CPU.
func TestGPUGangFillsTheRackItFitsExactly(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "gpu")
	big := withGPUs(lt.TopologyNodes(1, 1, 1, 8, "96"))       // z0-b0-r0: 8 GPU nodes
	small := withGPUs(lt.TopologyNodes(1, 1, 2, 2, "16")[2:]) // z0-b0-r1: 2 GPU nodes
	cpuOnly := lt.TopologyNodes(2, 1, 1, 4, "96")[4:]         // z1: no GPUs
	env.CreateNodes(t, append(append(big, small...), cpuOnly...)...)
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("llm").Gang(2).Topology(lt.Required(lt.RackKey)).Obj())
	for i := 0; i < 2; i++ {
		// Res: requests and limits (an extended resource needs its limit).
		env.CreatePods(t, lt.Member(ns, "llm", i).Res(map[v1.ResourceName]string{v1.ResourceCPU: "8", gpu: "8"}).Obj())
	}
	placed := env.WaitBound(t, ns, names(2, "llm")...)
	if rack := assertOneDomain(t, placed, names(2, "llm"), lt.RackKey); rack != "z0-b0-r1" {
		t.Errorf("gang in rack %s, want z0-b0-r1, the rack it fills exactly; placement %v", rack, placed)
	}
	for _, n := range placed {
		if !strings.HasPrefix(n, "z0-b0-r1-") {
			t.Errorf("pod on %s", n)
		}
	}
}
