// Package jobs holds the end-to-end scenarios of lockstep's Job controller: a real
// kube-apiserver and etcd, the upstream Job controller and garbage collector in-process,
// lockstep's Job controller and the lockstep scheduler.
package jobs

import (
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}
