package gang

import (
	"context"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
)

// testEnv is a scheduling framework with LockstepGang at every extension point it
// implements.
type testEnv struct {
	*podgrouptest.Env
	plugin *Gang
}

func newTestEnv(t *testing.T, groups []runtime.Object, pods []*v1.Pod, nodes []*v1.Node) *testEnv {
	t.Helper()
	env := &testEnv{}
	env.Env = podgrouptest.NewEnv(t, groups, pods, nodes, podgrouptest.Options{}, podgrouptest.Plugin{
		Name: Name,
		Factory: func(ctx context.Context, fh fwk.Handle, c *podgroup.Components) (fwk.Plugin, error) {
			pl, err := New(ctx, nil, fh, c.Model.Gate(), c.Model.Permits())
			if err != nil {
				return nil, err
			}
			env.plugin = pl.(*Gang)
			return pl, nil
		},
		Points: []string{"QueueSort", "PreFilter", "PostFilter", "Reserve", "Permit"},
	})
	return env
}

var epoch = lt.Epoch

func klogDiscard() klog.Logger { return klog.Background().V(10) }
