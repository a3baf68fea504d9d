package topology

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/podgroup/podgrouptest"
	"github.com/lockstep-sched/lockstep/pkg/reservation"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// Weeks of a scheduler's shared state in a test: SOAK_GANGS (100,000) gangs through the
// components a scheduler builds (pkg/scheduler) — the group model and its status writer fed
// by informers, the plugin's plans and reservations told of trees' ends by the model (its
// observer), nominations and changed nodes fed by the pod and node informers — soakBatch at a
// time, on a clock the test steps. Each gang lives one life: planned and bound (room held for
// its followers meanwhile); planned, refused a node, and failed; given a reservation that
// times out; bound on a node that is then deleted; a native
// scheduling.k8s.io group lockstep schedules; a native gang of another scheduler; preempted
// (its pods evicted by the model's evictor, through the clientset); nominated, in its status
// and in memory. Then its objects are deleted, as a user would. At the end, with every gang
// gone and an hour passed, every per-tree, per-pod and per-node map of every component is
// empty: nothing is kept per gang that ran, per node that went, per reservation that ended.
func TestSoakOfTheSchedulersComponents(t *testing.T) {
	gangs := 100000
	if n, err := strconv.Atoi(os.Getenv("SOAK_GANGS")); err == nil {
		gangs = n
	}
	s := newComponentSoak(t)
	for first := 0; first < gangs; first += soakBatch {
		s.batchOf(func(l *soakLife) {
			l.kind = soakLives[s.rnd.Intn(len(soakLives))]
			s.lives[l.kind]++
		}, first, min(soakBatch, gangs-first))
	}
	s.clk.Step(time.Hour) // deleted nodes forgotten, every timer fired or stopped
	// A plan made now reads the nodes the gangs changed (the snapshot's topology is read whole
	// again: a second passed).
	s.batchOf(func(l *soakLife) { l.kind = "bound" }, gangs, 1)
	s.idle("the last gang's deletions")

	sizes := map[string]int{}
	for k, n := range s.env.Components.Model.Sizes() {
		sizes["model."+k] = n
	}
	for k, n := range s.env.plans.Sizes() {
		sizes["plans."+k] = n
	}
	nom := s.env.plugin.nominations
	nom.mu.Lock()
	sizes["nominations.pods"], sizes["nominations.nodes"] = len(nom.byPod), len(nom.count)
	nom.mu.Unlock()
	// A node of the snapshot told changed stays told until the snapshot shows the change
	// (this one never changes: the gangs bind in the API only); no other is kept.
	inSnapshot := map[string]bool{}
	for _, ni := range s.env.NodeInfos(t) {
		inSnapshot[ni.Node().Name] = true
	}
	for i, sub := range s.env.plugin.changes.subs {
		sub.mu.Lock()
		for name := range sub.names {
			if !inSnapshot[name] {
				sizes[fmt.Sprintf("changes[%d].names", i)]++
			}
		}
		sub.mu.Unlock()
	}
	sizes["status.remembered"] = s.env.Components.Status.Remembered()
	sizes["clock.timers"] = s.clk.Len()
	var kept []string
	for k, n := range sizes {
		if n != 0 {
			kept = append(kept, fmt.Sprintf("%s=%d", k, n))
		}
	}
	sort.Strings(kept)
	t.Logf("%d gangs: %v; reservations made %d, timed out %d", gangs, s.lives, s.reserved, s.timedOut)
	if len(kept) > 0 {
		t.Errorf("kept after every gang is gone: %v", kept)
	}
	if gangs >= 100 && (s.reserved == 0 || s.timedOut == 0) {
		t.Errorf("reservations made %d, timed out %d: the soak did not exercise reservations", s.reserved, s.timedOut)
	}
}

// soakBatch is how many gangs live at once in the soak (the fake clientset's watches hold
// 100 events: a batch's pods fit).
const soakBatch = 16

var soakLives = []string{"bound", "failed", "reserved", "nodeLost", "native", "foreign", "preempted", "nominated"}

type componentSoak struct {
	t     *testing.T
	env   *testEnv
	clk   *stepClock
	rnd   *rand.Rand
	lives map[string]int
	// reserved counts the reservations made, timedOut those that ended by their deadline.
	reserved, timedOut int
}

func newComponentSoak(t *testing.T) *componentSoak {
	clk := newStepClock(lt.Epoch)
	native := lt.MakePodGroup().Namespace("ns").Name("native-seed").Gang(1).Obj()
	// Four racks of four nodes of 8 cpu, full of pods of priority 0 but for z0-r0-h0: gangs of
	// small pods fit there, a gang that needs a rack whole waits for one (and gets it
	// reserved).
	nodes := rackedNodes(2, 4, "8")
	var fillers []*v1.Pod
	for _, n := range nodes[1:] {
		fillers = append(fillers, lt.MakePod().Namespace("ns").Name("fill-"+n.Name).UID("fill-"+n.Name).Req(lt.CPU("8")).Node(n.Name).Obj())
	}
	env := newTestEnvOpts(t, nil, fillers, nodes, podgrouptest.Options{Clock: clk, Untracked: true, Quiet: true,
		Native: []runtime.Object{podgroup.ToNativePodGroup(native)}})
	env.plans.reservations.SetClock(clk.Now)
	env.plugin.topology.now = clk.Now
	env.Components.Model.OnNativeGroupDelete(podgroup.ToNativePodGroup(native))
	go func() { // the events every gang's life records
		for {
			select {
			case <-env.Recorder.Events:
			case <-env.Ctx.Done():
				return
			}
		}
	}()
	go env.Components.Lead(env.Ctx) // the status writer writes, as the leader's does
	return &componentSoak{t: t, env: env, clk: clk, rnd: rand.New(rand.NewSource(1)), lives: map[string]int{}}
}

