// Package churn runs lockstep the way a busy shared cluster does: a few dozen nodes in a
// zone/block/rack layout, over a hundred random gangs with and without topology constraints
// created and deleted, members deleted and replaced, nodes removed, and the scheduler killed
// with SIGKILL and restarted several times. An oracle watches every bind as it happens
// (oracle_test.go): no gang stays partially bound without a member deleted, no node is
// overcommitted, no Required group leaves its domain. At quiescence no gang is partially
// bound that the oracle never saw whole, none that fits is left pending, every pending pod
// says why, and the scheduler never panicked. CHURN_SEED replays a run's operations.
package churn

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// gang is what the test created for one gang.
type gang struct {
	name     string
	min      int
	cpu      int64 // per pod, cores
	topology []v1alpha1.TopologyConstraint
	pods     []string
	next     int
}

type churn struct {
	t     *testing.T
	env   *testenv.Env
	rng   *rand.Rand
	ns    string
	gangs map[string]*gang
	nodes []*v1.Node
	gone  map[string]bool // nodes removed
	id    int
	sched *testenv.Process
	runs  []*testenv.Process
	// oracle watches the binds as they happen.
	oracle *oracle
	// args override LockstepGang's args of the manifests' configuration.
	args testenv.GangArgs
}

func (c *churn) startScheduler() {
	c.sched = c.env.StartProcess(c.t, fmt.Sprintf("scheduler-%d", len(c.runs)), testenv.ProcessOptions{
		Args:      c.args,
		Verbosity: 4,
	})
	c.runs = append(c.runs, c.sched)
}

func (c *churn) pod(g *gang) *v1.Pod {
	name := fmt.Sprintf("%s-%d", g.name, g.next)
	g.next++
	g.pods = append(g.pods, name)
	return lt.GroupPod(c.ns, name, g.name).Req(lt.CPU(strconv.FormatInt(g.cpu, 10))).Obj()
}

// createGang creates a random gang: 2-8 pods of 1-4 cores, minCount all or all but one,
// required rack or block, preferred rack, or no constraint.
func (c *churn) createGang() {
	size := 2 + c.rng.Intn(7)
	min := size
	if c.rng.Intn(3) == 0 {
		min = size - 1
	}
	c.createGangOf(size, min, int64(1+c.rng.Intn(4)))
}

// createGangOf creates a gang of size pods of cpu cores each with minCount min (0: all of
// them): required
// rack or block, preferred rack, or no constraint, at random.
func (c *churn) createGangOf(size, min int, cpu int64) *gang {
	c.id++
	if min == 0 {
		min = size
	}
	g := &gang{name: fmt.Sprintf("g%d", c.id), min: min, cpu: cpu}
	pg := lt.MakePodGroup().Namespace(c.ns).Name(g.name).Gang(int32(g.min))
	switch c.rng.Intn(4) {
	case 0:
		g.topology = []v1alpha1.TopologyConstraint{lt.Required(lt.RackKey)}
	case 1:
		g.topology = []v1alpha1.TopologyConstraint{lt.Required(lt.BlockKey)}
	case 2:
		g.topology = []v1alpha1.TopologyConstraint{lt.Preferred(lt.RackKey)}
	}
	if g.topology != nil {
		pg = pg.Topology(g.topology...)
	}
	c.oracle.register(g)
	c.env.CreatePodGroups(c.t, pg.Obj())
	var pods []*v1.Pod
	for i := 0; i < size; i++ {
		pods = append(pods, c.pod(g))
	}
	c.env.CreatePods(c.t, pods...)
	c.gangs[g.name] = g
	return g
}

func (c *churn) randomGang() *gang {
	if len(c.gangs) == 0 {
		return nil
	}
	keys := make([]string, 0, len(c.gangs))
	for k := range c.gangs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return c.gangs[keys[c.rng.Intn(len(keys))]]
}

// deleteGang deletes a gang, group and pods, as a finished or cancelled job does.
func (c *churn) deleteGang() {
	if g := c.randomGang(); g != nil {
		c.deleteGangNamed(g.name)
	}
}

