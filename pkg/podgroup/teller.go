package podgroup

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	schedutil "k8s.io/kubernetes/pkg/scheduler/util"
)

// Teller writes why a pending gang member waits on the pod itself, for the members no
// scheduling cycle tried: those held out of the queue while their gang's scout tried the gang
// for them (scout.go). They are told what the scheduler tells the members it tried, in the
// same words, so that every pending member of a gang that does not fit says why (kubectl
// describe pod), and the condition is written once per gang, not per attempt.
//
// It also clears the nominatedNodeName a member's ended wait left on it (nominations.go):
// the same pod status, written by the same client.
//
// Neither call waits for the write.
type Teller interface {
	Tell(logger klog.Logger, pods []*v1.Pod, msg string)
	Unnominate(logger klog.Logger, pod *v1.Pod)
}

// tellWorkers is how many of the Teller's writes are in flight at once. The writes share the
// scheduler's client, and so its rate limiter, with the scheduling loop's own status writes,
// and client-go's limiter serves its waiters in turn: with a goroutine per failed try, each
// writing its gang's members, a scout's failure handler waited behind every member told before
// it (10,000 gangs of 8 arriving at once: 70,000 to tell), so that at qps 100 tries could not
// outpace the writes, 8 a try: about 12 a second. From a queue, a few at a time, the loop's
// write waits behind a few at most, and the members are told at the rate left to them. Four:
// a write took 20–60 ms with the apiserver busy, and two workers told 10,000 gangs' members at
// about 50 a second, half of qps 100.
const tellWorkers = 4

// PodTeller is the Teller of a running scheduler. It writes, from a queue of the pods it was asked about, the PodScheduled condition
// (False, reason Unschedulable) as the scheduler's failure handler does, and clears ended
// waits' nominations. It writes what the pod needs when its turn comes, read from the
// informer's copy: one write for a pod told twice before it was written, none for a pod bound,
// deleted or recreated meanwhile, or for a nomination that changed since.
type PodTeller struct {
	client kubernetes.Interface
	pods   corelisters.PodLister
	queue  workqueue.TypedInterface[types.NamespacedName]

	mu sync.Mutex
	// wants is, by pod, what the queue's next write of it is to say.
	wants map[types.NamespacedName]tellWant
}

// tellWant is what a pod's status is to say: the condition's message (msg, if tell), its
// nomination cleared if it still names unnominate.
type tellWant struct {
	uid        types.UID
	logger     klog.Logger
	tell       bool
	msg        string
	unnominate string
}

// NewTeller returns a Teller that writes through client once Run runs, reading pods' current
// status from pods.
func NewTeller(client kubernetes.Interface, pods corelisters.PodLister) *PodTeller {
	return &PodTeller{
		client: client,
		pods:   pods,
		queue:  workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[types.NamespacedName]{Name: "lockstep_pod_status"}),
		wants:  map[types.NamespacedName]tellWant{},
	}
}

func (t *PodTeller) Tell(logger klog.Logger, pods []*v1.Pod, msg string) {
	for _, pod := range pods {
		t.want(logger, pod, func(w *tellWant) { w.tell, w.msg = true, msg })
	}
}

func (t *PodTeller) Unnominate(logger klog.Logger, pod *v1.Pod) {
	if node := pod.Status.NominatedNodeName; node != "" {
		t.want(logger, pod, func(w *tellWant) { w.unnominate = node })
	}
}

// want records what pod is to say, on top of what it was to say already, and queues it.
func (t *PodTeller) want(logger klog.Logger, pod *v1.Pod, set func(*tellWant)) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	t.mu.Lock()
	w, ok := t.wants[key]
	if !ok || w.uid != pod.UID {
		w = tellWant{uid: pod.UID}
	}
	w.logger = logger
	set(&w)
	t.wants[key] = w
	t.mu.Unlock()
	t.queue.Add(key)
}

// Run writes until ctx is done.
func (t *PodTeller) Run(ctx context.Context) {
	defer t.queue.ShutDown()
	for range tellWorkers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for t.next(ctx) {
			}
		}, 0)
	}
	<-ctx.Done()
}

func (t *PodTeller) next(ctx context.Context) bool {
	key, quit := t.queue.Get()
	if quit {
		return false
	}
	defer t.queue.Done(key)
	t.mu.Lock()
	w, ok := t.wants[key]
	delete(t.wants, key)
	t.mu.Unlock()
	if ok {
		t.write(klog.NewContext(ctx, w.logger), key, w)
	}
	return true
}

// write brings the pod's status to what w wants, in one write if it needs one.
func (t *PodTeller) write(ctx context.Context, key types.NamespacedName, w tellWant) {
	pod, err := t.pods.Pods(key.Namespace).Get(key.Name)
	if err != nil || pod.UID != w.uid || pod.Spec.NodeName != "" || terminated(pod) {
		return // gone, recreated, bound or finished: nothing to say
	}
	status := pod.Status.DeepCopy()
	changed := w.tell && podutil.UpdatePodCondition(status, unschedulable(w.msg))
	if w.unnominate != "" && status.NominatedNodeName == w.unnominate {
		status.NominatedNodeName, changed = "", true
	}
	if !changed {
		return
	}
	if err := schedutil.PatchPodStatus(ctx, t.client, pod.Name, pod.Namespace, &pod.Status, status); err != nil && !apierrors.IsNotFound(err) {
		klog.FromContext(ctx).Error(err, "Could not write why a gang member waits", "pod", klog.KObj(pod))
	}
}

func unschedulable(msg string) *v1.PodCondition {
	return &v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg}
}

// untold returns the pending members whose PodScheduled condition does not say msg yet, but
// those the framework tells (tried).
func untold(pending []*v1.Pod, msg string, tried sets.Set[types.UID]) []*v1.Pod {
	var out []*v1.Pod
	for _, pod := range pending {
		if tried.Has(pod.UID) {
			continue
		}
		if _, c := podutil.GetPodCondition(&pod.Status, v1.PodScheduled); c == nil || c.Status != v1.ConditionFalse || c.Message != msg {
			out = append(out, pod)
		}
	}
	return out
}
