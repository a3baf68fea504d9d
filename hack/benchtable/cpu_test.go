package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The attribution counts upstream's scheduler and lockstep's packages, and nothing of the
// apiserver or client-go; the node search includes the closures the parallel workers run.
func TestFrameMatching(t *testing.T) {
	tests := []struct {
		fn                    string
		scheduler, nodeSearch bool
	}{
		{"k8s.io/kubernetes/pkg/scheduler.(*Scheduler).ScheduleOne", true, false},
		{"k8s.io/kubernetes/pkg/scheduler.(*Scheduler).findNodesThatPassFilters.func1", true, true},
		{"k8s.io/kubernetes/pkg/scheduler.prioritizeNodes", true, true},
		{"k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunScorePlugins.func2", true, true},
		{"k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunPermitPlugins", true, false},
		{"github.com/lockstep-sched/lockstep/pkg/podgroup.(*Model).update", true, false},
		{"k8s.io/kubernetes/pkg/schedulerx.Foo", false, false},
		{"k8s.io/apiserver/pkg/endpoints/handlers.CreateResource", false, false},
		{"k8s.io/client-go/tools/cache.(*Reflector).ListAndWatch", false, false},
		{"github.com/lockstep-sched/lockstep/test/integration/testenv.Start", false, false},
	}
	for _, tc := range tests {
		if got := schedulerCode.MatchString(tc.fn); got != tc.scheduler {
			t.Errorf("schedulerCode(%s) = %v, want %v", tc.fn, got, tc.scheduler)
		}
		if got := filterScore.MatchString(tc.fn); got != tc.nodeSearch {
			t.Errorf("filterScore(%s) = %v, want %v", tc.fn, got, tc.nodeSearch)
		}
	}
}

// The scheduler's writes are its binds, pod status, deletions, events and group status, not
// the harness's creations or anyone's reads.
func TestReadWrites(t *testing.T) {
	dir := t.TempDir()
	counts := `{"POST pods/binding": 3000, "POST events": 4000, "PUT podgroups/status": 1000,
		"POST pods": 3000, "POST nodes": 5000, "POST podgroups": 1000, "GET pods": 7, "LIST nodes": 1}`
	if err := os.WriteFile(filepath.Join(dir, "LockstepGang_5000Nodes_1000Gangs_3000Pods-requests.json"), []byte(counts), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readWrites(dir, "LockstepGang", "5000Nodes_1000Gangs_3000Pods")
	if err != nil || got != 8000 {
		t.Errorf("readWrites = %v, %v; want 8000", got, err)
	}
	if got, err := readWrites(dir, "Plain", "5000Nodes_1000Gangs_3000Pods"); err != nil || got != -1 {
		t.Errorf("readWrites of a missing file = %v, %v; want -1", got, err)
	}
}

// A shape's profile is found; a longer shape with the same prefix is not taken for it.
func TestProfileOf(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{
		"LockstepGang_5000Nodes_3Gangs_3000Pods_1000PerGroup_Rack_lockstep_2026-11-24T09:00:00Z-cpu.prof",
		"LockstepGang_5000Nodes_3Gangs_3000Pods_1000PerGroup_lockstep_2026-11-24T09:00:00Z-cpu.prof",
	} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := filepath.Base(profileOf(dir, "LockstepGang", "5000Nodes_3Gangs_3000Pods_1000PerGroup", "-cpu.prof"))
	if want := "LockstepGang_5000Nodes_3Gangs_3000Pods_1000PerGroup_lockstep_2026-11-24T09:00:00Z-cpu.prof"; got != want {
		t.Errorf("profileOf = %s, want %s", got, want)
	}
}
