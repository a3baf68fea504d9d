// Package api checks lockstep's CRDs against a real kube-apiserver: schema and CEL validation,
// immutability, the status subresource and the printer columns.
package api

import (
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}
