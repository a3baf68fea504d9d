// Package gang holds the end-to-end scenarios of gang and composite-gang scheduling: a real
// kube-apiserver and etcd, lockstep's CRDs and the lockstep scheduler. Every scenario asserts
// where each pod ends up.
package gang

import (
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}
