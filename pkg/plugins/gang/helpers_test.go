package gang

import (
	"context"
	"testing"

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
			pl, err := New(ctx, nil, fh, c.Model)
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

var (
	gangPG      = podgrouptest.Gang
	compositePG = podgrouptest.Composite
	member      = podgrouptest.Member
	members     = podgrouptest.Members
	epoch       = podgrouptest.Epoch
)

func node(name, cpu string) *v1.Node { return podgrouptest.Node(name, cpu, nil) }

func klogDiscard() klog.Logger { return klog.Background().V(10) }
