package jobframework

import (
	"context"
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// ownerRef is the controller reference of a workload object: deleting it deletes its
// groups, and blockOwnerDeletion keeps it until they are gone (which needs update on the
// kind's finalizers subresource under OwnerReferencesPermissionEnforcement).
func ownerRef(a Adapter, obj Object) metav1.OwnerReference {
	return *metav1.NewControllerRef(obj, a.GVK())
}

// madeForLabels name, on every Workload and group the controller makes, the kind and name
// of the object it made them for, so that a user finds a Job's groups (named with a hash)
// from the Job: kubectl get lockstep -l scheduling.lockstep.dev/made-for-name=NAME. A name
// that is no valid label value (over 63 characters) is left out; the owner reference holds it.
func madeForLabels(a Adapter, obj Object) map[string]string {
	labels := map[string]string{v1alpha1.MadeForKindLabel: a.GVK().Kind}
	if len(validation.IsValidLabelValue(obj.GetName())) == 0 {
		labels[v1alpha1.MadeForNameLabel] = obj.GetName()
	}
	return labels
}

func workloadRef(wl *v1alpha1.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Workload", Name: wl.Name, UID: wl.UID}
}

// ensureWorkload returns the Workload of an object, creating it if the object owns none.
func (r *Reconciler) ensureWorkload(ctx context.Context, a Adapter, obj Object, want *Groups, owned []*v1alpha1.Workload) (*v1alpha1.Workload, error) {
	for _, wl := range owned {
		if wl.Name == want.Workload {
			return wl, nil
		}
	}
	if len(owned) > 0 {
		return owned[0], nil
	}
	gvk := a.GVK()
	wl := &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: want.Workload, Labels: madeForLabels(a, obj),
			OwnerReferences: []metav1.OwnerReference{ownerRef(a, obj)}},
		Spec: *want.Spec.DeepCopy(),
	}
	wl.Spec.ControllerRef = &v1alpha1.TypedLocalObjectReference{APIGroup: gvk.Group, Kind: gvk.Kind, Name: obj.GetName()}
	created, err := r.client.SchedulingV1alpha1().Workloads(obj.GetNamespace()).Create(ctx, wl, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, err := r.client.SchedulingV1alpha1().Workloads(obj.GetNamespace()).Get(ctx, want.Workload, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return existing, controlledBy(a, obj, existing, "Workload")
	}
	if err != nil {
		return nil, err
	}
	r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "WorkloadCreated", "Sync", "created Workload %q", created.Name)
	return created, nil
}

// ensureComposite creates a CompositePodGroup of the tree, or brings minGroupCount in step.
func (r *Reconciler) ensureComposite(ctx context.Context, it item, a Adapter, obj Object, wl *v1alpha1.Workload, g Group, owned []*v1alpha1.CompositePodGroup) error {
	client := r.client.SchedulingV1alpha1().CompositePodGroups(obj.GetNamespace())
	for _, cur := range owned {
		if cur.Name != g.Name {
			continue
		}
		if gang := cur.Spec.SchedulingPolicy.Gang; gang != nil && gang.MinGroupCount != g.Min {
			before := gang.MinGroupCount
			upd := cur.DeepCopy()
			upd.Spec.SchedulingPolicy.Gang.MinGroupCount = g.Min
			if _, err := client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
				return err
			}
			r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "MinGroupCountChanged", "Sync", "minGroupCount of CompositePodGroup %q changed from %d to %d", g.Name, before, g.Min)
		}
		r.checkConstraints(it, a, obj, "CompositePodGroup", g, cur.Spec.SchedulingConstraints)
		return nil
	}
	cpg := &v1alpha1.CompositePodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: g.Name, Labels: madeForLabels(a, obj),
			OwnerReferences: []metav1.OwnerReference{ownerRef(a, obj), workloadRef(wl)}},
		Spec: v1alpha1.CompositePodGroupSpec{
			WorkloadRef:           &v1alpha1.WorkloadReference{WorkloadName: wl.Name, TemplateName: g.Template},
			SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: g.Min}},
			SchedulingConstraints: g.Constraints(),
			PriorityClassName:     g.PriorityClassName,
		},
	}
	if g.Parent != "" {
		cpg.Spec.ParentCompositePodGroupName = ptr.To(g.Parent)
	}
	created, err := client.Create(ctx, cpg, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, err := client.Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return controlledBy(a, obj, existing, "CompositePodGroup")
	}
	if err != nil {
		return err
	}
	r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "CompositePodGroupCreated", "Sync", "created CompositePodGroup %q (minGroupCount %d)", created.Name, g.Min)
	return nil
}

