package scout

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/plugins/gang"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// plugins are a profile's LockstepGang and, if it runs it, LockstepScout.
type plugins struct {
	env   *podgrouptest.Env
	gang  fwk.PreEnqueuePlugin
	scout fwk.PreEnqueuePlugin
}

func newPlugins(t *testing.T, withScout bool, groups []runtime.Object, pods []*v1.Pod) *plugins {
	t.Helper()
	ps := &plugins{}
	list := []podgrouptest.Plugin{{
		Name: gang.Name,
		Factory: func(ctx context.Context, fh fwk.Handle, c *podgroup.Components) (fwk.Plugin, error) {
			pl, err := gang.New(ctx, nil, fh, c.Model.Gate(), c.Model.Permits())
			if err == nil {
				ps.gang = pl.(fwk.PreEnqueuePlugin)
			}
			return pl, err
		},
		Points: []string{"QueueSort", "PreFilter", "PostFilter", "Reserve", "Permit"},
	}}
	if withScout {
		list = append(list, podgrouptest.Plugin{
			Name: Name,
			Factory: func(ctx context.Context, fh fwk.Handle, c *podgroup.Components) (fwk.Plugin, error) {
				pl, err := New(ctx, nil, fh, c.Model.Gate())
				if err == nil {
					ps.scout = pl.(fwk.PreEnqueuePlugin)
				}
				return pl, err
			},
			Points: []string{"PreEnqueue"},
		})
	}
	ps.env = podgrouptest.NewEnv(t, groups, pods, nil, podgrouptest.Options{}, list...)
	return ps
}

// preEnqueue runs the profile's PreEnqueue plugins in order, as the scheduling queue does,
// and returns the one that held the pod ("" for none) and its status.
func (ps *plugins) preEnqueue(pod *v1.Pod) (string, *fwk.Status) {
	for _, pl := range []fwk.PreEnqueuePlugin{ps.gang, ps.scout} {
		if pl == nil {
			continue
		}
		if s := pl.PreEnqueue(ps.env.Ctx, pod); !s.IsSuccess() {
			return pl.Name(), s
		}
	}
	return "", nil
}

// A member waiting its turn (another member scouts its gang) is held by LockstepScout where
// the profile runs it, by LockstepGang otherwise; LockstepGang keeps every other hold.
func TestWhoHoldsAMember(t *testing.T) {
	gangOf2 := []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()}
	gangOf3 := []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()}
	tests := []struct {
		name      string
		withScout bool
		groups    []runtime.Object
		pods      []*v1.Pod
		// first is let in first (the gang's scout), then pod.
		first    *v1.Pod
		pod      *v1.Pod
		holder   string
		contains string
	}{
		{name: "a pod in no group", withScout: true, pod: lt.Member("ns", "", 0).Obj()},
		{name: "the scout", withScout: true, groups: gangOf2, pods: lt.Members("ns", "a", 2, nil), pod: lt.Member("ns", "a", 0).Obj()},
		{name: "a member waiting for the scout", withScout: true, groups: gangOf2, pods: lt.Members("ns", "a", 2, nil),
			first: lt.Member("ns", "a", 0).Obj(), pod: lt.Member("ns", "a", 1).Obj(), holder: Name, contains: "is tried by member a-0 first"},
		{name: "a member waiting for the scout, no LockstepScout", groups: gangOf2, pods: lt.Members("ns", "a", 2, nil),
			first: lt.Member("ns", "a", 0).Obj(), pod: lt.Member("ns", "a", 1).Obj(), holder: gang.Name, contains: "is tried by member a-0 first"},
		{name: "too few pods", withScout: true, groups: gangOf3, pods: lt.Members("ns", "a", 2, nil), pod: lt.Member("ns", "a", 0).Obj(),
			holder: gang.Name, contains: "2 of 3 pods exist"},
		{name: "a missing group", withScout: true, pods: lt.Members("ns", "a", 2, nil), pod: lt.Member("ns", "a", 0).Obj(),
			holder: gang.Name, contains: `waiting for PodGroup "a" to be created`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := newPlugins(t, tc.withScout, tc.groups, tc.pods)
			if tc.first != nil {
				if holder, s := ps.preEnqueue(tc.first); holder != "" {
					t.Fatalf("the first member held by %s: %v", holder, s)
				}
			}
			holder, s := ps.preEnqueue(tc.pod)
			if holder != tc.holder || !strings.Contains(s.Message(), tc.contains) {
				t.Errorf("held by %q (%v), want %q with a message containing %q", holder, s, tc.holder, tc.contains)
			}
			if holder != "" && s.Code() != fwk.UnschedulableAndUnresolvable {
				t.Errorf("held with %v, want UnschedulableAndUnresolvable", s.Code())
			}
		})
	}
}

// The members LockstepScout holds are let in by the group model alone: the plugin registers
// no event, so the scheduling queue asks nothing about them at any cluster event.
func TestNoEventWakesAMemberWaitingItsTurn(t *testing.T) {
	ps := newPlugins(t, true, nil, nil)
	events, err := ps.scout.(fwk.EnqueueExtensions).EventsToRegister(context.Background())
	if err != nil || events == nil || len(events) != 0 {
		t.Errorf("EventsToRegister = %v, %v; want an empty list (nil would mean every event)", events, err)
	}
}

func TestNewTakesNoArgs(t *testing.T) {
	if _, err := New(context.Background(), &runtime.Unknown{}, nil, nil); err == nil {
		t.Error("New accepted args")
	}
}
