package podgroup

import (
	"sort"
	"sync"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

const testScheduler = lt.SchedulerName

var epoch = lt.Epoch

// recorder is a Scheduler that records what the model asks of it; pods in gone are not live.
type recorder struct {
	mu        sync.Mutex
	batches   int // Activate calls
	activated []string
	held      []string // sent back through PreEnqueue (Hold)
	allowed   []string
	rejected  map[string]string
	evicted   []string
	told      map[string]string
	// unnominated are the pods whose nominations the model cleared, and the nomination each
	// had when it was.
	unnominated map[string]string
	gone        sets.Set[types.UID]
}

func (r *recorder) Unnominate(_ klog.Logger, p *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unnominated[p.Name] = p.Status.NominatedNodeName
}

func (r *recorder) Tell(_ klog.Logger, pods []*v1.Pod, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pods {
		r.told[p.Name] = msg
	}
}

// takeTold returns and forgets what the Teller was asked to tell (the model asks as it
// applies an update's effects).
func (r *recorder) takeTold() map[string]string { return r.takeWritten(&r.told) }

// takeUnnominated returns and forgets the nominations the Teller was asked to clear.
func (r *recorder) takeUnnominated() map[string]string { return r.takeWritten(&r.unnominated) }

// takeWritten returns written, one of the Teller's records, and starts it afresh.
func (r *recorder) takeWritten(written *map[string]string) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := *written
	*written = map[string]string{}
	return out
}

func (r *recorder) Evict(_ klog.Logger, pods []*v1.Pod, _, _ string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pods {
		r.evicted = append(r.evicted, p.Name)
	}
}

// takeEvicted returns and forgets the pods evicted, names sorted.
func (r *recorder) takeEvicted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evicted
	sort.Strings(out)
	r.evicted = nil
	return out
}

func (r *recorder) Activate(_ klog.Logger, pods []*v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	for _, p := range pods {
		r.activated = append(r.activated, p.Name)
	}
}

// takeHeld returns the pods sent back through PreEnqueue (Hold) since the last call.
func (r *recorder) takeHeld() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.held
	r.held = nil
	return out
}

func (r *recorder) Hold(_ klog.Logger, pods []*v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range pods {
		r.held = append(r.held, p.Name)
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
	return observedModel(t, nil)
}

// observedModel is testModel with observer hearing of its rounds.
func observedModel(t *testing.T, observer RoundObserver) (*Model, *simClock, *recorder) {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	clk := newSimClock(epoch)
	rec := &recorder{rejected: map[string]string{}, told: map[string]string{}, unnominated: map[string]string{}, gone: sets.New[types.UID]()}
	m := New(Options{Scheduler: rec, Evictor: rec, Teller: rec, Clock: clk, Logger: logger, Observer: observer})
	m.AddProfile(Profile{Name: testScheduler})
	return m, clk, rec
}

// addPods adds n pending pods of group to m and returns them.
func addPods(m *Model, group string, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = lt.Member("ns", group, i).Obj()
		m.OnPod(nil, out[i])
	}
	return out
}

// gangWithWaiters adds PodGroup name, a gang of minCount n, and its n pending pods, the
// first waiting of them waiting at Permit, and forgets what the recorder saw so far.
func gangWithWaiters(m *Model, rec *recorder, name string, n, waiting int) []*v1.Pod {
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(int32(n)).Obj())
	pods := addPods(m, name, n)
	for _, p := range pods[:waiting] {
		reservePermit(m, p)
	}
	rec.take()
	return pods
}

// allowedGang adds PodGroup name, a gang of minCount n, and its n pods, allowed whole on n1
// (their binds in flight); it returns the pods as they were created.
func allowedGang(m *Model, name string, n int) []*v1.Pod {
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(int32(n)).Obj())
	pods := addPods(m, name, n)
	for _, p := range pods {
		reservePermit(m, p)
	}
	return pods
}

// runningGang is allowedGang with the pods bound.
func runningGang(m *Model, name string, n int) []*v1.Pod {
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name(name).Gang(int32(n)).Obj())
	return placedWhole(m, addPods(m, name, n))
}

// placedWhole reserves and allows pods on n1, then binds them, as the scheduler does for a
// gang that fits.
func placedWhole(m *Model, pods []*v1.Pod) []*v1.Pod {
	for _, p := range pods {
		reservePermit(m, p)
	}
	for _, p := range pods {
		m.OnPod(p, assumed(p, "n1"))
	}
	return pods
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
	m.Permits().Reserve(klog.Background(), a, "n1")
	return m.Permits().Permit(klog.Background(), a, testPolicy)
}

// admittedOrScouted reports whether a verdict lets a member into the queue, or holds it only
// while its tree's scout tries the tree for all.
func admittedOrScouted(v Verdict) bool { return v.Code == Proceed || v.Code == AwaitingScout }

// tryScout lets the scout p into the queue and into its scheduling cycle (PreEnqueue, then
// PreFilter's check).
func tryScout(t *testing.T, m *Model, p *v1.Pod) {
	t.Helper()
	if v := m.Gate().Admit(bg, p); v.Code != Proceed {
		t.Fatalf("Admit %s = %v %q, want its scout let in", p.Name, v.Code, v.Message)
	}
	m.Gate().Check(bg, p, 0)
}

// failScout fails the scout p's cycle for want of room.
func failScout(m *Model, p *v1.Pod) {
	m.Permits().Fail(bg, p, "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
}
