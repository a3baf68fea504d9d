package podgroup

import (
	"container/heap"
	"fmt"
	"math/rand"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// The invariant test drives the group model the way a scheduler and a cluster do, in random
// but seeded order, and checks after every step what lockstep promises:
//
//   - no tree is allowed to bind with fewer than its minimum, counting only live members
//     (pods that exist and are not rejected), unless the group was already initially
//     scheduled;
//   - no waiter outlives its pod or round: once the informer has caught up, the model's
//     waiters are exactly the pods waiting at Permit;
//   - every pending member has a reason a person can read, or may be scheduled;
//   - nothing panics;
//   - at quiescence, with room for every pod, nothing that may be scheduled stays pending.
//
//   - the model never allows a pod that does not wait at Permit any more: one the framework
//     rejected (preemption, its own timeout) or that was deleted.
//
// The world is the ground truth: group objects, pods, and the framework's waiting pods. The
// model under test sees the cluster through informer events that lag behind it, as the
// scheduler's own handlers and the model's handlers of one informer run independently: pod
// events and group events come through separate queues, each in order, randomly
// interleaved. The framework rejects waiting pods on its own (a preemption taking one as a
// victim, its permit timeout on the same clock as the model's timers), as the scheduler
// does, asking the model first where the scheduler does (Frameworks.Guard).

// sut is the group model under test, fed as the scheduler feeds it.
type sut interface {
	podEvent(old, cur *v1.Pod) // add: old nil; delete: cur nil
	groupEvent(old, cur runtime.Object)
	nodeEvent()
	nodeDeleted(name string)
	preEnqueue(p *v1.Pod) (bool, string)
	// roomHint returns whether Peek lets the pod proceed and what a room hint answers.
	roomHint(p *v1.Pod) (peek, queueable bool)
	preFilter(p *v1.Pod) (bool, string)
	reserve(p *v1.Pod, node string)
	// permit returns "allow", "wait" or "reject", and the framework timeout of a wait.
	permit(p *v1.Pod) (string, time.Duration)
	postFilter(p *v1.Pod, reason string)
	unreserve(p *v1.Pod)
	// rejecting is asked before the framework rejects a waiting pod in memory (preemption);
	// false: the rejection must not happen.
	rejecting(p *v1.Pod) bool
	waiters() []types.UID
	// held returns the roots news would retry (held back after a failed attempt), and those
	// found so by reading every round.
	held() (news, all []Key)
	// condition is the PodGroupInitiallyScheduled condition the model wants on a group.
	condition(kind Kind, name string) (Condition, bool)
}

// simFramework is what the model may do to the scheduler: the world implements it.
type simFramework interface {
	allow(p *v1.Pod)
	reject(p *v1.Pod, msg string)
	activate(pods []*v1.Pod)
	live(p *v1.Pod) bool
}

// newSUT builds the model under test on the world's clock and framework.
var newSUT func(t *testing.T, clk *simClock, fw simFramework) sut

type podState int

const (
	statePending podState = iota
	stateWaiting
	stateBinding
	stateBound
)

func (s podState) String() string {
	return [...]string{"pending", "waiting", "binding", "bound"}[s]
}

type simPod struct {
	obj      *v1.Pod // the cluster's copy
	assumed  *v1.Pod // the scheduler's assumed copy (nodeName set) while reserved
	state    podState
	unfit    bool      // fits nowhere (until the end of the sequence)
	deadline time.Time // the framework's permit timeout while waiting
	rejected bool      // rejected at Permit by the framework; Unreserve pending
	wait     int       // numbers the pod's waits, for the framework's timer
	// gated: PreEnqueue held the pod for its gang's scout; like the queue, the scheduler
	// tries it again only once the model activates it.
	gated bool
}

type world struct {
	t     *testing.T
	rng   *rand.Rand
	clk   *simClock
	model sut
	// activations counts the pods the model activated (settle tries again after some).
	activations int
	// cluster objects
	groups map[Key]runtime.Object
	pods   map[types.UID]*simPod
	gone   map[types.UID]*simPod // deleted or completed, for late Unreserves
	nextID int
	// events the model has not seen yet: pod events and group events, each in order
	podLag, groupLag []func()
	// what the model has seen of groups and of pods' labels: the membership it can know
	seenGroups map[Key]runtime.Object
	seenLabels map[types.UID]string
	// Unreserve calls the binding goroutines have not made yet
	unreserves []*simPod
	// ground truth: groups initially scheduled, with the minimum they met then
	scheduled map[Key]int
	// batch: pods that moved to binding in this step
	batch []*simPod
	log   []string
	fails []string
}

func newWorld(t *testing.T, seed int64) *world {
	w := &world{
		t:          t,
		rng:        rand.New(rand.NewSource(seed)),
		clk:        newSimClock(epoch),
		groups:     map[Key]runtime.Object{},
		pods:       map[types.UID]*simPod{},
		gone:       map[types.UID]*simPod{},
		scheduled:  map[Key]int{},
		seenGroups: map[Key]runtime.Object{},
		seenLabels: map[types.UID]string{},
	}
	w.model = newSUT(t, w.clk, w)
	return w
}

func (w *world) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("%s "+format, append([]any{w.clk.Now().Sub(epoch)}, args...)...))
}

