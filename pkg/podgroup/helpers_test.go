package podgroup

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

const testScheduler = "lockstep-scheduler"

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// recorder is a Scheduler that records what the model asks of it; pods in gone are not live.
type recorder struct {
	mu        sync.Mutex
	batches   int // Activate calls
	activated []string
	allowed   []string
	rejected  map[string]string
	gone      sets.Set[types.UID]
}

func (r *recorder) Activate(_ klog.Logger, pods []*v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	for _, p := range pods {
		r.activated = append(r.activated, p.Name)
	}
}

func (r *recorder) Allow(p *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allowed = append(r.allowed, p.Name)
}

func (r *recorder) Reject(p *v1.Pod, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected[p.Name] = msg
}

func (r *recorder) Live(p *v1.Pod) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.gone.Has(p.UID)
}

// take returns and forgets what was recorded, names sorted.
func (r *recorder) take() (activated, allowed []string, rejected map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	activated, allowed, rejected = r.activated, r.allowed, r.rejected
	sort.Strings(activated)
	sort.Strings(allowed)
	r.activated, r.allowed, r.rejected, r.batches = nil, nil, map[string]string{}, 0
	return activated, allowed, rejected
}

// testModel returns a Model fed directly through its handlers, on a manual clock.
func testModel(t *testing.T) (*Model, *simClock, *recorder) {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	clk := newSimClock(epoch)
	rec := &recorder{rejected: map[string]string{}, gone: sets.New[types.UID]()}
	m := New(Options{Scheduler: rec, Clock: clk, Logger: logger})
	m.AddProfile(Profile{Name: testScheduler})
	return m, clk, rec
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

// addPods adds n pending pods of group to m and returns them.
func addPods(m *Model, group string, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = pod(group, i, "")
		m.OnPod(nil, out[i])
	}
	return out
}

// assumed returns the scheduler's copy of a pod reserved on node.
func assumed(p *v1.Pod, node string) *v1.Pod {
	c := p.DeepCopy()
	c.Spec.NodeName = node
	return c
}

// reservePermit runs Reserve and Permit for a pod, as a scheduling cycle does.
func reservePermit(m *Model, p *v1.Pod) PermitDecision {
	a := assumed(p, "n1")
	m.Reserve(klog.Background(), a, "n1")
	return m.Permit(klog.Background(), a, testPolicy)
}