type soakLife struct {
	kind   string
	name   string
	group  *v1alpha1.PodGroup
	pods   []*v1.Pod
	node   *v1.Node // nodeLost's own node
	native bool
}

// batchOf runs gangs first..first+n through their lives, each of the kind choose gives it.
func (s *componentSoak) batchOf(choose func(*soakLife), first, n int) {
	ctx := s.env.Ctx
	m := s.env.Components.Model
	var lives []*soakLife
	for i := first; i < first+n; i++ {
		l := &soakLife{name: fmt.Sprintf("g%d", i)}
		choose(l)
		size, cpu := 1+s.rnd.Intn(3), "1"
		g := lt.MakePodGroup().Namespace("ns").Name(l.name).UID(l.name)
		if l.kind == "reserved" {
			size, cpu = 4, "8"
			g = g.Topology(lt.Required(rackKey))
		}
		l.group = g.Gang(int32(size)).Obj()
		node := "z0-r0-h0"
		if l.kind == "nodeLost" {
			node = "tmp-" + l.name
			l.node = lt.MakeNode(node, "8").Obj()
			s.create(func() error {
				_, err := s.env.Client.CoreV1().Nodes().Create(ctx, l.node, metav1.CreateOptions{})
				return err
			})
		}
		l.native = l.kind == "native" || l.kind == "foreign"
		if l.native {
			m.OnNativeGroup(nil, podgroup.ToNativePodGroup(l.group))
		} else {
			s.create(func() error {
				_, err := s.env.Lockstep.SchedulingV1alpha1().PodGroups("ns").Create(ctx, l.group, metav1.CreateOptions{})
				return err
			})
		}
		for j := range size {
			w := lt.Member("ns", l.name, j).Req(lt.CPU(cpu))
			if l.native {
				w = lt.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-%d", l.name, j)).UID(fmt.Sprintf("%s-%d", l.name, j)).
					PodGroupName(l.name).Req(lt.CPU(cpu))
			}
			switch l.kind {
			case "foreign":
				w = w.SchedulerName("default-scheduler").Node(node)
			case "nodeLost", "preempted":
				w = w.Node(node)
			case "nominated":
				w = w.NominatedNodeName(node)
			}
			p := w.Obj()
			l.pods = append(l.pods, p)
			s.create(func() error {
				_, err := s.env.Client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{})
				return err
			})
		}
		lives = append(lives, l)
	}
	s.await("the batch's gangs filed", func() bool {
		for _, l := range lives {
			if l.kind == "foreign" {
				continue
			}
			for _, p := range l.pods {
				if _, ok := m.Gate().Tree(p); !ok {
					return false
				}
			}
		}
		return true
	})
	pol := podgroup.Policy{PermitTimeout: time.Minute, Backoff: 10 * time.Second}
	bg := klog.Background()
	for _, l := range lives {
		root := podgroup.PodGroupKey("ns", l.name)
		if l.native {
			root.API = podgroup.APINative
		}
		switch l.kind {
		case "bound", "native":
			s.plan(l.pods[0])
			// Room held for followers its leaders' plan gave them, until it binds or goes.
			s.env.plans.reservations.HoldForFollowers(&reservation.Reservation{Root: root, Domain: "z0-r0-h0",
				Need: map[string]capacity.Resources{"z0-r0-h0": {MilliCPU: 1000}}, Since: s.clk.Now(), Deadline: s.clk.Now().Add(time.Hour),
				Expires: s.clk.Now().Add(time.Hour)})
			for _, p := range l.pods {
				b := p.DeepCopy()
				b.Spec.NodeName = "z0-r0-h0"
				s.update(b)
			}
		case "failed":
			s.plan(l.pods[0])
			s.env.plans.Refuse(root, "z0-r0-h0", "node(s) had volume node affinity conflict", time.Hour)
			m.Permits().Fail(bg, l.pods[0], "0/16 nodes are available: 16 Insufficient cpu", pol)
		case "reserved":
			tree, _ := m.Gate().Tree(l.pods[0])
			p := podgroup.Preemptor{Root: root, Failed: true, WaitingSince: s.clk.Now().Add(-10 * time.Minute),
				ReserveAfter: time.Minute, ReservationTimeout: 30 * time.Second}
			s.env.plugin.reserve(ctx, tree, p, s.env.NodeInfos(s.t))
			if s.env.plans.reservations.Get(root) != nil {
				s.reserved++
			}
		case "nodeLost":
			s.await("the gang bound on its node", func() bool { return s.scheduled(l.pods[0]) })
			if err := s.env.Client.CoreV1().Nodes().Delete(ctx, l.node.Name, metav1.DeleteOptions{}); err != nil {
				s.t.Fatal(err)
			}
		case "preempted":
			s.await("the gang bound", func() bool { return s.scheduled(l.pods[0]) })
			m.Permits().NotePreempted(root, "preempted by gang ns/hi (priority 1000), which takes rack z0-r0")
		case "nominated":
			s.env.plugin.nominations.Note(l.pods[0], "z0-r1-h0")
		}
	}
	var held []podgroup.Key
	for _, l := range lives {
		if k := podgroup.PodGroupKey("ns", l.name); l.kind == "reserved" && s.env.plans.reservations.Get(k) != nil {
			held = append(held, k)
		}
	}
	s.clk.Step(40 * time.Second) // past every reservation's deadline and the disruptions' finish
	for _, k := range held {
		if s.env.plans.reservations.Get(k) == nil { // its deadline passed: it ended
			s.timedOut++
		}
	}
	for _, l := range lives {
		for _, p := range l.pods {
			if err := s.env.Client.CoreV1().Pods("ns").Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				s.t.Fatal(err)
			}
		}
		if l.native {
			m.OnNativeGroupDelete(podgroup.ToNativePodGroup(l.group))
		} else if err := s.env.Lockstep.SchedulingV1alpha1().PodGroups("ns").Delete(ctx, l.name, metav1.DeleteOptions{}); err != nil {
			s.t.Fatal(err)
		}
	}
	s.idle(fmt.Sprintf("gangs %d to %d deleted", first, first+n-1))
}

