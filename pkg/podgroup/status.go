package podgroup

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// waitingGrace delays writing a "waiting" condition: a gang whose pods are all created and
// placed within it gets a single write (Scheduled) instead of two.
const waitingGrace = 2 * time.Second

// condition is the PodGroupInitiallyScheduled condition a group should carry, with the note
// of the event that announces it.
type condition struct {
	status  metav1.ConditionStatus
	reason  string
	message string
	note    string
}

// desiredLocked computes the condition a group should carry from the model. Messages
// describe the state without counts that change pod by pod, so that a condition is written
// once per transition; the event note adds the counts at the time of the write.
func (m *Manager) desiredLocked(k Key) (condition, bool) {
	g := m.groups[k]
	if g == nil || !g.exists() {
		return condition{}, false
	}
	switch {
	case g.scheduled:
		msg := ""
		if k.Kind == KindPodGroup {
			msg = fmt.Sprintf("%d pods placed together (minCount %d)", g.scheduledN(), g.minimum())
		} else {
			r := m.groups.readiness(countScheduled)
			msg = fmt.Sprintf("%d child groups placed together (minGroupCount %d)", r.readyChildren(g), g.minimum())
		}
		return condition{status: metav1.ConditionTrue, reason: v1alpha1.ReasonScheduled, message: msg, note: msg}, true
	case g.problem != "":
		return condition{status: metav1.ConditionFalse, reason: v1alpha1.ReasonInvalid,
			message: "invalid: " + g.problem, note: "invalid: " + g.problem}, true
	case g.failure != "":
		return condition{status: metav1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable, message: g.failure, note: g.failure}, true
	}
	known := m.groups.readiness(countKnown)
	if known.path(k) {
		return condition{}, false
	}
	c := condition{status: metav1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable}
	switch {
	case k.Kind == KindPodGroup && !known.subtree(k):
		c.message = fmt.Sprintf("waiting for pods: minCount is %d", g.minimum())
		c.note = fmt.Sprintf("waiting for pods: %d of %d pods exist", g.known(), g.minimum())
	case k.Kind == KindCompositePodGroup && !known.subtree(k):
		c.message = fmt.Sprintf("waiting for child groups: %s", known.shortfall(k, "exist"))
		c.note = c.message
	default:
		pk, _ := g.parentKey()
		c.message = fmt.Sprintf("waiting for the rest of the tree: %s: %s", pk.Name, known.shortfall(pk, "exist"))
		c.note = c.message
	}
	return c, true
}

// sameAs compares what a condition says; the event note is not part of it.
func (c condition) sameAs(o condition) bool {
	return c.status == o.status && c.reason == o.reason && c.message == o.message
}

// statusWriter turns the model's desired conditions into status writes and events. Keys are
// queued whenever a group's state may have changed; the worker computes the condition at
// processing time and writes only when it differs from what the object carries.
type statusWriter struct {
	m     *Manager
	queue workqueue.TypedRateLimitingInterface[Key]
	// written remembers the last condition written per group (and the object's UID), so that
	// a stale informer cache does not cause the same write twice.
	written map[Key]writtenCondition
}

type writtenCondition struct {
	uid types.UID
	condition
}

func newStatusWriter(m *Manager) *statusWriter {
	return &statusWriter{
		m: m,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "lockstep_podgroup_status"}),
		written: map[Key]writtenCondition{},
	}
}

// enqueue schedules a status check after the waiting grace.
func (w *statusWriter) enqueue(k Key) { w.queue.AddAfter(k, waitingGrace) }

// enqueueNow schedules a status check at once (outcomes of attempts, invalid groups).
func (w *statusWriter) enqueueNow(k Key) { w.queue.Add(k) }

func (w *statusWriter) run(ctx context.Context) {
	defer w.queue.ShutDown()
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for w.next(ctx) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (w *statusWriter) next(ctx context.Context) bool {
	k, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(k)
	if err := w.sync(ctx, k); err != nil {
		w.m.logger.V(2).Info("Retrying status update", "group", k, "err", err)
		w.queue.AddRateLimited(k)
		return true
	}
	w.queue.Forget(k)
	return true
}

func (w *statusWriter) sync(ctx context.Context, k Key) error {
	w.m.mu.Lock()
	want, ok := w.m.desiredLocked(k)
	w.m.mu.Unlock()
	if !ok {
		return nil
	}
	var (
		obj        runtime.Object
		uid        types.UID
		conditions *[]metav1.Condition
		generation int64
		update     func() error
	)
	switch k.Kind {
	case KindPodGroup:
		pg, err := w.m.pgLister.PodGroups(k.Namespace).Get(k.Name)
		if err != nil {
			return w.ignoreNotFound(k, err)
		}
		pg = pg.DeepCopy()
		obj, uid, conditions, generation = pg, pg.UID, &pg.Status.Conditions, pg.Generation
		update = func() error {
			_, err := w.m.client.SchedulingV1alpha1().PodGroups(k.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{})
			return err
		}
	case KindCompositePodGroup:
		cpg, err := w.m.cpgLister.CompositePodGroups(k.Namespace).Get(k.Name)
		if err != nil {
			return w.ignoreNotFound(k, err)
		}
		cpg = cpg.DeepCopy()
		obj, uid, conditions, generation = cpg, cpg.UID, &cpg.Status.Conditions, cpg.Generation
		update = func() error {
			_, err := w.m.client.SchedulingV1alpha1().CompositePodGroups(k.Namespace).UpdateStatus(ctx, cpg, metav1.UpdateOptions{})
			return err
		}
	}
	cur := meta.FindStatusCondition(*conditions, v1alpha1.PodGroupInitiallyScheduled)
	if cur != nil && cur.Status == metav1.ConditionTrue {
		return nil // terminal, as upstream
	}
	if last, ok := w.written[k]; ok && last.uid == uid && last.sameAs(want) {
		return nil
	}
	if cur != nil && cur.Status == want.status && cur.Reason == want.reason && cur.Message == want.message {
		return nil
	}
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type:               v1alpha1.PodGroupInitiallyScheduled,
		Status:             want.status,
		Reason:             want.reason,
		Message:            want.message,
		ObservedGeneration: generation,
	})
	if err := update(); err != nil {
		return w.ignoreNotFound(k, err)
	}
	w.written[k] = writtenCondition{uid: uid, condition: want}
	metrics.statusWrites.WithLabelValues(want.reason).Inc()
	if w.m.recorder != nil {
		eventType := v1.EventTypeWarning
		if want.status == metav1.ConditionTrue {
			eventType = v1.EventTypeNormal
		}
		w.m.recorder.Eventf(obj, nil, eventType, want.reason, "Scheduling", "%s", want.note)
	}
	return nil
}

// ignoreNotFound drops a deleted group: there is nothing left to write.
func (w *statusWriter) ignoreNotFound(k Key, err error) error {
	if apierrors.IsNotFound(err) {
		delete(w.written, k)
		return nil
	}
	return err
}