func (w *world) violation(format string, args ...any) {
	w.fails = append(w.fails, fmt.Sprintf(format, args...))
}

// sendPod hands the model a pod event now.
func (w *world) sendPod(old, cur *v1.Pod) {
	if cur == nil {
		delete(w.seenLabels, old.UID)
	} else {
		w.seenLabels[cur.UID] = cur.Labels[v1alpha1.PodGroupLabel]
	}
	w.model.podEvent(old, cur)
	w.checkBatch()
}

func (w *world) podEventLater(old, cur *v1.Pod) {
	w.podLag = append(w.podLag, func() { w.sendPod(old, cur) })
}

// sendGroup hands the model a group event now.
func (w *world) sendGroup(old, cur runtime.Object) {
	if cur == nil {
		k, _ := KeyOfObject(old)
		delete(w.seenGroups, k)
	} else {
		k, _ := KeyOfObject(cur)
		w.seenGroups[k] = cur
	}
	w.model.groupEvent(old, cur)
	w.checkBatch()
}

func (w *world) groupEventLater(old, cur runtime.Object) {
	w.groupLag = append(w.groupLag, func() { w.sendGroup(old, cur) })
}

// lagging counts the events the model has not seen yet.
func (w *world) lagging() int { return len(w.podLag) + len(w.groupLag) }

// --- simFramework ---

func (w *world) allow(p *v1.Pod) {
	sp := w.pods[p.UID]
	if sp == nil || sp.state != stateWaiting || sp.rejected {
		state := "deleted"
		if sp != nil {
			state = fmt.Sprintf("%s, rejected=%v", sp.state, sp.rejected)
		}
		w.violation("the model allowed %s, which no longer waits at Permit (%s)", p.Name, state)
		return
	}
	sp.state = stateBinding
	w.batch = append(w.batch, sp)
	w.logf("allowed %s", p.Name)
}

func (w *world) reject(p *v1.Pod, msg string) {
	sp := w.pods[p.UID]
	if sp == nil {
		sp = w.gone[p.UID]
	}
	if sp == nil || sp.state != stateWaiting || sp.rejected {
		return
	}
	sp.rejected = true
	w.unreserves = append(w.unreserves, sp)
	w.logf("rejected %s: %s", p.Name, msg)
}

// activate counts activations: settle tries the pending pods again after a pass that
// activated some (the queue pops a pod activated while its tree is open, a scout's gang),
// and lets a pod held for its gang's scout be tried again.
func (w *world) activate(pods []*v1.Pod) {
	w.activations += len(pods)
	for _, p := range pods {
		if sp := w.pods[p.UID]; sp != nil {
			sp.gated = false
		}
	}
}

func (w *world) live(p *v1.Pod) bool {
	sp := w.pods[p.UID]
	return sp != nil && sp.obj.DeletionTimestamp == nil
}

// --- cluster changes ---

var (
	podGroupNames  = []string{"a", "b", "s0", "s1", "s2"}
	compositeNames = []string{"job", "top"}
)

func (w *world) pick(names []string) string { return names[w.rng.Intn(len(names))] }

func (w *world) createPod() {
	group := w.pick(podGroupNames)
	w.nextID++
	name := fmt.Sprintf("%s-%d", group, w.nextID)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{v1alpha1.PodGroupLabel: group}, CreationTimestamp: metav1.NewTime(w.clk.Now())},
		Spec: v1.PodSpec{SchedulerName: testScheduler},
	}
	w.pods[p.UID] = &simPod{obj: p, unfit: w.rng.Intn(6) == 0}
	w.logf("create pod %s (unfit=%v)", name, w.pods[p.UID].unfit)
	w.podEventLater(nil, p)
}

