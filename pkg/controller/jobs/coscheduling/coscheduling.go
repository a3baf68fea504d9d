// Package coscheduling is the workload framework's adapter for scheduler-plugins PodGroups
// (scheduling.x-k8s.io/v1alpha1), the objects Kubeflow Trainer's coscheduling policy, the
// MPI operator, the Spark operator, KubeRay and training-operator v1 create for
// scheduler-plugins' coscheduling plugin. A pod labelled scheduling.x-k8s.io/pod-group:
// <name> that uses lockstep belongs to a PodGroup of lockstep's with the same name, which
// the adapter creates and keeps in step (a flat gang of minMember, its
// scheduleTimeoutSeconds and minResources), and the adapter keeps the scheduler-plugins
// PodGroup's status as scheduler-plugins' controller would. Workloads move by changing
// their pods' schedulerName only.
//
// The CRD may be installed after lockstep starts, or never: it is watched from the moment it
// is served. A labelled pod whose PodGroup is not seen waits for it up to its profile's
// jobGroupTimeout, then is scheduled without a group, as scheduler-plugins schedules pods
// whose PodGroup does not exist.
package coscheduling

import (
	"context"
	"fmt"
	"reflect"
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

// TemplateName is the Workload template of a mirrored PodGroup.
const TemplateName = "podgroup"

// Adapter is the scheduler-plugins PodGroup adapter.
type Adapter struct {
	// dyn writes PodGroups' status.
	dyn dynamic.Interface
	// ahead are the adapters that outrank this one for a pod (a RayCluster's) or its Job (a
	// JobSet's tree).
	ahead []jobframework.Adapter

	podGroups jobframework.OptionalKind
	jobs      batchlisters.JobLister
	// pods are the labelled pods in every phase; set for the controller only.
	pods corelisters.PodLister
	now  func() metav1.Time
}

var (
	_ jobframework.PodAdapter   = &Adapter{}
	_ jobframework.StatusSyncer = &Adapter{}
	_ jobframework.Notifier     = &Adapter{}
	_ jobframework.Synced       = &Adapter{}
)

// New returns the adapter; dyn writes statuses; ahead are the adapters whose trees take the
// pods of a Job they claim even when the pods are labelled (the Filer asks them first).
func New(dyn dynamic.Interface, ahead ...jobframework.Adapter) *Adapter {
	return &Adapter{dyn: dyn, ahead: ahead, now: metav1.Now}
}

// GVK implements jobframework.Adapter.
func (a *Adapter) GVK() schema.GroupVersionKind { return GVK }

// Watch implements jobframework.Adapter: PodGroups once their API is served; for the
// controller (enqueue set) also the labelled pods, which bring their PodGroup.
func (a *Adapter) Watch(f jobframework.Informers, enqueue func(string)) ([]cache.InformerSynced, error) {
	synced := a.podGroups.Watch(f, GVR, enqueue)
	a.jobs = f.Kube.Batch().V1().Jobs().Lister()
	if enqueue == nil || f.Pods == nil {
		return synced, nil
	}
	pods := f.Pods.Core().V1().Pods()
	a.pods = pods.Lister()
	bring := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if pod, ok := obj.(*v1.Pod); ok {
			if key, ok := a.Labelled(pod); ok {
				enqueue(key)
			}
		}
	}
	reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    bring,
		UpdateFunc: func(_, obj any) { bring(obj) },
		DeleteFunc: bring,
	})
	if err != nil {
		return nil, err
	}
	// A Job seen decides whose its labelled pods are (takenAhead): its pods' PodGroup is
	// looked at again, named by the Job's pod template.
	jobReg, err := f.Kube.Batch().V1().Jobs().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if job, ok := obj.(*batchv1.Job); ok {
				if key, ok := labelledKey(job.Namespace, job.Spec.Template.Labels); ok {
					enqueue(key)
				}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return append(synced, reg.HasSynced, jobReg.HasSynced), nil
}

// HasSynced implements jobframework.Synced: the group model files labelled pods once the
// PodGroups that existed are seen (none to see while the API is not served).
func (a *Adapter) HasSynced() bool {
	served, synced := a.podGroups.Served()
	return !served || synced
}

