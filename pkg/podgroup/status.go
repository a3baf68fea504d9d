package podgroup

import (
	"context"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
)

// waitingGrace delays writing a "waiting" condition: a gang whose pods are all created and
// placed within it gets a single write (Scheduled) instead of two. Workload controllers create
// a group's pods right after the group, but a burst of thousands of them (a sweep of Jobs
// submitted at once) is spread over seconds by the apiserver's own limits: waiting that long
// for pods is not news worth a write and an event per group.
const waitingGrace = 10 * time.Second

// detailsRefresh is how soon a condition whose state has not changed is first rewritten
// because its details have (how many pods were placed in the last failed attempt, how much
// of a reserved domain is free): a gang that fails every few seconds in a busy cluster writes
// its group once in this interval, not once per attempt. Each further rewrite of the same
// state waits twice as long, up to maxDetailsRefresh: a gang that waits for hours writes its
// group about ten times an hour, not 120. A change of state is written at once.
const (
	detailsRefresh    = 30 * time.Second
	maxDetailsRefresh = 10 * time.Minute
)

// detailsBudget bounds the rewrites of details of every group together (per second, and a
// burst): a thousand gangs failing at once do not write a thousand groups every refresh.
// Changes of state are not counted against it.
const (
	detailsBudget      = 5
	detailsBudgetBurst = 50
)

// refreshAfter is how long after its n-th rewrite of details a condition may be rewritten
// for its details again.
func refreshAfter(n int) time.Duration {
	d := detailsRefresh
	for ; n > 0 && d < maxDetailsRefresh; n-- {
		d *= 2
	}
	return min(d, maxDetailsRefresh)
}

// Condition is the PodGroupInitiallyScheduled condition a group should carry, with the note
// of the event that announces it ("" for none).
type Condition struct {
	// UID is the object the model judged: a condition is never written on a group deleted
	// and created again that the model has not seen yet.
	UID types.UID
	// Generation is the generation of the spec the model judged (observedGeneration).
	Generation int64
	Status     metav1.ConditionStatus
	Reason     string
	Message    string
	Note       string
	// Details: the message holds details that change while the state (Status, Reason and
	// the kind of message) stays; a change of them alone is written at most every
	// detailsRefresh.
	Details bool
	// Since, if set, is the condition's lastTransitionTime: when the state it reports began
	// (a partial bind), which a new leader restores from the object.
	Since time.Time
}

// sameAs compares what a condition says, and since when if it says; the event note is not
// part of it.
func (c Condition) sameAs(o Condition) bool {
	return c.Status == o.Status && c.Reason == o.Reason && c.Message == o.Message && c.Since.Equal(o.Since)
}

// StatusWriter turns desired conditions into status writes and events. Keys are queued
// whenever a group's state may have changed; the worker computes the condition when it
// processes the key and writes only when it differs from what the object carries. Only the
// leader runs it: a standby queues keys and writes nothing.
type StatusWriter struct {
	client    versioned.Interface
	pgLister  listers.PodGroupLister
	cpgLister listers.CompositePodGroupLister
	recorder  events.EventRecorder
	// admissions finds the Kueue Workload of a root group's workload, where its events are
	// told too; nil for none.
	admissions Admissions
	queue      workqueue.TypedRateLimitingInterface[Key]
	// written remembers, by condition type, the last condition written per group (and the
	// object's UID), so that a stale informer cache does not cause the same write twice.
	written map[string]map[Key]writtenCondition
	now     func() time.Time
	// budget limits the rewrites of details (detailsBudget).
	budget *rate.Limiter
	// native writes the status of native groups; nil when none is watched.
	native *NativeSource
}

type writtenCondition struct {
	uid types.UID
	at  time.Time
	// refreshes counts the rewrites of details since the state last changed.
	refreshes int
	Condition
}

// detailsOnly says whether want differs from the condition last written only in its
// details, and when it may be written.
func (c writtenCondition) detailsOnly(want Condition) (time.Time, bool) {
	if !c.Details || !want.Details || c.Status != want.Status || c.Reason != want.Reason {
		return time.Time{}, false
	}
	return c.at.Add(refreshAfter(c.refreshes)), true
}