func (w *world) randomPod(filter func(*simPod) bool) *simPod {
	var cands []*simPod
	for _, sp := range w.pods {
		if filter == nil || filter(sp) {
			cands = append(cands, sp)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].obj.Name < cands[j].obj.Name })
	return cands[w.rng.Intn(len(cands))]
}

// deletePod deletes a pod; the scheduler rejects it if it waits at Permit (as its own
// delete handler does), and the model hears of the delete later.
func (w *world) deletePod() {
	sp := w.randomPod(nil)
	if sp == nil {
		return
	}
	w.logf("delete pod %s (%s)", sp.obj.Name, sp.state)
	if sp.state == stateWaiting {
		w.reject(sp.obj, "pod deleted")
	}
	delete(w.pods, sp.obj.UID)
	w.gone[sp.obj.UID] = sp
	obj := sp.obj
	w.podEventLater(obj, nil)
}

// preemptWaiter: a preemption takes a pod waiting at Permit as its victim and rejects it in
// memory, as upstream's preemption executor does, asking the model first (the guarded
// handle); the model may refuse (it allowed the pod already: the preemptor deletes it).
func (w *world) preemptWaiter() {
	sp := w.randomPod(func(sp *simPod) bool { return sp.state == stateWaiting && !sp.rejected })
	if sp == nil {
		return
	}
	w.logf("preemption takes waiter %s", sp.obj.Name)
	if !w.model.rejecting(sp.assumed) {
		w.logf("the model refused the preemption of %s", sp.obj.Name)
		return
	}
	w.reject(sp.obj, "preempted")
}

// completePod: a bound pod succeeds; the scheduler's informer (which excludes terminated
// pods) sees a delete.
func (w *world) completePod() {
	sp := w.randomPod(func(sp *simPod) bool { return sp.state == stateBound })
	if sp == nil {
		return
	}
	w.logf("pod %s succeeded", sp.obj.Name)
	delete(w.pods, sp.obj.UID)
	w.gone[sp.obj.UID] = sp
	obj := sp.obj
	w.podEventLater(obj, nil)
}

// relabelPod moves a pending pod to another group.
func (w *world) relabelPod() {
	sp := w.randomPod(func(sp *simPod) bool { return sp.state == statePending })
	if sp == nil {
		return
	}
	old := sp.obj
	cur := old.DeepCopy()
	cur.Labels[v1alpha1.PodGroupLabel] = w.pick(podGroupNames)
	sp.obj = cur
	w.logf("relabel pod %s → %s", cur.Name, cur.Labels[v1alpha1.PodGroupLabel])
	w.podEventLater(old, cur)
}

func (w *world) groupObject(k Key) runtime.Object {
	parent := func() *string {
		if w.rng.Intn(2) == 0 {
			return nil
		}
		return ptr.To(w.pick(compositeNames))
	}
	created := metav1.NewTime(w.clk.Now())
	switch k.Kind {
	case KindPodGroup:
		g := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: k.Name, UID: types.UID(fmt.Sprintf("pg-%s-%d", k.Name, w.nextID)), CreationTimestamp: created, Generation: 1}}
		w.nextID++
		if w.rng.Intn(5) == 0 {
			g.Spec.SchedulingPolicy.Basic = &v1alpha1.BasicSchedulingPolicy{}
		} else {
			g.Spec.SchedulingPolicy.Gang = &v1alpha1.GangSchedulingPolicy{MinCount: int32(1 + w.rng.Intn(4))}
		}
		if w.rng.Intn(4) == 0 {
			g.Spec.ScheduleTimeoutSeconds = ptr.To(int32(1 + w.rng.Intn(20)))
		}
		g.Spec.ParentCompositePodGroupName = parent()
		return g
	default:
		g := &v1alpha1.CompositePodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: k.Name, UID: types.UID(fmt.Sprintf("cpg-%s-%d", k.Name, w.nextID)), CreationTimestamp: created, Generation: 1}}
		w.nextID++
		if w.rng.Intn(4) == 0 {
			g.Spec.SchedulingPolicy.Basic = &v1alpha1.BasicSchedulingPolicy{}
		} else {
			g.Spec.SchedulingPolicy.Gang = &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: int32(1 + w.rng.Intn(2))}
		}
		if w.rng.Intn(3) == 0 {
			g.Spec.ParentCompositePodGroupName = parent()
		}
		return g
	}
}

func (w *world) randomKey() Key {
	if w.rng.Intn(3) == 0 {
		return CompositePodGroupKey("ns", w.pick(compositeNames))
	}
	return PodGroupKey("ns", w.pick(podGroupNames))
}

