// Package leaderworkerset is the workload framework's adapter for LeaderWorkerSets
// (leaderworkerset.x-k8s.io/v1, LWS v0.7.0): each replica group of a LeaderWorkerSet whose
// pods use lockstep — a leader and size − 1 workers, serving one model replica across hosts —
// is a gang of its own, so that a replica starts whole or not at all; the LeaderWorkerSet as
// a whole is not (replicas come and go independently). tree.go says which groups a replica
// gets.
//
// A group is one incarnation of a replica: it is named after the LeaderWorkerSet, the group
// index and the leader pod's UID. A rolling update (new leader pods, maxSurge replicas at
// new indexes), a scale-up and RecreateGroupOnPodRestart (LWS deletes the leader, its workers
// go with it, and all are made again under the same names) each bring new leader pods, hence
// new groups, which are gangs again; groups of leaders that are gone are deleted; groups of
// running leaders are left as they are.
//
// The pods need no change. A leader (worker-index 0) is filed under the group of its own UID;
// a worker under its leader's, found by the leader-name annotation LWS puts on it, and only
// if the leader is of the worker's template revision and not younger than the worker (during
// a rolling update a worker of the old revision, and after RecreateGroupOnPodRestart one the
// old leader's StatefulSet made just before it went, can outlive their leader for a moment;
// they are filed under no live group). A
// worker is created after its leader and the scheduler's pod informer delivers them in that
// order, so a worker whose leader is not seen waits (filing.Filing.Unseen).
//
// LeaderWorkerSets whose workers are made only once their leader is ready (startupPolicy
// LeaderReady) or scheduled (the exclusive-topology annotation) cannot wait for the whole
// replica to exist: their replica's PodGroup lets the leader bind first (gang.leaders 1). The
// whole replica is planned — its workers, which do not exist yet, in the shape of the
// LeaderWorkerSet's worker template (FollowerOf) — the leader binds, and the workers' room is
// held until they come and bind together.
//
// The CRD may be installed after lockstep starts: LeaderWorkerSets are watched from the
// moment it is served.
package leaderworkerset

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// Adapter is the LeaderWorkerSet adapter.
type Adapter struct {
	sets jobframework.OptionalKind
	// pods are the pods the scheduler sees (its own informer): leaders and workers.
	pods        corelisters.PodLister
	podInformer cache.SharedIndexInformer
}

var (
	_ filing.FollowerShapes   = &Adapter{}
	_ jobframework.PodAdapter = &Adapter{}
	_ jobframework.Notifier   = &Adapter{}
	_ jobframework.Synced     = &Adapter{}
)

// New returns the LeaderWorkerSet adapter; Watch connects it to its informers.
func New() *Adapter { return &Adapter{} }

// GVK implements jobframework.Adapter.
func (a *Adapter) GVK() schema.GroupVersionKind { return GVK }

// Watch implements jobframework.Adapter: LeaderWorkerSets once their API is served, and the
// pods (a new or departed leader is a new or departed group: its LeaderWorkerSet is synced).
func (a *Adapter) Watch(f jobframework.Informers, enqueue func(string)) ([]cache.InformerSynced, error) {
	synced := a.sets.Watch(f, GVR, enqueue)
	pods := f.Kube.Core().V1().Pods()
	a.pods, a.podInformer = pods.Lister(), pods.Informer()
	if enqueue == nil {
		return append(synced, pods.Informer().HasSynced), nil
	}
	leader := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pod, ok := obj.(*v1.Pod); ok && isLeader(pod) {
			enqueue(pod.Namespace + "/" + pod.Labels[LabelName])
		}
	}
	reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    leader,
		UpdateFunc: func(old, obj any) { leader(obj) },
		DeleteFunc: leader,
	})
	if err != nil {
		return nil, err
	}
	return append(synced, reg.HasSynced), nil
}

// HasSynced implements jobframework.Synced: the group model files LWS pods once the
// LeaderWorkerSets that existed are seen (none to see while the API is not served).
func (a *Adapter) HasSynced() bool {
	served, synced := a.sets.Served()
	return !served || synced
}

// Notify implements jobframework.Notifier: the pods of a LeaderWorkerSet are filed again when
// it appears or changes (whether it gets groups may change), and a leader's workers when the
// leader appears (they waited for it).
func (a *Adapter) Notify(notify func(namespace, name string, ran int)) {
	a.sets.AddHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { a.notifySet(obj, notify) },
		UpdateFunc: func(old, obj any) {
			if jobframework.SpecOrAnnotationsChanged(old, obj) {
				a.notifySet(obj, notify)
			}
		},
		DeleteFunc: func(obj any) { a.notifySet(obj, notify) },
	})
	if a.podInformer == nil {
		return
	}
	// Workers that came before their leader was seen wait under its revision's name.
	leader := func(obj any) {
		if pod, ok := obj.(*v1.Pod); ok && isLeader(pod) {
			notify(pod.Namespace, waitingName(pod), 0)
		}
	}
	if _, err := a.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    leader,
		UpdateFunc: func(_, obj any) { leader(obj) },
	}); err != nil {
		klog.Background().Error(err, "Cannot watch LeaderWorkerSet leaders")
	}
}

