package jobgroups

import (
	"context"
	"fmt"
	"reflect"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// ensureWorkload returns the Workload of a Job, creating it if the Job owns none.
func (c *Controller) ensureWorkload(ctx context.Context, job *batchv1.Job, gang *podgroup.JobGang, owned []string) (*v1alpha1.Workload, error) {
	if name := pick(owned, gang.Name); name != "" {
		return c.workloads.Workloads(job.Namespace).Get(name)
	}
	wl := &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: gang.Name, OwnerReferences: []metav1.OwnerReference{jobRef(job)}},
		Spec: v1alpha1.WorkloadSpec{
			ControllerRef: &v1alpha1.TypedLocalObjectReference{APIGroup: batchv1.GroupName, Kind: "Job", Name: job.Name},
			PodGroupTemplates: []v1alpha1.PodGroupTemplate{{
				Name:                  podgroup.JobTemplateName,
				SchedulingPolicy:      policyOf(gang),
				SchedulingConstraints: constraintsOf(gang),
				PriorityClassName:     job.Spec.Template.Spec.PriorityClassName,
			}},
		},
	}
	created, err := c.client.SchedulingV1alpha1().Workloads(job.Namespace).Create(ctx, wl, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, err := c.client.SchedulingV1alpha1().Workloads(job.Namespace).Get(ctx, gang.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return existing, controlledBy(job, existing, "Workload")
	}
	if err != nil {
		return nil, err
	}
	c.recorder.Eventf(job, nil, v1.EventTypeNormal, "WorkloadCreated", "Sync", "created Workload %q", created.Name)
	return created, nil
}

// ensurePodGroup returns the PodGroup of a Job, creating it if the Job owns none.
func (c *Controller) ensurePodGroup(ctx context.Context, job *batchv1.Job, gang *podgroup.JobGang, wl *v1alpha1.Workload, owned []string) (*v1alpha1.PodGroup, error) {
	if name := pick(owned, gang.Name); name != "" {
		return c.podGroups.PodGroups(job.Namespace).Get(name)
	}
	wlRef := metav1.OwnerReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Workload", Name: wl.Name, UID: wl.UID}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: gang.Name, OwnerReferences: []metav1.OwnerReference{jobRef(job), wlRef}},
		Spec: v1alpha1.PodGroupSpec{
			WorkloadRef:           &v1alpha1.WorkloadReference{WorkloadName: wl.Name, TemplateName: podgroup.JobTemplateName},
			SchedulingPolicy:      policyOf(gang),
			SchedulingConstraints: constraintsOf(gang),
			PriorityClassName:     job.Spec.Template.Spec.PriorityClassName,
		},
	}
	created, err := c.client.SchedulingV1alpha1().PodGroups(job.Namespace).Create(ctx, pg, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, err := c.client.SchedulingV1alpha1().PodGroups(job.Namespace).Get(ctx, gang.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return existing, controlledBy(job, existing, "PodGroup")
	}
	if err != nil {
		return nil, err
	}
	c.recorder.Eventf(job, nil, v1.EventTypeNormal, "PodGroupCreated", "Sync", "created PodGroup %q (minCount %d)", created.Name, gang.MinCount)
	return created, nil
}

// controlledBy checks an object found under the name a create wanted: the Job's own (the
// informer had not seen it yet, e.g. after a restart) or someone else's, which is an error a
// person has to resolve.
func controlledBy(job *batchv1.Job, o metav1.Object, kind string) error {
	if ref := metav1.GetControllerOf(o); ref == nil || ref.UID != job.UID {
		return fmt.Errorf("%s %q exists and is not controlled by this Job; rename or delete it", kind, o.GetName())
	}
	return nil
}

// syncSpec makes minCount follow the Job (parallelism, or the min-count annotation), with an
// event, and says so when topology annotations changed after the groups were created.
func (c *Controller) syncSpec(ctx context.Context, job *batchv1.Job, gang *podgroup.JobGang, wl *v1alpha1.Workload, pg *v1alpha1.PodGroup) error {
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil && g.MinCount != gang.MinCount {
		before := g.MinCount
		upd := pg.DeepCopy()
		upd.Spec.SchedulingPolicy.Gang.MinCount = gang.MinCount
		if _, err := c.client.SchedulingV1alpha1().PodGroups(job.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return err
		}
		c.recorder.Eventf(job, nil, v1.EventTypeNormal, "MinCountChanged", "Sync", "minCount of PodGroup %q changed from %d to %d", pg.Name, before, gang.MinCount)
	}
	if len(wl.Spec.PodGroupTemplates) == 1 {
		if g := wl.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang; g != nil && g.MinCount != gang.MinCount {
			upd := wl.DeepCopy()
			upd.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = gang.MinCount
			if _, err := c.client.SchedulingV1alpha1().Workloads(job.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
	}
	if !reflect.DeepEqual(pg.Spec.SchedulingConstraints, constraintsOf(gang)) {
		c.report(job, []string{fmt.Sprintf("topology annotations differ from PodGroup %q, whose constraints cannot change after creation; recreate the Job to change them", pg.Name)})
	}
	return nil
}
