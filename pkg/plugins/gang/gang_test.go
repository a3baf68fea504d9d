package gang

import (
	"strings"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

func TestNewValidatesArgs(t *testing.T) {
	tests := []struct {
		name string
		args runtime.Object
		want string
	}{
		{name: "zero permit timeout", args: &config.LockstepGangArgs{PermitTimeoutSeconds: 0, BackoffSeconds: 1, JobGroupTimeoutSeconds: 1},
			want: "LockstepGangArgs.permitTimeoutSeconds: Invalid value: 0: must be greater than 0"},
		{name: "negative backoff", args: &config.LockstepGangArgs{PermitTimeoutSeconds: 1, BackoffSeconds: -1, JobGroupTimeoutSeconds: 1},
			want: "LockstepGangArgs.backoffSeconds: Invalid value: -1: must not be negative"},
		{name: "zero partial bind timeout", args: &config.LockstepGangArgs{PermitTimeoutSeconds: 1, BackoffSeconds: 1, JobGroupTimeoutSeconds: 1, ReservationTimeoutSeconds: 1},
			want: "LockstepGangArgs.partialBindTimeoutSeconds: Invalid value: 0: must be greater than 0"},
		{name: "args of another plugin", args: &v1.Pod{}, want: "want args of type LockstepGangArgs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(t.Context(), tc.args, nil, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if a, err := getArgs(nil); err != nil || a.PermitTimeoutSeconds != 60 || a.BackoffSeconds != 10 {
		t.Errorf("getArgs(nil) = %+v, %v; want the defaults", a, err)
	}
}

func TestPreEnqueue(t *testing.T) {
	tests := []struct {
		name     string
		groups   []runtime.Object
		pods     []*v1.Pod
		pod      *v1.Pod
		code     fwk.Code
		contains string
		event    string
	}{
		{name: "plain pod", pod: lt.Member("ns", "", 0).Obj()},
		{name: "group missing", pods: lt.Members("ns", "a", 2, nil), pod: lt.Member("ns", "a", 0).Obj(), code: fwk.UnschedulableAndUnresolvable,
			contains: `waiting for PodGroup "a" to be created`, event: "PodGroupNotFound"},
		{name: "too few pods", groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()}, pods: lt.Members("ns", "a", 2, nil), pod: lt.Member("ns", "a", 0).Obj(),
			code: fwk.UnschedulableAndUnresolvable, contains: "2 of 3 pods exist"},
		{name: "invalid parent", groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Parent("nope").Obj()}, pods: lt.Members("ns", "a", 1, nil), pod: lt.Member("ns", "a", 0).Obj(),
			code: fwk.UnschedulableAndUnresolvable, contains: `parent CompositePodGroup "nope" not found`},
		{name: "ready", groups: []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()}, pods: lt.Members("ns", "a", 2, nil), pod: lt.Member("ns", "a", 1).Obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, tc.groups, tc.pods, nil)
			s := env.plugin.PreEnqueue(env.Ctx, tc.pod)
			if s.Code() != tc.code || !strings.Contains(s.Message(), tc.contains) {
				t.Errorf("PreEnqueue = %v %q, want %v containing %q", s.Code(), s.Message(), tc.code, tc.contains)
			}
			if tc.event != "" {
				select {
				case e := <-env.Recorder.Events:
					if !strings.Contains(e, tc.event) {
						t.Errorf("event %q, want %s", e, tc.event)
					}
				default:
					t.Errorf("no %s event", tc.event)
				}
				env.plugin.PreEnqueue(env.Ctx, tc.pod)
				if len(env.Recorder.Events) != 0 {
					t.Error("second PreEnqueue recorded a second event")
				}
			}
		})
	}
}

