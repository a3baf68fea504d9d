// Package gang implements LockstepGang, the all-or-nothing plugin: a PodGroup's pods (and,
// through CompositePodGroups, a whole tree of groups) bind together or not at all.
//
// It runs in the classic per-pod scheduling cycle, in the coscheduling style upstream's
// GangScheduling uses when its pod-group cycle is off: PreEnqueue holds members until their
// tree can be ready, QueueSort pops members of one tree together, Reserve/Permit hold each
// placed member until the tree is ready, and PostFilter/Unreserve release every
// reservation of a tree that cannot complete. The group model lives in pkg/podgroup.
package gang

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/config/validation"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Name is the name of the plugin used in the plugin registry and configurations.
const Name = "LockstepGang"

// Gang is the LockstepGang plugin.
type Gang struct {
	logger        klog.Logger
	handle        fwk.Handle
	groups        *podgroup.Manager
	permitTimeout time.Duration
	backoff       time.Duration
}

var (
	_ fwk.PreEnqueuePlugin  = &Gang{}
	_ fwk.QueueSortPlugin   = &Gang{}
	_ fwk.PreFilterPlugin   = &Gang{}
	_ fwk.PostFilterPlugin  = &Gang{}
	_ fwk.ReservePlugin     = &Gang{}
	_ fwk.PermitPlugin      = &Gang{}
	_ fwk.EnqueueExtensions = &Gang{}
)

// New builds the plugin from its (defaulted, internal) args.
func New(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	args, err := getArgs(obj)
	if err != nil {
		return nil, err
	}
	if err := validation.ValidateLockstepGangArgs(field.NewPath(Name+"Args"), args); err != nil {
		return nil, err
	}
	groups, err := podgroup.For(ctx, handle)
	if err != nil {
		return nil, err
	}
	return newGang(ctx, args, handle, groups), nil
}

func newGang(ctx context.Context, args *config.LockstepGangArgs, handle fwk.Handle, groups *podgroup.Manager) *Gang {
	groups.SetJobGroupTimeout(time.Duration(args.JobGroupTimeoutSeconds) * time.Second)
	return &Gang{
		logger:        klog.FromContext(ctx).WithName(Name),
		handle:        handle,
		groups:        groups,
		permitTimeout: time.Duration(args.PermitTimeoutSeconds) * time.Second,
		backoff:       time.Duration(args.BackoffSeconds) * time.Second,
	}
}

// getArgs accepts the typed args the scheduler decoded, or nil for the defaults.
func getArgs(obj runtime.Object) (*config.LockstepGangArgs, error) {
	if obj == nil {
		return defaultArgs(), nil
	}
	args, ok := obj.(*config.LockstepGangArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type %sArgs, got %T", Name, obj)
	}
	return args, nil
}

func defaultArgs() *config.LockstepGangArgs {
	return &config.LockstepGangArgs{
		PermitTimeoutSeconds:   configv1.DefaultPermitTimeoutSeconds,
		BackoffSeconds:         configv1.DefaultBackoffSeconds,
		JobGroupTimeoutSeconds: configv1.DefaultJobGroupTimeoutSeconds,
	}
}

// Name returns the name of the plugin.
func (pl *Gang) Name() string { return Name }
