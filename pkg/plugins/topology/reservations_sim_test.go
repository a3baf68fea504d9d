package topology

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/gangpreemption"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// The starvation clusterSim: a shared cluster over hours of simulated time. Gangs arrive at
// random (many small ones, some big ones that need most of a rack or of the cluster), run for
// a while and end. A scheduler loop tries the pending gangs in lockstep's queue order —
// priority, then the later of arrival and last failure — at every arrival, every completion
// and every backoff, each attempt a plan made by lockstep's own planner (planTree) with the
// reservations in force; a gang that fails asks for a reservation as the plugin's PostFilter
// does (reserve). The same arrivals run twice: with reservations and without.
//
// The oracle keeps its own books (which pods run where, when each gang arrived and bound)
// and never reads lockstep's: with reservations, every gang that fits an empty cluster binds
// within the bound stated below, and the cluster's utilisation stays within utilisationMargin
// of the run without reservations.
//
// The bound. A gang that fails starts waiting; after reserveAfter it asks for a reservation,
// at the latest one backoff later. One reservation is held per level and priority, for the
// gang that has waited longest; its plan needs only pods that ran when it started to end, so
// it binds at most maxRun after it got it (and one retry later); a gang that has waited longer
// takes over a reservation whose plan it needs, at most one dry-run recheck (fitRecheck)
// after it could fit. So a gang binds within
//
//	reserveAfter + backoff + (k+1) × (maxRun + backoff + fitRecheck)
//
// of its arrival, k being the gangs of its priority that were still waiting when it had
// waited reserveAfter and had waited longer (a reservation at another level may hold room
// its plan needs): the oracle counts them from its books.

// simReserveAfter and the others are the clusterSim's parameters.
const (
	simReserveAfter   = 5 * time.Minute
	simBackoff        = 10 * time.Second
	simMaxRun         = 5 * time.Minute
	utilisationMargin = 0.10
)

type simJob struct {
	name     string
	pods     int
	cpu      int64 // per pod, cores
	rack     bool  // Required rack
	run      time.Duration
	arrive   time.Time
	waiting  time.Time // first failure since arrival
	lastFail time.Time
	bound    time.Time
	ends     time.Time
	placed   map[string]string // pod → node
	view     *podgroup.GroupView
}

// fitsEmpty reports whether the job fits an empty cluster of the clusterSim's shape.
func (j *simJob) fitsEmpty(racks, hosts int, cpu int64) bool {
	perNode := cpu / j.cpu
	if perNode == 0 {
		return false
	}
	slots := perNode * int64(hosts)
	if !j.rack {
		slots *= int64(racks)
	}
	return int64(j.pods) <= slots
}

type clusterSim struct {
	t       *testing.T
	rng     *rand.Rand
	reserve bool
	now     time.Time
	nodes   []*v1.Node
	racks   int
	hosts   int
	cpu     int64
	pl      *Topology
	pending []*simJob
	running []*simJob
	done    []*simJob
	// used integrates used cpu over time (core-seconds), until the arrivals stop.
	used float64
	stop time.Time
	// snapshot caches infos until a job binds or ends.
	snapshot []fwk.NodeInfo
}

// simHandle is the part of a framework handle the planner and reservations use outside a
// scheduling cycle.
type simHandle struct{ fwk.Handle }

func (simHandle) NominatedPodsForNode(string) []fwk.PodInfo { return nil }
func (simHandle) EventRecorder() events.EventRecorderLogger { return nil }

// simTrees answers as the group model would for pods the clusterSim runs: none is a member
// of a running gang (each is a blocker on its own).
type simTrees struct{ Trees }

func (simTrees) Summary(*v1.Pod) (podgroup.Summary, bool)     { return podgroup.Summary{}, false }
func (simTrees) UnitOf(*v1.Pod) (podgroup.Unit, bool)         { return podgroup.Unit{}, false }
func (simTrees) Exclusives() []podgroup.Exclusive             { return nil }
func (simTrees) GroupOf(*v1.Pod) (podgroup.Key, bool)         { return podgroup.Key{}, false }
func (simTrees) Preemptor(*v1.Pod) (podgroup.Preemptor, bool) { return podgroup.Preemptor{}, false }

// MayFree: the dry runs look at every pod of the simulated cluster.
func (simTrees) MayFree(int32, bool) bool { return true }

// Regrouped: no group changes while its pods run.
func (simTrees) Regrouped(uint64) ([]string, bool, uint64) { return nil, false, 0 }

