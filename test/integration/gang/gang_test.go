package gang

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// fastArgs keep the scenarios short: a failed gang retries after one second.
var fastArgs = testenv.GangArgs{"backoffSeconds": 1}

// names returns the names of pods.
func names(n int, group string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", group, i)
	}
	return out
}

// A gang of 4 on nodes with room for 3: none binds; add a node: all 4 bind. For both APIs.
func TestGangWaitsForRoomThenBindsTogether(t *testing.T) {
	testenv.ForEachAPI(t, testGangWaitsForRoomThenBindsTogether)
}

func testGangWaitsForRoomThenBindsTogether(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "a")
	env.CreateNodes(t, lt.MakeNode("n1", "2").Obj(), lt.MakeNode("n2", "1").Obj())
	sched := env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(4).Obj())
	env.CreatePods(t, lt.Members(ns, "train", 4, lt.CPU("1"))...)

	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable,
		"cannot fit: PodGroup train: not enough free capacity for 4 pods × 1 cpu on the nodes the pods may use; they could take 3")
	env.WaitEvent(t, ns, "train", v1alpha1.ReasonUnschedulable, "cannot fit: ")
	env.AssertUnbound(t, ns, names(4, "train")...)

	env.CreateNodes(t, lt.MakeNode("n3", "1").Obj())
	placed := env.WaitBound(t, ns, names(4, "train")...)
	perNode := map[string]int{}
	for _, n := range placed {
		perNode[n]++
	}
	if perNode["n1"] != 2 || perNode["n2"] != 1 || perNode["n3"] != 1 {
		t.Errorf("placement %v, want 2 pods on n1 and one on each of n2, n3", placed)
	}
	env.WaitCondition(t, "PodGroup", ns, "train", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed")

	// The scheduler's /metrics shows the failed and the successful attempt (the gang was
	// planned: the first plan found no room), the permit waits and the end-to-end latency.
	testenv.Eventually(t, 30*time.Second, "lockstep metrics on /metrics", func() (bool, string) {
		text := sched.Metrics(t)
		// Counters are per process: other scenarios of this package may have added to them.
		for _, want := range []string{
			`lockstep_gang_attempts_total\{result="scheduled"\} [1-9]`,
			`lockstep_gang_attempts_total\{result="unschedulable"\} [1-9]`,
			`lockstep_gang_permit_wait_duration_seconds_count\{result="allowed"\} [1-9]`,
			`lockstep_topology_plans_total\{result="unplaceable"\} [1-9]`,
			`lockstep_topology_plans_total\{result="placed"\} [1-9]`,
			`lockstep_gang_scheduling_duration_seconds_count [1-9]`,
			`lockstep_gangs_waiting 0`,
			`lockstep_group_status_writes_total\{reason="Scheduled"\} [1-9]`,
		} {
			if !regexp.MustCompile(`(?m)^` + want).MatchString(text) {
				return false, "missing " + want
			}
		}
		return true, ""
	})
}

// countBound returns how many of the named pods are bound.
func countBound(placed map[string]string, names []string) int {
	n := 0
	for _, name := range names {
		if placed[name] != "" {
			n++
		}
	}
	return n
}

// Two gangs that each fit alone but not together: one binds completely, the other not at all
// (no partial holds, no deadlock); the other binds once the first is deleted.
func TestCompetingGangsAllOrNothing(t *testing.T) {
	testenv.ForEachAPI(t, testCompetingGangsAllOrNothing)
}

