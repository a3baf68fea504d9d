package podgroup

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// The life of gangs, seeded and randomized the way a cluster interleaves events: members
// placed and allowed, binds succeeding and refused, members deleted and recreated by their
// controller, nodes lost, no room for a while, preemptions, the short timeout, the real status
// writer's writes coming back late or twice, and leaders restarting from exactly what it
// wrote. Invariants, checked against the world, never against the model's own view:
//   - every change of a group's state is an edge of the table (Lifecycle), seen in the log
//     line each transition writes, one after the other;
//   - once the writes settle, the object's conditions and the state agree, and a short
//     gang's Short condition counts the world's bound pods (the writer writes only the groups
//     the model asked it to look at, as its queue does);
//   - a gang is released (its members evicted) only by the documented rules: short for
//     partialBindTimeoutSeconds by the world's count of its bound pods, disruptionMode all; or
//     found half bound by a new leader;
//   - a leader restarted from the objects and pods reaches the same state, and a short gang
//     the same deadline, as the one that ran.
//
// LIFE_SEEDS raises the count of sequences (make soak); LIFE_SEED reruns one, or, with
// LIFE_SEEDS, starts there; LIFE_STEPS lengthens each (200 steps).
func TestLifeInvariants(t *testing.T) {
	seeds := 300
	first := int64(1)
	if s, err := strconv.ParseInt(os.Getenv("LIFE_SEED"), 10, 64); err == nil {
		first, seeds = s, 1
	}
	if s, err := strconv.Atoi(os.Getenv("LIFE_SEEDS")); err == nil {
		seeds = s
	}
	failed := 0
	taken := map[string]int{}
	for seed := first; seed < first+int64(seeds); seed++ {
		w := newLifeWorld(t, seed)
		w.taken = taken
		w.run(lifeSteps())
		if len(w.fails) == 0 {
			continue
		}
		failed++
		if failed <= 3 {
			log := w.log
			if len(log) > 80 && os.Getenv("LIFE_SEED") == "" {
				log = log[len(log)-80:]
			}
			t.Errorf("seed %d: %s\nlast steps:\n  %s", seed, strings.Join(w.fails, "\n"), strings.Join(log, "\n  "))
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d sequences broke an invariant (rerun one with LIFE_SEED=<seed>)", failed, seeds)
	}
	if os.Getenv("LIFE_SEED") != "" {
		return
	}
	// The sequences reach the edges that decide a gang's run, so that the invariants above
	// are checked where they matter.
	for _, edge := range []string{
		"Allowed --BindFailed--> PartiallyBound", "Allowed --BindFailed--> Pending", "Allowed --BindsDone--> Running",
		"Running --MemberLost--> PartiallyBound", "PartiallyBound --Whole--> Running", "PartiallyBound --ShortTimeout--> Released",
		"PartiallyBound --ShortTimeout--> PartiallyBound", "Released --Emptied--> Pending", "Running --Preempted--> Disrupted",
		"Held --Restored--> PartiallyBound", "Held --Restored--> Running", "Pending --FoundBound--> Running",
		"Pending --HalfBoundTimeout--> Released",
	} {
		if taken[edge] == 0 {
			t.Errorf("no sequence took %s", edge)
		}
	}
	t.Logf("edges taken: %v", taken)
}

const lifeTimeout = DefaultPartialBindTimeout

type lifePodState int

const (
	lifePending lifePodState = iota
	lifeWaiting
	lifeBinding
	lifeBound
)

type lifePod struct {
	obj     *v1.Pod
	gang    *lifeGang
	state   lifePodState
	assumed *v1.Pod
	// rejected: the model rejected it at Permit; the framework's Unreserve follows.
	rejected bool
	// seen: the leader running now has seen it bound (its event delivered, or listed).
	seen bool
}

type lifeGang struct {
	name   string
	min    int
	single bool
	// roomless: its domain has no room (its pods fit nowhere) for now.
	roomless bool
	next     int
	// allowed: a member was allowed since the gang was created or last released (it started).
	allowed bool
	// preempted: a preemptor took it.
	preempted bool
	// shortSince is when the world's count of its bound pods last fell below its minimum
	// after it started, zero while it is whole or has not started.
	shortSince time.Time
	// ranWhole: its minimum was bound at once since it was created, last preempted or
	// released (or its object told a new leader it runs): the replacements of its lost
	// members may be placed one by one.
	ranWhole bool
	// allowStep is the last step in which members were allowed, allowedThen how many, and
	// heldThen how many of its pods were bound or binding before, or deleted bound or
	// binding and not yet seen so by the leader (all or nothing).
	allowStep, allowedThen, heldThen int
	// goneUnseen counts its bound or binding pods deleted whose deletion the leader has not
	// seen yet.
	goneUnseen int
}

type lifeWorld struct {
	t     *testing.T
	rng   *rand.Rand
	clk   *simClock
	m     *Model
	queue *statusKeys
	log   []string
	fails []string

	client *fake.Clientset
	lister cache.Indexer
	writer *StatusWriter

	gangs []*lifeGang
	pods  map[types.UID]*lifePod
	// steps counts the steps taken.
	steps int
	// podLag and groupLag are informer events not delivered yet; groupLag may hold an event
	// twice (a re-delivery after newer ones).
	podLag, groupLag []func()
	unreserves       []*lifePod
	// transitions seen in the current model's log, per group; lastState is where each group's
	// life stands by them.
	lastState map[Key]State
	mu        sync.Mutex
	seen      []loggedTransition
	// taken counts the edges taken, over every sequence.
	taken map[string]int
}

type loggedTransition struct {
	group           string
	from, event, to string
}

func newLifeWorld(t *testing.T, seed int64) *lifeWorld {
	w := &lifeWorld{t: t, rng: rand.New(rand.NewSource(seed)), clk: newSimClock(epoch), pods: map[types.UID]*lifePod{}}
	w.client = fake.NewSimpleClientset()
	w.lister = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	w.writer = NewStatusWriter(w.client, listers.NewPodGroupLister(w.lister), nil, nil)
	// Times written read back to the second, as metav1.Time serializes them.
	w.writer.now = func() time.Time { return w.clk.Now().Truncate(time.Second) }
	for i := range 2 {
		g := &lifeGang{name: fmt.Sprintf("g%d", i), min: 2 + w.rng.Intn(3), single: w.rng.Intn(3) == 0}
		w.gangs = append(w.gangs, g)
		b := lt.MakePodGroup().Namespace("ns").Name(g.name).Gang(int32(g.min))
		if g.single {
			b = b.DisruptedOneByOne()
		}
		obj := b.Obj()
		if err := w.client.Tracker().Add(obj); err != nil {
			t.Fatal(err)
		}
		if err := w.lister.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	w.start(nil)
	for _, g := range w.gangs {
		for range g.min {
			w.createPod(g)
		}
	}
	return w
}

func (w *lifeWorld) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("%s "+format, append([]any{w.clk.Now().Sub(epoch)}, args...)...))
}