// ensurePodGroup creates a PodGroup of the tree, or brings minCount in step.
func (r *Reconciler) ensurePodGroup(ctx context.Context, it item, a Adapter, obj Object, wl *v1alpha1.Workload, g Group, owned []*v1alpha1.PodGroup) error {
	client := r.client.SchedulingV1alpha1().PodGroups(obj.GetNamespace())
	for _, cur := range owned {
		if cur.Name != g.Name {
			continue
		}
		if gang := cur.Spec.SchedulingPolicy.Gang; gang != nil && gang.MinCount != g.Min {
			before := gang.MinCount
			upd := cur.DeepCopy()
			upd.Spec.SchedulingPolicy.Gang.MinCount = g.Min
			if _, err := client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
				return err
			}
			r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "MinCountChanged", "Sync", "minCount of PodGroup %q changed from %d to %d", g.Name, before, g.Min)
			r.syncTemplateMin(ctx, wl, g)
		}
		r.checkConstraints(it, a, obj, "PodGroup", g, cur.Spec.SchedulingConstraints)
		return nil
	}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: g.Name, Labels: madeForLabels(a, obj),
			OwnerReferences: []metav1.OwnerReference{ownerRef(a, obj), workloadRef(wl)}},
		Spec: v1alpha1.PodGroupSpec{
			WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: wl.Name, TemplateName: g.Template},
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: g.Min, Leaders: g.Leaders,
				FollowersTimeoutSeconds: g.FollowersTimeoutSeconds}},
			SchedulingConstraints:  g.Constraints(),
			PriorityClassName:      g.PriorityClassName,
			ScheduleTimeoutSeconds: g.ScheduleTimeoutSeconds,
			MinResources:           g.MinResources,
		},
	}
	if g.Parent != "" {
		pg.Spec.ParentCompositePodGroupName = ptr.To(g.Parent)
	}
	created, err := client.Create(ctx, pg, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, err := client.Get(ctx, g.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return controlledBy(a, obj, existing, "PodGroup")
	}
	if err != nil {
		return err
	}
	r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "PodGroupCreated", "Sync", "created PodGroup %q (minCount %d)", created.Name, g.Min)
	return nil
}

// syncTemplateMin keeps the minCount of a Workload's top-level PodGroupTemplate in step with
// its PodGroup's (a Job's Workload has one); nested templates describe the shape only.
func (r *Reconciler) syncTemplateMin(ctx context.Context, wl *v1alpha1.Workload, g Group) {
	for i, t := range wl.Spec.PodGroupTemplates {
		if t.Name != g.Template || t.SchedulingPolicy.Gang == nil || t.SchedulingPolicy.Gang.MinCount == g.Min {
			continue
		}
		upd := wl.DeepCopy()
		upd.Spec.PodGroupTemplates[i].SchedulingPolicy.Gang.MinCount = g.Min
		_, _ = r.client.SchedulingV1alpha1().Workloads(wl.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
		return
	}
}

// checkConstraints says, once, when the constraints an object asks for differ from those of
// a group that exists: they cannot change after creation.
func (r *Reconciler) checkConstraints(it item, a Adapter, obj Object, kind string, g Group, have *v1alpha1.SchedulingConstraints) {
	if !reflect.DeepEqual(have, g.Constraints()) {
		r.report(it, obj, []string{fmt.Sprintf("topology annotations differ from %s %q, whose constraints cannot change after creation; recreate the %s to change them",
			kind, g.Name, a.GVK().Kind)})
	}
}

// deleteObsolete deletes the groups an object controls that its tree no longer has: those of
// child Jobs a restart replaced. why is told in the events.
func (r *Reconciler) deleteObsolete(ctx context.Context, obj Object, want *Groups, owned ownedObjects, why string) error {
	keepComposites, keepPodGroups := sets.New[string](), sets.New[string]()
	for _, g := range want.Composites {
		keepComposites.Insert(g.Name)
	}
	for _, g := range want.PodGroups {
		keepPodGroups.Insert(g.Name)
	}
	for _, pg := range owned.podGroups {
		if keepPodGroups.Has(pg.Name) {
			continue
		}
		if err := r.client.SchedulingV1alpha1().PodGroups(pg.Namespace).Delete(ctx, pg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pg.UID}}); err != nil && !isNotFound(err) {
			return err
		}
		r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "PodGroupDeleted", "Sync", "deleted PodGroup %q: %s", pg.Name, why)
	}
	for _, cpg := range owned.composites {
		if keepComposites.Has(cpg.Name) {
			continue
		}
		if err := r.client.SchedulingV1alpha1().CompositePodGroups(cpg.Namespace).Delete(ctx, cpg.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cpg.UID}}); err != nil && !isNotFound(err) {
			return err
		}
		r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "CompositePodGroupDeleted", "Sync", "deleted CompositePodGroup %q: %s", cpg.Name, why)
	}
	return nil
}

// deleteOwned deletes every Workload and group an object controls (Groups.None): its pods
// join groups their labels name, so these would stay empty, and their conditions waiting
// for pods forever.
func (r *Reconciler) deleteOwned(ctx context.Context, obj Object, owned ownedObjects) error {
	const why = "the pods name a group of their own"
	if err := r.deleteObsolete(ctx, obj, &Groups{}, owned, why); err != nil {
		return err
	}
	for _, wl := range owned.workloads {
		if err := r.client.SchedulingV1alpha1().Workloads(wl.Namespace).Delete(ctx, wl.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wl.UID}}); err != nil && !isNotFound(err) {
			return err
		}
		r.recorder.Eventf(obj, nil, v1.EventTypeNormal, "WorkloadDeleted", "Sync", "deleted Workload %q: %s", wl.Name, why)
	}
	return nil
}

// controlledBy checks an object found under the name a create wanted: the workload's own
// (the informer had not seen it yet, e.g. after a restart) or someone else's, which is an
// error a person has to resolve.
func controlledBy(a Adapter, obj Object, o metav1.Object, kind string) error {
	if ref := metav1.GetControllerOf(o); ref == nil || ref.UID != obj.GetUID() {
		return fmt.Errorf("%s %q exists and is not controlled by %s %q; rename or delete it", kind, o.GetName(), a.GVK().Kind, obj.GetName())
	}
	return nil
}
