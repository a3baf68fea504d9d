package testing

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	"k8s.io/utils/ptr"
)

// JobWrapper builds a batch/v1 Job.
type JobWrapper struct{ batchv1.Job }

// MakeJob returns a Job of one pod of lockstep's profile, created at Epoch.
func MakeJob() *JobWrapper {
	w := &JobWrapper{}
	w.CreationTimestamp = metav1.NewTime(Epoch)
	w.Spec.Template.Spec.SchedulerName = SchedulerName
	w.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyNever
	w.Spec.Template.Spec.Containers = []v1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}
	return w
}

// Obj returns the Job.
func (w *JobWrapper) Obj() *batchv1.Job { return &w.Job }

// Name sets the name, and the UID to uid-<name> unless one is set.
func (w *JobWrapper) Name(name string) *JobWrapper {
	w.ObjectMeta.Name = name
	if w.ObjectMeta.UID == "" {
		w.ObjectMeta.UID = types.UID("uid-" + name)
	}
	return w
}

// Namespace sets the namespace.
func (w *JobWrapper) Namespace(ns string) *JobWrapper { w.ObjectMeta.Namespace = ns; return w }

// UID sets the UID.
func (w *JobWrapper) UID(uid string) *JobWrapper { w.ObjectMeta.UID = types.UID(uid); return w }

// Created sets the creation time.
func (w *JobWrapper) Created(t time.Time) *JobWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Indexed makes the Job Indexed with parallelism = completions = n (KEP-5547's gang).
func (w *JobWrapper) Indexed(n int32) *JobWrapper {
	w.Spec.Parallelism, w.Spec.Completions = ptr.To(n), ptr.To(n)
	w.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return w
}

// Parallelism sets parallelism (and nothing else).
func (w *JobWrapper) Parallelism(n int32) *JobWrapper { w.Spec.Parallelism = ptr.To(n); return w }

// Annotation sets an annotation of the Job.
func (w *JobWrapper) Annotation(k, v string) *JobWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Label sets a label of the Job.
func (w *JobWrapper) Label(k, v string) *JobWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// TemplateAnnotation sets an annotation of the pod template.
func (w *JobWrapper) TemplateAnnotation(k, v string) *JobWrapper {
	if w.Spec.Template.Annotations == nil {
		w.Spec.Template.Annotations = map[string]string{}
	}
	w.Spec.Template.Annotations[k] = v
	return w
}

// TemplateLabel sets a label of the pod template.
func (w *JobWrapper) TemplateLabel(k, v string) *JobWrapper {
	if w.Spec.Template.Labels == nil {
		w.Spec.Template.Labels = map[string]string{}
	}
	w.Spec.Template.Labels[k] = v
	return w
}

// SchedulerName sets the pod template's schedulerName.
func (w *JobWrapper) SchedulerName(s string) *JobWrapper {
	w.Spec.Template.Spec.SchedulerName = s
	return w
}

// Req sets the requests of the pod template's container.
func (w *JobWrapper) Req(req map[v1.ResourceName]string) *JobWrapper {
	w.Spec.Template.Spec.Containers[0].Resources.Requests = resourceList(req)
	return w
}

// Owner sets the Job's controller.
func (w *JobWrapper) Owner(apiVersion, kind, name, uid string) *JobWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}}
	return w
}

// Pod returns pod i of the Job as its controller would create it: owned by the Job, from its
// template.
func (w *JobWrapper) Pod(i int) *st.PodWrapper {
	name := fmt.Sprintf("%s-%d", w.ObjectMeta.Name, i)
	p := st.MakePod().Namespace(w.ObjectMeta.Namespace).Name(name).UID(string(w.ObjectMeta.UID) + "-" + name).
		CreationTimestamp(w.CreationTimestamp).Labels(w.Spec.Template.Labels).Annotations(w.Spec.Template.Annotations)
	p.Spec = *w.Spec.Template.Spec.DeepCopy()
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: w.ObjectMeta.Name,
		UID: w.ObjectMeta.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	return p
}

func resourceList(r map[v1.ResourceName]string) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range r {
		out[name] = resource.MustParse(q)
	}
	return out
}

// Completions sets completions (and nothing else).
func (w *JobWrapper) Completions(n int32) *JobWrapper { w.Spec.Completions = ptr.To(n); return w }

// BackoffLimit sets backoffLimit.
func (w *JobWrapper) BackoffLimit(n int32) *JobWrapper { w.Spec.BackoffLimit = ptr.To(n); return w }

// Suspend sets suspend.
func (w *JobWrapper) Suspend(s bool) *JobWrapper { w.Spec.Suspend = ptr.To(s); return w }

// Condition adds a status condition of type t (JobComplete, JobFailed, ...) with status.
func (w *JobWrapper) Condition(t batchv1.JobConditionType, status v1.ConditionStatus) *JobWrapper {
	w.Status.Conditions = append(w.Status.Conditions, batchv1.JobCondition{Type: t, Status: status})
	return w
}

// PodFailurePolicy sets the Job's podFailurePolicy rules.
func (w *JobWrapper) PodFailurePolicy(rules ...batchv1.PodFailurePolicyRule) *JobWrapper {
	w.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
	return w
}