func (w *lifeWorld) violation(format string, args ...any) {
	w.fails = append(w.fails, fmt.Sprintf("%s "+format, append([]any{w.clk.Now().Sub(epoch)}, args...)...))
}

// start makes a new leader: it lists the groups as written and the pods, then syncs.
func (w *lifeWorld) start(pods []*v1.Pod) {
	w.queue = &statusKeys{}
	w.m = New(Options{Scheduler: w, Evictor: w, Clock: w.clk, Status: w.queue, Logger: logr.New(&transitionSink{w: w})})
	w.m.AddProfile(Profile{Name: testScheduler, PartialBindTimeout: lifeTimeout})
	w.lastState = map[Key]State{}
	w.m.synced = func() bool { return false }
	for _, g := range w.gangs {
		w.m.OnGroup(nil, w.object(g))
	}
	for _, p := range pods {
		w.m.OnPod(nil, p)
	}
	w.m.synced = func() bool { return true }
	w.m.Synced()
	w.m.Lead()
	w.checkTransitions()
}

func (w *lifeWorld) object(g *lifeGang) *v1alpha1.PodGroup {
	o, err := w.client.Tracker().Get(v1alpha1.Resource("podgroups").WithVersion("v1alpha1"), "ns", g.name)
	if err != nil {
		w.t.Fatal(err)
	}
	return o.(*v1alpha1.PodGroup)
}

func (w *lifeWorld) key(g *lifeGang) Key { return PodGroupKey("ns", g.name) }

// --- the scheduler the model drives ---

