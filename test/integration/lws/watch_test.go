package lws

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The oracle of these tests is what the apiserver recorded, in its order of writes: a watch of
// the namespace's pods (every bind, with the state of every other pod at that moment) and one
// of its StatefulSets (which leader pod owns each worker StatefulSet). An incarnation of a
// replica group — what a gang must bind whole — is identified without asking lockstep: a
// leader pod's UID, and for a worker the UID of the leader pod that owns the worker
// StatefulSet that owns the worker.

// podSeen is what the pod watch last saw of a pod.
type podSeen struct {
	uid         types.UID
	lws         string // its LWS name label ("" for pods LWS did not make)
	group       string // its group index
	worker      string // its worker index ("0": the leader)
	revision    string
	owner       types.UID // its controller's UID (a StatefulSet)
	node        string
	terminating bool
}

func (s podSeen) String() string {
	state := ""
	if s.terminating {
		state = " terminating"
	}
	return fmt.Sprintf("{uid:%s rev:%s node:%q%s}", short(s.uid), s.revision, s.node, state)
}

func (s podSeen) leader() bool { return s.lws != "" && s.worker == "0" }

func short(uid types.UID) string {
	if len(uid) > 8 {
		return string(uid[:8])
	}
	return string(uid)
}

// bindSnapshot is the state of every live pod the watch had seen when it saw pod bound.
type bindSnapshot struct {
	pod  string
	uid  types.UID
	node string
	pods map[string]podSeen
}

// podWatch follows the pods and StatefulSets of a namespace in the apiserver's order of
// writes.
type podWatch struct {
	mu       sync.Mutex
	state    map[string]podSeen
	binds    []bindSnapshot
	stsOwner map[types.UID]types.UID // StatefulSet UID → its controller's UID (a leader pod for a worker StatefulSet)
}

func (w *podWatch) seePod(p *v1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted {
		if s, ok := w.state[p.Name]; ok && s.uid == p.UID {
			delete(w.state, p.Name)
		}
		return
	}
	prev, seen := w.state[p.Name]
	if seen && prev.uid != p.UID {
		seen = false
	}
	s := podSeen{uid: p.UID, lws: p.Labels[testenv.LWSNameLabel], group: p.Labels[testenv.LWSGroupIndexLabel],
		worker: p.Labels[testenv.LWSWorkerIndexLabel], revision: p.Labels[testenv.LWSRevisionLabel],
		node: p.Spec.NodeName, terminating: p.DeletionTimestamp != nil}
	if ref := metav1.GetControllerOf(p); ref != nil {
		s.owner = ref.UID
	}
	w.state[p.Name] = s
	switch {
	case s.node != "" && (!seen || prev.node == ""):
		snap := bindSnapshot{pod: p.Name, uid: p.UID, node: s.node, pods: map[string]podSeen{}}
		for k, v := range w.state {
			snap.pods[k] = v
		}
		w.binds = append(w.binds, snap)
	}
}

func (w *podWatch) seeStatefulSet(s *appsv1.StatefulSet) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ref := metav1.GetControllerOf(s); ref != nil {
		w.stsOwner[s.UID] = ref.UID
	}
}

// incarnation returns the leader UID of the group incarnation a pod belongs to, "" if it is
// no LWS pod or its worker StatefulSet was not seen.
func (w *podWatch) incarnation(s podSeen) types.UID {
	if s.lws == "" {
		return ""
	}
	if s.leader() {
		return s.uid
	}
	return w.stsOwner[s.owner]
}

// groupBinds is what the watch saw of one incarnation of a replica group.
type groupBinds struct {
	lws, group, revision string
	leader               types.UID
	binds                int
	// firstBind is the first of its pods to bind, and liveAtFirst how many of its pods existed
	// (not terminating) then.
	firstBind   string
	liveAtFirst int
	// maxBound is the most of its pods the watch saw bound at once (live, not terminating).
	maxBound int
	// stateAtFirst describes the incarnation's pods at its first bind.
	stateAtFirst string
}

