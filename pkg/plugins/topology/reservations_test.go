package topology

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
	"github.com/lockstep-sched/lockstep/pkg/reservation"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// reservationEnv runs the plugin on labeledNodes("4") (4 racks of 2 nodes of 4 cpu) with the
// running pods, and pending gangs of 2 pods × 4 cpu that require a rack.
func reservationEnv(t *testing.T, running []*v1.Pod, gangs ...string) (*testEnv, map[string]*podgroup.GroupView) {
	t.Helper()
	var groups []runtime.Object
	pods := append([]*v1.Pod(nil), running...)
	first := map[string]*v1.Pod{}
	for _, g := range gangs {
		groups = append(groups, lt.MakePodGroup().Namespace("ns").Name(g).Gang(2).Topology(lt.Required(rackKey)).Obj())
		members := lt.Members("ns", g, 2, lt.CPU("4"))
		first[g] = members[0]
		pods = append(pods, members...)
	}
	env := newTestEnvOpts(t, groups, pods, labeledNodes("4"), podgrouptest.Options{Filters: true})
	trees := map[string]*podgroup.GroupView{}
	for g, p := range first {
		tree, ok := env.Components.Model.Gate().Tree(p)
		if !ok {
			t.Fatalf("no tree for %s", g)
		}
		trees[g] = tree
	}
	return env, trees
}

func starving(root string, since time.Time) podgroup.Preemptor {
	return podgroup.Preemptor{Root: podgroup.PodGroupKey("ns", root), Failed: true, WaitingSince: since,
		ReserveAfter: time.Minute, ReservationTimeout: time.Hour}
}

// A starving gang gets the rack likely free soonest — the fewest pods in the way, pods of
// lasting controllers last — and one reservation is held per level and priority, for the
// gang that has waited longest; a gang that could not fit even then holds nobody back.
func TestReserveTheRackFreeSoonestForTheLongestWaiter(t *testing.T) {
	var pods []*v1.Pod
	// Every rack full of pods of the gangs' own priority; z1-r1 has the fewest (2 × 4 cpu),
	// z0-r1 as few but of a ReplicaSet, which may never end.
	pods = append(pods, runningRack("z0-r0", 0)...)
	pods = append(pods, runningRack("z1-r0", 0)...)
	pods = append(pods, running("z1-r1-a", "z1-r1-h0", "4", 0, ""), running("z1-r1-b", "z1-r1-h1", "4", 0, ""))
	for _, n := range []string{"z0-r1-h0", "z0-r1-h1"} {
		web := st.MakePod().Namespace("ns").Name("web-" + n).UID("web-" + n).Node(n).SchedulerName(lt.SchedulerName).Req(lt.CPU("4"))
		pods = append(pods, lt.ControlledBy(web, "apps/v1", "ReplicaSet", "web", "web").Obj())
	}
	env, trees := reservationEnv(t, pods, "older", "younger")
	now := time.Now()
	infos := env.NodeInfos(t)
	if msg := env.plugin.reserve(env.Ctx, trees["younger"], starving("younger", now.Add(-5*time.Minute)), infos); msg == "" {
		t.Fatal("the only starving gang got no reservation")
	}
	// The older gang starts starving: it takes over, at the same level.
	msg := env.plugin.reserve(env.Ctx, trees["older"], starving("older", now.Add(-10*time.Minute)), infos)
	if !strings.Contains(msg, "rack z1-r1 held since") || !strings.Contains(msg, "waiting for 2 pods of priority up to 0 there to end") {
		t.Fatalf("reservation %q, want rack z1-r1, its 2 pods in the way", msg)
	}
	if env.plans.reservations.Get(podgroup.PodGroupKey("ns", "younger")) != nil {
		t.Error("the younger gang keeps a reservation at the level the older one holds")
	}
	if msg := env.plugin.reserve(env.Ctx, trees["younger"], starving("younger", now.Add(-5*time.Minute)), infos); msg != "" {
		t.Errorf("the younger gang reserved %q while the older holds the rack level", msg)
	}
	if got := len(env.plans.reservations.All()); got != 1 {
		t.Errorf("%d reservations, want 1 per level and priority", got)
	}
	// Not starving long enough: nothing.
	if msg := env.plugin.reserve(env.Ctx, trees["younger"], starving("younger", now.Add(-30*time.Second)), infos); msg != "" {
		t.Errorf("reserved %q for a gang that waited less than reserveAfter", msg)
	}
}