func testCompetingGangsAllOrNothing(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "b")
	env.CreateNodes(t, lt.MakeNode("n1", "2").Obj(), lt.MakeNode("n2", "2").Obj())
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("blue").Gang(3).Obj(), lt.MakePodGroup().Namespace(ns).Name("green").Gang(3).Obj())
	env.CreatePods(t, append(lt.Members(ns, "blue", 3, lt.CPU("1")), lt.Members(ns, "green", 3, lt.CPU("1"))...)...)

	blue, green := names(3, "blue"), names(3, "green")
	var winner, loser []string
	var loserName string
	testenv.Eventually(t, 60*time.Second, "one gang bound, the other refused", func() (bool, string) {
		placed := env.Placement(t, ns)
		b, g := countBound(placed, blue), countBound(placed, green)
		switch {
		case b == 3 && g == 0:
			winner, loser, loserName = blue, green, "green"
		case g == 3 && b == 0:
			winner, loser, loserName = green, blue, "blue"
		default:
			return false, fmt.Sprintf("blue %d/3, green %d/3", b, g)
		}
		c := env.GroupCondition(t, "PodGroup", ns, loserName)
		return c != nil && strings.Contains(c.Message, "cannot fit"), fmt.Sprint(c)
	})
	env.AssertUnbound(t, ns, loser...)

	for _, name := range winner {
		if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitBound(t, ns, loser...)
	env.WaitCondition(t, "PodGroup", ns, loserName, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
}

// A CompositePodGroup with minGroupCount 2 over three PodGroups: with room for two shards,
// exactly two shards bind, each completely, and the third waits.
func TestCompositeMinGroupCount(t *testing.T) { testenv.ForEachAPI(t, testCompositeMinGroupCount) }

func testCompositeMinGroupCount(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "c")
	env.CreateNodes(t, lt.MakeNode("n1", "2").Obj(), lt.MakeNode("n2", "2").Obj())
	env.StartScheduler(t, fastArgs)

	env.CreateComposites(t, lt.MakeCompositePodGroup().Namespace(ns).Name("job").Gang(2).Obj())
	shards := []string{"s0", "s1", "s2"}
	for _, s := range shards {
		env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name(s).Gang(2).Parent("job").Obj())
	}
	for _, s := range shards {
		env.CreatePods(t, lt.Members(ns, s, 2, lt.CPU("1"))...)
	}

	env.WaitCondition(t, "CompositePodGroup", ns, "job", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 child groups")
	var full, empty int
	testenv.Eventually(t, 60*time.Second, "two shards bound, one refused", func() (bool, string) {
		placed := env.Placement(t, ns)
		full, empty = 0, 0
		var state []string
		for _, s := range shards {
			switch n := countBound(placed, names(2, s)); n {
			case 2:
				full++
			case 0:
				empty++
			}
			state = append(state, fmt.Sprintf("%s %d/2", s, countBound(placed, names(2, s))))
		}
		return full == 2 && empty == 1, strings.Join(state, ", ")
	})
	placed := env.Placement(t, ns)
	for _, s := range shards {
		if countBound(placed, names(2, s)) == 0 {
			env.WaitCondition(t, "PodGroup", ns, s, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
		} else {
			env.WaitCondition(t, "PodGroup", ns, s, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
		}
	}
}

// A three-level tree (root → two composites → three PodGroups): with room for 5 of its 6
// pods nothing binds; with room for all, every level binds and is marked scheduled.
func TestThreeLevelTree(t *testing.T) { testenv.ForEachAPI(t, testThreeLevelTree) }

func testThreeLevelTree(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "c3")
	env.CreateNodes(t, lt.MakeNode("n1", "3").Obj(), lt.MakeNode("n2", "2").Obj())
	env.StartScheduler(t, fastArgs)

	env.CreateComposites(t,
		lt.MakeCompositePodGroup().Namespace(ns).Name("root").Gang(2).Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("m0").Gang(2).Parent("root").Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("m1").Gang(1).Parent("root").Obj())
	env.CreatePodGroups(t,
		lt.MakePodGroup().Namespace(ns).Name("l00").Gang(2).Parent("m0").Obj(),
		lt.MakePodGroup().Namespace(ns).Name("l01").Gang(2).Parent("m0").Obj(),
		lt.MakePodGroup().Namespace(ns).Name("l10").Gang(2).Parent("m1").Obj())
	var all []string
	for _, l := range []string{"l00", "l01", "l10"} {
		env.CreatePods(t, lt.Members(ns, l, 2, lt.CPU("1"))...)
		all = append(all, names(2, l)...)
	}

	env.WaitCondition(t, "CompositePodGroup", ns, "root", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "cannot fit")
	env.AssertUnbound(t, ns, all...)

	env.CreateNodes(t, lt.MakeNode("n3", "1").Obj())
	env.WaitBound(t, ns, all...)
	for _, c := range []string{"root", "m0", "m1"} {
		env.WaitCondition(t, "CompositePodGroup", ns, c, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	}
	for _, l := range []string{"l00", "l01", "l10"} {
		env.WaitCondition(t, "PodGroup", ns, l, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "2 pods placed")
	}
}

// The basic policy behaves like plain scheduling: pods bind one by one as room allows. Pods
// of another scheduler are never touched.
func TestBasicPolicyIsPlainScheduling(t *testing.T) {
	testenv.ForEachAPI(t, testBasicPolicyIsPlainScheduling)
}

func testBasicPolicyIsPlainScheduling(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "d")
	env.CreateNodes(t, lt.MakeNode("n1", "2").Obj())
	env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("web").Obj())
	env.CreatePods(t, lt.Members(ns, "web", 3, lt.CPU("1"))...)
	other := lt.GroupPod(ns, "other-scheduler", "web").Req(lt.CPU("100m")).SchedulerName("default-scheduler").Obj()
	env.CreatePods(t, other)

	testenv.Eventually(t, 60*time.Second, "two of three basic pods bound", func() (bool, string) {
		placed := env.Placement(t, ns)
		return countBound(placed, names(3, "web")) == 2, fmt.Sprint(placed)
	})
	env.WaitCondition(t, "PodGroup", ns, "web", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")

	// A plain pod, in no group, schedules as usual next to them.
	env.CreateNodes(t, lt.MakeNode("n2", "2").Obj())
	env.CreatePods(t, lt.GroupPod(ns, "plain", "").Req(lt.CPU("100m")).Obj())
	testenv.Eventually(t, 60*time.Second, "all basic pods and the plain pod bound", func() (bool, string) {
		placed := env.Placement(t, ns)
		return countBound(placed, append(names(3, "web"), "plain")) == 4, fmt.Sprint(placed)
	})
	env.AssertUnbound(t, ns, "other-scheduler")
}

// Pods created before their PodGroup wait, with an event saying why, and bind when it appears.
func TestPodsBeforeTheirGroup(t *testing.T) { testenv.ForEachAPI(t, testPodsBeforeTheirGroup) }

func testPodsBeforeTheirGroup(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "e")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	env.StartScheduler(t, fastArgs)

	env.CreatePods(t, lt.Members(ns, "late", 3, lt.CPU("1"))...)
	env.WaitEvent(t, ns, "late-0", "PodGroupNotFound", `waiting for PodGroup "late" to be created`)
	env.AssertUnbound(t, ns, names(3, "late")...)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("late").Gang(3).Obj())
	env.WaitBound(t, ns, names(3, "late")...)
}

