package reservation

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics/testutil"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// What a reservation holds on a node is what its plan needs there beyond what the pods in
// the way still request: others may use the rest, now and after those pods end (backfill).
func TestReservationHoldsThePlansRoom(t *testing.T) {
	blocker := st.MakePod().Namespace("ns").Name("b").UID("b").Node("n1").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
	other := st.MakePod().Namespace("ns").Name("x").UID("x").Node("n1").Req(map[v1.ResourceName]string{v1.ResourceCPU: "2"}).Obj()
	node := lt.MakeNode("n1", "8").Obj()
	r := &Reservation{Root: podgroup.PodGroupKey("ns", "big"), Domain: "rack r0",
		Need: map[string]capacity.Resources{"n1": {MilliCPU: 4000, Pods: 1}}, Blockers: map[types.UID]string{"b": "n1"}}
	infoOf := func(pods ...*v1.Pod) fwk.NodeInfo {
		ni := framework.NewNodeInfo(pods...)
		ni.SetNode(node)
		return ni
	}
	tests := []struct {
		name   string
		ni     fwk.NodeInfo
		cpu    int64
		refuse bool
	}{
		{name: "room beyond the plan's, while the blocker runs", ni: infoOf(blocker, other), cpu: 2000},
		{name: "cutting into the plan's room", ni: infoOf(blocker, other), cpu: 3000, refuse: true},
		{name: "the blocker gone: its room is the plan's", ni: infoOf(other), cpu: 3000, refuse: true},
		{name: "the blocker gone: the rest stays free", ni: infoOf(other), cpu: 2000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why := Refusal([]*Reservation{r}, tc.ni, capacity.Resources{MilliCPU: tc.cpu, Pods: 1})
			if (why != "") != tc.refuse {
				t.Errorf("refusal %q, want refused %v", why, tc.refuse)
			}
			if tc.refuse && !strings.Contains(why, "reserved for gang big (rack r0)") {
				t.Errorf("refusal %q does not name the gang and domain", why)
			}
		})
	}
	closed := &Reservation{Root: r.Root, Domain: "rack r0", Closed: sets.New("n1")}
	if why := Refusal([]*Reservation{closed}, infoOf(), capacity.Resources{MilliCPU: 1, Pods: 1}); why == "" {
		t.Error("a node of a domain reserved for an exclusive gang was open to another pod")
	}
}

// Filter counts the reservations on a node together, as a plan does: a pod that fits beside
// each alone but not beside both is refused.
func TestReservationsOnANodeAreSummed(t *testing.T) {
	node := lt.MakeNode("n1", "8").Obj()
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	a := &Reservation{Root: podgroup.PodGroupKey("ns", "a"), Domain: "rack r0", Need: map[string]capacity.Resources{"n1": {MilliCPU: 3000, Pods: 1}}}
	b := &Reservation{Root: podgroup.PodGroupKey("ns", "b"), Domain: "host n1", Need: map[string]capacity.Resources{"n1": {MilliCPU: 3000, Pods: 1}}}
	req := capacity.Resources{MilliCPU: 4000, Pods: 1}
	for _, one := range []*Reservation{a, b} {
		if why := Refusal([]*Reservation{one}, ni, req); why != "" {
			t.Fatalf("refused beside %s alone: %s", one.Root.Name, why)
		}
	}
	if why := Refusal([]*Reservation{a, b}, ni, req); why == "" {
		t.Error("a pod took room two reservations need together (8 cpu: 3 + 3 held, 4 asked)")
	}
	promised := map[string]capacity.Resources{}
	held, _, by := HeldOnNode([]*Reservation{a, b}, ni, nil)
	promised["n1"] = held
	if len(by) != 2 || promised["n1"].MilliCPU != 6000 {
		t.Errorf("held %v by %d reservations, want 6 cpu by 2", held, len(by))
	}
}

// The reserved capacity is published per resource while reservations need it, and at 0 once
// none does: an extended resource (GPUs) does not stay at its last value after the
// reservation that needed it ended.
func TestReservedCapacityGoesBackToZero(t *testing.T) {
	RegisterMetrics()
	rs := New(time.Now)
	gpu := v1.ResourceName("nvidia.com/gpu")
	root := podgroup.PodGroupKey("ns", "big")
	rs.Store(&Reservation{Root: root, Domain: "rack r0", Deadline: time.Now().Add(time.Hour), Expires: time.Now().Add(time.Hour),
		Need: map[string]capacity.Resources{"n1": {MilliCPU: 4000, Scalar: map[v1.ResourceName]int64{gpu: 8}}}})
	if v, err := testutil.GetGaugeMetricValue(metrics.capacity.WithLabelValues(string(gpu))); err != nil || v != 8 {
		t.Fatalf("reserved GPUs %v (%v), want 8", v, err)
	}
	rs.TreeGone(root)
	for _, r := range []string{"cpu", string(gpu)} {
		if v, err := testutil.GetGaugeMetricValue(metrics.capacity.WithLabelValues(r)); err != nil || v != 0 {
			t.Errorf("reserved %s %v (%v) after the reservation ended, want 0", r, v, err)
		}
	}
}