func (w *lifeWorld) Activate(logr.Logger, []*v1.Pod) {}
func (w *lifeWorld) Hold(logr.Logger, []*v1.Pod)     {}

func (w *lifeWorld) Allow(p *v1.Pod) {
	lp := w.pods[p.UID]
	if lp == nil || lp.state != lifeWaiting || lp.rejected {
		return
	}
	w.noteAllowed(lp)
	lp.state = lifeBinding
	lp.gang.allowed = true
	w.logf("allowed %s", p.Name)
}

func (w *lifeWorld) Reject(p *v1.Pod, msg string) {
	lp := w.pods[p.UID]
	if lp == nil || lp.state != lifeWaiting || lp.rejected {
		return
	}
	lp.rejected = true
	w.unreserves = append(w.unreserves, lp)
}

func (w *lifeWorld) Live(p *v1.Pod) bool { return w.pods[p.UID] != nil }

// Evict is a release: the oracle checks that a documented rule allows it, then the pods go.
func (w *lifeWorld) Evict(_ logr.Logger, pods []*v1.Pod, _, why string) {
	if len(pods) == 0 {
		return
	}
	lp := w.pods[pods[0].UID]
	if lp == nil {
		return
	}
	g := lp.gang
	now := w.clk.Now()
	switch {
	case strings.Contains(why, "was preempted whole"):
		// A preemption finished: what its executor left running of the gang.
		if !g.preempted {
			w.violation("gang %s evicted as preempted, but no preemptor took it", g.name)
		}
	case strings.Contains(why, "the rest did not fit"):
		// Half bound: members bound without the gang running whole (a new leader found them
		// so, or one bound after its gang was preempted); its last attempt failed.
		if bound := w.bound(g); bound >= g.min {
			w.violation("gang %s released as half bound, but %d of its %d pods are bound", g.name, bound, g.min)
		}
	case g.single:
		w.violation("gang %s released, but it says disruptionMode single", g.name)
	case g.shortSince.IsZero() || now.Before(g.shortSince.Truncate(time.Second).Add(lifeTimeout)):
		// (Moments are written to the second: the timeout counts from the second it began.)
		w.violation("gang %s released at %s, but the world has it short since %s (%s timeout): %s", g.name, now.Sub(epoch), g.shortSince.Sub(epoch), lifeTimeout, why)
	}
	w.logf("released %s: %d pods", g.name, len(pods))
	if w.pick(func(lp *lifePod) bool { return lp.gang == g && lp.state == lifeBinding }) == nil {
		// Released whole: it starts afresh. (Members of the released run still binding bind
		// later, short: a leader may release them too.)
		g.allowed, g.shortSince = false, time.Time{}
	}
	g.ranWhole = false
	for _, p := range pods {
		if cur := w.pods[p.UID]; cur != nil {
			w.deletePod(cur)
		}
	}
}

// --- the world's moves ---

func (w *lifeWorld) createPod(g *lifeGang) {
	g.next++
	p := lt.Member("ns", g.name, g.next).Obj()
	p.UID = types.UID(fmt.Sprintf("%s-%d", g.name, g.next))
	w.pods[p.UID] = &lifePod{obj: p, gang: g}
	w.podLag = append(w.podLag, func() { w.m.OnPod(nil, p) })
}

func (w *lifeWorld) deletePod(lp *lifePod) {
	delete(w.pods, lp.obj.UID)
	obj, g := lp.obj, lp.gang
	held := lp.state == lifeBound || lp.state == lifeBinding
	if held {
		g.goneUnseen++
	}
	m := w.m
	w.podLag = append(w.podLag, func() {
		w.m.OnPodDelete(obj)
		if held && w.m == m {
			g.goneUnseen--
		}
	})
	if lp.state == lifeWaiting && !lp.rejected {
		// The scheduler rejects a waiting pod that is deleted; Unreserve follows.
		lp.rejected = true
		w.unreserves = append(w.unreserves, lp)
	}
	w.count(lp.gang)
}

// binding reports whether a member of a gang is binding, as the world has them.
func (w *lifeWorld) binding(g *lifeGang) bool {
	return w.pick(func(lp *lifePod) bool { return lp.gang == g && lp.state == lifeBinding }) != nil
}

