package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A shape names its measured pods: in total, or per gang after upstream's preemptor gangs.
func TestPodsOf(t *testing.T) {
	tests := []struct {
		shape string
		pods  int
	}{
		{"5000Nodes_1000Gangs_3000Pods", 3000},
		{"100Nodes_10Gangs_40Pods_40Plain", 80},
		{"2Nodes_1PreemptorGang_2Pods_Evicting_10InitPods", 2},
		{"100Nodes_10PreemptorGangs_10Pods_Evicting_50LowPriorityGangs", 100},
		{"5000Nodes_100PreemptorGangs_16Pods_Evicting_625LowPriorityGangs_5000InitPods", 1600},
		{"10Nodes_100Cloggers", 0},
	}
	for _, tc := range tests {
		if got := podsOf(tc.shape); got != tc.pods {
			t.Errorf("podsOf(%s) = %d, want %d", tc.shape, got, tc.pods)
		}
	}
}

// Two families with the same shape names each get their own plain baseline, and their rows
// stay together; a family without a plain mode of its own compares with Plain's.
func TestPlainPerFamily(t *testing.T) {
	shape := "2Nodes_1PreemptorGang_2Pods_Evicting_10InitPods"
	mk := func(mode string, duration float64) *run {
		return &run{mode: mode, shape: shape, pods: 2, duration: duration, schedHeapMB: -1, writes: -1}
	}
	runs := []*run{
		mk("PlainPreemption", 1), mk("LockstepPreemption", 2), mk("NativePreemption", 1),
		mk("PlainGangPreemptionAffinity", 4), mk("LockstepGangPreemptionAffinity", 2), mk("NativeGangPreemptionAffinity", 1),
		{mode: "Plain", shape: "10Nodes_3Gangs_9Pods", pods: 9, duration: 3, schedHeapMB: -1, writes: -1},
		{mode: "LockstepGang", shape: "10Nodes_3Gangs_9Pods", pods: 9, duration: 1, schedHeapMB: -1, writes: -1},
	}
	var out bytes.Buffer
	writeScheduling(&out, runs)
	var got []string
	for _, line := range strings.Split(out.String(), "\n")[2:] {
		if cells := strings.Split(line, "|"); len(cells) > 11 {
			got = append(got, strings.TrimSpace(cells[2])+" "+strings.TrimSpace(cells[11]))
		}
	}
	want := []string{
		"plain ", "LockstepGang 3.00×",
		"plain ", "NativePreemption ", "LockstepPreemption 0.50×",
		"plain ", "NativeGangPreemptionAffinity ", "LockstepGangPreemptionAffinity 2.00×",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows (mode, lockstep / plain):\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The victims table lists the preemption workloads only, with the pods each deleted.
func TestVictims(t *testing.T) {
	runs := []*run{
		{mode: "NativePreemption", shape: "s", pods: 10, duration: 2, victims: 12},
		{mode: "LockstepPreemption", shape: "s", pods: 10, duration: 1, victims: 10},
		{mode: "LockstepWaitingGangs", shape: "w", pods: 10, duration: 1, victims: 60},
		{mode: "PlainPreemption", shape: "u", pods: 10, duration: 1, victims: -1},
	}
	var out bytes.Buffer
	writeVictims(&out, runs)
	want := "| s | NativePreemption | 12 | 5.0 |\n| s | LockstepPreemption | 10 | 10.0 |\n"
	if got := out.String(); !strings.HasSuffix(got, want) || strings.Contains(got, "Waiting") || strings.Contains(got, "| u |") {
		t.Errorf("victims table:\n%s\nwant rows:\n%s", got, want)
	}
}

// A mode that runs lockstep as its own process (LockstepGangNativeAPI) is compared with its
// family's native and plain modes, and shows the process's CPU and heap, marked as such (the
// benchmark process's heap, the apiserver's, is not compared with plain's).
func TestProcessMode(t *testing.T) {
	shape := "5000Nodes_1000Gangs_3000Pods"
	mk := func(mode string, duration float64) *run {
		return &run{mode: mode, shape: shape, pods: 3000, duration: duration, schedHeapMB: -1, writes: -1}
	}
	proc := mk("LockstepGangNativeAPI", 10)
	proc.applyProcess(&processFigures{Seconds: 10, CPUSeconds: 3, HeapMB: 42})
	runs := []*run{mk("Plain", 20), mk("NativeGang", 40), mk("LockstepGang", 10), proc}
	var out bytes.Buffer
	writeScheduling(&out, runs)
	var got [][]string
	for _, line := range strings.Split(out.String(), "\n")[2:] {
		if cells := strings.Split(line, "|"); len(cells) > 17 {
			var row []string
			for _, c := range []int{2, 10, 11, 12, 13, 14, 15, 16} {
				row = append(row, strings.TrimSpace(cells[c]))
			}
			got = append(got, row)
		}
	}
	want := [][]string{
		{"plain", "", "", "", "–", "–", "–", "–"},
		{"NativeGang", "", "", "", "–", "–", "–", "–"},
		{"LockstepGangNativeAPI", "4.00×", "2.00×", "", "42.0", "1.00 (process)", "–", "–"},
		{"LockstepGang", "4.00×", "2.00×", "–", "–", "–", "–", "–"},
	}
	if !cmp.Equal(got, want) {
		t.Errorf("rows (mode, vs native, vs plain, heap vs plain, scheduler heap, CPU / 1000 pods, of which node search, share): %s", cmp.Diff(want, got))
	}
}

// The SlowBinds family pairs its own plain and native modes with both lockstep modes, the
// shipped window's and the one capped at 32 (LockstepSlowBindsFixed32).
func TestSlowBindsFamily(t *testing.T) {
	shape := "5000Nodes_1000Gangs_3000Pods"
	mk := func(mode string, duration float64) *run {
		return &run{mode: mode, shape: shape, pods: 3000, duration: duration, schedHeapMB: -1, writes: -1}
	}
	runs := []*run{mk("Plain", 100), mk("PlainSlowBinds", 20), mk("NativeSlowBinds", 40),
		mk("LockstepSlowBindsFixed32", 25), mk("LockstepSlowBinds", 10), mk("LockstepGang", 1)}
	var out bytes.Buffer
	writeScheduling(&out, runs)
	var got []string
	for _, line := range strings.Split(out.String(), "\n")[2:] {
		if cells := strings.Split(line, "|"); len(cells) > 11 {
			got = append(got, strings.Join([]string{strings.TrimSpace(cells[2]), strings.TrimSpace(cells[10]), strings.TrimSpace(cells[11])}, " "))
		}
	}
	want := []string{
		"plain  ", "LockstepGang – 100.00×",
		"plain  ", "NativeSlowBinds  ", "LockstepSlowBindsFixed32 1.60× 0.80×", "LockstepSlowBinds 4.00× 2.00×",
	}
	if !cmp.Equal(got, want) {
		t.Errorf("rows (mode, vs native, vs plain): %s", cmp.Diff(want, got))
	}
}