// Each reservation is counted once, by how it ended, whatever the store hears after: bound
// observes its gang's wait; one given up for a preemption is counted by what became of its
// gang (bound once scheduled, released if it starves again, gets another reservation or is
// gone, timeout if none of this happens by its deadline), and holds nothing meanwhile.
func TestReservationEndsCountedOnce(t *testing.T) {
	RegisterMetrics()
	root := podgroup.PodGroupKey("ns", "big")
	type step func(rs *Reservations, now *time.Time)
	var (
		store = func(rs *Reservations, now *time.Time) {
			rs.Store(&Reservation{Root: root, Domain: "rack r0", Since: *now, Deadline: now.Add(time.Hour), Expires: now.Add(TTL),
				Need: map[string]capacity.Resources{"n1": {MilliCPU: 4000}}})
		}
		later      = func(rs *Reservations, now *time.Time) { *now = now.Add(time.Minute) }
		preempts   = func(rs *Reservations, now *time.Time) { rs.Preempts(root) }
		starves    = func(rs *Reservations, now *time.Time) { rs.Starves(root) }
		scheduled  = func(rs *Reservations, now *time.Time) { rs.TreeScheduled(root) }
		gone       = func(rs *Reservations, now *time.Time) { rs.TreeGone(root) }
		released   = func(rs *Reservations, now *time.Time) { rs.Release(root, "released") }
		pastExpiry = func(rs *Reservations, now *time.Time) { *now = now.Add(2 * time.Hour); rs.All() }
		pastTTL    = func(rs *Reservations, now *time.Time) { *now = now.Add(TTL + time.Second) }
	)
	tests := []struct {
		name  string
		steps []step
		// want counts each event; waits is the bind waits observed.
		want  map[string]float64
		waits uint64
	}{
		{name: "held until its gang is scheduled, then gone", steps: []step{store, later, scheduled, scheduled, gone},
			want: map[string]float64{"started": 1, "bound": 1}, waits: 1},
		{name: "given up for a preemption that places its gang", steps: []step{store, later, preempts, preempts, later, scheduled, gone},
			want: map[string]float64{"started": 1, "bound": 1}, waits: 1},
		{name: "given up for a preemption, its gang starves again", steps: []step{store, preempts, starves, scheduled},
			want: map[string]float64{"started": 1, "released": 1}},
		{name: "given up for a preemption, its gang gets another", steps: []step{store, preempts, later, store, later, scheduled},
			want: map[string]float64{"started": 2, "released": 1, "bound": 1}, waits: 1},
		{name: "given up for a preemption, its gang is gone", steps: []step{store, preempts, gone, scheduled},
			want: map[string]float64{"started": 1, "released": 1}},
		{name: "given up for a preemption, its gang neither scheduled nor gone by its deadline", steps: []step{store, preempts, pastExpiry, scheduled},
			want: map[string]float64{"started": 1, "timeout": 1}},
		{name: "lapsed before its gang preempts", steps: []step{store, pastTTL, preempts, scheduled},
			want: map[string]float64{"started": 1, "lapsed": 1}},
		{name: "released, then its gang is scheduled", steps: []step{store, released, scheduled},
			want: map[string]float64{"started": 1, "released": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			rs := New(func() time.Time { return now })
			before := eventCounts(t)
			waits, _ := testutil.GetHistogramMetricCount(metrics.bindWait.ObserverMetric)
			for _, s := range tc.steps {
				s(rs, &now)
				if _, ok := rs.preempting[root]; ok {
					held, _ := testutil.GetGaugeMetricValue(metrics.held)
					cpu, _ := testutil.GetGaugeMetricValue(metrics.capacity.WithLabelValues("cpu"))
					if held != 0 || cpu != 0 {
						t.Errorf("a reservation given up for a preemption is still published: %v held, %v cpu", held, cpu)
					}
				}
			}
			after := eventCounts(t)
			for _, event := range []string{"started", "bound", "timeout", "lapsed", "released"} {
				if got := after[event] - before[event]; got != tc.want[event] {
					t.Errorf("%s: %v, want %v", event, got, tc.want[event])
				}
			}
			if got, _ := testutil.GetHistogramMetricCount(metrics.bindWait.ObserverMetric); got-waits != tc.waits {
				t.Errorf("bind waits observed: %d, want %d", got-waits, tc.waits)
			}
			rs.TreeGone(root)
			for kind, n := range rs.Sizes() {
				if n != 0 {
					t.Errorf("the store keeps %d %s after the tree is gone", n, kind)
				}
			}
		})
	}
}

func eventCounts(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, event := range []string{"started", "bound", "timeout", "lapsed", "released"} {
		v, err := testutil.GetCounterMetricValue(metrics.events.WithLabelValues(event))
		if err != nil {
			t.Fatal(err)
		}
		out[event] = v
	}
	return out
}