// A starving gang behind one whose turn comes first runs no dry run of its own: its verdict
// would decide nothing yet. It keeps the one it had (none: it waits in the line unchecked),
// and runs one once nobody goes first: then it takes its turn. One that has waited longer
// than the reservation's gang still runs its own, and takes the level over.
func TestStarvingGangBehindAReservationRunsNoDryRun(t *testing.T) {
	pods := append(runningRack("z0-r0", 0), runningRack("z0-r1", 0)...)
	pods = append(pods, runningRack("z1-r0", 0)...)
	pods = append(pods, runningRack("z1-r1", 0)...)
	env, trees := reservationEnv(t, pods, "oldest", "older", "younger", "youngest")
	rs := env.plans.reservations
	now := time.Now()
	rs.SetClock(func() time.Time { return now })
	infos := env.NodeInfos(t)
	gangs := map[string]podgroup.Preemptor{}
	for i, g := range []string{"oldest", "older", "younger", "youngest"} {
		gangs[g] = starving(g, now.Add(-time.Duration(40-10*i)*time.Minute))
	}
	reserve := func(g string) string { return env.plugin.reserve(env.Ctx, trees[g], gangs[g], infos) }
	checked := func(g string) time.Time {
		w, _ := rs.WaiterOf(podgroup.PodGroupKey("ns", g))
		return w.Checked
	}
	// younger, alone, is checked and holds the rack level; older has waited longer: it runs
	// its own dry run and takes over.
	if msg := reserve("younger"); msg == "" {
		t.Fatal("the only starving gang got no reservation")
	}
	checkedYounger := now
	now = now.Add(time.Second)
	if msg := reserve("older"); msg == "" {
		t.Fatal("a gang that waited longer than the reservation's did not take it over")
	}
	// Past fitRecheck, younger and youngest fail behind older's reservation: no dry run.
	now = now.Add(fitRecheck + time.Second)
	for _, g := range []string{"younger", "youngest"} {
		if msg := reserve(g); msg != "" {
			t.Fatalf("%s reserved %q behind older's reservation", g, msg)
		}
	}
	if got := checked("younger"); !got.Equal(checkedYounger) {
		t.Errorf("younger's fit checked at %v behind older's reservation, want its verdict of %v kept", got, checkedYounger)
	}
	if got := checked("youngest"); !got.IsZero() {
		t.Errorf("youngest's fit checked at %v behind older's reservation, want no dry run", got)
	}
	// The oldest has waited longer than older: it is checked and takes over.
	if msg := reserve("oldest"); msg == "" || checked("oldest") != now {
		t.Fatalf("the oldest gang reserved %q, checked at %v; want its dry run now, and the level", msg, checked("oldest"))
	}
	// The oldest and older are gone: nobody goes first; younger runs a dry run and takes its
	// turn.
	rs.TreeGone(podgroup.PodGroupKey("ns", "oldest"))
	rs.TreeGone(podgroup.PodGroupKey("ns", "older"))
	now = now.Add(time.Second)
	if msg := reserve("younger"); msg == "" || checked("younger") != now {
		t.Errorf("younger reserved %q, checked at %v, once nobody went first; want its dry run now, and the level", msg, checked("younger"))
	}
}

// A gang that could not fit even if every pod of its priority or below ended holds nobody
// back: the gang behind it gets the reservation.
func TestUnfittableGangHoldsNothingBack(t *testing.T) {
	pods := append(runningRack("z0-r0", 0), runningRack("z0-r1", 0)...)
	pods = append(pods, runningRack("z1-r0", 0)...)
	pods = append(pods, runningRack("z1-r1", 0)...)
	env, trees := reservationEnv(t, pods, "fits")
	huge := lt.Members("ns", "huge", 3, lt.CPU("4")) // 12 cpu: no rack of 8 holds it
	env.Components.Model.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("huge").Gang(3).Topology(lt.Required(rackKey)).Obj())
	for _, p := range huge {
		env.Components.Model.OnPod(nil, p)
	}
	hugeTree, ok := env.Components.Model.Gate().Tree(huge[0])
	if !ok {
		t.Fatal("no tree for huge")
	}
	now := time.Now()
	infos := env.NodeInfos(t)
	if msg := env.plugin.reserve(env.Ctx, hugeTree, starving("huge", now.Add(-time.Hour)), infos); msg != "" {
		t.Errorf("reserved %q for a gang no rack can hold", msg)
	}
	if msg := env.plugin.reserve(env.Ctx, trees["fits"], starving("fits", now.Add(-10*time.Minute)), infos); msg == "" {
		t.Error("the gang behind an unfittable one got no reservation")
	}
}