// changeGroup creates, edits (minimum) or deletes a group; deleting and creating again is
// how a group is re-parented (the parent is immutable).
func (w *world) changeGroup() {
	k := w.randomKey()
	old, exists := w.groups[k]
	switch {
	case !exists:
		obj := w.groupObject(k)
		w.groups[k] = obj
		w.logf("create %s %s", k, describeGroup(obj))
		w.groupEventLater(nil, obj)
	case w.rng.Intn(2) == 0:
		cur := old.DeepCopyObject()
		switch g := cur.(type) {
		case *v1alpha1.PodGroup:
			if g.Spec.SchedulingPolicy.Gang == nil {
				return
			}
			g.Spec.SchedulingPolicy.Gang.MinCount = int32(1 + w.rng.Intn(4))
			g.Generation++
		case *v1alpha1.CompositePodGroup:
			if g.Spec.SchedulingPolicy.Gang == nil {
				return
			}
			g.Spec.SchedulingPolicy.Gang.MinGroupCount = int32(1 + w.rng.Intn(2))
			g.Generation++
		}
		w.groups[k] = cur
		w.logf("edit %s %s", k, describeGroup(cur))
		w.groupEventLater(old, cur)
	default:
		delete(w.groups, k)
		w.logf("delete %s", k)
		w.groupEventLater(old, nil)
	}
}

func describeGroup(obj runtime.Object) string {
	switch g := obj.(type) {
	case *v1alpha1.PodGroup:
		s := "basic"
		if g.Spec.SchedulingPolicy.Gang != nil {
			s = fmt.Sprintf("min=%d", g.Spec.SchedulingPolicy.Gang.MinCount)
		}
		return s + " parent=" + ptr.Deref(g.Spec.ParentCompositePodGroupName, "")
	case *v1alpha1.CompositePodGroup:
		s := "basic"
		if g.Spec.SchedulingPolicy.Gang != nil {
			s = fmt.Sprintf("minGroups=%d", g.Spec.SchedulingPolicy.Gang.MinGroupCount)
		}
		return s + " parent=" + ptr.Deref(g.Spec.ParentCompositePodGroupName, "")
	}
	return ""
}

// --- the scheduler ---

// scheduleOne runs one scheduling cycle for a pending pod: PreEnqueue, PreFilter, then
// Reserve and Permit if it fits, PostFilter if not.
func (w *world) scheduleOne() {
	sp := w.randomPod(func(sp *simPod) bool { return sp.state == statePending })
	if sp == nil {
		return
	}
	w.cycle(sp, false)
}

func (w *world) cycle(sp *simPod, allFit bool) {
	p := sp.obj
	if sp.gated {
		return
	}
	if ok, why := w.model.preEnqueue(p); !ok {
		sp.gated = strings.Contains(why, scoutWords)
		return
	}
	if ok, _ := w.model.preFilter(p); !ok {
		w.logf("prefilter refused %s", p.Name)
		return
	}
	if sp.unfit && !allFit {
		w.logf("postfilter %s", p.Name)
		w.model.postFilter(p, "0/1 nodes are available: 1 Insufficient cpu")
		return
	}
	node := fmt.Sprintf("n%d", w.rng.Intn(3))
	assumed := p.DeepCopy()
	assumed.Spec.NodeName = node
	sp.assumed = assumed
	w.model.reserve(assumed, node)
	if !allFit && w.rng.Intn(8) == 0 {
		// The model's timers run on their own goroutine: they may fire between a member's
		// Reserve and its Permit.
		w.advance(time.Duration(w.rng.Intn(70000)) * time.Millisecond)
		if w.pods[sp.obj.UID] != sp {
			return
		}
	}
	// The pod waits before Permit returns: a concurrent Allow of the same pod is no news.
	sp.state = stateWaiting
	code, timeout := w.model.permit(assumed)
	switch {
	case sp.state == stateBinding:
		// allowed through the framework while in Permit
	case sp.rejected:
		// rejected while in Permit (e.g. by the model releasing its own tree): Unreserve follows
	case code == "allow":
		sp.state = stateBinding
		w.batch = append(w.batch, sp)
		w.logf("permit allowed %s", p.Name)
	case code == "wait":
		sp.deadline = w.clk.Now().Add(timeout)
		sp.wait++
		wait := sp.wait
		// The framework's own permit timeout runs on the same clock as the model's timers.
		w.clk.AfterFunc(timeout, func() {
			if cur := w.pods[sp.obj.UID]; cur == sp && sp.state == stateWaiting && !sp.rejected && sp.wait == wait {
				w.logf("framework timeout %s", sp.obj.Name)
				w.reject(sp.obj, "timeout")
			}
		})
		w.logf("permit %s waits %s", p.Name, timeout)
	default:
		w.logf("permit rejected %s", p.Name)
		sp.state = statePending
		w.model.unreserve(assumed)
		sp.assumed = nil
	}
}

