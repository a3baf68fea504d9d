// Package preemption holds the end-to-end scenarios of gang preemption: a real kube-apiserver
// and etcd, the lockstep scheduler with the manifests' configuration, PriorityClasses, and a
// stand-in for the kubelets that lets evicted pods go.
package preemption

import (
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}