// Notify implements jobframework.Notifier.
func (a *Adapter) Notify(notify func(namespace, name string, ran int)) {
	tell := func(obj any, gone bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj, gone = d.Obj, true
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		ran := 0
		if pg, err := decode(u); err == nil && !gone {
			ran = int(pg.Status.Succeeded)
		}
		notify(u.GetNamespace(), u.GetName(), ran)
	}
	a.podGroups.AddHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tell(obj, false) },
		UpdateFunc: func(_, obj any) { tell(obj, false) },
		DeleteFunc: func(obj any) { tell(obj, true) },
	})
}

// Get implements jobframework.Adapter.
func (a *Adapter) Get(namespace, name string) (jobframework.Object, error) {
	return a.podGroups.Get(namespace, name)
}

// Labelled implements jobframework.PodAdapter.
func (a *Adapter) Labelled(pod *v1.Pod) (string, bool) {
	return labelledKey(pod.Namespace, pod.Labels)
}

// labelledKey is the key of the PodGroup that labels (a pod's, or a Job's pod template's)
// name, in namespace.
func labelledKey(namespace string, labels map[string]string) (string, bool) {
	name := labels[Label]
	if name == "" {
		return "", false
	}
	return namespace + "/" + name, true
}

// GroupOfPod implements jobframework.PodAdapter: a labelled pod belongs to the PodGroup of
// the same name, which the controller creates. While the scheduler-plugins PodGroup is not
// seen (not created yet, its informer behind the pod's, or its CRD not installed or not yet
// watched), the pod waits for it a while (filing.Filing.Unseen) rather than bind alone
// and break its gang. Pods an adapter ahead claims, or whose Job it claims, never get here (the Filer asks
// it first).
func (a *Adapter) GroupOfPod(pod *v1.Pod, _ sets.Set[string]) (filing.Filing, bool) {
	name := pod.Labels[Label]
	if name == "" {
		return filing.Filing{}, false
	}
	seen := false
	if lister := a.podGroups.Lister(); lister != nil {
		_, err := lister.ByNamespace(pod.Namespace).Get(name)
		seen = err == nil
	}
	return filing.Filing{Name: name, Created: true, Labelled: true, Unseen: !seen}, true
}

// GroupOfJob implements jobframework.Adapter: no Job is one of its own; its pods are filed
// by their labels.
func (a *Adapter) GroupOfJob(*batchv1.Job, sets.Set[string]) (string, bool) { return "", false }

// Groups implements jobframework.Adapter: once a pod of a lockstep profile names the
// PodGroup (and no adapter ahead takes it), a flat gang of the same name. Before that there
// is nothing to create: the PodGroup may be one the pods of a JobSet name (Kubeflow Trainer),
// whose tree is the JobSet's.
func (a *Adapter) Groups(obj jobframework.Object, existing []*v1alpha1.PodGroup, schedulerNames sets.Set[string]) (*jobframework.Groups, []string) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil
	}
	pg, err := decode(u)
	if err != nil {
		return nil, []string{fmt.Sprintf("cannot read the PodGroup: %v", err)}
	}
	ours := a.membersFor(pg, schedulerNames)
	if len(ours) == 0 {
		return nil, nil
	}
	topology, problems := a.topologyOf(pg, ours[0])
	g := jobframework.Group{
		Name:                   pg.Name,
		Template:               TemplateName,
		Min:                    max(pg.Spec.MinMember, 1),
		Topology:               topology,
		PriorityClassName:      ours[0].Spec.PriorityClassName,
		ScheduleTimeoutSeconds: pg.Spec.ScheduleTimeoutSeconds,
		MinResources:           pg.Spec.MinResources,
	}
	return &jobframework.Groups{
		Workload: pg.Name,
		Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
			Name:                  TemplateName,
			SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: g.Min}},
			SchedulingConstraints: g.Constraints(),
			PriorityClassName:     g.PriorityClassName,
		}}},
		PodGroups: []jobframework.Group{g},
		Finished:  pg.Status.Phase == PhaseFinished || pg.Status.Phase == PhaseFailed,
	}, problems
}