// runUnreserve makes one pending Unreserve call of a binding goroutine.
func (w *world) runUnreserve() {
	if len(w.unreserves) == 0 {
		return
	}
	i := w.rng.Intn(len(w.unreserves))
	sp := w.unreserves[i]
	w.unreserves = append(w.unreserves[:i], w.unreserves[i+1:]...)
	w.logf("unreserve %s", sp.obj.Name)
	sp.state, sp.rejected = statePending, false
	assumed := sp.assumed
	sp.assumed = nil
	w.model.unreserve(assumed)
}

// bindOne binds an allowed pod (or fails to: a webhook refuses the binding).
func (w *world) bindOne() {
	sp := w.randomPod(func(sp *simPod) bool { return sp.state == stateBinding })
	if sp == nil {
		return
	}
	if w.rng.Intn(10) == 0 {
		w.logf("binding %s failed", sp.obj.Name)
		sp.state = statePending
		assumed := sp.assumed
		sp.assumed = nil
		w.model.unreserve(assumed)
		return
	}
	old := sp.obj
	cur := old.DeepCopy()
	cur.Spec.NodeName = sp.assumed.Spec.NodeName
	sp.obj, sp.state, sp.assumed = cur, stateBound, nil
	w.logf("bound %s", cur.Name)
	w.podEventLater(old, cur)
}

// advance moves time: the model's timers and the framework's permit timeouts fire, in the
// order of their times.
func (w *world) advance(d time.Duration) {
	w.logf("advance %s", d)
	w.clk.Step(d)
	w.checkBatch()
}

func (w *world) sortedPods() []*simPod {
	out := make([]*simPod, 0, len(w.pods))
	for _, sp := range w.pods {
		out = append(out, sp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].obj.Name < out[j].obj.Name })
	return out
}

// deliver hands the model n lagging informer events, each taken from the front of the pod
// or the group queue, at random: the informers of pods and of groups deliver independently.
func (w *world) deliver(n int) {
	for ; n > 0 && w.lagging() > 0; n-- {
		q := &w.podLag
		if len(w.podLag) == 0 || (len(w.groupLag) > 0 && w.rng.Intn(2) == 0) {
			q = &w.groupLag
		}
		e := (*q)[0]
		*q = (*q)[1:]
		e()
	}
}

// syncStatus plays the status writer: the model's conditions land on the objects.
func (w *world) syncStatus() {
	for k, obj := range w.groups {
		c, ok := w.model.condition(k.Kind, k.Name)
		if !ok {
			continue
		}
		if m, _ := meta.Accessor(obj); m.GetUID() != c.UID {
			continue // as the status writer: never on an object the model has not judged
		}
		var conds *[]metav1.Condition
		cur := obj.DeepCopyObject()
		switch g := cur.(type) {
		case *v1alpha1.PodGroup:
			conds = &g.Status.Conditions
		case *v1alpha1.CompositePodGroup:
			conds = &g.Status.Conditions
		}
		if c := meta.FindStatusCondition(*conds, v1alpha1.PodGroupInitiallyScheduled); c != nil && c.Status == metav1.ConditionTrue {
			continue
		}
		meta.SetStatusCondition(conds, metav1.Condition{Type: v1alpha1.PodGroupInitiallyScheduled, Status: c.Status, Reason: c.Reason, ObservedGeneration: c.Generation})
		w.groups[k] = cur
		old := obj
		w.groupEventLater(old, cur)
	}
}

// restart replaces the model with a new one that lists the cluster: reservations are lost
// (waiting and binding pods are pending again), as when the scheduler is killed.
func (w *world) restart() {
	w.logf("restart")
	w.podLag, w.groupLag, w.unreserves = nil, nil, nil
	for _, sp := range w.pods {
		if sp.state == stateWaiting || sp.state == stateBinding {
			sp.state, sp.rejected, sp.assumed = statePending, false, nil
		}
		sp.gated = false // the new scheduler's queue runs PreEnqueue for every pod
	}
	w.clk.timers = nil // the old model's timers die with it
	w.model = newSUT(w.t, w.clk, w)
	w.seenGroups, w.seenLabels = map[Key]runtime.Object{}, map[types.UID]string{}
	keys := make([]Key, 0, len(w.groups))
	for k := range w.groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		w.sendGroup(nil, w.groups[k])
	}
	for _, sp := range w.sortedPods() {
		w.sendPod(nil, sp.obj)
	}
}