// NewStatusWriter returns a writer; Run starts it.
func NewStatusWriter(client versioned.Interface, pgLister listers.PodGroupLister, cpgLister listers.CompositePodGroupLister, recorder events.EventRecorder) *StatusWriter {
	return &StatusWriter{
		client:     client,
		pgLister:   pgLister,
		cpgLister:  cpgLister,
		recorder:   recorder,
		admissions: noAdmissions{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[Key](),
			workqueue.TypedRateLimitingQueueConfig[Key]{Name: "lockstep_podgroup_status"}),
		written: map[string]map[Key]writtenCondition{v1alpha1.PodGroupInitiallyScheduled: {}, v1alpha1.DisruptionTarget: {},
			v1alpha1.Short: {}},
		now:    time.Now,
		budget: rate.NewLimiter(detailsBudget, detailsBudgetBurst),
	}
}

// Enqueue schedules a status check at once (outcomes of attempts, invalid groups).
func (w *StatusWriter) Enqueue(k Key) { w.queue.Add(k) }

// EnqueueAfter schedules a status check after d ("waiting" conditions).
func (w *StatusWriter) EnqueueAfter(k Key, d time.Duration) { w.queue.AddAfter(k, d) }

// Run writes conditions from conds until ctx is done, once synced says conds has seen every
// group and pod: a condition judged before (a child group whose parent was not seen yet reads
// invalid) would be written, then taken back, each time a scheduler starts leading.
func (w *StatusWriter) Run(ctx context.Context, conds Conditions, synced cache.InformerSynced) {
	defer w.queue.ShutDown()
	logger := klog.FromContext(ctx)
	if !cache.WaitForNamedCacheSync("lockstep-status", ctx.Done(), synced) {
		return
	}
	logger.V(2).Info("Writing group status")
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		for w.next(ctx, conds) {
		}
	}, time.Second)
	<-ctx.Done()
}

func (w *StatusWriter) next(ctx context.Context, conds Conditions) bool {
	k, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(k)
	if err := w.sync(ctx, conds, k); err != nil {
		klog.FromContext(ctx).V(2).Info("Retrying status update", "group", k, "err", err)
		w.queue.AddRateLimited(k)
		return true
	}
	w.queue.Forget(k)
	return true
}

func (w *StatusWriter) sync(ctx context.Context, conds Conditions, k Key) error {
	desired, ok := conds.Conditions(k)
	if !ok || (desired.Initial == nil && desired.Disruption == nil && desired.Short == nil) {
		w.forgetIfGone(k)
		return nil
	}
	var (
		obj        runtime.Object
		uid        types.UID
		conditions *[]metav1.Condition
		update     func() error
	)
	switch {
	case k.Native():
		if w.native == nil {
			return nil
		}
		var err error
		if obj, uid, conditions, update, err = w.native.statusTarget(ctx, k); err != nil {
			return w.ignoreNotFound(k, err)
		}
	case k.Kind == KindPodGroup:
		pg, err := w.pgLister.PodGroups(k.Namespace).Get(k.Name)
		if err != nil {
			return w.ignoreNotFound(k, err)
		}
		pg = pg.DeepCopy()
		obj, uid, conditions = pg, pg.UID, &pg.Status.Conditions
		update = func() error {
			_, err := w.client.SchedulingV1alpha1().PodGroups(k.Namespace).UpdateStatus(ctx, pg, metav1.UpdateOptions{})
			return err
		}
	case k.Kind == KindCompositePodGroup:
		cpg, err := w.cpgLister.CompositePodGroups(k.Namespace).Get(k.Name)
		if err != nil {
			return w.ignoreNotFound(k, err)
		}
		cpg = cpg.DeepCopy()
		obj, uid, conditions = cpg, cpg.UID, &cpg.Status.Conditions
		update = func() error {
			_, err := w.client.SchedulingV1alpha1().CompositePodGroups(k.Namespace).UpdateStatus(ctx, cpg, metav1.UpdateOptions{})
			return err
		}
	}
	if desired.UID != uid {
		return nil // not the object the model judged
	}
	// The conditions due now; a rewrite of details alone (the state is the same) is one of
	// many: it spends the writer's budget, and tells no event (the state's own event was told).
	type due struct {
		condType string
		want     Condition
		details  bool
	}
	var dues []due
	onlyDetails := true
	for _, c := range []struct {
		condType string
		want     *Condition
	}{{v1alpha1.PodGroupInitiallyScheduled, desired.Initial}, {v1alpha1.DisruptionTarget, desired.Disruption}, {v1alpha1.Short, desired.Short}} {
		if c.want == nil || !w.dueNow(c.condType, k, uid, *conditions, *c.want) {
			continue
		}
		d := due{condType: c.condType, want: *c.want, details: w.detailsOnly(w.written[c.condType], k, uid, *c.want)}
		onlyDetails = onlyDetails && d.details
		dues = append(dues, d)
	}
	if len(dues) == 0 {
		return nil
	}
	if onlyDetails && !w.budget.AllowN(w.now(), 1) {
		w.queue.AddAfter(k, time.Second)
		return nil
	}
	for _, d := range dues {
		setCondition(conditions, d.condType, d.want, w.now())
	}
	if err := update(); err != nil {
		return w.ignoreNotFound(k, err)
	}
	logger := klog.FromContext(ctx)
	for _, d := range dues {
		w.written[d.condType][k] = w.record(w.written[d.condType], k, uid, d.want, d.details)
		metrics.statusWrites.WithLabelValues(d.want.Reason).Inc()
		logger.V(4).Info("Group condition written", "group", k, "type", d.condType, "status", d.want.Status, "reason", d.want.Reason, "message", d.want.Message)
		if w.recorder != nil && d.want.Note != "" && !d.details {
			w.tell(k, obj, d.condType, d.want)
		}
	}
	return nil
}

