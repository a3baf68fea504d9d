package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A "nothing happened" check (no pod bound, none evicted) is made once the schedulers the
// test started are idle: what would have happened has had its turn. Never after a bare wait,
// which passes on a slow machine for the wrong reason and costs seconds on a fast one.

// Settled checks cond once every scheduler the test started is idle (WaitIdle); it fails the
// test if cond does not hold then.
func (e *Env) Settled(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	e.WaitIdle(t)
	if ok, state := cond(); !ok {
		t.Fatalf("%s does not hold once the scheduler is idle: %s", what, state)
	}
}

// WaitIdle waits until every scheduler the test started and that still runs is idle twice in
// a row, a poll apart: every pending pod of its profiles seen and tried (or held by a plugin),
// none in its active or backoff queue, none in a scheduling or binding cycle but those waiting
// at Permit. What moves a pod then is news or a timer, never work the scheduler has still to
// do on what it was told.
func (e *Env) WaitIdle(t *testing.T) {
	t.Helper()
	e.WaitIdleWithin(t, time.Minute)
}

// WaitIdleWithin is WaitIdle for a test whose scheduler has more than a minute of work to do
// (thousands of gangs, each tried again when news comes).
func (e *Env) WaitIdleWithin(t *testing.T, timeout time.Duration) {
	t.Helper()
	e.mu.Lock()
	scheds := append([]*Scheduler(nil), e.schedulers...)
	e.mu.Unlock()
	var last string
	streak := 0
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, s := range scheds {
			if s.cancel == nil {
				continue // stopped
			}
			if ok, why := s.idle(t, e); !ok {
				streak, last = 0, why
				return false, nil
			}
		}
		streak++
		return streak >= 2, nil
	})
	if err != nil {
		t.Fatalf("the scheduler never went idle in %s: %s", timeout, last)
	}
}

// idle reports whether the scheduler is idle, or what it still does.
func (s *Scheduler) idle(t *testing.T, e *Env) (bool, string) {
	if s.sched == nil {
		pending, err := e.pendingPods(s.profiles)
		if err != nil {
			return false, err.Error()
		}
		return s.processIdle(t, pending)
	}
	// The queue's active and backoff queues first, each read under its own lock: while they
	// have work, neither the queue's list of every pending pod (taken under the lock its
	// event handlers need: a fifth of the CPU of a test with 20,000 waiting pods, polled every
	// 50 ms) nor the API's is needed.
	q := s.sched.SchedulingQueue
	if active, backoff := len(q.PodsInActiveQ()), len(q.PodsInBackoffQ()); active+backoff > 0 {
		return false, fmt.Sprintf("activeQ:%d; backoffQ:%d", active, backoff)
	}
	queued, _ := q.PendingPods()
	pending, err := e.pendingPods(s.profiles)
	if err != nil {
		return false, err.Error()
	}
	waiting := func(uid types.UID) bool {
		for _, fw := range s.sched.Profiles {
			if fw.GetWaitingPod(uid) != nil {
				return true
			}
		}
		return false
	}
	known := sets.New[types.UID]()
	for _, p := range queued {
		known.Insert(p.UID)
	}
	for _, p := range q.InFlightPods() {
		if !waiting(p.UID) {
			return false, fmt.Sprintf("pod %s/%s in a scheduling cycle", p.Namespace, p.Name)
		}
		known.Insert(p.UID)
	}
	if dump := s.sched.Cache.Dump(); dump != nil {
		for uid := range dump.AssumedPods {
			if !waiting(types.UID(uid)) {
				return false, fmt.Sprintf("pod %s in a binding cycle", uid)
			}
			known.Insert(types.UID(uid))
		}
	}
	for _, p := range pending {
		if !known.Has(p.UID) {
			return false, fmt.Sprintf("pod %s/%s not seen by the scheduler yet", p.Namespace, p.Name)
		}
	}
	return true, ""
}

// processIdle is idle for a scheduler in a process of its own, from its metrics: no pod in
// its active or backoff queue, no binding cycle (pods waiting at Permit included: a test
// with waiters checks an in-process scheduler), and every pending pod of the API in one of
// its queues (their count, over every queue, is the API's: a pod it has not seen yet, or one
// in a scheduling cycle, is in none).
func (s *Scheduler) processIdle(t *testing.T, pending []*v1.Pod) (bool, string) {
	metrics := s.Metrics(t)
	for _, series := range []string{`scheduler_pending_pods{queue="active"}`, `scheduler_pending_pods{queue="backoff"}`, `scheduler_goroutines{operation="binding"}`} {
		if v := metricValue(metrics, series); v != "" && v != "0" {
			return false, series + " " + v
		}
	}
	queued := 0
	for _, line := range strings.Split(metrics, "\n") {
		if rest, ok := strings.CutPrefix(line, "scheduler_pending_pods{"); ok {
			if _, v, ok := strings.Cut(rest, "} "); ok {
				n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return false, "reading " + line
				}
				queued += int(n)
			}
		}
	}
	if queued != len(pending) {
		return false, fmt.Sprintf("%d pods pending in the API, %d in the scheduler's queues", len(pending), queued)
	}
	return true, ""
}

// metricValue returns the value of one series in a Prometheus text exposition, "" if absent.
func metricValue(exposition, series string) string {
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// pendingPods lists the pods of the profiles that are neither bound nor being deleted.
func (e *Env) pendingPods(profiles sets.Set[string]) ([]*v1.Pod, error) {
	list, err := e.Client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName="})
	if err != nil {
		return nil, err
	}
	var out []*v1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp == nil && profiles.Has(p.Spec.SchedulerName) && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			out = append(out, p)
		}
	}
	return out, nil
}