// --- ground truth ---

func minimumOf(obj runtime.Object) int {
	switch g := obj.(type) {
	case *v1alpha1.PodGroup:
		if g.Spec.SchedulingPolicy.Gang != nil {
			return int(g.Spec.SchedulingPolicy.Gang.MinCount)
		}
	case *v1alpha1.CompositePodGroup:
		if g.Spec.SchedulingPolicy.Gang != nil {
			return int(g.Spec.SchedulingPolicy.Gang.MinGroupCount)
		}
	}
	return 1
}

func parentOf(obj runtime.Object) (Key, bool) {
	var p *string
	var ns string
	switch g := obj.(type) {
	case *v1alpha1.PodGroup:
		p, ns = g.Spec.ParentCompositePodGroupName, g.Namespace
	case *v1alpha1.CompositePodGroup:
		p, ns = g.Spec.ParentCompositePodGroupName, g.Namespace
	}
	if p == nil || *p == "" {
		return Key{}, false
	}
	return CompositePodGroupKey(ns, *p), true
}

// labelOf is the group of a live pod as the model can know it: the label of the last event
// it had, or the pod's own label if the pod is so new that no event reached it yet.
func (w *world) labelOf(sp *simPod) string {
	if l, ok := w.seenLabels[sp.obj.UID]; ok {
		return l
	}
	return sp.obj.Labels[v1alpha1.PodGroupLabel]
}

// truthReady reports whether a group's requirement holds by live pods that are binding or
// bound (or it was initially scheduled with at least its current minimum), and whether its
// hierarchy is valid.
func (w *world) truthReady(k Key, seen map[Key]bool) bool {
	obj, ok := w.seenGroups[k]
	if !ok || seen[k] || len(seen) > v1alpha1.MaxTreeDepth {
		return false
	}
	if m, ok := w.scheduled[k]; ok && minimumOf(obj) <= m {
		return true
	}
	below := map[Key]bool{k: true}
	for s := range seen {
		below[s] = true
	}
	switch k.Kind {
	case KindPodGroup:
		n := 0
		for _, sp := range w.pods {
			if w.labelOf(sp) == k.Name && (sp.state == stateBinding || sp.state == stateBound) {
				n++
			}
		}
		return n >= minimumOf(obj)
	default:
		n := 0
		for ck, cobj := range w.seenGroups {
			if pk, ok := parentOf(cobj); ok && pk == k {
				if w.truthReady(ck, below) {
					n++
				}
			}
		}
		return n >= minimumOf(obj)
	}
}

// truthPathReady walks from a PodGroup to its root; the hierarchy must be valid.
func (w *world) truthPathReady(k Key) (bool, []Key) {
	var path []Key
	seen := map[Key]bool{}
	for {
		if seen[k] || len(path) >= v1alpha1.MaxTreeDepth {
			return false, path
		}
		obj, ok := w.seenGroups[k]
		if !ok {
			return false, path
		}
		seen[k] = true
		path = append(path, k)
		if !w.truthReady(k, map[Key]bool{}) {
			return false, path
		}
		pk, ok := parentOf(obj)
		if !ok {
			return true, path
		}
		k = pk
	}
}

// checkBatch checks the pods allowed in this step: each one's tree must be ready counting
// only live members that bind, unless its groups were initially scheduled.
func (w *world) checkBatch() {
	w.checkHeld()
	batch := w.batch
	w.batch = nil
	for _, sp := range batch {
		if _, live := w.pods[sp.obj.UID]; !live {
			continue // counted nowhere; its binding fails
		}
		k := PodGroupKey("ns", w.labelOf(sp))
		ok, path := w.truthPathReady(k)
		if !ok {
			w.violation("%s allowed to bind but its tree is not ready counting live members (path %v)", sp.obj.Name, path)
		}
	}
	// Record groups that are now initially scheduled: every group on the path of a PodGroup
	// whose path is ready (a PodGroup scheduled long ago still makes its parent ready under a
	// minimum raised since).
	for k := range w.seenGroups {
		if k.Kind != KindPodGroup {
			continue
		}
		if ok, path := w.truthPathReady(k); ok {
			for _, pk := range path {
				if m, done := w.scheduled[pk]; !done || m < minimumOf(w.seenGroups[pk]) {
					w.scheduled[pk] = minimumOf(w.seenGroups[pk])
				}
			}
		}
	}
}