// The reservation holds: a plain pod of the same priority is refused the reserved room, one
// that fits beside the plan is placed (backfill), one of higher priority is not held back,
// and other gangs' plans do without the room.
func TestReservationHoldsAgainstOthers(t *testing.T) {
	// z1-r1 is free but for one 2-cpu pod on each node; the other racks are full.
	var pods []*v1.Pod
	for _, r := range []string{"z0-r0", "z0-r1", "z1-r0"} {
		pods = append(pods, runningRack(r, 0)...)
	}
	pods = append(pods, running("p0", "z1-r1-h0", "2", 0, ""), running("p1", "z1-r1-h1", "2", 0, ""))
	env, trees := reservationEnv(t, pods, "big", "small")
	infos := env.NodeInfos(t)
	if msg := env.plugin.reserve(env.Ctx, trees["big"], starving("big", time.Now().Add(-time.Hour)), infos); !strings.Contains(msg, "rack z1-r1") {
		t.Fatalf("reservation %q, want rack z1-r1", msg)
	}
	filter := func(p *v1.Pod) *fwk.Status {
		state := framework.NewCycleState()
		if _, s := env.plugin.PreFilter(env.Ctx, state, p, infos); !s.IsSuccess() && !s.IsSkip() {
			return s
		}
		for _, ni := range infos {
			if ni.Node().Name == "z1-r1-h0" {
				return env.plugin.Filter(env.Ctx, state, p, ni)
			}
		}
		return nil
	}
	// z1-r1-h0 has 2 cpu free; big needs 4 there, p0's 2 of them once p0 ends.
	if s := filter(lt.GroupPod("ns", "plain", "").Req(lt.CPU("2")).Obj()); s.IsSuccess() {
		t.Error("a pod of equal priority took room reserved for big")
	}
	if s := filter(lt.GroupPod("ns", "urgent", "").Req(lt.CPU("2")).Priority(100).Obj()); !s.IsSuccess() {
		t.Errorf("a pod of higher priority was held back: %v", s)
	}
	// Another gang's plan does without the reserved room: it has nowhere to go.
	if plan, _ := env.plugin.planTree(env.Ctx, trees["small"], infos, nil); plan != nil {
		t.Errorf("small planned on %v, in room reserved for big", plan.Pods)
	}
	// The reserved gang's own plan uses it, once the room is free.
	if r := env.plans.reservations.Get(podgroup.PodGroupKey("ns", "big")); r == nil || len(r.Blockers) != 2 {
		t.Fatalf("reservation %+v, want p0 and p1 in the way", r)
	}
}

// A reservation lasts reservationTimeout at most: then the gang waits its turn again, from
// the back of the line, and the gang behind it gets the level.
func TestReservationTimesOutAndRequeues(t *testing.T) {
	pods := append(runningRack("z0-r0", 0), runningRack("z0-r1", 0)...)
	pods = append(pods, runningRack("z1-r0", 0)...)
	pods = append(pods, runningRack("z1-r1", 0)...)
	env, trees := reservationEnv(t, pods, "a", "b")
	now := time.Now()
	env.plans.reservations.SetClock(func() time.Time { return now })
	infos := env.NodeInfos(t)
	a, b := starving("a", now.Add(-20*time.Minute)), starving("b", now.Add(-10*time.Minute))
	a.ReservationTimeout = 5 * time.Minute
	if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg == "" {
		t.Fatal("the gang waiting longest got no reservation")
	}
	if msg := env.plugin.reserve(env.Ctx, trees["b"], b, infos); msg != "" {
		t.Fatalf("b reserved %q while a holds the level", msg)
	}
	// Both keep failing (and asking) every minute; then a has held the rack level 5 minutes.
	for i := 0; i < 4; i++ {
		now = now.Add(time.Minute)
		if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg == "" {
			t.Fatalf("a lost its reservation after %d minutes", i+1)
		}
		env.plugin.reserve(env.Ctx, trees["b"], b, infos)
	}
	now = now.Add(time.Minute + time.Second)
	if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg != "" {
		t.Errorf("a still reserves %q after its reservation timed out", msg)
	}
	if msg := env.plugin.reserve(env.Ctx, trees["b"], b, infos); msg == "" {
		t.Error("b did not get the level a's timed-out reservation left")
	}
	if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg != "" {
		t.Errorf("a reserved %q again at once, ahead of b", msg)
	}
}