// membersFor returns the pods labelled for pg that lockstep files under it: of a lockstep
// profile, neither they nor their Job claimed by an adapter ahead, nor their Job unseen.
func (a *Adapter) membersFor(pg *podGroup, schedulerNames sets.Set[string]) []*v1.Pod {
	var out []*v1.Pod
	for _, pod := range a.labelled(pg) {
		if !schedulerNames.Has(pod.Spec.SchedulerName) || a.takenAhead(pod, schedulerNames) {
			continue
		}
		out = append(out, pod)
	}
	return out
}

// labelled returns every pod labelled for pg, oldest first.
func (a *Adapter) labelled(pg *podGroup) []*v1.Pod {
	if a.pods == nil {
		return nil
	}
	pods, err := a.pods.Pods(pg.Namespace).List(labels.SelectorFromSet(labels.Set{Label: pg.Name}))
	if err != nil {
		return nil
	}
	sort.Slice(pods, func(i, j int) bool {
		if !pods[i].CreationTimestamp.Equal(&pods[j].CreationTimestamp) {
			return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
		}
		return pods[i].Name < pods[j].Name
	})
	return pods
}

// takenAhead reports whether an adapter ahead claims the pod (a RayCluster's, KubeRay's
// scheduler-plugins integration on) or its Job (a JobSet's), or may claim it: its Job is
// not seen yet (the pods informer ahead of the Jobs'). Until the Job is seen the pod is
// no member: a mirror made for a JobSet's pods (Kubeflow Trainer labels them all) would
// never go. The Job's arrival brings the PodGroup back (Watch).
func (a *Adapter) takenAhead(pod *v1.Pod, schedulerNames sets.Set[string]) bool {
	for _, ahead := range a.ahead {
		if pa, ok := ahead.(jobframework.PodAdapter); ok {
			if _, ok := pa.GroupOfPod(pod, schedulerNames); ok {
				return true
			}
		}
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "Job" || a.jobs == nil {
		return false
	}
	job, err := a.jobs.Jobs(pod.Namespace).Get(owner.Name)
	if err != nil {
		return len(a.ahead) > 0 // not seen yet: an adapter ahead may claim it
	}
	if job.UID != owner.UID {
		return false // its Job is gone, another of its name made
	}
	for _, ahead := range a.ahead {
		if _, ok := ahead.GroupOfJob(job, schedulerNames); ok {
			return true
		}
	}
	return false
}

// topologyOf returns the topology the PodGroup asks for: lockstep's annotations on it, or
// else Kueue's topology annotations on its pods' template (read from its oldest member).
// The pod stands for the template (its labels, annotations and scheduling gates); the
// PodSet is minMember pods.
func (a *Adapter) topologyOf(pg *podGroup, pod *v1.Pod) ([]v1alpha1.TopologyConstraint, []string) {
	tmpl := &v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
		Spec: v1.PodSpec{SchedulingGates: pod.Spec.SchedulingGates}}
	kt, problems := filing.PodSetTopology(pg.Annotations, pg.Labels, tmpl, max(pg.Spec.MinMember, 1), 0)
	return kt.Constraints(), problems
}

// SyncStatus implements jobframework.StatusSyncer: the PodGroup's status as
// scheduler-plugins' controller would keep it, written when a pod labelled for it uses
// lockstep (scheduler-plugins' controller keeps the others'), and Pending for a new one.
func (a *Adapter) SyncStatus(ctx context.Context, obj jobframework.Object, schedulerNames sets.Set[string]) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	pg, err := decode(u)
	if err != nil {
		return nil
	}
	pods := a.labelled(pg)
	ours := false
	for _, pod := range pods {
		ours = ours || schedulerNames.Has(pod.Spec.SchedulerName)
	}
	var st podGroupStatus
	switch {
	case ours:
		st = statusOf(pg, pods, a.now())
	case pg.Status.Phase == "":
		st = pg.Status
		st.Phase = PhasePending
	default:
		return nil
	}
	if reflect.DeepEqual(st, pg.Status) {
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return err
	}
	upd := u.DeepCopy()
	upd.Object["status"] = content
	_, err = a.dyn.Resource(GVR).Namespace(pg.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	return err
}
