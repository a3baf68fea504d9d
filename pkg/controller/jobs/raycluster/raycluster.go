// Package raycluster is the workload framework's adapter for KubeRay RayClusters (ray.io/v1):
// a RayCluster whose head pod uses lockstep gets a Workload and a tree, so that a Ray cluster
// starts with its minimum or not at all — its head and the minimum of each worker group
// (minReplicas × numOfHosts, for the groups whose pods use lockstep), each counted apart:
//
//	CompositePodGroup <raycluster>-<hash>   minGroupCount = 1 + its worker groups with a minimum
//	├── PodGroup <...>-head                  minCount 1
//	└── PodGroup <...>-<group name>          minCount = minReplicas × numOfHosts (one per such group)
//
// A flat gang of their sum would let surplus workers stand in for a head that does not fit.
// Workers above a group's minimum — those the Ray autoscaler adds by raising replicas, or
// those replicas asks for beyond minReplicas — are members of their group too, and once the
// tree is placed they schedule one by one without waiting for each other (pkg/podgroup:
// members after the group is initially scheduled). The workers of a group with no minimum
// (minReplicas 0) are in no group: they schedule as plain pods. A RayJob's RayCluster is a RayCluster like any other; its submitter
// is a plain Job (one pod, no gang) that neither joins nor waits for the cluster's gang.
//
// The pods need no change: KubeRay labels every pod of a RayCluster with it (ray.io/cluster,
// ray.io/node-type) and the RayCluster controls them; a pod is filed under its RayCluster's
// PodGroup from those. Why not KubeRay's own scheduler-plugins integration
// (--batch-scheduler=scheduler-plugins, which lockstep would take through the coscheduling
// adapter)? It is an operator-wide flag that excludes Volcano's and YuniKorn's for other
// teams, it needs a label on each RayCluster, and the PodGroup it makes counts replicas, not
// minReplicas (an autoscaled cluster created above its minimum waits for workers it does not
// need), ignores numOfHosts, and is never updated. When it is on anyway, this adapter files
// the pods first and the scheduler-plugins PodGroup KubeRay made is not mirrored.
//
// The CRD may be installed after lockstep starts: RayClusters are watched from the moment it
// is served.
package raycluster

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// TemplateName is the Workload template of a RayCluster's PodGroup.
const TemplateName = "raycluster"

// Adapter is the RayCluster adapter.
type Adapter struct {
	rayClusters jobframework.OptionalKind
}

var (
	_ jobframework.PodAdapter = &Adapter{}
	_ jobframework.Notifier   = &Adapter{}
	_ jobframework.Synced     = &Adapter{}
)

// New returns the RayCluster adapter; Watch connects it to a RayCluster informer.
func New() *Adapter { return &Adapter{} }

// GVK implements jobframework.Adapter.
func (a *Adapter) GVK() schema.GroupVersionKind { return GVK }

// Watch implements jobframework.Adapter: RayClusters once their API is served.
func (a *Adapter) Watch(f jobframework.Informers, enqueue func(string)) ([]cache.InformerSynced, error) {
	return a.rayClusters.Watch(f, GVR, enqueue), nil
}

// HasSynced implements jobframework.Synced: the group model files Ray pods once the
// RayClusters that existed are seen (none to see while the API is not served).
func (a *Adapter) HasSynced() bool {
	served, synced := a.rayClusters.Served()
	return !served || synced
}

// Notify implements jobframework.Notifier: the pods of a RayCluster are filed again when it
// appears, changes (a worker group's minimum may come or go) or goes.
func (a *Adapter) Notify(notify func(namespace, name string, ran int)) {
	tell := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		root := GroupName(u.GetName(), u.GetUID())
		notify(u.GetNamespace(), HeadGroup(root), 0)
		if rc, err := decode(u); err == nil {
			for _, wg := range rc.Spec.WorkerGroupSpecs {
				notify(u.GetNamespace(), WorkerGroup(root, wg.GroupName), 0)
			}
		}
	}
	a.rayClusters.AddHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: tell,
		UpdateFunc: func(old, obj any) {
			if jobframework.SpecOrAnnotationsChanged(old, obj) {
				tell(obj)
			}
		},
		DeleteFunc: tell,
	})
}