// A reservation that timed out does not come back at the gang's next failure, even when no
// other gang waits: the gang waits reserveAfter again, from the timeout, before a domain is
// held for it again.
func TestTimedOutReservationDoesNotComeBackAtOnce(t *testing.T) {
	pods := append(runningRack("z0-r0", 0), runningRack("z0-r1", 0)...)
	pods = append(pods, runningRack("z1-r0", 0)...)
	pods = append(pods, runningRack("z1-r1", 0)...)
	env, trees := reservationEnv(t, pods, "a")
	now := time.Now()
	env.plans.reservations.SetClock(func() time.Time { return now })
	infos := env.NodeInfos(t)
	a := starving("a", now.Add(-20*time.Minute))
	a.ReservationTimeout = 5 * time.Minute
	if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg == "" {
		t.Fatal("the starving gang got no reservation")
	}
	for i := 0; i < 5; i++ { // it fails and asks every minute
		now = now.Add(time.Minute)
		env.plugin.reserve(env.Ctx, trees["a"], a, infos)
	}
	now = now.Add(time.Second)
	if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg != "" {
		t.Fatalf("the timed-out reservation came back at once: %q", msg)
	}
	now = now.Add(a.ReserveAfter / 2)
	if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg != "" {
		t.Fatalf("held again %s after the timeout, before reserveAfter (%s): %q", a.ReserveAfter/2, a.ReserveAfter, msg)
	}
	now = now.Add(a.ReserveAfter)
	if msg := env.plugin.reserve(env.Ctx, trees["a"], a, infos); msg == "" {
		t.Error("no reservation reserveAfter after the timeout")
	}
}

// A member narrowed to one node by its group's domain (a replacement of a host-required gang),
// not by a plan, still meets the reservations that hold room against it.
func TestMemberNarrowedToOneHostMeetsReservations(t *testing.T) {
	// Gang g is scheduled on z1-r1-h0 (host-required); its replacement needs 2 cpu there.
	scheduled := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Topology(lt.Required(hostKey)).
		Condition("True", "Scheduled").Obj()
	pods := []*v1.Pod{running("g-0", "z1-r1-h0", "1", 0, "g"), running("p0", "z1-r1-h0", "1", 0, "")}
	replacement := lt.Member("ns", "g", 1).Req(lt.CPU("2")).Obj()
	pods = append(pods, replacement)
	env := newTestEnvOpts(t, []runtime.Object{scheduled}, pods, labeledNodes("4"), podgrouptest.Options{Filters: true})
	infos := env.NodeInfos(t)
	// A starving gang holds 3 cpu of z1-r1-h0 (2 of them free now, p0's once it ends).
	env.plans.reservations.Store(&reservation.Reservation{Root: podgroup.PodGroupKey("ns", "big"), Domain: "rack z1-r1", Level: 2,
		Need: map[string]capacity.Resources{"z1-r1-h0": {MilliCPU: 3000, Pods: 1}}, Blockers: map[types.UID]string{"p0": "z1-r1-h0"},
		Since: time.Now(), Deadline: time.Now().Add(time.Hour), Expires: time.Now().Add(time.Hour)})
	state := framework.NewCycleState()
	res, s := env.plugin.PreFilter(env.Ctx, state, replacement, infos)
	if !s.IsSuccess() || res == nil || res.NodeNames.Len() != 1 || !res.NodeNames.Has("z1-r1-h0") {
		t.Fatalf("PreFilter = %v %v, want the replacement narrowed to its gang's host", res, s)
	}
	for _, ni := range infos {
		if ni.Node().Name != "z1-r1-h0" {
			continue
		}
		if st := env.plugin.Filter(env.Ctx, state, replacement, ni); st.IsSuccess() {
			t.Error("the replacement took room reserved for another gang")
		}
	}
}