// replaceMember deletes a pod of a gang and creates a replacement, as a controller does.
func (c *churn) replaceMember() {
	g := c.randomGang()
	if g == nil || len(g.pods) == 0 {
		return
	}
	i := c.rng.Intn(len(g.pods))
	victim := g.pods[i]
	g.pods = append(g.pods[:i], g.pods[i+1:]...)
	_ = c.env.Client.CoreV1().Pods(c.ns).Delete(context.Background(), victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	c.env.CreatePods(c.t, c.pod(g))
}

// removeNode deletes a node and, as the pod garbage collector would, the pods bound to it;
// the gangs get replacements.
func (c *churn) removeNode() {
	var alive []*v1.Node
	for _, n := range c.nodes {
		if !c.gone[n.Name] {
			alive = append(alive, n)
		}
	}
	if len(alive) < 24 {
		return
	}
	n := alive[c.rng.Intn(len(alive))]
	c.gone[n.Name] = true
	c.oracle.nodeDeleted(n.Name)
	c.env.DeleteNode(c.t, n.Name)
	c.collectOrphans()
}

// collectOrphans deletes the pods bound to removed nodes, as the pod garbage collector does,
// and creates replacements for their gangs. A binding in flight when a node is deleted may
// still land on it, in lockstep as in kube-scheduler, so this runs again until quiescence.
func (c *churn) collectOrphans() (collected int) {
	placed := c.env.Placement(c.t, c.ns)
	for _, g := range c.gangs {
		var keep []string
		lost := 0
		for _, p := range g.pods {
			if c.gone[placed[p]] {
				_ = c.env.Client.CoreV1().Pods(c.ns).Delete(context.Background(), p, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
				lost++
				continue
			}
			keep = append(keep, p)
		}
		g.pods = keep
		for i := 0; i < lost; i++ {
			c.env.CreatePods(c.t, c.pod(g))
		}
		collected += lost
	}
	return collected
}

// restart kills the scheduler with SIGKILL and starts a new one.
func (c *churn) restart() {
	c.sched.Kill()
	c.startScheduler()
}

func TestChurn(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("CHURN_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (rerun with CHURN_SEED=%d)", seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("CHURN_SEED=%d replays this run's sequence of operations", seed)
		}
	})
	env := testenv.Start(t)
	c := &churn{t: t, env: env, rng: rand.New(rand.NewSource(seed)), gangs: map[string]*gang{}, gone: map[string]bool{},
		args: testenv.GangArgs{"backoffSeconds": 1, "permitTimeoutSeconds": 10}}
	c.ns = env.Namespace(t, "churn")
	c.nodes = lt.TopologyNodes(2, 2, 2, 4, "8")
	env.CreateNodes(t, c.nodes...)
	c.oracle = watch(t, env, c.ns, c.nodes, partialGrace)
	c.startScheduler()

	const gangs = 120
	restarts := 0
	for created := 0; created < gangs; {
		switch r := c.rng.Intn(100); {
		case r < 55:
			c.createGang()
			created++
		case r < 72:
			c.deleteGang()
		case r < 88:
			c.replaceMember()
		case r < 92:
			c.removeNode()
		case r < 95 && restarts < 4:
			restarts++
			c.restart()
		default:
			time.Sleep(time.Duration(c.rng.Intn(400)) * time.Millisecond)
		}
	}
	if restarts == 0 {
		c.restart()
	}
	c.quiesce()
	c.check()
	c.oracle.check()
}

// quiesce waits until no pod has been bound for a while: every gang that can fit had time to.
func (c *churn) quiesce() {
	c.t.Helper()
	last, stable := "", time.Now()
	testenv.Eventually(c.t, 3*time.Minute, "quiescence (no binding for 12s)", func() (bool, string) {
		if c.collectOrphans() > 0 {
			stable = time.Now()
		}
		placed := c.env.Placement(c.t, c.ns)
		keys := make([]string, 0, len(placed))
		for p, n := range placed {
			if n != "" {
				keys = append(keys, p)
			}
		}
		sort.Strings(keys)
		cur := strings.Join(keys, ",")
		if cur != last {
			last, stable = cur, time.Now()
		}
		return time.Since(stable) > 12*time.Second, fmt.Sprintf("%d bound", len(keys))
	})
}

