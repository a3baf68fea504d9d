package podgroup

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// Frameworks is the Scheduler of a kube-scheduler: the frameworks of the profiles the model
// serves (one queue for all of them, a map of waiting pods per profile) and the scheduler's
// pod cache.
type Frameworks struct {
	mu      sync.Mutex
	handles map[string]fwk.Handle
	// plugin is the Permit plugin whose waits the model ends.
	plugin string
	pods   corelisters.PodLister
	// sleep waits between two looks for a waiting pod (onWaiting).
	sleep func(time.Duration)
}

var _ Scheduler = &Frameworks{}

// NewFrameworks returns a Scheduler that allows and rejects pods waiting on plugin.
func NewFrameworks(plugin string, pods corelisters.PodLister) *Frameworks {
	return &Frameworks{handles: map[string]fwk.Handle{}, plugin: plugin, pods: pods, sleep: time.Sleep}
}

// Add registers the framework of a profile.
func (f *Frameworks) Add(h fwk.Handle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handles[h.ProfileName()] = h
}

func (f *Frameworks) handle(profile string) fwk.Handle {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.handles[profile]; ok {
		return h
	}
	for _, h := range f.handles {
		return h // the scheduling queue is shared by every profile
	}
	return nil
}

// Activate moves pods to the active queue, in their order: one pod per call of the queue's,
// whose scheduling loop may pop between two (it walks a call's pods in map order;
// Model.queueOrderLocked says why the order matters).
func (f *Frameworks) Activate(logger klog.Logger, pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	h := f.handle(pods[0].Spec.SchedulerName)
	if h == nil {
		return
	}
	for _, p := range pods {
		h.Activate(logger, map[string]*v1.Pod{p.Namespace + "/" + p.Name: p})
	}
}

// Hold sends pods back through PreEnqueue: the queue's activation runs it for a pod it holds
// as unschedulable, and marks a pod in its cycle to go through it when it comes back.
func (f *Frameworks) Hold(logger klog.Logger, pods []*v1.Pod) { f.Activate(logger, pods) }

// Allow lets a waiting pod bind.
func (f *Frameworks) Allow(pod *v1.Pod) {
	f.onWaiting(pod, "allow", func(wp fwk.WaitingPod) { wp.Allow(f.plugin) })
}

// Reject refuses a waiting pod.
func (f *Frameworks) Reject(pod *v1.Pod, msg string) {
	f.onWaiting(pod, "reject", func(wp fwk.WaitingPod) { wp.Reject(f.plugin, msg) })
}

// onWaiting applies fn to the pod's entry in its profile's waiting pods. The framework
// registers a pod as waiting just after Permit returns: a decision made in between (by
// another event) finds no entry yet, so it is retried, every 10 ms for a second, then every
// 100 ms up to onWaitingLimit (a scheduler starved of CPU may take that long). A retried
// decision applies only to the wait it was made for — the entry holding the very copy of the
// pod its scheduling cycle reserved with (pod) — never to a later cycle of the same pod (its
// bind refused, its gang failed and retried whole, it waits for its gang again): an Allow
// meant for a wait that ended would let it bind without its gang. A decision that never
// finds its wait (the framework let it go: another plugin rejected it, or the pod was
// deleted) is logged, never dropped silently; the framework's Unreserve tells the model.
func (f *Frameworks) onWaiting(pod *v1.Pod, what string, fn func(fwk.WaitingPod)) {
	h := f.handle(pod.Spec.SchedulerName)
	if h == nil {
		return
	}
	if wp := h.GetWaitingPod(pod.UID); wp != nil {
		fn(wp)
		return
	}
	go f.retryOnWaiting(h, pod, what, fn)
}

// retryOnWaiting looks for the wait a decision was made for until onWaitingLimit (onWaiting).
func (f *Frameworks) retryOnWaiting(h fwk.Handle, pod *v1.Pod, what string, fn func(fwk.WaitingPod)) {
	{
		waited := time.Duration(0)
		for i := 0; waited < onWaitingLimit; i++ {
			d := 10 * time.Millisecond
			if i >= 100 {
				d = 100 * time.Millisecond
			}
			f.sleep(d)
			waited += d
			wp := h.GetWaitingPod(pod.UID)
			if wp == nil {
				continue
			}
			if wp.GetPod() != pod {
				// Another cycle's wait: the one this decision was for ended unseen.
				klog.Background().V(4).Info("A gang decision found a later wait of its pod, not the one it was made for; dropped", "pod", klog.KObj(pod), "decision", what)
				metrics.lostDecisions.WithLabelValues(what).Inc()
				return
			}
			fn(wp)
			return
		}
		metrics.lostDecisions.WithLabelValues(what).Inc()
		klog.Background().Error(nil, "A gang decision found no waiting pod: the framework no longer holds it at Permit", "pod", klog.KObj(pod), "decision", what, "after", onWaitingLimit)
	}
}