// reservationLife is gang "big" (2 pods × 4 cpu, priority 10, rack-required) on
// labeledNodes("4"), every rack full of pods of its priority but z1-r1, where the pods in
// the way are blockers, and gang "older" (as big) to take the rack level from it. Its steps
// are what happens to the gang as the scheduler and the cluster see it, through the calls
// the plugins make: a failed attempt (the gang's PostFilter, then this plugin's), pods in
// the way leaving and gone, the gang placed and allowed at Permit, its group deleted.
type reservationLife struct {
	t       *testing.T
	env     *testEnv
	members []*v1.Pod
	group   *v1alpha1.PodGroup
	older   *podgroup.GroupView
	now     time.Time
	pol     podgroup.Policy
}

func newReservationLife(t *testing.T, blockers []*v1.Pod) *reservationLife {
	t.Helper()
	var pods []*v1.Pod
	for _, r := range []string{"z0-r0", "z0-r1", "z1-r0"} {
		pods = append(pods, runningRack(r, 10)...)
	}
	pods = append(pods, blockers...)
	l := &reservationLife{t: t, group: lt.MakePodGroup().Namespace("ns").Name("big").Gang(2).Topology(lt.Required(rackKey)).Obj(),
		pol: podgroup.Policy{PermitTimeout: time.Minute, Backoff: 10 * time.Second, ReserveAfter: time.Minute, ReservationTimeout: time.Hour}}
	for i := range 2 {
		l.members = append(l.members, lt.Member("ns", "big", i).Req(lt.CPU("4")).Priority(10).Obj())
	}
	older := lt.Members("ns", "older", 2, lt.CPU("4"))
	for _, p := range older {
		p.Spec.Priority = ptr.To[int32](10)
	}
	groups := []runtime.Object{l.group, lt.MakePodGroup().Namespace("ns").Name("older").Gang(2).Topology(lt.Required(rackKey)).Obj()}
	l.env = newTestEnvOpts(t, groups, append(append(pods, l.members...), older...), labeledNodes("4"), podgrouptest.Options{Filters: true})
	var ok bool
	if l.older, ok = l.env.Components.Model.Gate().Tree(older[0]); !ok {
		t.Fatal("no tree for older")
	}
	// The store's clock starts past reserveAfter of the gang's first failure (the model's
	// clock is the wall clock).
	l.now = time.Now().Add(2 * l.pol.ReserveAfter)
	l.env.plans.reservations.SetClock(func() time.Time { return l.now })
	return l
}

func (l *reservationLife) root() podgroup.Key { return podgroup.PodGroupKey("ns", "big") }

// fail is an attempt of the gang that failed: the gang's PostFilter tells the model, then
// this plugin's decides preemption or a reservation.
func (l *reservationLife) fail() {
	l.t.Helper()
	l.now = l.now.Add(10 * time.Second)
	l.env.Components.Model.Permits().Fail(klog.Background(), l.members[0], "0/8 nodes are available", l.pol)
	statuses := framework.NewDefaultNodeToStatus()
	statuses.SetAbsentNodesStatus(fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	_, s := l.env.plugin.PostFilter(l.env.Ctx, framework.NewCycleState(), l.members[0], statuses)
	l.t.Logf("PostFilter: %v", s)
}

// pods applies change to the named pods of the scheduler's snapshot.
func (l *reservationLife) pods(change func(ni *framework.NodeInfo, p *v1.Pod), names ...string) {
	l.t.Helper()
	for _, ni := range l.env.NodeInfos(l.t) {
		for _, pi := range ni.GetPods() {
			if slices.Contains(names, pi.GetPod().Name) {
				change(ni.(*framework.NodeInfo), pi.GetPod())
			}
		}
	}
}

// leaving marks pods in the way terminating (deleted, in their grace period).
func (l *reservationLife) leaving(names ...string) {
	l.pods(func(_ *framework.NodeInfo, p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: l.now} }, names...)
}