// A gang that can never complete (a member is held by a scheduling gate nobody lifts) keeps
// its placed members' reservations only until scheduleTimeoutSeconds; then every reservation
// is released and another pod can use that capacity.
// Lockstep's kinds only: the gang waits at Permit for a gated member, which on lockstep's
// kinds holds only itself; in a native group a gated member holds the whole group
// (upstream's semantics), so no member would wait at Permit.
func TestTimeoutReleasesReservations(t *testing.T) {
	testTimeoutReleasesReservations(t, podgroup.APILockstep)
}

func testTimeoutReleasesReservations(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "f")
	env.CreateNodes(t, lt.MakeNode("n1", "3").Obj())
	sched := env.StartScheduler(t, fastArgs)

	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("stuck").Gang(3).ScheduleTimeout(3).Obj())
	env.CreatePods(t,
		lt.Member(ns, "stuck", 0).Req(lt.CPU("1")).Obj(),
		lt.Member(ns, "stuck", 1).Req(lt.CPU("1")).Obj(),
		lt.Member(ns, "stuck", 2).Req(lt.CPU("1")).SchedulingGates([]string{"example.com/never"}).Obj())

	env.WaitCondition(t, "PodGroup", ns, "stuck", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "timed out after 3s")
	env.WaitEvent(t, ns, "stuck", v1alpha1.ReasonUnschedulable, "2 of 3 pods placed")

	// The two placed members held two of the three cpus; after the timeout all are free again.
	env.CreatePods(t, lt.GroupPod(ns, "after", "").Req(lt.CPU("3")).Obj())
	env.WaitBound(t, ns, "after")
	env.AssertUnbound(t, ns, names(3, "stuck")...)
	testenv.Eventually(t, 30*time.Second, "timeout metrics", func() (bool, string) {
		text := sched.Metrics(t)
		for _, want := range []string{
			`lockstep_gang_attempts_total\{result="timeout"\} [1-9]`,
			`lockstep_gang_permit_wait_duration_seconds_count\{result="rejected"\} [1-9]`,
		} {
			if !regexp.MustCompile(`(?m)^` + want).MatchString(text) {
				return false, "missing " + want
			}
		}
		return true, ""
	})
}

