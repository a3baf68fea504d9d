// Package gang implements LockstepGang, the all-or-nothing plugin: a PodGroup's pods (and,
// through CompositePodGroups, a whole tree of groups) bind together or not at all.
//
// It runs in the classic per-pod scheduling cycle, in the coscheduling style upstream's
// GangScheduling uses when its pod-group cycle is off: PreEnqueue holds members until their
// tree can be ready, QueueSort pops members of one tree together, Reserve/Permit hold each
// placed member until the tree is ready, and PostFilter/Unreserve release every
// reservation of a tree that cannot complete. The plugin translates between the framework and
// the group model (pkg/podgroup), which decides, keeps the attempts' state and timers, and
// allows or rejects waiting members itself.
package gang

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
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

// Gate is what the plugin asks of the group model before and while scheduling a member
// (podgroup.Gate).
type Gate interface {
	// AddProfile registers the plugin's profile and its Job group timeout.
	AddProfile(p podgroup.Profile)
	Admit(logger klog.Logger, pod *v1.Pod) podgroup.Verdict
	// TurnsHeld reports whether LockstepScout holds the profile's members that wait their
	// turn (podgroup.VerdictCode.AwaitsTurn).
	TurnsHeld(profile string) bool
	// Check answers PreFilter; nodes is the number of nodes in the cycle's snapshot.
	Check(logger klog.Logger, pod *v1.Pod, nodes int) podgroup.Verdict
	// Queueable answers a queueing hint on room news: whether the member may proceed.
	Queueable(pod *v1.Pod) bool
	// RoomHelps answers a hint on a pod that left a node: false if that node cannot take a
	// member of the pod's tree, which failed for want of room.
	RoomHelps(pod, left *v1.Pod) bool
	SortKey(pod *v1.Pod) (podgroup.SortKey, bool)
	GroupOf(pod *v1.Pod) (podgroup.Key, bool)
	Related(pod *v1.Pod, k podgroup.Key) bool
}

// Permits is what the plugin reports to the group model of a member's attempt
// (podgroup.Permits), which decides what follows.
type Permits interface {
	Reserve(logger klog.Logger, pod *v1.Pod, node string)
	Permit(logger klog.Logger, pod *v1.Pod, p podgroup.Policy) podgroup.PermitDecision
	Fail(logger klog.Logger, pod *v1.Pod, reason string, p podgroup.Policy) string
	Unreserve(logger klog.Logger, pod *v1.Pod)
}

// Gang is the LockstepGang plugin.
type Gang struct {
	handle  fwk.Handle
	groups  Gate
	permits Permits
	policy  podgroup.Policy
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

// New builds the plugin from its (defaulted, internal) args, on the group model shared by
// every profile (pkg/scheduler builds it once per scheduler): its gate and its permits.
func New(_ context.Context, obj runtime.Object, handle fwk.Handle, groups Gate, permits Permits) (fwk.Plugin, error) {
	args, err := getArgs(obj)
	if err != nil {
		return nil, err
	}
	if err := validation.ValidateLockstepGangArgs(field.NewPath(Name+"Args"), args); err != nil {
		return nil, err
	}
	groups.AddProfile(podgroup.Profile{Name: handle.ProfileName(), JobGroupTimeout: time.Duration(args.JobGroupTimeoutSeconds) * time.Second,
		PartialBindTimeout: time.Duration(args.PartialBindTimeoutSeconds) * time.Second})
	return &Gang{
		handle:  handle,
		groups:  groups,
		permits: permits,
		policy: podgroup.Policy{
			PermitTimeout:      time.Duration(args.PermitTimeoutSeconds) * time.Second,
			Backoff:            time.Duration(args.BackoffSeconds) * time.Second,
			ReserveAfter:       time.Duration(args.ReserveAfterSeconds) * time.Second,
			ReservationTimeout: time.Duration(args.ReservationTimeoutSeconds) * time.Second,
		},
	}, nil
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
		PermitTimeoutSeconds:      configv1.DefaultPermitTimeoutSeconds,
		BackoffSeconds:            configv1.DefaultBackoffSeconds,
		JobGroupTimeoutSeconds:    configv1.DefaultJobGroupTimeoutSeconds,
		ReserveAfterSeconds:       configv1.DefaultReserveAfterSeconds,
		ReservationTimeoutSeconds: configv1.DefaultReservationTimeoutSeconds,
		PartialBindTimeoutSeconds: configv1.DefaultPartialBindTimeoutSeconds,
	}
}

// Name returns the name of the plugin.
func (pl *Gang) Name() string { return Name }