// checkHeld checks that news would retry every tree held back after a failed attempt, and
// no other.
func (w *world) checkHeld() {
	news, all := w.model.held()
	slices.SortFunc(news, compareKeys)
	slices.SortFunc(all, compareKeys)
	if !slices.Equal(news, all) {
		w.violation("news would retry %v; the trees held back are %v", news, all)
	}
}

func compareKeys(a, b Key) int { return strings.Compare(a.String(), b.String()) }

// checkQuiet runs once the model has caught up: its waiters are exactly the pods waiting at
// Permit, and every pending member has a reason or may be scheduled.
func (w *world) checkQuiet() {
	want := map[types.UID]bool{}
	for uid, sp := range w.pods {
		if sp.state == stateWaiting && !sp.rejected {
			want[uid] = true
		}
	}
	got := map[types.UID]bool{}
	for _, uid := range w.model.waiters() {
		got[uid] = true
		if !want[uid] {
			w.violation("the model holds %s as a waiter, but it does not wait at Permit", uid)
		}
	}
	for uid := range want {
		if !got[uid] {
			w.violation("%s waits at Permit unknown to the model", uid)
		}
	}
	for _, sp := range w.sortedPods() {
		if sp.state != statePending {
			continue
		}
		if ok, msg := w.model.preEnqueue(sp.obj); !ok && strings.TrimSpace(msg) == "" {
			w.violation("pending pod %s is held without a reason", sp.obj.Name)
		}
		if peek, queueable := w.model.roomHint(sp.obj); peek != queueable {
			w.violation("a room hint for %s answers %v where Peek says %v", sp.obj.Name, queueable, peek)
		}
	}
}

// scoutWords are in the message of a member held for its gang's scout.
const scoutWords = "first; its other members are scheduled once"

// settle lets the world reach quiescence with room for every pod: informers catch up,
// timeouts pass, the scheduler retries every pod it may schedule, bindings complete.
func (w *world) settle() {
	for round := 0; round < 12; round++ {
		w.deliver(w.lagging())
		for len(w.unreserves) > 0 {
			w.runUnreserve()
			w.deliver(w.lagging())
		}
		for pass := 0; pass < 4; pass++ {
			before := w.activations
			for _, sp := range w.sortedPods() {
				if sp.state == statePending {
					w.cycle(sp, true)
					w.checkBatch()
				}
			}
			if w.activations == before {
				break
			}
		}
		for _, sp := range w.sortedPods() {
			if sp.state == stateBinding {
				old := sp.obj
				cur := old.DeepCopy()
				cur.Spec.NodeName = sp.assumed.Spec.NodeName
				sp.obj, sp.state, sp.assumed = cur, stateBound, nil
				w.sendPod(old, cur)
			}
		}
		w.advance(2 * time.Minute)
		w.deliver(w.lagging())
		for len(w.unreserves) > 0 {
			w.runUnreserve()
		}
		w.checkBatch()
	}
	w.deliver(w.lagging())
	w.checkQuiet()
	for _, sp := range w.sortedPods() {
		if sp.state != statePending {
			continue
		}
		ok, why := w.model.preEnqueue(sp.obj)
		if !ok && strings.Contains(why, scoutWords) {
			// Every pod was tried again and again with room for all: a scout's tree is open.
			w.violation("pending pod %s still waits for a scout (%s), yet never bound", sp.obj.Name, why)
		}
		if ok {
			if ok, msg := w.model.preFilter(sp.obj); ok {
				w.violation("pending pod %s may be scheduled and fits, yet never bound", sp.obj.Name)
			} else if strings.TrimSpace(msg) == "" {
				w.violation("pending pod %s refused without a reason", sp.obj.Name)
			}
		}
	}
}