// tell records the event of a condition written: on the group, and on the workload of a
// root group and its Kueue Workload.
func (w *StatusWriter) tell(k Key, obj runtime.Object, condType string, want Condition) {
	eventType := v1.EventTypeNormal
	if (want.Status == metav1.ConditionTrue) == (condType == v1alpha1.Short) {
		eventType = v1.EventTypeWarning // not scheduled, or short
	}
	w.recorder.Eventf(obj, nil, eventType, want.Reason, "Scheduling", "%s", want.Note)
	if owner := workloadOf(obj); owner != nil {
		w.recorder.Eventf(owner, obj, eventType, want.Reason, "Scheduling", "%s %s: %s", k.Kind, k.Name, want.Note)
		if admission := w.admissions.Of(k.Namespace, owner.GetUID()); admission != nil {
			w.recorder.Eventf(admission, obj, eventType, want.Reason, "Scheduling", "%s %s of %s %s: %s", k.Kind, k.Name,
				owner.GetKind(), owner.GetName(), want.Note)
		}
	}
}

// Admissions finds the object that admits a workload to run, where the events of the
// workload's gang are told too: Kueue's Workload (pkg/kueueworkloads), which Kueue users
// follow a queued job through.
type Admissions interface {
	// Of returns the object admitting the workload object whose UID is controller, in
	// namespace, as an object events can regard; nil for none.
	Of(namespace string, controller types.UID) runtime.Object
}

// noAdmissions is the Admissions of a writer told of none.
type noAdmissions struct{}

func (noAdmissions) Of(string, types.UID) runtime.Object { return nil }

// workloadOf returns, for the root group of a tree, the workload object that controls it (a
// Job, a JobSet, a scheduler-plugins PodGroup...) as an object events can regard, nil for a
// group with a parent or no controller. The group's events are told there too: it is where
// users of those workloads look (kubectl describe job; Kueue users beside Kueue's own events
// on the Job), and they need not know the group's hashed name.
func workloadOf(obj runtime.Object) *unstructured.Unstructured {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	switch o := obj.(type) {
	case *v1alpha1.PodGroup:
		if o.Spec.ParentCompositePodGroupName != nil {
			return nil
		}
	case *v1alpha1.CompositePodGroup:
		if o.Spec.ParentCompositePodGroupName != nil {
			return nil
		}
	}
	ref := metav1.GetControllerOf(m)
	if ref == nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	u.SetNamespace(m.GetNamespace())
	u.SetName(ref.Name)
	u.SetUID(ref.UID)
	return u
}