// gone takes pods in the way out of the snapshot.
func (l *reservationLife) gone(names ...string) {
	l.pods(func(ni *framework.NodeInfo, p *v1.Pod) {
		if err := ni.RemovePod(klog.Background(), p); err != nil {
			l.t.Fatal(err)
		}
	}, names...)
}

// bind runs Reserve for the gang's members in z1-r1, then Permit: the tree is allowed whole,
// and the model tells the plans (its observer) that it is scheduled.
func (l *reservationLife) bind() {
	l.t.Helper()
	l.now = l.now.Add(10 * time.Second)
	permits := l.env.Components.Model.Permits()
	for i, p := range l.members {
		permits.Reserve(klog.Background(), p, fmt.Sprintf("z1-r1-h%d", i))
	}
	for _, p := range l.members {
		if d := permits.Permit(klog.Background(), p, l.pol); !d.Allow {
			l.t.Fatalf("member %s not allowed: %+v", p.Name, d)
		}
	}
}

// Each reservation is counted once, by how it ended: bound (with its wait observed) when its
// gang is scheduled — also when the gang's last pods in the way were leaving, or could be
// preempted, so that the reservation ended a moment before the gang bound — and released
// when it gave way; its group deleted afterwards counts nothing more.
func TestReservationCountedByHowItEnded(t *testing.T) {
	reservation.RegisterMetrics()
	eq := func(name, node string) *v1.Pod { return running(name, node, "2", 10, "") }
	low := func(name, node string) *v1.Pod { return running(name, node, "2", 5, "") }
	tests := []struct {
		name     string
		blockers []*v1.Pod
		life     func(l *reservationLife)
		// started, bound, released: reservations counted so; samples: bind waits observed.
		started, bound, released, samples float64
	}{
		{
			name:     "the pods in the way end, the gang binds",
			blockers: []*v1.Pod{eq("a", "z1-r1-h0"), eq("b", "z1-r1-h1")},
			life: func(l *reservationLife) {
				l.gone("a", "b")
				l.bind()
			},
			started: 1, bound: 1, samples: 1,
		},
		{
			name:     "the last pods in the way are leaving when the gang fails again, then it binds",
			blockers: []*v1.Pod{eq("a", "z1-r1-h0"), eq("b", "z1-r1-h1")},
			life: func(l *reservationLife) {
				l.gone("a")
				l.fail()
				l.leaving("b")
				l.fail()
				l.gone("b")
				l.bind()
			},
			started: 1, bound: 1, samples: 1,
		},
		{
			name:     "the pods in the way left may be preempted, the gang preempts, then binds",
			blockers: []*v1.Pod{eq("a", "z1-r1-h0"), low("l", "z1-r1-h1")},
			life: func(l *reservationLife) {
				l.gone("a")
				l.fail()
				if plan := l.env.plans.Get(l.root()); plan == nil || len(plan.Victims) != 1 {
					l.t.Fatalf("plan %+v, want the gang preempting l", plan)
				}
				l.gone("l")
				l.bind()
			},
			started: 1, bound: 1, samples: 1,
		},
		{
			name:     "it gives way to a gang that waited longer, which then binds elsewhere",
			blockers: []*v1.Pod{eq("a", "z1-r1-h0"), eq("b", "z1-r1-h1")},
			life: func(l *reservationLife) {
				p := starving("older", l.now.Add(-time.Hour))
				p.Priority = 10
				if msg := l.env.plugin.reserve(l.env.Ctx, l.older, p, l.env.NodeInfos(l.t)); msg == "" {
					l.t.Fatal("the gang that waited longer got no reservation")
				}
				l.gone("a", "b")
				l.bind()
			},
			started: 2, released: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newReservationLife(t, tc.blockers)
			before := reservationMetrics(t)
			l.fail()
			if l.env.plans.reservations.Get(l.root()) == nil {
				t.Fatal("the starving gang got no reservation")
			}
			tc.life(l)
			l.env.Components.Model.OnGroupDelete(l.group)
			after := reservationMetrics(t)
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"started", after.events["started"] - before.events["started"], tc.started},
				{"bound", after.events["bound"] - before.events["bound"], tc.bound},
				{"released", after.events["released"] - before.events["released"], tc.released},
				{"timeout or lapsed", after.events["timeout"] + after.events["lapsed"] - before.events["timeout"] - before.events["lapsed"], 0},
				{"bind waits observed", after.samples - before.samples, tc.samples},
			} {
				if c.got != c.want {
					t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
				}
			}
		})
	}
}