// groups returns, per incarnation (its leader's UID), what the watch saw of LWS lws's binds.
func (w *podWatch) groups(lws string) map[types.UID]*groupBinds {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[types.UID]*groupBinds{}
	for _, b := range w.binds {
		me := b.pods[b.pod]
		if me.lws != lws {
			continue
		}
		inc := w.incarnation(me)
		g := out[inc]
		live, bound := 0, 0
		var members []string
		for name, s := range b.pods {
			if s.lws != lws || w.incarnation(s) != inc {
				continue
			}
			members = append(members, name+s.String())
			if s.terminating {
				continue
			}
			live++
			if s.node != "" {
				bound++
			}
		}
		if g == nil {
			sort.Strings(members)
			g = &groupBinds{lws: lws, group: me.group, revision: me.revision, leader: inc, firstBind: b.pod, liveAtFirst: live,
				stateAtFirst: strings.Join(members, " ")}
			out[inc] = g
		}
		g.binds++
		g.maxBound = max(g.maxBound, bound)
	}
	return out
}

// caughtUp says whether the watch has seen each of pods (read from the apiserver after the
// caller's wait) as it is: same UID, same node, and for a worker the StatefulSet that tells its
// group incarnation. A list can be ahead of a watch; an oracle read before the watch caught up
// would miss binds the caller just waited for.
func (w *podWatch) caughtUp(pods []*v1.Pod) (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range pods {
		s, ok := w.state[p.Name]
		switch {
		case !ok || s.uid != p.UID:
			return false, "pod " + p.Name + " not seen yet"
		case s.node != p.Spec.NodeName:
			return false, fmt.Sprintf("pod %s seen on node %q, listed on %q", p.Name, s.node, p.Spec.NodeName)
		case !s.leader() && s.lws != "" && w.stsOwner[s.owner] == "":
			return false, "the StatefulSet of pod " + p.Name + " not seen yet"
		}
	}
	return true, ""
}

// live returns the pods the watch last saw, by name.
func (w *podWatch) live() map[string]podSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]podSeen{}
	for k, v := range w.state {
		out[k] = v
	}
	return out
}

// watchPods starts following the pods and StatefulSets of the test's namespace (no pods yet)
// until the test ends.
func (e *lwsEnv) watchPods() *podWatch {
	e.t.Helper()
	w := &podWatch{state: map[string]podSeen{}, stsOwner: map[types.UID]types.UID{}}
	e.FollowPods(e.t, e.ns, w.seePod)
	sets := e.Client.AppsV1().StatefulSets(e.ns)
	stsList, err := sets.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for i := range stsList.Items {
		w.seeStatefulSet(&stsList.Items[i])
	}
	testenv.Follow(e.t, stsList.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return sets.Watch(ctx, o) },
		func(ev watch.Event) {
			if s, ok := ev.Object.(*appsv1.StatefulSet); ok {
				w.seeStatefulSet(s)
			}
		})
	return w
}

// checkBoundWhole checks from the watch that every incarnation of LWS lws's replica groups
// that bound any pod bound whole: when its first pod bound, all size of its pods existed (a
// leader bound before its workers exist is a replica scheduled pod by pod), and all size were
// seen bound at once. It returns the incarnations, by leader UID.
func (e *lwsEnv) checkBoundWhole(lws string, size int) map[types.UID]*groupBinds {
	e.t.Helper()
	testenv.Eventually(e.t, 30*time.Second, "the watch of LeaderWorkerSet "+lws+"'s pods caught up with a list", func() (bool, string) {
		return e.watch.caughtUp(e.lwsPods(lws))
	})
	groups := e.watch.groups(lws)
	for inc, g := range groups {
		if inc == "" {
			e.t.Errorf("LeaderWorkerSet %s: a pod bound whose group the watch cannot tell (no worker StatefulSet seen): first %s: %s", lws, g.firstBind, g.stateAtFirst)
			continue
		}
		if g.liveAtFirst != size {
			e.t.Errorf("LeaderWorkerSet %s group %s (leader %s): pod %s bound while %d of the group's %d pods existed: %s",
				lws, g.group, short(inc), g.firstBind, g.liveAtFirst, size, g.stateAtFirst)
		}
		if g.maxBound != size {
			e.t.Errorf("LeaderWorkerSet %s group %s (leader %s): at most %d of its %d pods seen bound at once (%d binds)",
				lws, g.group, short(inc), g.maxBound, size, g.binds)
		}
	}
	return groups
}
