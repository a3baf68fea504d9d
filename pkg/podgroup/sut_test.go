package podgroup

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// modelSUT drives a Model as the plugins and informers do.
type modelSUT struct {
	m *Model
}

// testPolicy is the gang policy of the manifests' configuration.
var testPolicy = Policy{PermitTimeout: time.Minute, Backoff: 10 * time.Second}

// backoffEnds is long enough for testPolicy's first quiet backoff to end, however it is
// spread.
var backoffEnds = testPolicy.Backoff + time.Duration(quietSpread*float64(testPolicy.Backoff))

// simScheduler lets the world play the scheduler of a Model.
type simScheduler struct{ fw simFramework }

func (s simScheduler) Activate(_ klog.Logger, pods []*v1.Pod) { s.fw.activate(pods) }
func (s simScheduler) Hold(_ klog.Logger, pods []*v1.Pod)     { s.fw.activate(pods) }
func (s simScheduler) Allow(p *v1.Pod)                        { s.fw.allow(p) }
func (s simScheduler) Reject(p *v1.Pod, msg string)           { s.fw.reject(p, msg) }
func (s simScheduler) Live(p *v1.Pod) bool                    { return s.fw.live(p) }

func init() {
	newSUT = func(t *testing.T, clk *simClock, fw simFramework) sut {
		m := New(Options{Scheduler: simScheduler{fw}, Clock: clk, Logger: klog.Background()})
		m.AddProfile(Profile{Name: testScheduler})
		m.Lead() // the leader: partial binds are decided too
		return &modelSUT{m: m}
	}
}

func (s *modelSUT) podEvent(old, cur *v1.Pod) {
	if cur == nil {
		s.m.OnPodDelete(old)
		return
	}
	if old == nil {
		s.m.OnPod(nil, cur)
		return
	}
	s.m.OnPod(old, cur)
}

func (s *modelSUT) groupEvent(old, cur runtime.Object) {
	switch {
	case cur == nil:
		s.m.OnGroupDelete(old)
	case old == nil:
		s.m.OnGroup(nil, cur)
	default:
		s.m.OnGroup(old, cur)
	}
}

func (s *modelSUT) nodeEvent() { s.m.OnCapacity("node added") }

// nodeDeleted deletes a node and adds one of the same name back: the simulated scheduler
// keeps placing pods on the simulation's fixed nodes (a placement on a node still deleted is
// refused, see TestNodeDeletedReleasesItsWaiters).
func (s *modelSUT) nodeDeleted(name string) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.m.OnNodeDelete(node)
	s.m.OnNodeAdd(node)
}

func (s *modelSUT) preEnqueue(p *v1.Pod) (bool, string) {
	v := s.m.Gate().Admit(klog.Background(), p)
	return v.Code == Proceed || v.Code == NotMember, v.Message
}

func (s *modelSUT) roomHint(p *v1.Pod) (peek, queueable bool) {
	v := s.m.Gate().Peek(p)
	return v.Code == Proceed || v.Code == NotMember, s.m.Gate().Queueable(p)
}

func (s *modelSUT) preFilter(p *v1.Pod) (bool, string) {
	v := s.m.Gate().Check(klog.Background(), p, 0)
	return v.Code == Proceed || v.Code == NotMember, v.Message
}

func (s *modelSUT) reserve(p *v1.Pod, node string) { s.m.Permits().Reserve(klog.Background(), p, node) }

func (s *modelSUT) permit(p *v1.Pod) (string, time.Duration) {
	d := s.m.Permits().Permit(klog.Background(), p, testPolicy)
	switch {
	case d.Reject != "":
		return "reject", 0
	case d.Allow:
		return "allow", 0
	}
	return "wait", d.Timeout
}

func (s *modelSUT) postFilter(p *v1.Pod, reason string) {
	s.m.Permits().Fail(klog.Background(), p, reason, testPolicy)
}

func (s *modelSUT) unreserve(p *v1.Pod) { s.m.Permits().Unreserve(klog.Background(), p) }

func (s *modelSUT) rejecting(p *v1.Pod) bool {
	return s.m.Permits().Rejecting(klog.Background(), p, "preempted")
}

func (s *modelSUT) waiters() []types.UID { return s.m.Permits().Waiters() }

func (s *modelSUT) held() (news, all []Key) {
	p := s.m.Permits()
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	for root, r := range p.attempts.rounds {
		if r.stalled || len(r.failed) > 0 { // not heldBack: the oracle reads the fields
			all = append(all, root)
		}
	}
	return p.attempts.heldRounds(), all
}

func (s *modelSUT) condition(kind Kind, name string) (Condition, bool) {
	return s.m.Gate().Condition(Key{Kind: kind, Namespace: "ns", Name: name})
}