func (c *churn) check() {
	t := c.t
	ctx := context.Background()
	pods, err := c.env.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*v1.Pod{}
	used := map[string]int64{}
	for i := range pods.Items {
		p := &pods.Items[i]
		byName[p.Name] = p
		if p.Spec.NodeName != "" {
			if c.gone[p.Spec.NodeName] {
				t.Errorf("pod %s bound to removed node %s", p.Name, p.Spec.NodeName)
			}
			used[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
		}
	}
	fully, partial, pending := 0, 0, 0
	for _, g := range c.gangs {
		pg, err := c.env.Lockstep.SchedulingV1alpha1().PodGroups(c.ns).Get(ctx, g.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupInitiallyScheduled)
		bound := 0
		for _, name := range g.pods {
			if byName[name].Spec.NodeName != "" {
				bound++
			}
		}
		switch {
		case bound >= g.min:
			fully++
			if cond == nil || cond.Status != metav1.ConditionTrue {
				t.Errorf("gang %s: %d of minCount %d bound, condition %v, want Scheduled", g.name, bound, g.min, cond)
			}
		case bound > 0:
			// Excused only by what the oracle saw: the gang bound whole once, then lost members
			// (replaced where no room was left).
			partial++
			if !c.oracle.wholeOnce(g.name) {
				t.Errorf("gang %s partially bound: %d of minCount %d, never seen bound whole", g.name, bound, g.min)
			}
		default:
			pending++
		}
		for _, name := range g.pods {
			p := byName[name]
			if p.Spec.NodeName != "" {
				continue
			}
			if !saysWhy(pg, p) {
				t.Errorf("pending pod %s of gang %s says nothing: group condition %v, pod conditions %v", name, g.name, cond, p.Status.Conditions)
			}
		}
		if bound == 0 && g.topology == nil && c.fits(g, used) {
			t.Errorf("gang %s (%d × %d cpu, minCount %d) fits in the free capacity but is pending: %v", g.name, len(g.pods), g.cpu, g.min, cond)
		}
	}
	t.Logf("%d gangs at quiescence: %d bound whole, %d bound in part after being scheduled (members replaced without room), %d pending; %d scheduler runs",
		len(c.gangs), fully, partial, pending, len(c.runs))
	for i, p := range c.runs {
		if strings.Contains(p.Log(), "panic") {
			t.Errorf("%s panicked:\n%s", p.Name, p.Tail(80))
		}
		if exited, err := p.Exited(); exited && i == len(c.runs)-1 {
			t.Errorf("the last scheduler exited by itself: %v\n%s", err, p.Tail(40))
		}
	}
}

// saysWhy reports whether a pending member carries a reason a person can read: its group's
// condition (False, with a message) or its own PodScheduled condition.
func saysWhy(pg *v1alpha1.PodGroup, p *v1.Pod) bool {
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PodGroupInitiallyScheduled); c != nil && c.Status == metav1.ConditionFalse && c.Message != "" {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Message != "" {
			return true
		}
	}
	return false
}

// fits reports whether a gang without topology constraints fits, first fit, in the cpu the
// live nodes have free.
func (c *churn) fits(g *gang, used map[string]int64) bool {
	var free []int64
	for _, n := range c.nodes {
		if c.gone[n.Name] {
			continue
		}
		alloc := n.Status.Allocatable[v1.ResourceCPU]
		free = append(free, alloc.MilliValue()-used[n.Name])
	}
	need := g.cpu * 1000
	placed := 0
	for i := range free {
		for free[i] >= need && placed < g.min {
			free[i] -= need
			placed++
		}
	}
	return placed >= g.min
}