// step performs one random operation.
func (w *world) step() {
	switch r := w.rng.Intn(100); {
	case r < 18:
		w.createPod()
	case r < 24:
		w.deletePod()
	case r < 25:
		w.relabelPod()
	case r < 27:
		w.completePod()
	case r < 48:
		w.scheduleOne()
	case r < 52:
		w.preemptWaiter()
	case r < 64:
		w.deliver(1 + w.rng.Intn(4))
	case r < 72:
		w.runUnreserve()
	case r < 78:
		w.advance(time.Duration(w.rng.Intn(30000)) * time.Millisecond)
	case r < 86:
		w.bindOne()
	case r < 94:
		w.changeGroup()
	case r < 95:
		w.logf("node event")
		w.model.nodeEvent()
	case r < 96:
		name := fmt.Sprintf("n%d", w.rng.Intn(3))
		w.logf("node %s deleted", name)
		w.model.nodeDeleted(name)
	case r < 99:
		w.syncStatus()
	default:
		w.restart()
	}
	w.checkBatch()
	if w.lagging() == 0 && len(w.unreserves) == 0 {
		w.checkQuiet()
	}
}

// runSequence runs one seeded sequence; it returns the violations, with the steps that led
// to the first.
func runSequence(t *testing.T, seed int64, steps int) (fails []string, log []string) {
	w := newWorld(t, seed)
	defer func() {
		if r := recover(); r != nil {
			fails = append(w.fails, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
			log = w.log
		}
	}()
	for i := 0; i < steps && len(w.fails) == 0; i++ {
		w.step()
	}
	if len(w.fails) == 0 {
		w.settle()
	}
	return w.fails, w.log
}

// TestGroupModelInvariants runs thousands of seeded sequences. INVARIANT_SEEDS raises the
// count; INVARIANT_SEED reruns one sequence.
func TestGroupModelInvariants(t *testing.T) {
	seeds := 3000
	if s, err := strconv.Atoi(os.Getenv("INVARIANT_SEEDS")); err == nil {
		seeds = s
	}
	first := int64(1)
	if s, err := strconv.ParseInt(os.Getenv("INVARIANT_SEED"), 10, 64); err == nil {
		first, seeds = s, 1
	}
	failed := 0
	kinds := map[string]int{}
	for seed := first; seed < first+int64(seeds); seed++ {
		fails, log := runSequence(t, seed, 150)
		if len(fails) == 0 {
			continue
		}
		failed++
		kind := fails[0]
		if i := strings.IndexAny(kind, "0123456789"); i > 0 {
			kind = kind[:i]
		}
		for _, marker := range []string{"allowed to bind", "no longer waits", "holds", "unknown to the model", "without a reason", "never bound", "panic"} {
			if strings.Contains(fails[0], marker) {
				kind = marker
			}
		}
		kinds[kind]++
		if kinds[kind] == 1 {
			if len(log) > 60 && os.Getenv("INVARIANT_SEED") == "" {
				log = log[len(log)-60:]
			}
			t.Errorf("seed %d: %s\nlast steps:\n  %s", seed, strings.Join(fails, "\n"), strings.Join(log, "\n  "))
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d sequences broke an invariant (rerun one with INVARIANT_SEED=<seed>): %v", failed, seeds, kinds)
	}
}

// --- a deterministic clock ---

// simClock is a manual clock whose timers run synchronously, in order of their time (then of
// their arming), when time is stepped, and never under a lock of the clock's. Its timers are
// kept in a heap: a soak arms hundreds of thousands of them.
type simClock struct {
	now    time.Time
	seq    int
	timers timerHeap
}

type simTimer struct {
	at      time.Time
	seq     int
	fn      func()
	stopped bool
}

func newSimClock(t time.Time) *simClock { return &simClock{now: t} }

func (c *simClock) Now() time.Time                  { return c.now }
func (c *simClock) Since(t time.Time) time.Duration { return c.now.Sub(t) }

func (c *simClock) AfterFunc(d time.Duration, fn func()) Timer {
	c.seq++
	tm := &simTimer{at: c.now.Add(d), seq: c.seq, fn: fn}
	heap.Push(&c.timers, tm)
	return tm
}

func (t *simTimer) Stop() bool {
	was := !t.stopped
	t.stopped = true
	return was
}

// Len counts the timers neither fired nor stopped.
func (c *simClock) Len() int {
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// Step advances time by d, running due timers in order of their time.
func (c *simClock) Step(d time.Duration) {
	end := c.now.Add(d)
	for c.timers.Len() > 0 && !c.timers[0].at.After(end) {
		tm := heap.Pop(&c.timers).(*simTimer)
		if tm.stopped {
			continue
		}
		if tm.at.After(c.now) {
			c.now = tm.at
		}
		tm.stopped = true
		tm.fn()
	}
	c.now = end
}

// timerHeap orders timers by time, then by arming.
type timerHeap []*simTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(*simTimer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
