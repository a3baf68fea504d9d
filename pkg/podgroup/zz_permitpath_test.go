package podgroup

import (
	"os"
	"runtime/coverage"
	"testing"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"k8s.io/klog/v2"
)

//go:noinline
func permitPathMark(s string) string { return s }

func TestPermitPath(t *testing.T) {
	m, _, _ := testModel(t)
	m.Lead()
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(3).Obj())
	pods := addPods(m, "a", 3)
	for _, p := range pods[:2] {
		reservePermit(m, p)
	}
	a := assumed(pods[2], "n1")
	m.Permits().Reserve(klog.Background(), a, "n1")
	if os.Getenv("COVER_DIR") != "" {
		if err := coverage.ClearCounters(); err != nil {
			t.Fatal(err)
		}
	}
	permitPathMark("start")
	d := m.Permits().Permit(klog.Background(), a, testPolicy)
	permitPathMark("end")
	if dir := os.Getenv("COVER_DIR"); dir != "" {
		if err := coverage.WriteCountersDir(dir); err != nil {
			t.Fatal(err)
		}
	}
	if !d.Allow {
		t.Fatal(d)
	}
}
