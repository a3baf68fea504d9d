package preemption

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// never is a finalizer nobody removes: a pod deleted with it stays terminating for good, as
// one whose node is gone and no garbage collector runs.
const never = "lockstep.test/never"

// A preemptor whose victims never leave (stuck terminating past their grace period) still
// gets its gang placed: it waits for them while they may still go, then plans afresh, and
// binds in the rack room appeared in meanwhile.
func TestPreemptorWhoseVictimsNeverLeave(t *testing.T) {
	env, ns, _ := setUp(t, podgroup.APILockstep, "stuck")
	env.CreatePriorityClass(t, top, 2000, false)
	t.Cleanup(func() { release(t, env, ns) })
	var fill []*v1.Pod
	for _, node := range []string{"z0-b0-r0-h0", "z0-b0-r0-h1"} { // rack r0: victims that never go
		for _, p := range fillers(ns, node) {
			p.Finalizers = []string{never}
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
			fill = append(fill, p)
		}
	}
	fill = append(fill, running(ns, "busy-r1h0", "", "z0-b0-r1-h0", "4", top), running(ns, "busy-r1h1", "", "z0-b0-r1-h1", "4", top))
	env.CreatePods(t, fill...)

	members := gang(t, env, ns, "train", 4, "2", high)
	env.WaitEvent(t, ns, "train", v1alpha1.ReasonPreempting, "taking rack z0-b0-r0")
	start := time.Now()
	// Room appears elsewhere while it waits: a new rack.
	var rack []*v1.Node
	for _, n := range lt.TopologyNodes(1, 1, 3, 2, "4") {
		if strings.HasPrefix(n.Name, "z0-b0-r2-") {
			rack = append(rack, n)
		}
	}
	env.CreateNodes(t, rack...)
	// The victims count as leaving no more once their grace period (1 s) and the 30 s margin
	// have passed, and the tree is tried again at least every 30 s: placed within about a
	// minute of the preemption, bounded here with room for a loaded machine.
	placed := env.WaitBoundWithin(t, 2*time.Minute, ns, members...)
	for _, m := range members {
		if r := testenv.Domain(placed[m], lt.RackKey); r != "z0-b0-r2" {
			t.Errorf("member %s bound in rack %s, want z0-b0-r2: the only rack with room", m, r)
		}
	}
	t.Logf("placed %s after its preemption began", time.Since(start).Round(time.Second))
	list, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stuck := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			stuck++
		}
	}
	if stuck != 8 {
		t.Errorf("%d victims still terminating, want the 8 of rack r0 (they never go)", stuck)
	}
}

// release takes the finalizer off the pods of ns that have it.
func release(t *testing.T, env *testenv.Env, ns string) {
	list, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range list.Items {
		if len(p.Finalizers) > 0 {
			_, _ = env.Client.CoreV1().Pods(ns).Patch(context.Background(), p.Name, types.MergePatchType,
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	}
}
