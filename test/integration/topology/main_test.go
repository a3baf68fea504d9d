// Package topology holds the end-to-end scenarios of topology placement: labeled nodes, a
// real kube-apiserver and etcd, and the lockstep scheduler. Every scenario asserts the domain
// of every bound pod.
package topology

import (
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}