// observedReservations are the reservations' counts by event and the bind waits observed.
type observedReservations struct {
	events  map[string]float64
	samples float64
}

func reservationMetrics(t *testing.T) observedReservations {
	t.Helper()
	events, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "lockstep_reservations_total", nil, "event")
	if err != nil {
		t.Fatal(err)
	}
	waits, err := testutil.GetHistogramVecFromGatherer(legacyregistry.DefaultGatherer, "lockstep_reservation_bind_wait_seconds", nil)
	if err != nil {
		t.Fatal(err)
	}
	return observedReservations{events: events, samples: float64(waits.GetAggregatedSampleCount())}
}

// A reservation for a gang that takes its rack to itself closes every node of the rack to
// other trees' plans, the nodes its own plan needs nothing on too; without it, the rack is
// theirs.
func TestExclusiveReservationClosesItsWholeRack(t *testing.T) {
	var pods []*v1.Pod
	for _, r := range []string{"z0-r0", "z0-r1", "z1-r0"} {
		pods = append(pods, runningRack(r, 0)...)
	}
	env, _ := reservationEnv(t, pods)
	small := lt.Members("ns", "small", 1, lt.CPU("1"))
	env.Components.Model.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("small").Gang(1).Topology(lt.Required(rackKey)).Obj())
	env.Components.Model.OnPod(nil, small[0])
	tree, ok := env.Components.Model.Gate().Tree(small[0])
	if !ok {
		t.Fatal("no tree for small")
	}
	infos := env.NodeInfos(t)
	if plan, why := env.plugin.planTree(env.Ctx, tree, infos, nil); plan == nil {
		t.Fatalf("small has no plan with nothing reserved: %s", why)
	}
	env.plans.Drop(tree.Key)
	now := time.Now()
	env.plans.reservations.Store(&reservation.Reservation{Root: podgroup.PodGroupKey("ns", "whole"), Level: 2, Domain: "rack z1-r1",
		Need:     map[string]capacity.Resources{"z1-r1-h0": {MilliCPU: 4000}},
		Closed:   sets.New("z1-r1-h0", "z1-r1-h1"),
		Blockers: map[types.UID]string{}, Since: now, Deadline: now.Add(time.Hour), Expires: now.Add(time.Hour), Waiting: now})
	if plan, _ := env.plugin.planTree(env.Ctx, tree, infos, nil); plan != nil {
		t.Errorf("small planned on %v, in a rack reserved for a gang to take whole", plan.Pods)
	}
}

