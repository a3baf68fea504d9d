package failover

import (
	"fmt"
	"strings"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// A stuck gang can be understood from the scheduler's log at -v=4 alone: every decision names
// the pod, its group and root, and says why.
func TestStuckGangsAreDiagnosableFromTheLog(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "why")
	env.CreateNodes(t, lt.MakeNode("n1", "4").Obj())
	p := env.StartProcess(t, "scheduler", testenv.ProcessOptions{Args: args, Verbosity: 4})

	// Short of pods.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("short").Gang(3).Obj())
	env.CreatePods(t, lt.Member(ns, "short", 0).Req(lt.CPU("1")).Obj())
	// Too big for the cluster.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("big").Gang(2).Obj())
	env.CreatePods(t, lt.Members(ns, "big", 2, lt.CPU("100"))...)
	// Placed, waiting for a member held by a gate.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("wait").Gang(2).ScheduleTimeout(300).Obj())
	env.CreatePods(t, lt.Member(ns, "wait", 0).Req(lt.CPU("1")).Obj(), testenv.Gated(lt.Member(ns, "wait", 1).Req(lt.CPU("1")).Obj()))
	// A missing parent.
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("orphan").Gang(1).Parent("nope").Obj())
	env.CreatePods(t, lt.Member(ns, "orphan", 0).Req(lt.CPU("1")).Obj())

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
