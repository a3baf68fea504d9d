// Package scout implements LockstepScout: it keeps a gang's members out of the scheduling
// queue while one of them, the gang's scout, tries the whole gang for them, and while the
// gang backs off after a failed try (pkg/podgroup, scout.go and retries.go).
//
// Those are the holds of a gang that waits: in a full cluster nearly every pending member is
// held so. They end only when the group model lets the members in (it activates the scout
// when the backoff ends or news may let the gang fit, and every member once the scout's plan
// holds room for them), never by an event the scheduling queue sees. So the plugin registers
// no cluster event, and the queue passes over the pods it holds at each event without asking
// anything: held by LockstepGang, whose events a pending member's other holds need (a missing
// group, too few pods), each of them was asked about every pod deletion, every pod created
// and every group change — with 10,000 gangs of 8 waiting, 70,000 questions per event, about
// half of the scheduler's CPU (docs/benchmarks.md). The queue's periodic flush of pods held
// for five minutes remains a safety net, as for any held pod.
//
// LockstepGang decides every hold (podgroup.Gate.Admit) and leaves these two to this plugin
// in a profile that enables it; without it, LockstepGang holds them itself.
package scout

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Name is the name of the plugin used in the plugin registry and configurations.
const Name = "LockstepScout"

// Turns is what the plugin asks of the group model (podgroup.Gate).
type Turns interface {
	// HoldTurns registers a profile that runs the plugin: LockstepGang leaves it the holds
	// of members waiting their turn.
	HoldTurns(profile string)
	// AwaitsTurn reports whether a member waits for its gang's scout or for its gang's
	// backoff to end, with the verdict that says so; no side effects.
	AwaitsTurn(pod *v1.Pod) (podgroup.Verdict, bool)
}

// Scout is the LockstepScout plugin.
type Scout struct {
	turns Turns
}

var (
	_ fwk.PreEnqueuePlugin  = &Scout{}
	_ fwk.EnqueueExtensions = &Scout{}
)

// New builds the plugin on the group model shared by every profile. It takes no args.
func New(_ context.Context, obj runtime.Object, handle fwk.Handle, turns Turns) (fwk.Plugin, error) {
	if obj != nil {
		return nil, fmt.Errorf("%s takes no args, got %T", Name, obj)
	}
	turns.HoldTurns(handle.ProfileName())
	return &Scout{turns: turns}, nil
}

// Name returns the name of the plugin.
func (pl *Scout) Name() string { return Name }

// PreEnqueue holds a member whose gang's scout tries the gang for it, or whose gang backs
// off after a failed try.
func (pl *Scout) PreEnqueue(ctx context.Context, pod *v1.Pod) *fwk.Status {
	v, held := pl.turns.AwaitsTurn(pod)
	if !held {
		return nil
	}
	klog.FromContext(ctx).V(4).Info("Member held", "pod", klog.KObj(pod), "group", v.Group, "root", v.Root, "reason", v.Code, "why", v.Message)
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, v.Message)
}

// EventsToRegister registers no event: the group model activates the members this plugin
// holds when their turn comes (see the package's doc).
func (pl *Scout) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{}, nil
}