// Malformed trees get the condition and an event a person can act on, and a healthy gang
// created at the same time, in the same namespace, still binds. Fixing a tree unblocks it.
func TestMalformedTreesDoNotBlockHealthyGangs(t *testing.T) {
	testenv.ForEachAPI(t, testMalformedTreesDoNotBlockHealthyGangs)
}

func testMalformedTreesDoNotBlockHealthyGangs(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "g")
	env.CreateNodes(t, lt.MakeNode("n1", "16").Obj())
	env.StartScheduler(t, fastArgs)

	// A cycle a → b → a with a PodGroup under it.
	env.CreateComposites(t,
		lt.MakeCompositePodGroup().Namespace(ns).Name("a").Gang(1).Parent("b").Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("b").Gang(1).Parent("a").Obj())
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("cyc").Gang(2).Parent("a").Obj())
	// A missing parent.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("orphan").Gang(2).Parent("nope").Obj())
	// Five levels: d1 ← d2 ← d3 ← d4 ← deep.
	env.CreateComposites(t,
		lt.MakeCompositePodGroup().Namespace(ns).Name("d1").Gang(1).Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("d2").Gang(1).Parent("d1").Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("d3").Gang(1).Parent("d2").Obj(),
		lt.MakeCompositePodGroup().Namespace(ns).Name("d4").Gang(1).Parent("d3").Obj())
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("deep").Gang(2).Parent("d4").Obj())
	// minCount larger than the pods that exist.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("short").Gang(5).Obj())
	// A parent that is a PodGroup.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("pgparent").Gang(2).Parent("short").Obj())
	// The healthy gang.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("healthy").Gang(3).Obj())
	for _, g := range []string{"cyc", "orphan", "deep", "short", "pgparent"} {
		env.CreatePods(t, lt.Members(ns, g, 2, lt.CPU("1"))...)
	}
	env.CreatePods(t, lt.Members(ns, "healthy", 3, lt.CPU("1"))...)

	env.WaitBound(t, ns, names(3, "healthy")...)

	env.WaitCondition(t, "CompositePodGroup", ns, "a", metav1.ConditionFalse, v1alpha1.ReasonInvalid, "cycle: a → b → a")
	env.WaitEvent(t, ns, "a", v1alpha1.ReasonInvalid, "invalid: cycle: a → b → a")
	env.WaitCondition(t, "CompositePodGroup", ns, "b", metav1.ConditionFalse, v1alpha1.ReasonInvalid, "cycle: b → a → b")
	env.WaitCondition(t, "PodGroup", ns, "cyc", metav1.ConditionFalse, v1alpha1.ReasonInvalid, "cycle: a → b → a")
	env.WaitCondition(t, "PodGroup", ns, "orphan", metav1.ConditionFalse, v1alpha1.ReasonInvalid, `parent CompositePodGroup "nope" not found`)
	env.WaitEvent(t, ns, "orphan", v1alpha1.ReasonInvalid, "nope")
	env.WaitCondition(t, "PodGroup", ns, "deep", metav1.ConditionFalse, v1alpha1.ReasonInvalid, "tree too deep: d1 → d2 → d3 → d4 → deep")
	env.WaitCondition(t, "PodGroup", ns, "short", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "waiting for pods: minCount is 5")
	env.WaitEvent(t, ns, "short", v1alpha1.ReasonUnschedulable, "2 of 5 pods exist")
	env.WaitCondition(t, "PodGroup", ns, "pgparent", metav1.ConditionFalse, v1alpha1.ReasonInvalid, `parent "short" is a PodGroup`)
	for _, g := range []string{"cyc", "orphan", "deep", "short", "pgparent"} {
		env.AssertUnbound(t, ns, names(2, g)...)
	}

	// Creating the missing parent fixes the orphan: its gang binds.
	env.CreateComposites(t, lt.MakeCompositePodGroup().Namespace(ns).Name("nope").Obj())
	env.WaitBound(t, ns, names(2, "orphan")...)
	env.WaitCondition(t, "PodGroup", ns, "orphan", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "")
	// Lowering minCount to the pods that exist releases "short".
	env.SetMinCount(t, ns, "short", 2)
	env.WaitBound(t, ns, names(2, "short")...)
}