// scheduled reports whether the model counts pod's group as scheduled.
func (s *componentSoak) scheduled(pod *v1.Pod) bool {
	sum, ok := s.env.Components.Model.Gate().Summary(pod)
	return ok && sum.Scheduled
}

// plan runs the plugin's PreFilter for pod, as a scheduling cycle does: its tree is planned.
func (s *componentSoak) plan(pod *v1.Pod) {
	s.env.plugin.PreFilter(s.env.Ctx, framework.NewCycleState(), pod, s.env.NodeInfos(s.t))
}

// idle waits until the model holds no group and no member: the informers delivered every
// deletion.
func (s *componentSoak) idle(what string) {
	s.await(what, func() bool {
		sizes := s.env.Components.Model.Sizes()
		return sizes["groups"] == 0 && sizes["members"] == 0 && sizes["foreign"] == 0 && sizes["bound"] == 0
	})
}

func (s *componentSoak) await(what string, cond func() bool) {
	s.t.Helper()
	if err := wait.PollUntilContextTimeout(s.env.Ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		s.t.Fatalf("waiting for %s: %v (model %v)", what, err, s.env.Components.Model.Sizes())
	}
}

func (s *componentSoak) create(f func() error) {
	s.t.Helper()
	if err := f(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *componentSoak) update(p *v1.Pod) {
	s.t.Helper()
	if _, err := s.env.Client.CoreV1().Pods(p.Namespace).Update(s.env.Ctx, p, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// stepClock is a podgroup.Clock whose time passes when the test steps it; its timers fire
// then, in time order, on the stepping goroutine.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers map[int]*stepTimer
}

type stepTimer struct {
	c   *stepClock
	id  int
	at  time.Time
	fn  func()
	off bool
}

func newStepClock(t time.Time) *stepClock { return &stepClock{now: t, timers: map[int]*stepTimer{}} }

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) AfterFunc(d time.Duration, fn func()) podgroup.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	tm := &stepTimer{c: c, id: c.seq, at: c.now.Add(d), fn: fn}
	c.timers[tm.id] = tm
	return tm
}

func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t.id]
	delete(t.c.timers, t.id)
	return pending
}

// Len is how many timers are pending.
func (c *stepClock) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Step moves time on by d, firing the timers due meanwhile (and those they arm that fall due
// too) in time order.
func (c *stepClock) Step(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *stepTimer
		for _, tm := range c.timers {
			if !tm.at.After(end) && (next == nil || tm.at.Before(next.at) || tm.at.Equal(next.at) && tm.id < next.id) {
				next = tm
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		delete(c.timers, next.id)
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.fn()
	}
}

// noScheduler is a scheduler that does nothing asked of it; every pod is live.
type noScheduler struct{}

func (noScheduler) Activate(klog.Logger, []*v1.Pod) {}
func (noScheduler) Hold(klog.Logger, []*v1.Pod)     {}
func (noScheduler) Allow(*v1.Pod)                   {}
func (noScheduler) Reject(*v1.Pod, string)          {}
func (noScheduler) Live(*v1.Pod) bool               { return true }

// stillClock is a clock whose time does not pass: its timers never fire, and are not kept.
type stillClock struct{}

func (stillClock) Now() time.Time { return lt.Epoch }
func (stillClock) AfterFunc(time.Duration, func()) podgroup.Timer {
	return stillTimer{}
}

type stillTimer struct{}

func (stillTimer) Stop() bool { return true }