// onWaitingLimit bounds how long a decision looks for its waiting pod: the framework's own
// permit timeout of a waiter is permitGrace after the model's deadline, so a pod not waiting
// by then never will.
const onWaitingLimit = 30 * time.Second

// Live reports whether a pod exists and is not being deleted, from the scheduler's pod cache
// (updated before any event handler runs, so ahead of the model).
func (f *Frameworks) Live(pod *v1.Pod) bool {
	if f.pods == nil {
		return true
	}
	cur, err := f.pods.Pods(pod.Namespace).Get(pod.Name)
	return err == nil && cur.UID == pod.UID && !terminated(cur)
}

// Rejecter is asked before a waiting pod is rejected in memory (Permits.Rejecting), and
// before the binding cycle of a pod in PreBind is cancelled (Permits.Cancelling).
type Rejecter interface {
	Rejecting(logger klog.Logger, pod *v1.Pod, why string) bool
	Cancelling(uid types.UID) bool
}

// Guard returns fh, but for its waiting pods and pods in PreBind: rejecting or preempting a
// waiting pod in memory asks the group model first (Permits.Rejecting), so that a member the
// framework stops counts no more before any other member of its tree can be allowed, and a
// member the model already allowed is not stopped: it is allowed at once if its Allow is
// still on its way, and the rejection fails, so that upstream's preemption executor deletes
// it instead, as it deletes a bound victim. Cancelling the binding cycle of a member in
// PreBind (upstream's executor does, for a victim) asks the model too (Permits.Cancelling):
// an allowed member counted toward its gang, so its bind goes on and the executor deletes
// it, rather than the gang binding short in memory. Preemption executors (lockstep's own, and upstream's DefaultPreemption
// where lockstep builds it) reject waiting pods through such a handle.
func Guard(fh fwk.Handle, r Rejecter, permitPlugin string) fwk.Handle {
	return guardedHandle{Handle: fh, r: r, plugin: permitPlugin}
}

type guardedHandle struct {
	fwk.Handle
	r      Rejecter
	plugin string
}

func (g guardedHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	wp := g.Handle.GetWaitingPod(uid)
	if wp == nil {
		return nil
	}
	return guardedWaitingPod{WaitingPod: wp, g: g}
}

func (g guardedHandle) GetPodInPreBind(uid types.UID) fwk.PodInPreBind {
	pb := g.Handle.GetPodInPreBind(uid)
	if pb == nil {
		return nil
	}
	return guardedPreBind{PodInPreBind: pb, g: g, uid: uid}
}

type guardedPreBind struct {
	fwk.PodInPreBind
	g   guardedHandle
	uid types.UID
}

func (b guardedPreBind) CancelPod(reason string) bool {
	if !b.g.r.Cancelling(b.uid) {
		return false
	}
	return b.PodInPreBind.CancelPod(reason)
}

func (g guardedHandle) RejectWaitingPod(uid types.UID) bool {
	if wp := g.GetWaitingPod(uid); wp != nil {
		return wp.Reject("", "removed")
	}
	return false
}

func (g guardedHandle) IterateOverWaitingPods(callback func(fwk.WaitingPod)) {
	g.Handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) { callback(guardedWaitingPod{WaitingPod: wp, g: g}) })
}

type guardedWaitingPod struct {
	fwk.WaitingPod
	g guardedHandle
}

func (w guardedWaitingPod) Reject(pluginName, msg string) bool {
	if !w.rejecting(msg) {
		return false
	}
	return w.WaitingPod.Reject(pluginName, msg)
}

func (w guardedWaitingPod) Preempt(pluginName, msg string) bool {
	if !w.rejecting(msg) {
		return false
	}
	return w.WaitingPod.Preempt(pluginName, msg)
}

// rejecting asks the model; a pod it allowed is allowed here too (its Allow may still be on
// its way, see Frameworks.onWaiting), so that the rejection that follows fails.
func (w guardedWaitingPod) rejecting(msg string) bool {
	if w.g.r.Rejecting(klog.Background(), w.GetPod(), msg) {
		return true
	}
	w.WaitingPod.Allow(w.g.plugin)
	return false
}
