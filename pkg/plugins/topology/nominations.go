package topology

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
)

// Nominations knows which nodes may have nominated pods, so that a plan that weighs whole
// domains asks the scheduler's nominator (NominatedPodsForNode, two locks per call) about
// those nodes only instead of every node of the cluster: at 15,000 nodes that was a third of
// the cost of a rack-required plan, and it grew with the cluster.
//
// The scheduler's queue nominates a pod from two sources, and Nominations follows both: the
// pod's status.nominatedNodeName (from the pod informer, as the queue reads it), and the
// nominations made in this process (the profiles' PostFilter results and the gang members
// lockstep's preemption nominates in memory only; see Topology.PostFilter and preempt). It
// keeps a superset: a node stays listed until the pod is bound, deleted or nominated
// elsewhere, and the nominator is asked for the exact pods. One gap remains: a profile
// without LockstepTopology nominates a pod in memory a moment before its status patch
// arrives; a plan made in that moment counts the node as free, its member is refused there
// by Filter, and the tree is planned again without the node (PostFilter).
//
// One Nominations serves every profile of a scheduler, as its queue does.
type Nominations struct {
	// pods is the pod informer's store (nil when fed by this process only): a pod nominated
	// in memory after its deletion was seen (its PostFilter ran while it was deleted) is
	// nominated nowhere, and nothing is kept for it.
	pods cache.Store
	mu   sync.Mutex
	// byPod is the nominated node of each pod, from its status and from this process.
	byPod map[types.UID]nominated
	// count is how many pods (and sources) name each node.
	count map[string]int
}

// nominated are the nodes one pod is nominated to.
type nominated struct {
	status, memory string
}

// NewNominations returns Nominations fed by a pod informer (the scheduler's, so that it
// sees what the queue sees); nil informer: fed by this process only.
func NewNominations(pods cache.SharedIndexInformer) (*Nominations, error) {
	n := &Nominations{byPod: map[types.UID]nominated{}, count: map[string]int{}}
	if pods == nil {
		return n, nil
	}
	n.pods = pods.GetStore()
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { n.observe(obj) },
		UpdateFunc: func(_, obj any) { n.observe(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok {
				n.forget(pod.UID)
			}
		},
	})
	return n, err
}

// observe follows a pod's status: bound pods are nominated nowhere.
func (n *Nominations) observe(obj any) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName != "" {
		n.forget(pod.UID)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	was := n.byPod[pod.UID]
	n.setLocked(pod.UID, nominated{status: pod.Status.NominatedNodeName, memory: was.memory})
}

// Note records a nomination of pod made in this process (a PostFilter result, or
// AddNominatedPod); "" clears its nomination in memory, as the queue does. A pod the informer
// no longer has (deleted while its cycle ran) is nominated nowhere.
func (n *Nominations) Note(pod *v1.Pod, node string) {
	if n == nil {
		return
	}
	if node != "" && !n.live(pod) {
		n.forget(pod.UID)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	was := n.byPod[pod.UID]
	n.setLocked(pod.UID, nominated{status: was.status, memory: node})
}

// live reports whether the informer still has pod (always, fed by this process only).
func (n *Nominations) live(pod *v1.Pod) bool {
	if n.pods == nil {
		return true
	}
	obj, ok, err := n.pods.GetByKey(pod.Namespace + "/" + pod.Name)
	if err != nil || !ok {
		return false
	}
	cur, isPod := obj.(*v1.Pod)
	return isPod && cur.UID == pod.UID
}

// Of returns the nodes pod uid is nominated to: by its status, and in this process's memory
// ("" for none).
func (n *Nominations) Of(uid types.UID) (status, memory string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	was := n.byPod[uid]
	return was.status, was.memory
}

// NoteResult records the nomination of a PostFilter result for pod.
func (n *Nominations) NoteResult(pod *v1.Pod, res *fwk.PostFilterResult) {
	if res == nil || res.NominatingInfo == nil || res.Mode() != fwk.ModeOverride {
		return
	}
	n.Note(pod, res.NominatedNodeName)
}

func (n *Nominations) forget(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setLocked(uid, nominated{})
}

func (n *Nominations) setLocked(uid types.UID, now nominated) {
	was := n.byPod[uid]
	if was == now {
		return
	}
	for _, node := range []string{was.status, was.memory} {
		if node != "" {
			if n.count[node]--; n.count[node] <= 0 {
				delete(n.count, node)
			}
		}
	}
	for _, node := range []string{now.status, now.memory} {
		if node != "" {
			n.count[node]++
		}
	}
	if now == (nominated{}) {
		delete(n.byPod, uid)
		return
	}
	n.byPod[uid] = now
}

// Nodes returns the nodes that may have nominated pods.
func (n *Nominations) Nodes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.count))
	for node := range n.count {
		out = append(out, node)
	}
	return out
}