func newClusterSim(t *testing.T, seed int64, reserve bool) *clusterSim {
	s := &clusterSim{t: t, rng: rand.New(rand.NewSource(seed)), reserve: reserve, now: lt.Epoch, racks: 4, hosts: 4, cpu: 8}
	s.nodes = lt.TopologyNodes(1, 1, s.racks, s.hosts, strconv.FormatInt(s.cpu, 10))
	plans := NewPlans()
	plans.now = func() time.Time { return s.now }
	plans.reservations.SetClock(plans.now)
	s.pl = &Topology{logger: klog.Background(), handle: simHandle{}, trees: simTrees{}, plans: plans, levels: levels,
		planTTL: time.Minute, planLimit: time.Second, planGangs: true, verdicts: newVerdictCache(),
		gangPreemption: gangpreemption.New(simHandle{}, simTrees{}, nil, nil)}
	return s
}

// arrivals draws the jobs of a run: their sizes, run times and arrival times.
func (s *clusterSim) arrivals(n int) []*simJob {
	var out []*simJob
	at := s.now
	for i := 0; i < n; i++ {
		at = at.Add(time.Duration(s.rng.ExpFloat64() * float64(12*time.Second)))
		j := &simJob{name: fmt.Sprintf("j%d", i), arrive: at}
		switch r := s.rng.Intn(100); {
		case r < 8: // most of a rack
			j.pods, j.cpu, j.rack = 4, int64(6+s.rng.Intn(3)), true
			j.run = time.Duration(60+s.rng.Intn(240)) * time.Second
		case r < 15: // most of the cluster
			j.pods, j.cpu = 8+s.rng.Intn(5), int64(4+s.rng.Intn(5))
			j.run = time.Duration(60+s.rng.Intn(240)) * time.Second
		default: // small
			j.pods, j.cpu, j.rack = 1+s.rng.Intn(2), int64(1+s.rng.Intn(4)), s.rng.Intn(3) == 0
			j.run = time.Duration(20+s.rng.Intn(100)) * time.Second
		}
		j.view = &podgroup.GroupView{Key: podgroup.PodGroupKey("sim", j.name), Gang: true, Min: j.pods}
		if j.rack {
			j.view.Topology = []v1alpha1.TopologyConstraint{lt.Required(rackKey)}
		}
		for p := 0; p < j.pods; p++ {
			j.view.Pending = append(j.view.Pending, lt.Member("sim", j.name, p).Req(lt.CPU(strconv.FormatInt(j.cpu, 10))).Obj())
		}
		out = append(out, j)
	}
	return out
}

// infos are the nodes as the scheduler's snapshot would show them.
func (s *clusterSim) infos() []fwk.NodeInfo {
	if s.snapshot != nil {
		return s.snapshot
	}
	byNode := map[string][]*v1.Pod{}
	for _, j := range s.running {
		for _, p := range j.view.Pending {
			c := p.DeepCopy()
			c.Spec.NodeName = j.placed[p.Name]
			byNode[c.Spec.NodeName] = append(byNode[c.Spec.NodeName], c)
		}
	}
	out := make([]fwk.NodeInfo, len(s.nodes))
	for i, n := range s.nodes {
		ni := framework.NewNodeInfo(byNode[n.Name]...)
		ni.SetNode(n)
		out[i] = ni
	}
	s.snapshot = out
	return out
}

// advance moves time to t, integrating the used cpu until the arrivals stop.
func (s *clusterSim) advance(t time.Time) {
	if t.Before(s.now) {
		return
	}
	end := t
	if end.After(s.stop) {
		end = s.stop
	}
	if end.After(s.now) {
		var cores int64
		for _, j := range s.running {
			cores += int64(j.pods) * j.cpu
		}
		s.used += float64(cores) * end.Sub(s.now).Seconds()
	}
	s.now = t
}

// schedule tries every pending job in lockstep's queue order.
func (s *clusterSim) schedule() {
	ctx := klog.NewContext(context.Background(), klog.Background().V(10))
	sort.SliceStable(s.pending, func(a, b int) bool {
		ka, kb := s.pending[a].arrive, s.pending[b].arrive
		if s.pending[a].lastFail.After(ka) {
			ka = s.pending[a].lastFail
		}
		if s.pending[b].lastFail.After(kb) {
			kb = s.pending[b].lastFail
		}
		if !ka.Equal(kb) {
			return ka.Before(kb)
		}
		return s.pending[a].name < s.pending[b].name
	})
	var still []*simJob
	for _, j := range s.pending {
		j.view.WaitingSince = j.waiting
		infos := s.infos()
		plan, _ := s.pl.planTree(ctx, j.view, infos, nil)
		if plan != nil && len(plan.Pods) >= j.pods {
			j.placed = map[string]string{}
			for _, p := range j.view.Pending {
				j.placed[p.Name] = plan.Pods[p.UID].Node
			}
			j.bound, j.ends = s.now, s.now.Add(j.run)
			s.running = append(s.running, j)
			s.snapshot = nil
			s.pl.plans.TreeScheduled(j.view.Key)
			continue
		}
		if j.waiting.IsZero() {
			j.waiting = s.now
		}
		j.lastFail = s.now
		if s.reserve {
			s.pl.reserve(ctx, j.view, podgroup.Preemptor{Root: j.view.Key, Failed: true, WaitingSince: j.waiting,
				ReserveAfter: simReserveAfter, ReservationTimeout: 2 * time.Hour}, infos)
		}
		still = append(still, j)
	}
	s.pending = still
}

