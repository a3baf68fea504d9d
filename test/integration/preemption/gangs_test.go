package preemption

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Upstream's GangPreemptionPodGroups shape (workload_preemption), its size: 100 nodes of 4
// cpu full of 50 low-priority gangs of 10 (600m, a host port per gang, so one member per
// node), then 10 high-priority gangs of 10 (3500m, a host port per gang) that fit only once
// every low-priority pod of their nodes is gone. The gangs preempt at once, and
// each counts on room the others' victims leave. Every high-priority gang binds whole; the
// oracle reads the nodes' pods from the API: no node holds more than its cpu, no host port
// twice. (One gang used to wait forever: its plan did not wait for the others' victims on its
// nodes, it planned again, its members' nominations from the first plan refused its scout
// the new one, and the refusal never reached the next plan.)
func TestGangsPreemptGangsTogether(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "gangs")
	nodes := lt.TopologyNodes(1, 1, 10, 10, "4")
	env.CreateNodes(t, nodes...)
	env.CreatePriorityClass(t, low, 10, false)
	env.CreatePriorityClass(t, high, 1000, false)
	env.StartScheduler(t, deployed)
	env.StartKubelets(t, ns)

	portGang := func(name string, port int32, cpu, class string) []string {
		env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(name).Gang(10).PriorityClass(class).Obj())
		var names []string
		for i := 0; i < 10; i++ {
			p := lt.InPriorityClass(lt.Member(ns, name, i).Req(lt.CPU(cpu)).
				ContainerPort([]v1.ContainerPort{{ContainerPort: 80, HostPort: port, Protocol: v1.ProtocolTCP}}), class).Obj()
			env.CreatePods(t, p)
			names = append(names, p.Name)
		}
		return names
	}
	var lows []string
	for g := 0; g < 50; g++ {
		lows = append(lows, portGang(fmt.Sprintf("low-%d", g), int32(8000+g), "600m", low)...)
	}
	env.WaitBound(t, ns, lows...)

	var highs []string
	for g := 0; g < 10; g++ {
		highs = append(highs, portGang(fmt.Sprintf("high-%d", g), int32(9000+g), "3500m", high)...)
	}
	env.WaitBound(t, ns, highs...)

	pods, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := map[string]*resource.Quantity{}
	ports := map[string]map[int32]string{}
	for _, p := range pods.Items {
		node := p.Spec.NodeName
		if node == "" || p.DeletionTimestamp != nil {
			continue
		}
		if cpu[node] == nil {
			cpu[node], ports[node] = resource.NewQuantity(0, resource.DecimalSI), map[int32]string{}
		}
		for _, c := range p.Spec.Containers {
			cpu[node].Add(*c.Resources.Requests.Cpu())
			for _, cp := range c.Ports {
				if other, taken := ports[node][cp.HostPort]; taken {
					t.Errorf("%s and %s both hold host port %d on %s", other, p.Name, cp.HostPort, node)
				}
				ports[node][cp.HostPort] = p.Name
			}
		}
	}
	for _, n := range nodes {
		if used := cpu[n.Name]; used != nil && used.Cmp(*n.Status.Allocatable.Cpu()) > 0 {
			t.Errorf("node %s holds %s cpu of %s", n.Name, used, n.Status.Allocatable.Cpu())
		}
	}
}