// bound counts a gang's bound pods, as the world has them.
func (w *lifeWorld) bound(g *lifeGang) int {
	n := 0
	for _, lp := range w.pods {
		if lp.gang == g && lp.state == lifeBound {
			n++
		}
	}
	return n
}

// count updates the world's own view of whether a gang runs short of its minimum: short
// once fewer than its minimum are bound after it started, and no longer once its minimum is
// bound and the leader has seen them bound (a gang whole for an instant no leader saw, its
// bind event lost with a leader that died, was never whole to anyone).
func (w *lifeWorld) count(g *lifeGang) {
	bound, seen := 0, 0
	for _, lp := range w.pods {
		if lp.gang == g && lp.state == lifeBound {
			bound++
			if lp.seen {
				seen++
			}
		}
	}
	if bound >= g.min {
		g.ranWhole = true
	}
	switch {
	case seen >= g.min:
		g.shortSince = time.Time{}
	case bound >= g.min:
		// whole, not seen yet: short as before, if it was
	case g.allowed && g.shortSince.IsZero():
		g.shortSince = w.clk.Now()
	}
}

func (w *lifeWorld) pick(filter func(*lifePod) bool) *lifePod {
	var out []*lifePod
	for _, lp := range w.pods {
		if filter(lp) {
			out = append(out, lp)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(a, b *lifePod) int { return strings.Compare(a.obj.Name, b.obj.Name) })
	return out[w.rng.Intn(len(out))]
}

// scheduleOne runs a scheduling cycle of a pending member, as the framework does.
func (w *lifeWorld) scheduleOne() {
	lp := w.pick(func(lp *lifePod) bool { return lp.state == lifePending && !lp.rejected })
	if lp == nil {
		return
	}
	logger := logr.New(&transitionSink{w: w})
	if v := w.m.Gate().Admit(logger, lp.obj); v.Code != Proceed {
		return
	}
	if v := w.m.Gate().Check(logger, lp.obj, 0); v.Code != Proceed {
		return
	}
	if lp.gang.roomless {
		w.logf("postfilter %s", lp.obj.Name)
		w.m.Permits().Fail(logger, lp.obj, "0/3 nodes are available: 3 Insufficient cpu", testPolicy)
		return
	}
	node := fmt.Sprintf("n%d", w.rng.Intn(3))
	lp.assumed = assumed(lp.obj, node)
	w.m.Permits().Reserve(logger, lp.assumed, node)
	lp.state = lifeWaiting
	d := w.m.Permits().Permit(logger, lp.assumed, testPolicy)
	switch {
	case lp.state == lifeBinding || lp.rejected:
	case d.Allow:
		w.noteAllowed(lp)
		lp.state = lifeBinding
		lp.gang.allowed = true
		w.logf("permit allowed %s", lp.obj.Name)
	case d.Reject != "":
		lp.state, lp.assumed = lifePending, nil
		w.m.Permits().Unreserve(logger, assumed(lp.obj, node))
	default:
		w.logf("%s waits", lp.obj.Name)
	}
}

// bindOne binds an allowed member, or its bind is refused (a webhook).
func (w *lifeWorld) bindOne() {
	lp := w.pick(func(lp *lifePod) bool { return lp.state == lifeBinding })
	if lp == nil {
		return
	}
	if w.rng.Intn(6) == 0 {
		w.logf("bind of %s refused", lp.obj.Name)
		a := lp.assumed
		lp.state, lp.assumed = lifePending, nil
		w.m.Permits().Unreserve(logr.New(&transitionSink{w: w}), a)
		w.count(lp.gang)
		return
	}
	old := lp.obj
	cur := old.DeepCopy()
	cur.Spec.NodeName = lp.assumed.Spec.NodeName
	lp.obj, lp.state, lp.assumed = cur, lifeBound, nil
	w.logf("bound %s on %s", cur.Name, cur.Spec.NodeName)
	w.podLag = append(w.podLag, func() {
		w.m.OnPod(old, cur)
		if w.pods[lp.obj.UID] == lp {
			lp.seen = true
			w.count(lp.gang)
		}
	})
	w.count(lp.gang)
}

func (w *lifeWorld) unreserveOne() {
	if len(w.unreserves) == 0 {
		return
	}
	lp := w.unreserves[0]
	w.unreserves = w.unreserves[1:]
	if w.pods[lp.obj.UID] == lp {
		lp.state, lp.rejected = lifePending, false
	}
	a := lp.assumed
	lp.assumed = nil
	if a != nil {
		w.m.Permits().Unreserve(logr.New(&transitionSink{w: w}), a)
	}
}

// deleteMember deletes a member (its controller recreates it); nodeLost deletes every pod
// bound to a node.
func (w *lifeWorld) deleteMember() {
	lp := w.pick(func(*lifePod) bool { return true })
	if lp == nil {
		return
	}
	w.logf("delete %s", lp.obj.Name)
	w.deletePod(lp)
	w.createPod(lp.gang)
}

func (w *lifeWorld) nodeLost() {
	node := fmt.Sprintf("n%d", w.rng.Intn(3))
	w.logf("node %s lost", node)
	for _, lp := range w.sortedPods() {
		if lp.state == lifeBound && lp.obj.Spec.NodeName == node {
			w.deletePod(lp)
			w.createPod(lp.gang)
		}
	}
}

func (w *lifeWorld) preempt() {
	g := w.gangs[w.rng.Intn(len(w.gangs))]
	var victims []*lifePod
	for _, lp := range w.sortedPods() {
		if lp.gang == g && lp.state == lifeBound {
			victims = append(victims, lp)
		}
	}
	if len(victims) == 0 {
		return
	}
	w.logf("preempt %s", g.name)
	w.deliverAll() // the preemptor decides on what the model knows
	w.m.Permits().NotePreempted(w.key(g), fmt.Sprintf("evicting its %d running pods: preempted by gang PodGroup ns/big (priority 1000)", len(victims)))
	g.preempted, g.ranWhole = true, false
	g.allowed, g.shortSince = false, time.Time{}
	for _, lp := range victims {
		w.deletePod(lp)
		w.createPod(g)
	}
}

func (w *lifeWorld) sortedPods() []*lifePod {
	out := make([]*lifePod, 0, len(w.pods))
	for _, lp := range w.pods {
		out = append(out, lp)
	}
	slices.SortFunc(out, func(a, b *lifePod) int { return strings.Compare(a.obj.Name, b.obj.Name) })
	return out
}

// syncStatus runs the real status writer over every group; what it wrote comes back to the
// model as group events, later, and sometimes twice.
func (w *lifeWorld) syncStatus() {
	asked := w.queue.keys
	w.queue.keys = nil
	for _, g := range w.gangs {
		if !slices.Contains(asked, w.key(g)) {
			continue // the writer looks only at what the model asked it to
		}
		old := w.object(g)
		if err := w.writer.sync(context.Background(), w.m.Gate(), w.key(g)); err != nil {
			w.t.Fatal(err)
		}
		cur := w.object(g)
		if equality.Semantic.DeepEqual(cur.Status, old.Status) {
			continue // nothing written (the fake tracker keeps no resourceVersion)
		}
		if err := w.lister.Update(cur); err != nil {
			w.t.Fatal(err)
		}
		w.groupLag = append(w.groupLag, func() { w.m.OnGroup(old, cur) })
		if w.rng.Intn(4) == 0 {
			w.groupLag = append(w.groupLag, func() { w.m.OnGroup(cur, cur) }) // a resync, or a late duplicate
		}
	}
}

func (w *lifeWorld) deliver(n int) {
	for ; n > 0 && len(w.podLag)+len(w.groupLag) > 0; n-- {
		q := &w.podLag
		if len(w.podLag) == 0 || (len(w.groupLag) > 0 && w.rng.Intn(2) == 0) {
			q = &w.groupLag
		}
		e := (*q)[0]
		*q = (*q)[1:]
		e()
	}
}

func (w *lifeWorld) deliverAll() { w.deliver(1 << 20) }

// advance moves time; informers are not minutes late, so what lags is delivered first.
func (w *lifeWorld) advance(d time.Duration) {
	if d > time.Second {
		w.deliverAll()
	}
	w.logf("advance %s", d)
	w.clk.Step(d)
}

// restart kills the leader: a new one starts from what the objects say and the pods.
func (w *lifeWorld) restart() {
	w.logf("restart")
	w.podLag, w.groupLag, w.unreserves = nil, nil, nil
	for _, g := range w.gangs {
		g.goneUnseen = 0 // the new leader lists the pods that exist
	}
	w.clk.timers = nil
	var pods []*v1.Pod
	for _, lp := range w.sortedPods() {
		if lp.state != lifeBound {
			lp.state, lp.rejected, lp.assumed = lifePending, false, nil
		}
		lp.seen = lp.state == lifeBound // listed by the new leader
		pods = append(pods, lp.obj)
	}
	for _, g := range w.gangs {
		w.count(g)
		// What the objects say decides for the new leader: a release its predecessor decided
		// but did not write yet is decided again (Short True is the fact, since its moment).
		conds := w.object(g).Status.Conditions
		if c := meta.FindStatusCondition(conds, v1alpha1.Short); c != nil && c.Status == metav1.ConditionTrue &&
			(g.shortSince.IsZero() || c.LastTransitionTime.Time.Before(g.shortSince)) {
			g.allowed, g.shortSince = true, c.LastTransitionTime.Time
		}
		// A gang its object says runs (a preemption its predecessor did not write yet
		// included) and short of pods is short from now for the new leader.
		if meta.IsStatusConditionTrue(conds, v1alpha1.PodGroupInitiallyScheduled) && !meta.IsStatusConditionTrue(conds, v1alpha1.DisruptionTarget) &&
			w.bound(g) < g.min && g.shortSince.IsZero() {
			g.allowed, g.shortSince = true, w.clk.Now()
		}
		// The new leader takes a gang its object says runs, or lost a member while it ran, for
		// a gang that ran whole.
		lost := meta.FindStatusCondition(conds, v1alpha1.Short)
		if (meta.IsStatusConditionTrue(conds, v1alpha1.PodGroupInitiallyScheduled) || (lost != nil && lost.Status == metav1.ConditionTrue && lost.Reason == v1alpha1.ReasonMemberLost)) &&
			!meta.IsStatusConditionTrue(conds, v1alpha1.DisruptionTarget) {
			g.ranWhole = true
		}
	}
	w.start(pods)
}

// checkpoint lets the writes settle, then checks that the objects say what the states are,
// and that a leader restarted now would reach the same states and deadlines.
func (w *lifeWorld) checkpoint() {
	w.deliverAll()
	w.syncStatus()
	w.deliverAll()
	var pods []*v1.Pod
	for _, lp := range w.sortedPods() {
		if lp.state == lifeBound {
			pods = append(pods, lp.obj)
		} else {
			pods = append(pods, lp.obj) // pending again for a new leader
		}
	}
	shadow := New(Options{Clock: w.clk, Logger: logr.Discard()})
	shadow.AddProfile(Profile{Name: testScheduler, PartialBindTimeout: lifeTimeout})
	shadow.synced = func() bool { return false }
	for _, g := range w.gangs {
		shadow.OnGroup(nil, w.object(g))
	}
	for _, p := range pods {
		shadow.OnPod(nil, p)
	}
	shadow.synced = func() bool { return true }
	shadow.Synced()
	for _, g := range w.gangs {
		k := w.key(g)
		l := *w.m.index.Get(k).Life()
		obj := w.object(g)
		w.agrees(g, l, obj.Status.Conditions)
		w.written(g, obj.Status.Conditions)
		if (l.State() == Released || l.State() == Disrupted) && w.bound(g) == 0 && !w.binding(g) {
			// Every event delivered: nothing of it left to evict, it is a gang again (Emptied).
			w.violation("gang %s is %s with none of it bound or binding", g.name, l.State())
		}
		s := *shadow.index.Get(k).Life()
		switch {
		case l.State() == Allowed:
		case l.State() == PartiallyBound && w.bound(g) == 0 && w.binding(g) && s.State() == Pending:
			// Short by its attempt's binds, none bound, some in flight: a new leader does not
			// know of binds in flight (it finds those that land bound, half bound).
		case l.State() == PartiallyBound && (s.State() != PartiallyBound || !s.Since().Equal(l.Since())):
			w.violation("gang %s is short since %s; a leader restarted now finds it %s since %s", g.name, l.Since().Sub(epoch), s.State(), s.Since().Sub(epoch))
		case (l.State() == Running) != (s.State() == Running):
			w.violation("gang %s is %s; a leader restarted now finds it %s", g.name, l.State(), s.State())
		}
	}
}

// agrees checks what a group's object says against its state, once the writes settled.
func (w *lifeWorld) agrees(g *lifeGang, l Life, conds []metav1.Condition) {
	initial := meta.IsStatusConditionTrue(conds, v1alpha1.PodGroupInitiallyScheduled)
	short := meta.FindStatusCondition(conds, v1alpha1.Short)
	isShort := short != nil && short.Status == metav1.ConditionTrue
	disrupted := meta.IsStatusConditionTrue(conds, v1alpha1.DisruptionTarget)
	switch l.State() {
	case Running:
		if !initial || isShort || disrupted {
			w.violation("gang %s is Running; its object says PodGroupInitiallyScheduled %v, Short %v, DisruptionTarget %v", g.name, initial, isShort, disrupted)
		}
	case PartiallyBound:
		if !isShort || !short.LastTransitionTime.Time.Equal(l.Since()) || disrupted {
			w.violation("gang %s is short since %s; its object says Short %+v, DisruptionTarget %v (conditions %+v)", g.name, l.Since().Sub(epoch), short, disrupted, conds)
		} else if m := boundCount.FindStringSubmatch(short.Message); m != nil && m[1] != strconv.Itoa(w.bound(g)) {
			w.violation("gang %s has %d pods bound; its object says %q", g.name, w.bound(g), short.Message)
		}
	case Released, Disrupted:
		if !disrupted || isShort {
			w.violation("gang %s is %s; its object says DisruptionTarget %v, Short %v", g.name, l.State(), disrupted, isShort)
		}
	case Held, Pending, Waiting:
		if isShort {
			w.violation("gang %s is %s; its object says Short True", g.name, l.State())
		}
	}
}

// written checks that, once the writes settle, a group's object says what the model wants it
// to, by the writer's rules: PodGroupInitiallyScheduled is never rewritten once True, the
// other two are written False only over a True, and a message whose details alone changed may
// wait for its refresh. A condition that changed without the model asking the writer to look
// at the group is left stale.
func (w *lifeWorld) written(g *lifeGang, conds []metav1.Condition) {
	d, ok := w.m.Gate().Conditions(w.key(g))
	if !ok {
		return
	}
	for _, c := range []struct {
		condType string
		want     *Condition
	}{{v1alpha1.PodGroupInitiallyScheduled, d.Initial}, {v1alpha1.DisruptionTarget, d.Disruption}, {v1alpha1.Short, d.Short}} {
		cur := meta.FindStatusCondition(conds, c.condType)
		switch {
		case c.want == nil:
		case c.condType == v1alpha1.PodGroupInitiallyScheduled && cur != nil && cur.Status == metav1.ConditionTrue:
		case c.condType != v1alpha1.PodGroupInitiallyScheduled && c.want.Status == metav1.ConditionFalse && (cur == nil || cur.Status != metav1.ConditionTrue):
		case cur == nil || cur.Status != c.want.Status || cur.Reason != c.want.Reason || (!c.want.Details && cur.Message != c.want.Message):
			w.violation("gang %s: the model wants %s %s/%s %q; its object says %+v", g.name, c.condType, c.want.Status, c.want.Reason, c.want.Message, cur)
		}
	}
}

// boundCount reads the count of pods bound in a Short condition's message.
var boundCount = regexp.MustCompile(`(\d+) of \d+ pods bound`)

// checkTransitions checks the transitions the model logged since the last check: each is an
// edge of the table, and each starts where the group's life stood.
func (w *lifeWorld) checkTransitions() {
	w.mu.Lock()
	seen := w.seen
	w.seen = nil
	w.mu.Unlock()
	for _, tr := range seen {
		if os.Getenv("LIFE_SEED") != "" {
			w.logf("  %s: %s --%s--> %s", tr.group, tr.from, tr.event, tr.to)
		}
		if w.taken != nil {
			w.taken[fmt.Sprintf("%s --%s--> %s", tr.from, tr.event, tr.to)]++
		}
		var edge bool
		for _, r := range Lifecycle {
			if r.From.String() == tr.from && r.Event.String() == tr.event && r.To.String() == tr.to {
				edge = true
				break
			}
		}
		if !edge {
			w.violation("%s moved %s --%s--> %s, not an edge of the table", tr.group, tr.from, tr.event, tr.to)
		}
		k := PodGroupKey("ns", strings.TrimPrefix(tr.group, "PodGroup ns/"))
		if last, ok := w.lastState[k]; ok && last.String() != tr.from {
			w.violation("%s moved from %s, but its last transition left it %s", tr.group, tr.from, last)
		}
		for s := State(0); s < numStates; s++ {
			if s.String() == tr.to {
				w.lastState[k] = s
			}
		}
	}
	for _, g := range w.gangs {
		k := w.key(g)
		if last, ok := w.lastState[k]; ok {
			if s := w.m.index.Get(k).Life().State(); s != last {
				w.violation("gang %s is %s, but its last logged transition left it %s: something else moved it", g.name, s, last)
			}
		}
	}
}

func (w *lifeWorld) step() {
	switch r := w.rng.Intn(100); {
	case r < 30:
		w.scheduleOne()
	case r < 45:
		w.bindOne()
	case r < 52:
		w.unreserveOne()
	case r < 58:
		w.deleteMember()
	case r < 61:
		w.nodeLost()
	case r < 64:
		g := w.gangs[w.rng.Intn(len(w.gangs))]
		g.roomless = !g.roomless
		w.logf("%s roomless=%v", g.name, g.roomless)
	case r < 66:
		w.preempt()
	case r < 74:
		w.syncStatus()
	case r < 84:
		w.deliver(1 + w.rng.Intn(4))
	case r < 92:
		w.advance(time.Duration(w.rng.Intn(3000)) * time.Millisecond)
	case r < 96:
		w.advance(time.Duration(30+w.rng.Intn(150)) * time.Second)
	case r < 97:
		w.restart()
	default:
		w.checkpoint()
	}
	w.checkTransitions()
	w.checkAllOrNothing()
	w.steps++
}

// noteAllowed counts a member allowed to bind in this step (before its state changes).
func (w *lifeWorld) noteAllowed(lp *lifePod) {
	g := lp.gang
	if g.allowStep != w.steps {
		g.allowStep, g.allowedThen, g.heldThen = w.steps, 0, g.goneUnseen
		for _, o := range w.pods {
			if o.gang == g && (o.state == lifeBound || o.state == lifeBinding) {
				g.heldThen++
			}
		}
	}
	g.allowedThen++
}

// checkAllOrNothing: members allowed in this step while none of their gang was bound or
// binding are its minimum at least, unless it ran whole (its lost members' replacements).
func (w *lifeWorld) checkAllOrNothing() {
	for _, g := range w.gangs {
		if g.allowStep == w.steps && g.allowedThen > 0 && g.heldThen == 0 && g.allowedThen < g.min && !g.ranWhole {
			w.violation("gang %s: %d of its pods allowed to bind with none of it bound or binding (minimum %d): not all or nothing",
				g.name, g.allowedThen, g.min)
		}
	}
}

func (w *lifeWorld) run(steps int) {
	defer func() {
		if r := recover(); r != nil {
			w.violation("panic: %v", r)
		}
	}()
	for range steps {
		w.step()
		if len(w.fails) > 0 {
			return
		}
	}
	w.checkpoint()
	w.checkTransitions()
}

// transitionSink is a logger that records the transitions the model logs.
type transitionSink struct {
	w      *lifeWorld
	values []any
}

func (s *transitionSink) Init(logr.RuntimeInfo)        {}
func (s *transitionSink) Enabled(int) bool             { return true }
func (s *transitionSink) Error(error, string, ...any)  {}
func (s *transitionSink) WithName(string) logr.LogSink { return s }
func (s *transitionSink) WithValues(kv ...any) logr.LogSink {
	return &transitionSink{w: s.w, values: append(slices.Clone(s.values), kv...)}
}

func (s *transitionSink) Info(_ int, msg string, kv ...any) {
	if msg != "Group state changed" {
		return
	}
	tr := loggedTransition{}
	kv = append(slices.Clone(s.values), kv...)
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		switch kv[i] {
		case "group":
			tr.group = v
		case "from":
			tr.from = v
		case "event":
			tr.event = v
		case "to":
			tr.to = v
		}
	}
	s.w.mu.Lock()
	s.w.seen = append(s.w.seen, tr)
	s.w.mu.Unlock()
}

// lifeSteps is the length of a sequence: LIFE_STEPS, or 200.
func lifeSteps() int {
	if s, err := strconv.Atoi(os.Getenv("LIFE_STEPS")); err == nil {
		return s
	}
	return 200
}