// notifySet tells of every group of a LeaderWorkerSet's live leaders, and of what their
// workers waited under.
func (a *Adapter) notifySet(obj any, notify func(namespace, name string, ran int)) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || a.pods == nil {
		return
	}
	pods, err := a.pods.Pods(u.GetNamespace()).List(labels.SelectorFromSet(labels.Set{LabelName: u.GetName()}))
	if err != nil {
		return
	}
	// Its pods may have been filed before it was seen (under their replica's flat group) or
	// while it was (a subgroup's): both are told.
	lws, _ := decode(u)
	objects := sets.New[string]()
	for _, pod := range pods {
		if !isPod(pod) {
			continue
		}
		flat, _ := a.podGroupOf(pod, nil)
		member, _ := a.podGroupOf(pod, lws)
		objects.Insert(pod.Namespace+"/"+flat, pod.Namespace+"/"+member)
	}
	for object := range objects {
		ns, name, _ := cache.SplitMetaNamespaceKey(object)
		notify(ns, name, 0)
	}
}

// Get implements jobframework.Adapter.
func (a *Adapter) Get(namespace, name string) (jobframework.Object, error) {
	return a.sets.Get(namespace, name)
}

// GroupName is the group of replica index of LeaderWorkerSet name whose leader pod has uid.
func GroupName(name, index string, leader types.UID) string {
	return filing.JobGroupName(name+"-"+index, leader)
}

// waitingName is the group a worker waits under while its leader is not seen: no group has
// it, so the worker binds nothing until it is filed again.
func waitingName(pod *v1.Pod) string {
	return filing.JobGroupName(pod.Labels[LabelName]+"-"+pod.Labels[LabelGroupIndex], types.UID("revision-"+pod.Labels[LabelRevision]))
}

// GroupOfJob implements jobframework.Adapter: LWS runs no Jobs.
func (a *Adapter) GroupOfJob(*batchv1.Job, sets.Set[string]) (string, bool) { return "", false }

// isPod reports whether LWS made the pod (the labels its webhook sets).
func isPod(pod *v1.Pod) bool {
	return pod.Labels[LabelName] != "" && pod.Labels[LabelGroupIndex] != "" && pod.Labels[LabelWorkerIndex] != ""
}

// isLeader reports whether the pod is the leader of its group.
func isLeader(pod *v1.Pod) bool { return isPod(pod) && pod.Labels[LabelWorkerIndex] == "0" }

// leaderOf returns the leader of an LWS pod (itself for a leader), nil when it is not seen
// or not of the pod's revision.
func (a *Adapter) leaderOf(pod *v1.Pod) *v1.Pod {
	if isLeader(pod) {
		return pod
	}
	name := pod.Annotations[AnnotationLeaderName]
	if name == "" || a.pods == nil {
		return nil
	}
	leader, err := a.pods.Pods(pod.Namespace).Get(name)
	if err != nil || !isLeader(leader) || leader.Labels[LabelName] != pod.Labels[LabelName] ||
		leader.Labels[LabelRevision] != pod.Labels[LabelRevision] || leader.DeletionTimestamp != nil ||
		pod.CreationTimestamp.Before(&leader.CreationTimestamp) {
		// A worker made before its leader is a previous leader's of the same name, left
		// for the garbage collector (RecreateGroupOnPodRestart).
		return nil
	}
	return leader
}

// PodGroupsOfPod returns, for readers that see pods only (kubectl lockstep), the PodGroups an
// LWS pod may belong to, most specific first (its subgroup's, the leader's own when the
// subgroup policy leaves it out, its replica's), and the name of its LeaderWorkerSet; leader
// finds a pod of the pod's namespace by name. ok is false for a pod LWS did not make or whose
// leader is not found.
func PodGroupsOfPod(pod *v1.Pod, leader func(name string) *v1.Pod) (groups []string, set string, ok bool) {
	if !isPod(pod) {
		return nil, "", false
	}
	l := pod
	if !isLeader(pod) {
		l = leader(pod.Annotations[AnnotationLeaderName])
		if l == nil || !isLeader(l) || l.Labels[LabelRevision] != pod.Labels[LabelRevision] || pod.CreationTimestamp.Before(&l.CreationTimestamp) {
			return nil, "", false
		}
	}
	base := GroupName(pod.Labels[LabelName], pod.Labels[LabelGroupIndex], l.UID)
	if i, err := strconv.Atoi(pod.Labels[LabelSubGroupIndex]); err == nil {
		groups = append(groups, subgroupName(base, i))
	} else {
		groups = append(groups, leaderName(base))
	}
	return append(groups, base), pod.Labels[LabelName], true
}