// Two reservations never both hold the same room: a gang of a higher priority whose domain is
// held for a lower one takes it (the lower one's gives way, and is chosen again elsewhere if
// anywhere), and a lower one's refresh does not come back to room a higher one holds
// (issue #55, 3.2).
func TestReservationsNeverHoldTheSameRoom(t *testing.T) {
	// Only rack z1-r1 can ever take either gang: the others are full of pods above both.
	pods := append(runningRack("z0-r0", 2000), runningRack("z1-r0", 2000)...)
	pods = append(pods, runningRack("z0-r1", 2000)...)
	pods = append(pods, running("z1-r1-a", "z1-r1-h0", "4", 0, ""), running("z1-r1-b", "z1-r1-h1", "4", 0, ""))
	var groups []runtime.Object
	first := map[string]*v1.Pod{}
	for _, g := range []string{"low", "high"} {
		groups = append(groups, lt.MakePodGroup().Namespace("ns").Name(g).Gang(2).Topology(lt.Required(rackKey)).Obj())
		for i := range 2 {
			w := lt.Member("ns", g, i).Req(lt.CPU("4"))
			if g == "high" {
				w = w.Priority(100)
			}
			pods = append(pods, w.Obj())
		}
		first[g] = pods[len(pods)-1]
	}
	env := newTestEnvOpts(t, groups, pods, labeledNodes("4"), podgrouptest.Options{Filters: true})
	trees := map[string]*podgroup.GroupView{}
	for g, p := range first {
		tree, ok := env.Components.Model.Gate().Tree(p)
		if !ok {
			t.Fatalf("no tree for %s", g)
		}
		trees[g] = tree
	}
	now := time.Now()
	infos := env.NodeInfos(t)
	low, high := starving("low", now.Add(-10*time.Minute)), starving("high", now.Add(-5*time.Minute))
	high.Priority = 100
	if msg := env.plugin.reserve(env.Ctx, trees["low"], low, infos); !strings.Contains(msg, "rack z1-r1 held") {
		t.Fatalf("low reserved %q, want rack z1-r1 (the fewest pods in the way)", msg)
	}
	if msg := env.plugin.reserve(env.Ctx, trees["high"], high, infos); !strings.Contains(msg, "rack z1-r1 held") {
		t.Fatalf("high reserved %q, want rack z1-r1", msg)
	}
	// The oracle: per node, what the reservations need there fits the node's allocatable.
	overlapping := func() bool {
		need := map[string]capacity.Resources{}
		for _, r := range env.plans.reservations.All() {
			for node, n := range r.Need {
				sum := need[node]
				sum.Add(n)
				need[node] = sum
			}
		}
		for _, ni := range infos {
			if sum, ok := need[ni.Node().Name]; ok && !capacity.Allocatable(ni.Node()).Fits(sum) {
				return true
			}
		}
		return false
	}
	if overlapping() {
		t.Error("two reservations hold the same room")
	}
	// The lower gang fails again: its reservation does not come back to the rack held.
	env.plugin.reserve(env.Ctx, trees["low"], low, infos)
	if overlapping() {
		t.Error("the lower gang's reservation came back to the room the higher one holds")
	}
}

// A reservation's blockers are whole gangs, some of whose pods run outside its domain: its
// condition and event count the pods there, which must end, not the gangs' pods elsewhere.
func TestReservationCountsThePodsInItsDomain(t *testing.T) {
	var pods []*v1.Pod
	// Gang wide runs 2 pods in rack z0-r0 and 2 in z1-r1; the other racks hold pods of a
	// ReplicaSet, which may never end.
	for i, n := range []string{"z0-r0-h0", "z0-r0-h1", "z1-r1-h0", "z1-r1-h1"} {
		pods = append(pods, running(fmt.Sprintf("wide-%d", i), n, "4", 0, "wide"))
	}
	for _, n := range []string{"z0-r1-h0", "z0-r1-h1", "z1-r0-h0", "z1-r0-h1"} {
		web := st.MakePod().Namespace("ns").Name("web-" + n).UID("web-" + n).Node(n).SchedulerName(lt.SchedulerName).Req(lt.CPU("4"))
		pods = append(pods, lt.ControlledBy(web, "apps/v1", "ReplicaSet", "web", "web").Obj())
	}
	big := lt.Members("ns", "big", 2, lt.CPU("4"))
	groups := []runtime.Object{
		lt.MakePodGroup().Namespace("ns").Name("wide").Gang(4).Obj(),
		lt.MakePodGroup().Namespace("ns").Name("big").Gang(2).Topology(lt.Required(rackKey)).Obj(),
	}
	env := newTestEnvOpts(t, groups, append(pods, big...), labeledNodes("4"), podgrouptest.Options{Filters: true})
	tree, ok := env.Components.Model.Gate().Tree(big[0])
	if !ok {
		t.Fatal("no tree for big")
	}
	msg := env.plugin.reserve(env.Ctx, tree, starving("big", time.Now().Add(-10*time.Minute)), env.NodeInfos(t))
	if !strings.Contains(msg, "waiting for 2 pods of priority up to 0 there to end") {
		t.Errorf("reservation %q, want the 2 pods of gang wide in the rack held, not its 4", msg)
	}
	r := env.plans.reservations.Get(podgroup.PodGroupKey("ns", "big"))
	if r == nil {
		t.Fatal("no reservation")
	}
	if got := blockersThere(r); got != 2 {
		t.Errorf("%d blockers counted in %s, want 2 (blockers %v)", got, r.Domain, r.Blockers)
	}
}