func TestLess(t *testing.T) {
	older := lt.MakePodGroup().Namespace("ns").Name("older").Gang(1).Obj()
	newer := lt.MakePodGroup().Namespace("ns").Name("newer").Gang(1).Created(epoch.Add(time.Minute)).Obj()
	urgent := lt.MakePodGroup().Namespace("ns").Name("urgent").Gang(1).Created(epoch.Add(time.Hour)).Obj()
	pods := append(lt.Members("ns", "older", 2, nil), lt.Members("ns", "newer", 1, nil)...)
	pods = append(pods, lt.Member("ns", "urgent", 0).Priority(10).Obj())
	// A leader died between the binds of gang half: one member is bound, one is not.
	half := lt.MakePodGroup().Namespace("ns").Name("half").Gang(2).Created(epoch.Add(2 * time.Hour)).Obj()
	pods = append(pods, lt.Member("ns", "half", 0).Node("n1").Obj(), lt.Member("ns", "half", 1).Obj())
	env := newTestEnv(t, []runtime.Object{older, newer, urgent, half}, pods, nil)
	// The queue runs PreEnqueue before a pod enters it: that is when a member gets its key.
	byName := map[string]*v1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
		if p.Spec.NodeName != "" {
			continue
		}
		if s := env.plugin.PreEnqueue(env.Ctx, p); !s.IsSuccess() {
			t.Fatalf("PreEnqueue %s: %v", p.Name, s)
		}
	}
	entity := func(name string, queued time.Time) fwk.QueuedEntityInfo {
		p, ok := byName[name]
		if !ok {
			p = lt.GroupPod("ns", name, "").Obj()
		}
		pi, err := framework.NewPodInfo(p)
		if err != nil {
			t.Fatal(err)
		}
		return &framework.QueuedPodInfo{PodInfo: pi, QueueingParams: framework.QueueingParams{Timestamp: queued}}
	}
	tests := []struct {
		name string
		a, b fwk.QueuedEntityInfo
		want bool
	}{
		{name: "higher priority first", a: entity("urgent-0", epoch), b: entity("older-0", epoch), want: true},
		{name: "older root first, whatever the queue time", a: entity("older-0", epoch.Add(time.Hour)), b: entity("newer-0", epoch), want: true},
		{name: "newer root after", a: entity("newer-0", epoch), b: entity("older-1", epoch.Add(time.Hour)), want: false},
		{name: "half-bound root first, whatever its age", a: entity("half-1", epoch.Add(time.Hour)), b: entity("older-0", epoch), want: true},
		{name: "higher priority before a half-bound root", a: entity("half-1", epoch), b: entity("urgent-0", epoch), want: false},
		{name: "same root by queue time", a: entity("older-0", epoch), b: entity("older-1", epoch.Add(time.Second)), want: true},
		{name: "plain pod by queue time before a later root", a: entity("plain-0", epoch.Add(30*time.Second)), b: entity("newer-0", epoch), want: true},
		{name: "plain pods by queue time", a: entity("plain-1", epoch.Add(time.Second)), b: entity("plain-0", epoch), want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := env.plugin.Less(tc.a, tc.b); got != tc.want {
				t.Errorf("Less = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPreFilter(t *testing.T) {
	pods := lt.Members("ns", "a", 2, nil)
	env := newTestEnv(t, []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()}, pods, []*v1.Node{lt.MakeNode("n1", "1").Obj()})
	state := framework.NewCycleState()
	if _, s := env.plugin.PreFilter(env.Ctx, state, lt.Member("ns", "", 0).Obj(), nil); s.Code() != fwk.Skip {
		t.Errorf("plain pod: %v, want Skip", s.Code())
	}
	if _, s := env.plugin.PreFilter(env.Ctx, state, pods[0], nil); !s.IsSuccess() {
		t.Errorf("member: %v, want success", s)
	}
	// A failed attempt backs the gang off: members are turned away until it ends.
	env.plugin.PostFilter(env.Ctx, framework.NewCycleState(), pods[1], framework.NewDefaultNodeToStatus())
	state = framework.NewCycleState()
	_, s := env.plugin.PreFilter(env.Ctx, state, pods[0], nil)
	if s.Code() != fwk.Unschedulable || !strings.Contains(s.Message(), "backs off") {
		t.Errorf("during backoff: %v %q, want Unschedulable backing off", s.Code(), s.Message())
	}
	// PostFilter does not count its own refusal as a placement failure.
	if _, s := env.plugin.PostFilter(env.Ctx, state, pods[0], framework.NewDefaultNodeToStatus()); s.Message() != "" {
		t.Errorf("PostFilter after a PreFilter refusal said %q", s.Message())
	}
}

// waiter follows one pod waiting at Permit.
type waiter chan *fwk.Status

// startWaiting starts WaitOnPermit for a pod; call it once per pod, as the binding cycle does.
func startWaiting(env *testEnv, p *v1.Pod) waiter {
	w := make(waiter, 1)
	go func() { w <- env.Framework.WaitOnPermit(env.Ctx, p) }()
	return w
}

// outcome returns how the wait ended, or a Wait status if it has not within a short while.
func (w waiter) outcome() *fwk.Status {
	select {
	case s := <-w:
		return s
	case <-time.After(300 * time.Millisecond):
		return fwk.NewStatus(fwk.Wait, "still waiting")
	}
}

func reserveAndPermit(t *testing.T, env *testEnv, p *v1.Pod) *fwk.Status {
	t.Helper()
	state := framework.NewCycleState()
	if s := env.Framework.RunReservePluginsReserve(env.Ctx, state, p, "n1"); !s.IsSuccess() {
		t.Fatalf("Reserve: %v", s)
	}
	waits, s := env.Framework.RunPermitPlugins(env.Ctx, state, p, "n1")
	if s.IsWait() {
		env.Framework.AddWaitingPod(p, waits) // as the scheduler does right after Permit
	}
	return s
}

func TestPermitAllowsTheGangAtOnce(t *testing.T) {
	pods := lt.Members("ns", "a", 3, nil)
	env := newTestEnv(t, []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()}, pods, nil)
	env.Activated.Take()
	var waiters []waiter
	for _, p := range pods[:2] {
		if s := reserveAndPermit(t, env, p); s.Code() != fwk.Wait {
			t.Fatalf("%s: %v, want Wait", p.Name, s)
		}
		waiters = append(waiters, startWaiting(env, p))
	}
	if diff := cmp.Diff([]string{"ns/a-1", "ns/a-2"}, env.Activated.Take(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("the first wait activates the pending members (-want +got):\n%s", diff)
	}
	if s := waiters[0].outcome(); s.Code() != fwk.Wait {
		t.Fatalf("a-0 stopped waiting early: %v", s)
	}
	if s := reserveAndPermit(t, env, pods[2]); !s.IsSuccess() {
		t.Fatalf("last member: %v, want success", s)
	}
	for i, w := range waiters {
		if s := w.outcome(); !s.IsSuccess() {
			t.Errorf("%s: %v, want allowed", pods[i].Name, s)
		}
	}
}

func TestPostFilterRejectsWaitingMembers(t *testing.T) {
	pods := lt.Members("ns", "a", 3, nil)
	env := newTestEnv(t, []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()}, pods, []*v1.Node{lt.MakeNode("n1", "1").Obj()})
	var waiters []waiter
	for _, p := range pods[:2] {
		reserveAndPermit(t, env, p)
		waiters = append(waiters, startWaiting(env, p))
	}
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("n1", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	_, s := env.plugin.PostFilter(env.Ctx, framework.NewCycleState(), pods[2], statuses)
	want := "gang a did not fit; the Scheduled condition of PodGroup a says why (retried when the cluster changes)"
	if s.Code() != fwk.Unschedulable || s.Message() != want {
		t.Errorf("PostFilter = %v %q, want Unschedulable %q", s.Code(), s.Message(), want)
	}
	for i, w := range waiters {
		s := w.outcome()
		if s.Code() != fwk.Unschedulable || s.Message() != want {
			t.Errorf("%s: %v, want rejected", pods[i].Name, s)
		}
	}
}

func TestPermitTimeoutReleasesTheGang(t *testing.T) {
	pods := lt.Members("ns", "a", 3, nil)
	pg := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	one := int32(1)
	pg.Spec.ScheduleTimeoutSeconds = &one
	env := newTestEnv(t, []runtime.Object{pg}, pods, nil)
	for _, p := range pods[:2] {
		if s := reserveAndPermit(t, env, p); s.Code() != fwk.Wait {
			t.Fatalf("%v", s)
		}
	}
	// The model ends the wait of both at the first one's deadline, before the framework's
	// own timeout.
	done := make(chan *fwk.Status, 2)
	for _, p := range pods[:2] {
		go func(p *v1.Pod) { done <- env.Framework.WaitOnPermit(env.Ctx, p) }(p)
	}
	for range 2 {
		select {
		case s := <-done:
			if s.IsSuccess() {
				t.Errorf("a member was allowed")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("members still waiting 10s after a 1s timeout")
		}
	}
}

func TestQueueingHints(t *testing.T) {
	groups := []runtime.Object{lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Obj(), lt.MakePodGroup().Namespace("ns").Name("short").Gang(3).Obj()}
	pods := append(append(lt.Members("ns", "a", 2, nil), lt.Members("ns", "b", 2, nil)...), lt.Members("ns", "short", 1, nil)...)
	env := newTestEnv(t, groups, pods, nil)
	asUnstructured := func(obj runtime.Object, kind string) *unstructured.Unstructured {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		out := &unstructured.Unstructured{Object: u}
		out.SetKind(kind)
		return out
	}
	lowered := lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Obj()
	raised := lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj()
	// As the apiserver serves them: a spec change is a new generation, a status write is not.
	generation := func(n int64, obj *v1alpha1.PodGroup) *v1alpha1.PodGroup {
		obj = obj.DeepCopy()
		obj.Generation = n
		return obj
	}
	statusWritten := generation(2, lowered)
	statusWritten.Status.Conditions = []metav1.Condition{{Type: "Scheduled", Status: metav1.ConditionFalse}}
	tests := []struct {
		name   string
		fn     fwk.QueueingHintFn
		pod    *v1.Pod
		oldObj any
		newObj any
		want   fwk.QueueingHint
	}{
		{name: "pod of the same gang added", fn: env.plugin.isSchedulableAfterPodAdded, pod: lt.Member("ns", "a", 0).Obj(), newObj: lt.Member("ns", "a", 5).Obj(), want: fwk.Queue},
		{name: "pod of another gang added", fn: env.plugin.isSchedulableAfterPodAdded, pod: lt.Member("ns", "a", 0).Obj(), newObj: lt.Member("ns", "b", 5).Obj(), want: fwk.QueueSkip},
		{name: "plain pod added", fn: env.plugin.isSchedulableAfterPodAdded, pod: lt.Member("ns", "a", 0).Obj(), newObj: lt.Member("ns", "", 5).Obj(), want: fwk.QueueSkip},
		{name: "capacity for a complete gang", fn: env.plugin.isSchedulableAfterCapacityChange, pod: lt.Member("ns", "a", 0).Obj(), want: fwk.Queue},
		{name: "capacity for a gang short of pods", fn: env.plugin.isSchedulableAfterCapacityChange, pod: lt.Member("ns", "short", 0).Obj(), want: fwk.QueueSkip},
		{name: "a pod leaves a node, a complete gang that has not failed", fn: env.plugin.isSchedulableAfterPodDeleted, pod: lt.Member("ns", "a", 0).Obj(),
			oldObj: lt.MakePod().Namespace("other").Name("gone").UID("gone").Node("n1").Obj(), want: fwk.Queue},
		{name: "a pod leaves a node, a gang short of pods", fn: env.plugin.isSchedulableAfterPodDeleted, pod: lt.Member("ns", "short", 0).Obj(),
			oldObj: lt.MakePod().Namespace("other").Name("gone").UID("gone").Node("n1").Obj(), want: fwk.QueueSkip},
		{name: "its group created", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(), newObj: asUnstructured(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), "PodGroup"), want: fwk.Queue},
		{name: "another group created", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(), newObj: asUnstructured(lt.MakePodGroup().Namespace("ns").Name("b").Gang(2).Obj(), "PodGroup"), want: fwk.QueueSkip},
		{name: "minCount lowered", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(),
			oldObj: asUnstructured(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), "PodGroup"), newObj: asUnstructured(lowered, "PodGroup"), want: fwk.Queue},
		{name: "minCount raised", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(),
			oldObj: asUnstructured(lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj(), "PodGroup"), newObj: asUnstructured(raised, "PodGroup"), want: fwk.QueueSkip},
		{name: "minCount lowered, a new generation", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(),
			oldObj: asUnstructured(generation(1, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()), "PodGroup"), newObj: asUnstructured(generation(2, lowered), "PodGroup"), want: fwk.Queue},
		{name: "its status written (the same generation)", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(),
			oldObj: asUnstructured(generation(2, lowered), "PodGroup"), newObj: asUnstructured(statusWritten, "PodGroup"), want: fwk.QueueSkip},
		{name: "a typed group's minCount lowered", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(),
			oldObj: generation(1, lt.MakePodGroup().Namespace("ns").Name("a").Gang(2).Obj()), newObj: generation(2, lowered), want: fwk.Queue},
		{name: "missing parent created", fn: env.plugin.isSchedulableAfterGroupChange, pod: lt.Member("ns", "a", 0).Obj(),
			newObj: asUnstructured(lt.MakeCompositePodGroup().Namespace("ns").Name("nope").Gang(1).Obj(), "CompositePodGroup"), want: fwk.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(klogDiscard(), tc.pod, tc.oldObj, tc.newObj)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
	events, err := env.plugin.EventsToRegister(env.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Event.Resource == podGroupsResource && e.Event.ActionType&fwk.Add == 0 {
			t.Error("PodGroup add not registered")
		}
	}
	_ = v1alpha1.GroupName
}

// The summary of why a pod fit nowhere counts the nodes with a status of their own, and the
// others by the one status they share (a pod refused at PreFilter), as reading each node does.
func TestDescribeCountsEveryNode(t *testing.T) {
	nodes := []*v1.Node{lt.MakeNode("n1", "1").Obj(), lt.MakeNode("n2", "1").Obj(), lt.MakeNode("n3", "1").Obj()}
	env := newTestEnv(t, nil, nil, nodes)
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("n1", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gang g did not fit"))
	want := "0/3 nodes are available: 2 gang g did not fit, 1 Insufficient cpu"
	if got := env.plugin.describe(statuses); got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if got := env.plugin.describe(perNode{statuses}); got != want {
		t.Errorf("describe, node by node = %q, want %q", got, want)
	}
}

// perNode hides all but NodeToStatusReader's methods.
type perNode struct{ fwk.NodeToStatusReader }
