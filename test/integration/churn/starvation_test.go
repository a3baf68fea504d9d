package churn

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// A big gang behind a crowd of small ones (issue #58, target 4; README: "a big gang that
// starves behind small ones gets a domain held for it"). Every node outside a region is held
// for good by a pod of higher priority; the region's nodes are full of plain pods of the
// gangs' priority that end within run of the big gang's arrival. The big gang (whole nodes of
// the region, 8 of every 10) arrives, then the small gangs (2 pods of half a node, each ending
// run after its bind), more than the region can run at once for ten runs. Each freed half node
// fits a small gang and never the big one, and the small gangs sort ahead of a gang whose
// last failure is later than their arrival: without a reservation the big gang waits until the
// crowd is gone. With reserveAfterSeconds, the big gang binds within the bound
// docs/semantics.md states,
//
//	reserveAfter + backoff + (k+1) × (run + backoff + fitRecheck),
//
// from its arrival, k = 0: no gang of its priority waited longer. The test's own watch
// decides it (binds as they happen, pods' ends, the oracle's capacity and all-or-nothing
// checks), never lockstep's conditions. STARVE_NODES, STARVE_SMALL and STARVE_RUN_SECONDS
// scale it (defaults 40 nodes, 100 small gangs, 10 s; the region is a hundredth of the nodes,
// at least 10); docs/benchmarks.md records larger runs.
func TestBigGangBehindSmallOnes(t *testing.T) {
	nodes := testenv.EnvInt(t, "STARVE_NODES", 40)
	smalls := testenv.EnvInt(t, "STARVE_SMALL", 100)
	run := time.Duration(testenv.EnvInt(t, "STARVE_RUN_SECONDS", 10)) * time.Second
	region := max(10, nodes/100)
	if region > nodes {
		t.Fatalf("STARVE_NODES=%d: at least %d nodes", nodes, region)
	}
	bigPods := region * 8 / 10
	const (
		reserveAfter = 5 * time.Second
		backoff      = time.Second
		fitRecheck   = 30 * time.Second // pkg/plugins/topology's fitRecheck
	)
	promise := reserveAfter + backoff + (run + backoff + fitRecheck)

	env := testenv.Start(t)
	ns := env.Namespace(t, "starve")
	var all []*v1.Node
	for i := 0; i < nodes; i++ {
		all = append(all, lt.MakeNode(fmt.Sprintf("node-%d", i), "4").Obj())
	}
	env.CreateNodes(t, all...)
	o := watch(t, env, ns, all, partialGrace)
	env.CreatePriorityClass(t, "held", 1000, false)

	// Pods end run after their bind (the small gangs') or at the time set for them (the
	// region's first occupants), as a kubelet would report them finished: deleted.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	end := func(name string, after time.Duration) {
		time.AfterFunc(after, func() {
			err := env.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
				t.Errorf("ending pod %s: %v", name, err)
			}
		})
	}
	var mu sync.Mutex
	boundAt := map[string]time.Time{} // the gangs' pods, when first seen bound
	env.FollowPods(t, ns, func(p *v1.Pod, deleted bool) {
		group := p.Labels[v1alpha1.PodGroupLabel]
		if deleted || p.Spec.NodeName == "" || group == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, seen := boundAt[p.Name]; seen {
			return
		}
		boundAt[p.Name] = time.Now()
		if strings.HasPrefix(group, "small-") {
			end(p.Name, run)
		}
	})

	// Outside the region, held for good; in the region, two plain pods of half a node each.
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var occupants []*v1.Pod
	var firsts []string
	for i, n := range all {
		if i >= region {
			occupants = append(occupants, lt.InPriorityClass(lt.GroupPod(ns, "held-"+n.Name, "").Req(lt.CPU("4")).Node(n.Name), "held").Obj())
			continue
		}
		for j := 0; j < 2; j++ {
			name := fmt.Sprintf("first-%s-%d", n.Name, j)
			occupants = append(occupants, lt.GroupPod(ns, name, "").Req(lt.CPU("2")).Node(n.Name).Obj())
			firsts = append(firsts, name)
		}
	}
	env.CreatePods(t, occupants...)
	env.StartProcess(t, "scheduler", testenv.ProcessOptions{Args: testenv.GangArgs{
		"reserveAfterSeconds": int(reserveAfter / time.Second), "backoffSeconds": int(backoff / time.Second)}})

	big := &gang{name: "big", min: bigPods, cpu: 4}
	o.register(big)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(big.name).Gang(int32(bigPods)).Obj())
	arrived := time.Now()
	env.CreatePods(t, lt.Members(ns, big.name, bigPods, lt.CPU("4"))...)
	for _, name := range firsts {
		end(name, time.Duration(rng.Int63n(int64(run))))
	}
	for i := 0; i < smalls; i++ {
		g := &gang{name: fmt.Sprintf("small-%d", i), min: 2, cpu: 2}
		o.register(g)
		env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(g.name).Gang(2).Obj())
		env.CreatePods(t, lt.Members(ns, g.name, 2, lt.CPU("2"))...)
	}

	// The big gang bound whole, within the promise.
	var took time.Duration
	smallBefore := 0
	testenv.Eventually(t, promise+time.Minute, "the big gang bound whole", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		var last time.Time
		n := 0
		for i := 0; i < bigPods; i++ {
			if at, ok := boundAt[fmt.Sprintf("%s-%d", big.name, i)]; ok {
				n++
				if at.After(last) {
					last = at
				}
			}
		}
		if n < bigPods {
			return false, fmt.Sprintf("%d of %d members bound, %d pods of small gangs bound so far", n, bigPods, len(boundAt)-n)
		}
		took = last.Sub(arrived)
		for name, at := range boundAt {
			if strings.HasPrefix(name, "small-") && at.Before(last) {
				smallBefore++
			}
		}
		return true, ""
	})
	t.Logf("big gang of %d whole nodes (%d nodes, region of %d, %d small gangs, runs of %s): bound %s after it arrived (promise %s); %d pods of small gangs bound before it",
		bigPods, nodes, region, smalls, run, took.Round(time.Millisecond), promise, smallBefore)
	if took > promise {
		t.Errorf("the big gang bound %s after it arrived, beyond the promise of %s", took.Round(time.Millisecond), promise)
	}
	// The crowd was there: small gangs took freed room before the big gang bound (the
	// reservation holds the big gang's nodes, not the region).
	if smallBefore == 0 {
		t.Errorf("no small gang bound before the big gang: the region never had a crowd to hold it back")
	}
	o.check()
}