// podGroupOf returns the PodGroup an LWS pod is filed under, given its LeaderWorkerSet, and
// whether its leader is seen.
func (a *Adapter) podGroupOf(pod *v1.Pod, lws *leaderWorkerSet) (string, bool) {
	leader := a.leaderOf(pod)
	if leader == nil {
		return waitingName(pod), false
	}
	base := GroupName(pod.Labels[LabelName], pod.Labels[LabelGroupIndex], leader.UID)
	if lws == nil {
		return base, true
	}
	return memberGroup(base, lws, pod), true
}

// Labelled implements jobframework.PodAdapter: an LWS pod names the PodGroup it is filed
// under (so that it is filed again when that changes, and waits for it a while).
func (a *Adapter) Labelled(pod *v1.Pod) (string, bool) {
	if !isPod(pod) {
		return "", false
	}
	lws, _ := a.set(pod)
	name, _ := a.podGroupOf(pod, lws)
	return pod.Namespace + "/" + name, true
}

// set returns an LWS pod's LeaderWorkerSet, nil while it is not seen.
func (a *Adapter) set(pod *v1.Pod) (*leaderWorkerSet, error) {
	obj, err := a.Get(pod.Namespace, pod.Labels[LabelName])
	if err != nil || obj == nil {
		return nil, err
	}
	return decode(obj.(*unstructured.Unstructured))
}

// GroupOfPod implements jobframework.PodAdapter: an LWS pod belongs to its replica's group
// (or the subgroup it is in), which the controller creates. While its LeaderWorkerSet or its
// leader is not seen, it waits a while (filing.Filing.Unseen); a LeaderWorkerSet that gets no
// groups files none of its pods.
func (a *Adapter) GroupOfPod(pod *v1.Pod, schedulerNames sets.Set[string]) (filing.Filing, bool) {
	if !isPod(pod) {
		return filing.Filing{}, false
	}
	lws, err := a.set(pod)
	if err != nil {
		return filing.Filing{}, false
	}
	if lws != nil && !gangs(lws, schedulerNames) {
		return filing.Filing{}, false
	}
	name, leaderSeen := a.podGroupOf(pod, lws)
	return filing.Filing{Name: name, Created: true, Labelled: true, Unseen: lws == nil || !leaderSeen}, true
}

// Groups implements jobframework.Adapter: a group (tree.go) for each live leader of a
// LeaderWorkerSet whose pods use lockstep.
func (a *Adapter) Groups(obj jobframework.Object, _ []*v1alpha1.PodGroup, schedulerNames sets.Set[string]) (*jobframework.Groups, []string) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	lws, err := decode(u)
	if err != nil {
		return nil, []string{fmt.Sprintf("cannot read the LeaderWorkerSet: %v", err)}
	}
	if !schedulerNames.Has(leaderTemplate(lws).Spec.SchedulerName) {
		return nil, nil
	}
	if filing.NamesGroup(leaderTemplate(lws)) || filing.NamesGroup(&lws.Spec.LeaderWorkerTemplate.WorkerTemplate) {
		return jobframework.NoGroups(), nil
	}
	var leaders []*v1.Pod
	if a.pods != nil {
		pods, err := a.pods.Pods(lws.Namespace).List(labels.SelectorFromSet(labels.Set{LabelName: lws.Name, LabelWorkerIndex: "0"}))
		if err != nil {
			return nil, []string{fmt.Sprintf("cannot list the leader pods: %v", err)}
		}
		for _, p := range pods {
			if isLeader(p) && p.DeletionTimestamp == nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
				leaders = append(leaders, p)
			}
		}
	}
	return treeOf(lws, leaders)
}

// FollowerOf implements filing.FollowerShapes: a LeaderWorkerSet leader's workers are made
// from the worker template.
func (a *Adapter) FollowerOf(leader *v1.Pod) *v1.Pod {
	if !isLeader(leader) {
		return nil
	}
	lws, err := a.set(leader)
	if err != nil || lws == nil {
		return nil
	}
	t := lws.Spec.LeaderWorkerTemplate.WorkerTemplate
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: t.Labels, Annotations: t.Annotations}, Spec: t.Spec}
}
