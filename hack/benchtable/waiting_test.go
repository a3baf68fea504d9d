package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Shapes name their nodes and gangs; a shape without them has none.
func TestShapeCounts(t *testing.T) {
	tests := []struct {
		shape        string
		nodes, gangs int
	}{
		{"5000Nodes_10000Gangs_80000Pods", 5000, 10000},
		{"15000Nodes_100Gangs_800Pods", 15000, 100},
		{"10Nodes_100Cloggers", 10, 0},
		{"5000Nodes_3Gangs_3000Pods_1000PerGroup", 5000, 3},
	}
	for _, tc := range tests {
		if got := nodesOf(tc.shape); got != tc.nodes {
			t.Errorf("nodesOf(%s) = %d, want %d", tc.shape, got, tc.nodes)
		}
		if got := gangsOf(tc.shape); got != tc.gangs {
			t.Errorf("gangsOf(%s) = %d, want %d", tc.shape, got, tc.gangs)
		}
	}
}

// A window's figures are per minute of the window (the CPU profile's own duration for CPU);
// the markers are no write, the churn's deletions none of the scheduler's; plain pods have no
// gang attempts; the churn pods' scheduled attempts are not failed attempts of the waiting
// pods; the tries before the window are per gang for gangs, per pod for plain pods.
func TestWaitingFigures(t *testing.T) {
	window := &waitWindow{
		Seconds: 30,
		Requests: map[string]float64{
			"POST pods": 30, "DELETE pods": 30, "POST pods/binding": 30, // the churn
			"POST events": 40, "PATCH events": 5, "PUT podgroups/status": 10, "PATCH pods/status": 4,
			"POST configmaps": 1, // the stop marker
			"GET pods":        100, "LIST nodes": 3, "WATCH configmaps": 1,
		},
		Counters: map[string]map[string]float64{
			"lockstep_gang_attempts_total":      {"unschedulable": 500},
			"scheduler_schedule_attempts_total": {"scheduled": 30, "unschedulable": 700, "error": 100},
			"lockstep_reservations_total":       {"started": 2, "released": 1},
		},
		AtStart: map[string]map[string]float64{
			"lockstep_gang_attempts_total":      {"unschedulable": 150, "scheduled": 0},
			"scheduler_schedule_attempts_total": {"scheduled": 800, "unschedulable": 1600},
			"lockstep_reservations_total":       {"started": 1},
		},
	}
	tests := []struct {
		name string
		r    *run
		want waitingFigures
	}{{
		name: "lockstep, with a CPU profile of 60 s",
		r: &run{mode: "LockstepWaitingGangs", shape: "5000Nodes_100Gangs_800Pods", pods: 800, window: window,
			cpu: &cpuSeconds{scheduler: 3, total: 12, seconds: 60}},
		want: waitingFigures{cpuPerMinute: 3, cpuShare: 0.25, writes: 2 * 149, schedulerWrites: 2 * 89,
			podStatusWrites: 8, groupStatusWrites: 20, events: 90, gangAttempts: 10, podAttempts: 2, triedBefore: 1.5},
	}, {
		name: "plain, without a CPU profile",
		r:    &run{mode: "PlainWaiting", shape: "5000Nodes_100Gangs_800Pods", pods: 800, window: window},
		want: waitingFigures{cpuPerMinute: -1, cpuShare: -1, writes: 2 * 149, schedulerWrites: 2 * 89,
			podStatusWrites: 8, groupStatusWrites: 20, events: 90, gangAttempts: -1, podAttempts: 2, triedBefore: 2},
	}}
	for _, tc := range tests {
		got := figures(tc.r)
		for _, c := range []struct {
			what      string
			got, want float64
		}{
			{"cpuPerMinute", got.cpuPerMinute, tc.want.cpuPerMinute},
			{"cpuShare", got.cpuShare, tc.want.cpuShare},
			{"writes", got.writes, tc.want.writes},
			{"schedulerWrites", got.schedulerWrites, tc.want.schedulerWrites},
			{"podStatusWrites", got.podStatusWrites, tc.want.podStatusWrites},
			{"groupStatusWrites", got.groupStatusWrites, tc.want.groupStatusWrites},
			{"events", got.events, tc.want.events},
			{"gangAttempts", got.gangAttempts, tc.want.gangAttempts},
			{"podAttempts", got.podAttempts, tc.want.podAttempts},
			{"triedBefore", got.triedBefore, tc.want.triedBefore},
		} {
			if math.Abs(c.got-c.want) > 1e-9 {
				t.Errorf("%s: %s = %v, want %v", tc.name, c.what, c.got, c.want)
			}
		}
		// Reservations started, before the window and in it: counts, not rates.
		if got.reservations != "1 / 2" {
			t.Errorf("%s: reservations = %q, want %q", tc.name, got.reservations, "1 / 2")
		}
	}
}

// A workload with a window file is a waiting one and gets the waiting table; the others the
// scheduling table; a missing window file is no error.
func TestWaitingTable(t *testing.T) {
	dir := t.TempDir()
	items := `{"dataItems": [
		{"data": {"Duration": 60.2}, "unit": "s", "labels": {"Metric": "SchedulingDuration", "Name": "BenchmarkPerfScheduling/LockstepWaitingGangs/10Nodes_10Gangs_80Pods/waiting"}},
		{"data": {"Max": 300}, "unit": "MB", "labels": {"Metric": "heap_memory_usage", "Name": "BenchmarkPerfScheduling/LockstepWaitingGangs/10Nodes_10Gangs_80Pods/waiting"}},
		{"data": {"Duration": 2.0}, "unit": "s", "labels": {"Metric": "SchedulingDuration", "Name": "BenchmarkPerfScheduling/LockstepGang/10Nodes_3Gangs_9Pods/ns-0"}}
	]}`
	files := map[string]string{
		"BenchmarkPerfScheduling_benchmark_lockstep.json":         items,
		"LockstepWaitingGangs_10Nodes_10Gangs_80Pods-window.json": `{"seconds": 60, "requests": {"POST events": 120}, "counters": {"lockstep_gang_attempts_total": {"unschedulable": 20}}, "atStart": {"lockstep_gang_attempts_total": {"unschedulable": 10}}}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	write(&out, runs)
	tables := strings.Split(strings.TrimSpace(out.String()), "\n\n")
	if len(tables) != 2 {
		t.Fatalf("want 2 tables, got:\n%s", out.String())
	}
	if !strings.Contains(tables[0], "| 10Nodes_3Gangs_9Pods | LockstepGang |") || strings.Contains(tables[0], "Waiting") {
		t.Errorf("scheduling table:\n%s", tables[0])
	}
	if want := "| 10Nodes_10Gangs_80Pods | LockstepWaitingGangs | 60.0 | 1.00 | – | – | – | 120 | 120 | 0 | 0 | 120 | 2.00 | 0.00 | – | 300 | – |"; !strings.Contains(tables[1], want) {
		t.Errorf("waiting table lacks %q:\n%s", want, tables[1])
	}
}
