package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// CreatePriorityClass creates a PriorityClass of value; never sets preemptionPolicy: Never.
func (e *Env) CreatePriorityClass(t *testing.T, name string, value int32, never bool) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if never {
		pc.PreemptionPolicy = ptr.To(v1.PreemptNever)
	}
	if _, err := e.Client.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Kubelets stands in for the kubelets of the test's nodes, which do not exist: a pod that
// is being deleted (it has a deletionTimestamp) is removed at once, as a kubelet would once
// its containers stopped. It records every pod it removed as it was then (conditions
// included).
type Kubelets struct {
	mu      sync.Mutex
	removed []*v1.Pod
}

// StartKubelets removes terminating pods of namespace ns until the test ends.
func (e *Env) StartKubelets(t *testing.T, ns string) *Kubelets {
	t.Helper()
	return e.startKubelets(t, ns, false)
}

// StartKubeletsFailingDeletedPods is StartKubelets as a real kubelet ends a pod that is being
// deleted: before the pod object goes, it reports the pod terminal, phase Failed (its
// containers killed: exit code 137), its conditions kept (DisruptionTarget among them), unless
// it already finished; then it deletes the pod. For a pod that was never bound it stands in
// for the pod garbage collector, which does the same. The upstream Job controller needs this
// for a Job with a podFailurePolicy, whose podReplacementPolicy is then Failed by default:
// it matches the policy's rules against failed pods only, and replaces a terminating pod
// only once it is Failed, not when its deletion begins. Opt-in: with StartKubelets, such a
// Job's deleted pods stay terminating, held by the Job's tracking finalizer, and are never
// replaced. Removed reports each pod as it was when its deletion began.
func (e *Env) StartKubeletsFailingDeletedPods(t *testing.T, ns string) *Kubelets {
	t.Helper()
	return e.startKubelets(t, ns, true)
}

// startKubelets removes the terminating pods of ns, first reporting them Failed if fail.
func (e *Env) startKubelets(t *testing.T, ns string, fail bool) *Kubelets {
	k := &Kubelets{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		_ = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			list, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range list.Items {
				p := &list.Items[i]
				if p.DeletionTimestamp == nil || seen[string(p.UID)] {
					continue
				}
				if fail && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
					_, err := e.Client.CoreV1().Pods(ns).UpdateStatus(ctx, killed(p), metav1.UpdateOptions{})
					if err != nil && !apierrors.IsNotFound(err) {
						continue // a conflict: the next round reads the pod again
					}
				}
				err := e.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0),
					Preconditions: &metav1.Preconditions{UID: &p.UID}})
				if err != nil && !apierrors.IsNotFound(err) {
					continue
				}
				seen[string(p.UID)] = true
				k.mu.Lock()
				k.removed = append(k.removed, p.DeepCopy())
				k.mu.Unlock()
			}
			return false, nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return k
}

// killed returns a copy of a pod whose containers a kubelet killed for its deletion: phase
// Failed, not ready, each container terminated with exit code 137.
func killed(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = v1.PodFailed
	for j := range p.Status.Conditions {
		if c := &p.Status.Conditions[j]; c.Type == v1.PodReady || c.Type == v1.ContainersReady {
			c.Status, c.LastTransitionTime = v1.ConditionFalse, now
		}
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: now}}})
	}
	return p
}

// Removed returns the pods removed so far, as they were when their deletion began.
func (k *Kubelets) Removed() []*v1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*v1.Pod(nil), k.removed...)
}

// RunPods stands in for the kubelets of namespace ns for pods to run: a bound pod is
// reported Running and Ready at once and then, if end names a phase for it, Succeeded (its
// containers exited 0) or Failed (exit 1), as a short-lived container would; "" keeps it
// running. Until the test ends.
func (e *Env) RunPods(t *testing.T, ns string, end func(*v1.Pod) v1.PodPhase) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			list, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for i := range list.Items {
				p := list.Items[i].DeepCopy()
				if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
					continue
				}
				now := metav1.Now()
				phase := v1.PodPhase("")
				if end != nil {
					phase = end(p)
				}
				switch {
				case p.Status.Phase != v1.PodRunning:
					p.Status.Phase = v1.PodRunning
					p.Status.StartTime = &now
					p.Status.Conditions = append(p.Status.Conditions,
						v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now},
						v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: now})
				case phase == v1.PodSucceeded || phase == v1.PodFailed:
					exit, reason := int32(0), "Completed"
					if phase == v1.PodFailed {
						exit, reason = 1, "Error"
					}
					p.Status.Phase = phase
					for j := range p.Status.Conditions {
						if c := &p.Status.Conditions[j]; c.Type == v1.PodReady || c.Type == v1.ContainersReady {
							c.Status, c.LastTransitionTime = v1.ConditionFalse, now
						}
					}
					p.Status.ContainerStatuses = nil
					for _, c := range p.Spec.Containers {
						p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{Name: c.Name, Image: c.Image,
							State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exit, Reason: reason, StartedAt: now, FinishedAt: now}}})
					}
				default:
					continue
				}
				_, _ = e.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			}
			return false, nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
}