// run plays the arrivals and returns the jobs, bound or not.
func (s *clusterSim) run(jobs []*simJob, until time.Time) []*simJob {
	s.stop = jobs[len(jobs)-1].arrive
	next := 0
	tick := s.now.Add(simBackoff)
	for s.now.Before(until) && (next < len(jobs) || len(s.pending) > 0 || len(s.running) > 0) {
		// The next event: an arrival, a completion, or the backoff's retry.
		at := tick
		if next < len(jobs) && jobs[next].arrive.Before(at) {
			at = jobs[next].arrive
		}
		for _, j := range s.running {
			if j.ends.Before(at) {
				at = j.ends
			}
		}
		s.advance(at)
		var still []*simJob
		for _, j := range s.running {
			if !j.ends.After(s.now) {
				s.done = append(s.done, j)
				s.snapshot = nil
				continue
			}
			still = append(still, j)
		}
		s.running = still
		for next < len(jobs) && !jobs[next].arrive.After(s.now) {
			s.pending = append(s.pending, jobs[next])
			next++
		}
		if !s.now.Before(tick) {
			tick = s.now.Add(simBackoff)
		}
		s.schedule()
	}
	return jobs
}

// boundOf is the oracle's bound for job j (see above), from its own books.
func boundOf(j *simJob, jobs []*simJob) time.Duration {
	starved := j.arrive.Add(simReserveAfter)
	ahead := 0
	for _, o := range jobs {
		if o == j || !o.arrive.Before(j.arrive) {
			continue
		}
		// Still waiting when j had waited reserveAfter.
		if o.bound.IsZero() || o.bound.After(starved) {
			ahead++
		}
	}
	return simReserveAfter + simBackoff + time.Duration(ahead+1)*(simMaxRun+simBackoff+fitRecheck)
}

// TestReservationsPreventStarvation runs seeded simulations. RESERVATION_SEEDS raises the
// count; RESERVATION_SEED reruns one.
func TestReservationsPreventStarvation(t *testing.T) {
	seeds := 12
	if v, err := strconv.Atoi(os.Getenv("RESERVATION_SEEDS")); err == nil {
		seeds = v
	}
	first := int64(1)
	if v, err := strconv.ParseInt(os.Getenv("RESERVATION_SEED"), 10, 64); err == nil {
		first, seeds = v, 1
	}
	worstLoss, worstWait := 0.0, 0.0
	starvedWithout := 0
	for seed := first; seed < first+int64(seeds); seed++ {
		with := newClusterSim(t, seed, true)
		without := newClusterSim(t, seed, false)
		jobs := with.run(with.arrivals(400), lt.Epoch.Add(6*time.Hour))
		other := without.run(without.arrivals(400), lt.Epoch.Add(6*time.Hour))
		span := with.stop.Sub(lt.Epoch).Seconds() * float64(len(with.nodes)) * float64(with.cpu)
		uWith, uWithout := with.used/span, without.used/span
		worstLoss = max(worstLoss, uWithout-uWith)
		if uWith < uWithout-utilisationMargin {
			t.Errorf("seed %d: utilisation %.3f with reservations, %.3f without: more than %.2f lost", seed, uWith, uWithout, utilisationMargin)
		}
		for i, j := range jobs {
			if !j.fitsEmpty(with.racks, with.hosts, with.cpu) {
				continue
			}
			b := boundOf(j, jobs)
			wait := j.bound.Sub(j.arrive)
			if j.bound.IsZero() {
				t.Errorf("seed %d: %s (%d pods × %d cpu, rack %v) never bound (arrived %s)", seed, j.name, j.pods, j.cpu, j.rack, j.arrive.Sub(lt.Epoch))
				continue
			}
			worstWait = max(worstWait, wait.Seconds()/b.Seconds())
			if wait > b {
				t.Errorf("seed %d: %s (%d pods × %d cpu, rack %v) waited %s, more than its bound %s",
					seed, j.name, j.pods, j.cpu, j.rack, wait.Round(time.Second), b)
			}
			if o := other[i]; o.bound.IsZero() || o.bound.Sub(o.arrive) > b {
				starvedWithout++
			}
		}
	}
	t.Logf("%d seeds: worst wait %.0f%% of its bound; utilisation lost to reservations at most %.3f (margin %.2f); %d gangs starved past their bound without reservations",
		seeds, worstWait*100, worstLoss, utilisationMargin, starvedWithout)
	if starvedWithout == 0 && seeds >= 5 {
		t.Error("no gang starved without reservations: the clusterSim does not exercise them")
	}
}