// Get implements jobframework.Adapter.
func (a *Adapter) Get(namespace, name string) (jobframework.Object, error) {
	return a.rayClusters.Get(namespace, name)
}

// GroupName is the root CompositePodGroup (and the Workload) of the RayCluster name with uid:
// a RayCluster deleted and made again under its name gets a new one.
func GroupName(name string, uid types.UID) string { return filing.JobGroupName(name, uid) }

// HeadGroup is the PodGroup of the head of the RayCluster whose root is root; WorkerGroup
// that of the workers of its worker group group.
func HeadGroup(root string) string { return root + "-head" }

// WorkerGroup is the PodGroup of the workers of a worker group (its name made a valid object
// name part).
func WorkerGroup(root, group string) string {
	b := []byte(strings.ToLower(group))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			b[i] = '-'
		}
	}
	return root + "-w-" + strings.Trim(string(b), "-")
}

// required returns the minimum (minReplicas × numOfHosts) of each worker group that counts
// for the gang: not suspended, its pods of a lockstep profile, a minimum above 0; in the
// RayCluster's order.
func required(rc *rayCluster, schedulerNames sets.Set[string]) []workerMin {
	var out []workerMin
	for _, wg := range rc.Spec.WorkerGroupSpecs {
		if ptr.Deref(wg.Suspend, false) || !schedulerNames.Has(wg.Template.Spec.SchedulerName) {
			continue
		}
		if n := ptr.Deref(wg.MinReplicas, 0) * max(wg.NumOfHosts, 1); n > 0 {
			out = append(out, workerMin{group: wg.GroupName, min: n})
		}
	}
	return out
}

type workerMin struct {
	group string
	min   int32
}

// Groups implements jobframework.Adapter: a RayCluster whose head uses lockstep gets its
// tree; a suspended one (queued in Kueue) none, and one whose pods name a group of their own
// none either.
func (a *Adapter) Groups(obj jobframework.Object, existing []*v1alpha1.PodGroup, schedulerNames sets.Set[string]) (*jobframework.Groups, []string) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	rc, err := decode(u)
	if err != nil {
		return nil, []string{fmt.Sprintf("cannot read the RayCluster: %v", err)}
	}
	head := &rc.Spec.HeadGroupSpec.Template
	if !schedulerNames.Has(head.Spec.SchedulerName) {
		return nil, nil
	}
	if ptr.Deref(rc.Spec.Suspend, false) || filing.NamesGroup(head) {
		return jobframework.NoGroups(), nil
	}
	workers := required(rc, schedulerNames)
	total := int32(1)
	for _, w := range workers {
		total += w.min
	}
	topology, problems := filing.PodSetTopology(rc.Annotations, rc.Labels, head, total, 0)
	root := GroupName(rc.Name, rc.UID)
	priority := head.Spec.PriorityClassName
	top := jobframework.Group{Name: root, Template: TemplateName, Min: int32(1 + len(workers)), Topology: topology.Constraints(), PriorityClassName: priority}
	tmpl := v1alpha1.CompositePodGroupTemplate{Name: TemplateName,
		SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: top.Min}},
		SchedulingConstraints: top.Constraints(), PriorityClassName: priority,
		PodGroupTemplates: []v1alpha1.PodGroupTemplate{{Name: "head",
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 1}}, PriorityClassName: priority}}}
	out := &jobframework.Groups{
		Workload:   root,
		Composites: []jobframework.Group{top},
		PodGroups:  []jobframework.Group{{Name: HeadGroup(root), Parent: root, Template: "head", Min: 1, PriorityClassName: priority}},
	}
	for _, w := range workers {
		name := "worker-" + w.group
		if len(tmpl.PodGroupTemplates) < v1alpha1.MaxTemplates {
			tmpl.PodGroupTemplates = append(tmpl.PodGroupTemplates, v1alpha1.PodGroupTemplate{Name: name,
				SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: w.min}}, PriorityClassName: priority})
		}
		out.PodGroups = append(out.PodGroups, jobframework.Group{Name: WorkerGroup(root, w.group), Parent: root, Template: name, Min: w.min, PriorityClassName: priority})
	}
	out.Spec.CompositePodGroupTemplates = []v1alpha1.CompositePodGroupTemplate{tmpl}
	return out, problems
}

