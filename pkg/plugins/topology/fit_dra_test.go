package topology

import (
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

const gpuDriver = "gpu.example.com"

// withClaims gives each member its own claim of count devices (named <pod>-gpus) and returns
// the claims.
func withClaims(pods []*v1.Pod, count int64) []runtime.Object {
	var claims []runtime.Object
	for _, p := range pods {
		c := podgrouptest.ResourceClaim("ns", p.Name+"-gpus", gpuDriver, count)
		claims = append(claims, c)
		podgrouptest.WithClaim(p, c.Name)
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
			objects := append(withClaims(pods, tc.count), podgrouptest.DeviceClass(gpuDriver))
			for node, n := range tc.slices {
				objects = append(objects, podgrouptest.ResourceSlice(gpuDriver, node, n))
			}
			group := lt.MakePodGroup().Namespace("ns").Name("llm").Gang(int32(tc.members)).Topology(lt.Required(rackKey)).Obj()
			got, s := planIn(t, podgrouptest.Options{Filters: true, DRA: true, Objects: objects}, group, pods, rackNodes("64", "", 4, 4))
			if !plannedAll(t, got, s, tc.refused, tc.members) {
				return
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