// dueNow reports whether a condition of type condType should be written as want now:
// PodGroupInitiallyScheduled never once it is True (terminal, as upstream); DisruptionTarget
// and Short False only over a True (a group never preempted or short carries none).
func (w *StatusWriter) dueNow(condType string, k Key, uid types.UID, conditions []metav1.Condition, want Condition) bool {
	cur := meta.FindStatusCondition(conditions, condType)
	switch {
	case condType == v1alpha1.PodGroupInitiallyScheduled && cur != nil && cur.Status == metav1.ConditionTrue:
		return false
	case condType != v1alpha1.PodGroupInitiallyScheduled && want.Status == metav1.ConditionFalse && (cur == nil || cur.Status != metav1.ConditionTrue):
		return false
	}
	return w.due(w.written[condType], k, uid, cur, want)
}

// due reports whether want, a condition the object carries as cur, should be written now:
// not when it says what was last written or what the object says, and a change of details
// alone not before detailsRefresh (the key is queued for then).
func (w *StatusWriter) due(written map[Key]writtenCondition, k Key, uid types.UID, cur *metav1.Condition, want Condition) bool {
	last, ok := written[k]
	if ok && last.uid == uid && last.sameAs(want) {
		return false
	}
	if due, details := last.detailsOnly(want); ok && last.uid == uid && details && w.now().Before(due) {
		w.queue.AddAfter(k, due.Sub(w.now())) // the latest details then
		return false
	}
	// A moment the condition says (Since) is a fact a new leader decides by: a new short
	// episode in the same words as the last is written for its new moment.
	return cur == nil || cur.Status != want.Status || cur.Reason != want.Reason || cur.Message != want.Message ||
		(!want.Since.IsZero() && !cur.LastTransitionTime.Time.Equal(want.Since))
}

// detailsOnly reports whether want, about to be written, says what was last written but for
// its details.
func (w *StatusWriter) detailsOnly(written map[Key]writtenCondition, k Key, uid types.UID, want Condition) bool {
	last, ok := written[k]
	if !ok || last.uid != uid {
		return false
	}
	_, details := last.detailsOnly(want)
	return details
}

// record is what is remembered of a condition written now: a rewrite of details counts one
// more, a change of state starts over.
func (w *StatusWriter) record(written map[Key]writtenCondition, k Key, uid types.UID, c Condition, details bool) writtenCondition {
	n := 0
	if details {
		n = written[k].refreshes + 1
	}
	return writtenCondition{uid: uid, at: w.now(), refreshes: n, Condition: c}
}

// setCondition sets a condition of type condType to want; its lastTransitionTime is want's
// Since when set (the moment its state began, which a new leader reads back), else now if its
// status changes.
func setCondition(conditions *[]metav1.Condition, condType string, want Condition, now time.Time) {
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type:               condType,
		Status:             want.Status,
		Reason:             want.Reason,
		Message:            want.Message,
		ObservedGeneration: want.Generation,
		LastTransitionTime: metav1.NewTime(now), // when its status changes, and want says no other
	})
	if !want.Since.IsZero() {
		meta.FindStatusCondition(*conditions, condType).LastTransitionTime = metav1.NewTime(want.Since)
	}
}

// forgetIfGone forgets what was written on a group its lister no longer has: lockstep's
// listers for its own kinds, the native source's for the native ones.
func (w *StatusWriter) forgetIfGone(k Key) {
	var err error
	switch {
	case k.Native():
		if w.native == nil || !w.native.exists(k) {
			w.forget(k)
		}
		return
	case k.Kind == KindPodGroup:
		_, err = w.pgLister.PodGroups(k.Namespace).Get(k.Name)
	case k.Kind == KindCompositePodGroup:
		_, err = w.cpgLister.CompositePodGroups(k.Namespace).Get(k.Name)
	}
	if apierrors.IsNotFound(err) {
		w.forget(k)
	}
}

// forget drops what was written on group k.
func (w *StatusWriter) forget(k Key) {
	for _, written := range w.written {
		delete(written, k)
	}
}

// Remembered counts the groups the writer remembers a write for (diagnostics: flat while
// groups come and go).
func (w *StatusWriter) Remembered() int {
	n := 0
	for _, written := range w.written {
		n += len(written)
	}
	return n
}

// ignoreNotFound drops a deleted group: there is nothing left to write.
func (w *StatusWriter) ignoreNotFound(k Key, err error) error {
	if apierrors.IsNotFound(err) {
		w.forget(k)
		return nil
	}
	return err
}