// GroupOfJob implements jobframework.Adapter: no Job is a RayCluster's (a RayJob's submitter
// is a Job of the RayJob's, with no gang).
func (a *Adapter) GroupOfJob(*batchv1.Job, sets.Set[string]) (string, bool) { return "", false }

// Labelled implements jobframework.PodAdapter: a pod KubeRay made for a RayCluster (its
// labels, and the RayCluster as its controller) names the PodGroup it is filed under (its
// head's or its worker group's), so that it waits for it a while and is filed again when the
// RayCluster changes.
func (a *Adapter) Labelled(pod *v1.Pod) (string, bool) {
	name, _, ok := PodGroupOfPod(pod)
	if !ok {
		return "", false
	}
	return pod.Namespace + "/" + name, true
}

// PodGroupOfPod returns the PodGroup a pod KubeRay made for a RayCluster belongs to (its
// head's, its worker group's) and the RayCluster's UID, for readers that see pods only
// (kubectl lockstep).
func PodGroupOfPod(pod *v1.Pod) (string, types.UID, bool) {
	owner, ok := rayClusterOf(pod)
	if !ok {
		return "", "", false
	}
	root := GroupName(owner.Name, owner.UID)
	if pod.Labels[LabelNodeType] == NodeTypeHead {
		return HeadGroup(root), owner.UID, true
	}
	return WorkerGroup(root, pod.Labels[LabelGroup]), owner.UID, true
}

// rayClusterOf returns the RayCluster a pod of KubeRay's belongs to.
func rayClusterOf(pod *v1.Pod) (*metav1.OwnerReference, bool) {
	cluster, nodeType := pod.Labels[LabelCluster], pod.Labels[LabelNodeType]
	if cluster == "" || (nodeType != NodeTypeHead && nodeType != NodeTypeWorker) || (nodeType == NodeTypeWorker && pod.Labels[LabelGroup] == "") {
		return nil, false
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != GVK.Kind || !strings.HasPrefix(owner.APIVersion, GVK.Group+"/") || owner.Name != cluster {
		return nil, false
	}
	return owner, true
}

// GroupOfPod implements jobframework.PodAdapter: a RayCluster's head belongs to its head's
// PodGroup, a worker to its worker group's, which the controller creates. While the
// RayCluster is not seen, the pod waits for it a while (filing.Filing.Unseen); a seen
// RayCluster that gets no groups (its head uses another scheduler, it names a group of its
// own) files none of its pods, nor one whose worker group has no minimum.
func (a *Adapter) GroupOfPod(pod *v1.Pod, schedulerNames sets.Set[string]) (filing.Filing, bool) {
	name, uid, ok := PodGroupOfPod(pod)
	if !ok {
		return filing.Filing{}, false
	}
	owner, _ := rayClusterOf(pod)
	obj, err := a.Get(pod.Namespace, owner.Name)
	if err != nil || obj == nil || obj.GetUID() != uid {
		return filing.Filing{Name: name, Created: true, Labelled: true, Unseen: true}, true
	}
	rc, err := decode(obj.(*unstructured.Unstructured))
	if err != nil {
		return filing.Filing{}, false
	}
	head := &rc.Spec.HeadGroupSpec.Template
	if !schedulerNames.Has(head.Spec.SchedulerName) || filing.NamesGroup(head) {
		return filing.Filing{}, false
	}
	if pod.Labels[LabelNodeType] == NodeTypeWorker {
		counted := false
		for _, w := range required(rc, schedulerNames) {
			counted = counted || w.group == pod.Labels[LabelGroup]
		}
		if !counted {
			return filing.Filing{}, false
		}
	}
	return filing.Filing{Name: name, Created: true, Labelled: true}, true
}