// The scheduler restarted after part of a gang was bound: the new instance counts the bound
// members and binds the rest.
func TestRestartCountsBoundMembers(t *testing.T) {
	testenv.ForEachAPI(t, testRestartCountsBoundMembers)
}

func testRestartCountsBoundMembers(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "h")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	first := env.StartScheduler(t, fastArgs)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("warmup").Gang(2).Obj())
	env.CreatePods(t, lt.Members(ns, "warmup", 2, lt.CPU("1"))...)
	env.WaitBound(t, ns, names(2, "warmup")...)
	first.Stop()

	// What a scheduler that died mid-gang leaves behind: two members bound, two pending.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("resume").Gang(4).Obj())
	env.CreatePods(t,
		lt.Member(ns, "resume", 0).Req(lt.CPU("1")).Node("n1").Obj(),
		lt.Member(ns, "resume", 1).Req(lt.CPU("1")).Node("n2").Obj(),
		lt.Member(ns, "resume", 2).Req(lt.CPU("1")).Obj(),
		lt.Member(ns, "resume", 3).Req(lt.CPU("1")).Obj())

	env.StartScheduler(t, fastArgs)
	placed := env.WaitBound(t, ns, names(4, "resume")...)
	if placed["resume-0"] != "n1" || placed["resume-1"] != "n2" {
		t.Errorf("bound members moved: %v", placed)
	}
	env.WaitCondition(t, "PodGroup", ns, "resume", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "4 pods placed")
}

// A scheduler started before lockstep's CRDs are installed (a Deployment applied together
// with them can be) waits for them (kube-scheduler waits for the informers of every resource
// its plugins watch), then schedules plain pods and gangs as usual.
func TestSchedulerStartedBeforeTheCRDs(t *testing.T) {
	env := testenv.StartWithoutCRDs(t)
	ns := env.Namespace(t, "early")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	env.StartScheduler(t, fastArgs)
	env.CreatePods(t, lt.GroupPod(ns, "plain", "").Req(lt.CPU("1")).Obj())

	env.InstallCRDs(t)
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("late").Gang(2).Obj())
	env.CreatePods(t, lt.Members(ns, "late", 2, lt.CPU("1"))...)
	env.WaitBound(t, ns, append(names(2, "late"), "plain")...)
}

// What a scheduler that died mid-gang leaves behind, when the rest of the gang no longer
// fits (other pods took the room meanwhile): the new leader releases the gang one backoff
// after its remaining members fail to fit. Its bound member is evicted (DisruptionTarget,
// then deletion, an event) and the condition says so; once room returns, the gang (its
// evicted member recreated, as its Job would) binds whole.
func TestHalfBoundGangIsReleased(t *testing.T) { testenv.ForEachAPI(t, testHalfBoundGangIsReleased) }

