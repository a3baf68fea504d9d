package failover

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// A stuck gang can be understood from the scheduler's log at -v=4 alone: every decision names
// the pod, its group and root, and says why.
func TestStuckGangsAreDiagnosableFromTheLog(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "why")
	env.CreateNodes(t, testenv.Node("n1", "4", nil))
	p := env.StartProcess(t, "scheduler", testenv.ProcessOptions{Args: args, Verbosity: 4})

	// Short of pods.
	env.CreatePodGroups(t, testenv.Gang(ns, "short", 3, ""))
	env.CreatePods(t, testenv.Pod(ns, "short-0", "short", "1"))
	// Too big for the cluster.
	env.CreatePodGroups(t, testenv.Gang(ns, "big", 2, ""))
	env.CreatePods(t, testenv.GangPods(ns, "big", 2, "100")...)
	// Placed, waiting for a member held by a gate.
	pg := testenv.Gang(ns, "wait", 2, "")
	pg.Spec.ScheduleTimeoutSeconds = ptr.To[int32](300)
	env.CreatePodGroups(t, pg)
	env.CreatePods(t, testenv.Pod(ns, "wait-0", "wait", "1"), testenv.Gated(testenv.Pod(ns, "wait-1", "wait", "1")))
	// A missing parent.
	env.CreatePodGroups(t, testenv.Gang(ns, "orphan", 1, "nope"))
	env.CreatePods(t, testenv.Pod(ns, "orphan-0", "orphan", "1"))

	wants := [][]string{
		{`"Member held"`, `pod="why/short-0"`, `group="PodGroup why/short"`, `WaitingForPods`, `1 of 3 pods exist`},
		{`"Gang attempt failed"`, `root="PodGroup why/big"`, `cannot fit`},
		{`"Member waits for its gang"`, `pod="why/wait-0"`, `root="PodGroup why/wait"`, `1 of 2 pods placed`},
		{`"Member held"`, `pod="why/orphan-0"`, `Invalid`, `parent CompositePodGroup \"nope\" not found`},
		{`"Group is invalid"`, `group="PodGroup why/orphan"`},
	}
	testenv.Eventually(t, 60*time.Second, "every stuck gang explained in the -v=4 log", func() (bool, string) {
		log := p.Log()
		for _, want := range wants {
			if !anyLine(log, want) {
				return false, fmt.Sprintf("no line with %q", want)
			}
		}
		return true, ""
	})
	// The success of a gang is one line at -v=2.
	env.Ungate(t, ns, "wait-1")
	env.WaitBound(t, ns, "wait-0", "wait-1")
	testenv.Eventually(t, 30*time.Second, "the gang's outcome logged", func() (bool, string) {
		return anyLine(p.Log(), []string{`"Gang scheduled"`, `root="PodGroup why/wait"`}), "no line"
	})
}

// anyLine reports whether some line of log contains every part.
func anyLine(log string, parts []string) bool {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}
