// Package failover runs the lockstep-scheduler binary as a Deployment's replicas do: two
// processes with leader election against a real kube-apiserver, killed with SIGKILL mid-gang,
// their lease taken away. Only the leader schedules, writes status and events and runs the
// Job controller; a replica that loses its lease exits; a new leader rebuilds from the
// cluster and finishes what the old one started, whole.
package failover

import (
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}