func testHalfBoundGangIsReleased(t *testing.T, api podgroup.API) {
	env := testenv.StartFor(t, api)
	ns := env.Namespace(t, "hb")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("stuck").Gang(3).Obj())
	env.CreatePods(t,
		lt.Member(ns, "stuck", 0).Req(lt.CPU("1")).Node("n1").Obj(),
		lt.GroupPod(ns, "filler-1", "").Req(lt.CPU("3")).Node("n1").Obj(),
		lt.GroupPod(ns, "filler-2", "").Req(lt.CPU("4")).Node("n2").Obj(),
		lt.Member(ns, "stuck", 1).Req(lt.CPU("1")).Obj(),
		lt.Member(ns, "stuck", 2).Req(lt.CPU("1")).Obj())
	env.StartScheduler(t, fastArgs)

	ctx := context.Background()
	testenv.Eventually(t, 60*time.Second, "stuck-0 evicted", func() (bool, string) {
		pod, err := env.Client.CoreV1().Pods(ns).Get(ctx, "stuck-0", metav1.GetOptions{})
		if err != nil {
			return apierrors.IsNotFound(err), err.Error()
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.DisruptionTarget && c.Reason == podgroup.ReasonGangReleased && pod.DeletionTimestamp != nil {
				return true, ""
			}
		}
		return false, fmt.Sprintf("deletion %v, conditions %v", pod.DeletionTimestamp, pod.Status.Conditions)
	})
	env.WaitCondition(t, "PodGroup", ns, "stuck", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, "waiting for pods: minCount is 3; released: evicted its bound pods stuck-0 (1 of 3 pods were bound")
	env.WaitEvent(t, ns, "stuck", podgroup.ReasonGangReleased, "gang stuck released: 1 of its 3 pods were bound")
	env.WaitEvent(t, ns, "stuck-0", podgroup.ReasonGangReleased, "gang stuck released")
	if n := env.BoundCount(t, ns, "stuck-1", "stuck-2"); n != 0 {
		t.Fatalf("%d of the released gang's pending members bound", n)
	}

	// The kubelet would finish the deletion; its Job would create the member again.
	env.DeletePods(t, ns, "stuck-0", "filler-1")
	testenv.Eventually(t, 30*time.Second, "stuck-0 gone", func() (bool, string) {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, "stuck-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	env.CreatePods(t, lt.Member(ns, "stuck", 0).Req(lt.CPU("1")).Obj())
	env.WaitBound(t, ns, names(3, "stuck")...)
	env.WaitCondition(t, "PodGroup", ns, "stuck", metav1.ConditionTrue, v1alpha1.ReasonScheduled, "3 pods placed")
}

// A cluster serves the native kinds but lockstep's RBAC was not updated with its binary (no
// access to scheduling.k8s.io PodGroups): lockstep does not wait forever for informers that
// cannot list; it schedules its own kinds.
func TestNativeKindsWithoutRBACDoNotHoldLockstepsGangs(t *testing.T) {
	env := testenv.StartServingNative(t)
	ctx := context.Background()
	role, err := env.Client.RbacV1().ClusterRoles().Get(ctx, "lockstep-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range role.Rules {
		if !slices.Contains(r.Resources, "podgroups") || !slices.Contains(r.APIGroups, "scheduling.k8s.io") {
			rules = append(rules, r)
		}
	}
	role.Rules = rules
	if _, err := env.Client.RbacV1().ClusterRoles().Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t, "norbac")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	env.StartScheduler(t, fastArgs)     // its own process, the gates off, as deployed
	env.GroupAPI = podgroup.APILockstep // the test's groups are lockstep's own
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(2).Obj())
	env.CreatePods(t, lt.Members(ns, "train", 2, lt.CPU("1"))...)
	env.WaitBound(t, ns, names(2, "train")...)
}
