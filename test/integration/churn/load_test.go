package churn

import (
	"context"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// loadGrace is how long a gang may be partially bound in TestLoadWithKillsThenMassDelete: a
// scheduler killed between a gang's binds is replaced at once, and its successor finishes
// half-bound gangs first, with binds that wait for no other request of the scheduler.
const loadGrace = 20 * time.Second

// TestLoadWithKillsThenMassDelete is issue #19's run from outside, scaled to a test: the
// built binary with the shipped configuration, random gangs asking for about twice the
// cluster, four SIGKILLs while they bind, then every bound gang deleted at once, as when a
// wave of jobs ends. The oracle checks every bind as it happens (never past a node's
// capacity, Required groups in one domain, no gang partially bound past loadGrace without a
// member deleted); at each quiescence no gang that fits is left pending and every pending pod
// says why. After the mass delete the waiting gangs must take the emptied cluster (binds
// resume at once, not after the backlog of the scheduler's other writes drains).
// LOAD_SEED replays a run's operations.
func TestLoadWithKillsThenMassDelete(t *testing.T) {
	seed := time.Now().UnixNano()
	if s, err := strconv.ParseInt(os.Getenv("LOAD_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (rerun with LOAD_SEED=%d)", seed, seed)
	env := testenv.Start(t)
	c := &churn{t: t, env: env, rng: rand.New(rand.NewSource(seed)), gangs: map[string]*gang{}, gone: map[string]bool{}}
	c.ns = env.Namespace(t, "load")
	c.nodes = lt.TopologyNodes(2, 2, 4, 4, "8") // 64 nodes, 512 cpu
	env.CreateNodes(t, c.nodes...)
	c.oracle = watch(t, env, c.ns, c.nodes, loadGrace)
	c.startScheduler()

	// Gangs of 4-24 pods of 1-2 cpu until they ask for twice the cluster; a kill after every
	// quarter of them, and one while the last are placed.
	const capacity = 64 * 8
	asked, kills := 0, 0
	for asked < 2*capacity {
		g := c.createGangOf(4+c.rng.Intn(21), 0, int64(1+c.rng.Intn(2)))
		asked += len(g.pods) * int(g.cpu)
		if asked >= (kills+1)*capacity/2 && kills < 3 {
			kills++
			c.restart()
		}
	}
	time.Sleep(time.Duration(1000+c.rng.Intn(2000)) * time.Millisecond)
	c.restart()
	pods := 0
	for _, g := range c.gangs {
		pods += len(g.pods)
	}
	t.Logf("%d gangs, %d pods asking for %d of %d cpu; %d SIGKILLs", len(c.gangs), pods, asked, capacity, len(c.runs)-1)
	c.quiesce()
	c.check()

	// Every bound gang ends at once.
	deleted := time.Now()
	ended := 0
	for _, name := range c.boundGangs() {
		c.deleteGangNamed(name)
		ended++
	}
	t.Logf("%d bound gangs deleted in %s; %d waiting", ended, time.Since(deleted).Round(time.Millisecond), len(c.gangs))
	testenv.Eventually(t, 30*time.Second, "a waiting gang bound whole after the mass delete", func() (bool, string) {
		return len(c.oracle.wholeSince(deleted)) > 0, "none yet"
	})
	c.quiesce()
	c.check()
	refilled := c.oracle.wholeSince(deleted)
	t.Logf("after the mass delete: first gang whole after %s, %d gangs whole after %s",
		refilled[0].Sub(deleted).Round(time.Millisecond), len(refilled), refilled[len(refilled)-1].Sub(deleted).Round(time.Millisecond))
	placed := env.Placement(t, c.ns)
	var pendingPods []string
	for _, g := range c.gangs {
		for _, p := range g.pods {
			if placed[p] == "" {
				pendingPods = append(pendingPods, p)
			}
		}
	}
	most := 0
	for _, p := range pendingPods {
		most = max(most, c.oracle.conditionWritesOf([]string{p}))
	}
	t.Logf("PodScheduled condition changes of the %d pods left pending: %d (at most %d for one pod)",
		len(pendingPods), c.oracle.conditionWritesOf(pendingPods), most)
	c.oracle.check()
}

// boundGangs returns the gangs with a bound pod, by name.
func (c *churn) boundGangs() []string {
	placed := c.env.Placement(c.t, c.ns)
	var out []string
	for name, g := range c.gangs {
		for _, p := range g.pods {
			if placed[p] != "" {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// deleteGangNamed deletes a gang, group and pods, as a finished job does.
func (c *churn) deleteGangNamed(name string) {
	ctx := context.Background()
	for _, p := range c.gangs[name].pods {
		if err := c.env.Client.CoreV1().Pods(c.ns).Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
			c.t.Errorf("deleting pod %s: %v", p, err)
		}
	}
	if err := c.env.Lockstep.SchedulingV1alpha1().PodGroups(c.ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		c.t.Errorf("deleting PodGroup %s: %v", name, err)
	}
	delete(c.gangs, name)
}
