package podgroup

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// waitingHandle is a framework handle whose waiting pods the test registers.
type waitingHandle struct {
	fwk.Handle
	waiting map[types.UID]fwk.WaitingPod
}

func (h *waitingHandle) ProfileName() string { return testScheduler }

func (h *waitingHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod { return h.waiting[uid] }

// A decision made before the framework registered its pod's wait is retried until it finds
// that wait, and only that one: if the pod's scheduling cycle ended unseen (another plugin
// rejected it, its bind was refused and its gang retried whole) and a later cycle of the same
// pod waits for its gang now, the stale Allow does not let it bind alone.
func TestDroppedAllowIsRetriedForItsOwnWaitOnly(t *testing.T) {
	pod := lt.Member("ns", "a", 0).Obj()
	for _, tc := range []struct {
		name string
		// later: the wait registered is a later cycle's (another copy of the pod).
		later bool
		want  bool
	}{
		{name: "its own wait, registered late", want: true},
		{name: "a later cycle's wait", later: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &waitingHandle{waiting: map[types.UID]fwk.WaitingPod{}}
			f := NewFrameworks("LockstepGang", nil)
			f.Add(h)
			cycle := assumed(pod, "n1") // the copy the cycle reserved with, and the model allowed
			wp := &fakeWaitingPod{pod: cycle}
			if tc.later {
				wp.pod = assumed(pod, "n2")
			}
			looks := 0
			f.sleep = func(time.Duration) {
				if looks++; looks == 3 {
					h.waiting[pod.UID] = wp // registered by the framework a moment later
				}
			}
			if f.handle(testScheduler).GetWaitingPod(pod.UID) != nil {
				t.Fatal("the pod waits already")
			}
			f.retryOnWaiting(h, cycle, "allow", func(w fwk.WaitingPod) { w.Allow("LockstepGang") })
			if wp.allowed != tc.want {
				t.Errorf("allowed %v, want %v", wp.allowed, tc.want)
			}
			if looks > 4 {
				t.Errorf("looked %d times: it went on looking after it found a wait", looks)
			}
		})
	}
	// Allow itself applies at once to a wait already registered.
	h := &waitingHandle{waiting: map[types.UID]fwk.WaitingPod{}}
	f := NewFrameworks("LockstepGang", nil)
	f.Add(h)
	wp := &fakeWaitingPod{pod: assumed(pod, "n1")}
	h.waiting[pod.UID] = wp
	f.Allow(wp.pod)
	if !wp.allowed {
		t.Error("a registered wait was not allowed")
	}
}

// activatingHandle records the queue's Activate calls.
type activatingHandle struct {
	fwk.Handle
	calls [][]string
}

func (h *activatingHandle) ProfileName() string { return testScheduler }

func (h *activatingHandle) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	var call []string
	for k := range pods {
		call = append(call, k)
	}
	h.calls = append(h.calls, call)
}

// The queue walks the pods of one Activate call in map order while its scheduling loop may
// pop: Frameworks hands it one pod per call, in the order given.
func TestActivateHandsPodsOverInOrder(t *testing.T) {
	h := &activatingHandle{}
	f := NewFrameworks("LockstepGang", nil)
	f.Add(h)
	var pods []*v1.Pod
	for _, name := range []string{"urgent-0", "a-0", "b-0", "c-0", "d-0", "e-0"} {
		pods = append(pods, lt.MakePod().Namespace("ns").Name(name).Obj())
	}
	f.Activate(bg, pods)
	want := [][]string{{"ns/urgent-0"}, {"ns/a-0"}, {"ns/b-0"}, {"ns/c-0"}, {"ns/d-0"}, {"ns/e-0"}}
	if !cmp.Equal(h.calls, want) {
		t.Errorf("queue's Activate calls %v, want %v", h.calls, want)
	}
}
