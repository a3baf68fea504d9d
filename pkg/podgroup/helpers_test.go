package podgroup

import (
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
)

const testScheduler = "lockstep-scheduler"

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testManager returns a Manager fed directly through its handlers, with a fake clock and an
// activator that records what it is asked to activate.
func testManager(t *testing.T) (*Manager, *testingclock.FakeClock, *recordingActivator) {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	clk := testingclock.NewFakeClock(epoch)
	m := newManager(logger, fake.NewSimpleClientset(), clk)
	m.schedulerNames.Insert(testScheduler)
	act := &recordingActivator{}
	m.activator = act
	return m, clk, act
}

// recordingActivator records activations; timers may call it from other goroutines.
type recordingActivator struct {
	mu   sync.Mutex
	pods []string
}

func (r *recordingActivator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range pods {
		r.pods = append(r.pods, k)
	}
}

func (r *recordingActivator) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.pods...)
}

// activated reports whether the activator saw pod.
func activated(r *recordingActivator, pod string) bool {
	for _, p := range r.snapshot() {
		if p == pod {
			return true
		}
	}
	return false
}

func pg(name string, minCount int32, parent string) *v1alpha1.PodGroup {
	g := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pg-" + name), CreationTimestamp: metav1.NewTime(epoch)},
	}
	if minCount > 0 {
		g.Spec.SchedulingPolicy.Gang = &v1alpha1.GangSchedulingPolicy{MinCount: minCount}
	} else {
		g.Spec.SchedulingPolicy.Basic = &v1alpha1.BasicSchedulingPolicy{}
	}
	if parent != "" {
		g.Spec.ParentCompositePodGroupName = ptr.To(parent)
	}
	return g
}

func cpg(name string, minGroupCount int32, parent string) *v1alpha1.CompositePodGroup {
	g := &v1alpha1.CompositePodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("cpg-" + name), CreationTimestamp: metav1.NewTime(epoch)},
	}
	if minGroupCount > 0 {
		g.Spec.SchedulingPolicy.Gang = &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: minGroupCount}
	} else {
		g.Spec.SchedulingPolicy.Basic = &v1alpha1.BasicSchedulingPolicy{}
	}
	if parent != "" {
		g.Spec.ParentCompositePodGroupName = ptr.To(parent)
	}
	return g
}

// pod returns pod <group>-<i> of the lockstep profile; node "" for pending.
func pod(group string, i int, node string) *v1.Pod {
	name := fmt.Sprintf("%s-%d", group, i)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{v1alpha1.PodGroupLabel: group}, CreationTimestamp: metav1.NewTime(epoch)},
		Spec: v1.PodSpec{SchedulerName: testScheduler, NodeName: node},
	}
}

// pods adds n pending pods of group to m and returns them.
func addPods(m *Manager, group string, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = pod(group, i, "")
		m.onPod(nil, out[i])
	}
	return out
}

func podNames(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
