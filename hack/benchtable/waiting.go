package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// waitWindow is what a waiting workload (LockstepWaitingGangs, NativeWaitingGangs,
// PlainWaiting) measured over the window in which nothing could fit:
// <mode>_<shape>-window.json, written by test/integration/scheduler_perf/window_test.go. Its
// counts are differences between the window's edges, not totals of the workload: the
// workload's set-up (nodes, fillers, gangs created, first attempts) is not in them.
type waitWindow struct {
	Seconds  float64                       `json:"seconds"`
	Requests map[string]float64            `json:"requests"` // apiserver_request_total by "VERB resource[/subresource]"
	Counters map[string]map[string]float64 `json:"counters"` // by their label (result, reason, event)
	// AtStart: the counters' totals since the workload started, when the window starts.
	AtStart map[string]map[string]float64 `json:"atStart"`
}

// readWindow reads the window file of mode/shape in dir, nil if there is none (a workload
// that is not a waiting one).
func readWindow(dir, mode, shape string) (*waitWindow, error) {
	data, err := os.ReadFile(filepath.Join(dir, mode+"_"+shape+"-window.json"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var w waitWindow
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// writeVerbs are the apiserver's verbs that change something.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true, "APPLY": true}

// writes counts every write the apiserver served in the window, the harness's churn (a pod
// created and one deleted a second) included, but not the window's own markers (configmaps).
func (w *waitWindow) writes() float64 {
	n := 0.0
	for k, v := range w.Requests {
		verb, resource, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && resource != "configmaps" {
			n += v
		}
	}
	return n
}

// requests sums the window's requests of the given "VERB resource" keys.
func (w *waitWindow) requests(keys ...string) float64 {
	n := 0.0
	for _, k := range keys {
		n += w.Requests[k]
	}
	return n
}

// counter sums a counter of the window over the given values of its label, or over all of
// them if none is given.
func (w *waitWindow) counter(name string, values ...string) float64 {
	return sumOf(w.Counters[name], values)
}

// counterAtStart is counter's total before the window.
func (w *waitWindow) counterAtStart(name string, values ...string) float64 {
	return sumOf(w.AtStart[name], values)
}

func sumOf(by map[string]float64, values []string) float64 {
	n := 0.0
	for v, c := range by {
		if len(values) == 0 || slices.Contains(values, v) {
			n += c
		}
	}
	return n
}

var gangsRE = regexp.MustCompile(`(\d+)Gangs(_|$)`)

// gangsOf reads the number of gangs from a shape name: "5000Nodes_1000Gangs_8000Pods" → 1000.
func gangsOf(shape string) int {
	m := gangsRE.FindStringSubmatch(shape)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var nodesRE = regexp.MustCompile(`^(\d+)Nodes(_|$)`)

func nodesOf(shape string) int {
	m := nodesRE.FindStringSubmatch(shape)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitingFigures are a waiting workload's costs per minute of its window: what the issue
// asks to stay at most linear in the waiting gangs with a small constant, and flat in nodes.
type waitingFigures struct {
	cpuPerMinute      float64 // the scheduler's CPU seconds (cpu.go's attribution), -1 without a CPU profile
	cpuShare          float64 // of the process's CPU, -1 without a CPU profile
	writes            float64 // every write the apiserver served
	schedulerWrites   float64 // the scheduler's (schedulerWrites but pods deleted, the churn's here): churn pods' binds and events included
	podStatusWrites   float64
	groupStatusWrites float64
	events            float64
	gangAttempts      float64 // per gang (lockstep's or the native gang attempts), -1 without gangs
	podAttempts       float64 // failed pod attempts (unschedulable, error) per waiting pod
	// triedBefore: the attempts before the window, per gang (gang attempts) or per waiting pod
	// (plain): below 1, some were not tried when the window started. Not per minute.
	triedBefore float64
	// reservations: lockstep's reservations started before the window and in it (not per
	// minute), "–" where none was ever counted.
	reservations string
}

// reservationsTotal counts lockstep's reservations by event (started, bound, timeout...).
const reservationsTotal = "lockstep_reservations_total"

func figures(r *run) waitingFigures {
	w := r.window
	minutes := w.Seconds / 60
	perMinute := func(n float64) float64 {
		if minutes <= 0 {
			return 0
		}
		return n / minutes
	}
	f := waitingFigures{
		cpuPerMinute:      -1,
		cpuShare:          -1,
		writes:            perMinute(w.writes()),
		schedulerWrites:   perMinute(w.requests(schedulerWrites...) - w.requests("DELETE pods")),
		podStatusWrites:   perMinute(w.requests("PATCH pods/status", "PUT pods/status")),
		groupStatusWrites: perMinute(w.requests("PUT podgroups/status", "PATCH podgroups/status", "PUT compositepodgroups/status", "PATCH compositepodgroups/status")),
		events:            perMinute(w.requests("POST events", "PATCH events", "PUT events")),
		gangAttempts:      -1,
		reservations:      "–",
	}
	if w.Counters[reservationsTotal] != nil || w.AtStart[reservationsTotal] != nil {
		f.reservations = fmt.Sprintf("%.0f / %.0f", w.counterAtStart(reservationsTotal, "started"), w.counter(reservationsTotal, "started"))
	}
	if r.cpu != nil {
		// The CPU profile covers startCollectingMetrics to stopCollectingMetrics: its own
		// duration, not the markers', divides its seconds.
		cpuMinutes := r.cpu.seconds / 60
		if cpuMinutes <= 0 {
			cpuMinutes = minutes
		}
		if cpuMinutes > 0 {
			f.cpuPerMinute = r.cpu.scheduler / cpuMinutes
		}
		if r.cpu.total > 0 {
			f.cpuShare = r.cpu.scheduler / r.cpu.total
		}
	}
	if r.pods > 0 {
		f.podAttempts = perMinute(w.counter("scheduler_schedule_attempts_total", "unschedulable", "error")) / float64(r.pods)
		f.triedBefore = w.counterAtStart("scheduler_schedule_attempts_total", "unschedulable", "error") / float64(r.pods)
	}
	if _, role := family(r.mode); role != "plain" {
		if gangs := gangsOf(r.shape); gangs > 0 {
			gangAttempts := []string{"lockstep_gang_attempts_total", "scheduler_podgroup_schedule_attempts_total"}
			f.gangAttempts = perMinute(w.counter(gangAttempts[0])+w.counter(gangAttempts[1])) / float64(gangs)
			f.triedBefore = (w.counterAtStart(gangAttempts[0], "unschedulable") + w.counterAtStart(gangAttempts[1], "unschedulable")) / float64(gangs)
		}
	}
	return f
}

// writeWaiting prints the waiting workloads: per shape (nodes, then gangs), plain, native
// and lockstep.
func writeWaiting(out io.Writer, runs []*run) {
	sort.Slice(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if nodesOf(a.shape) != nodesOf(b.shape) {
			return nodesOf(a.shape) < nodesOf(b.shape)
		}
		if gangsOf(a.shape) != gangsOf(b.shape) {
			return gangsOf(a.shape) < gangsOf(b.shape)
		}
		if a.shape != b.shape {
			return a.shape < b.shape
		}
		return a.mode > b.mode // Plain, Native, Lockstep
	})
	fmt.Fprintln(out, "| Shape | Mode | Window (s) | tried before (per gang or pod) | scheduler CPU s / min | per 1000 waiting pods | scheduler share of CPU | apiserver writes / min | scheduler writes / min | pod status writes / min | group status writes / min | events / min | gang attempts / gang / min | failed pod attempts / pod / min | reservations started before / in the window | Heap (MB) | scheduler heap (MB) |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		f := figures(r)
		cpu, perPods, share := "–", "–", "–"
		if f.cpuPerMinute >= 0 {
			cpu = fmt.Sprintf("%.2f", f.cpuPerMinute)
			if r.pods > 0 {
				perPods = fmt.Sprintf("%.3f", f.cpuPerMinute*1000/float64(r.pods))
			}
		}
		if f.cpuShare >= 0 {
			share = fmt.Sprintf("%.0f%%", 100*f.cpuShare)
		}
		gang := "–"
		if f.gangAttempts >= 0 {
			gang = fmt.Sprintf("%.2f", f.gangAttempts)
		}
		schedHeap := "–"
		if r.schedHeapMB >= 0 {
			schedHeap = fmt.Sprintf("%.1f", r.schedHeapMB)
		}
		fmt.Fprintf(out, "| %s | %s | %.1f | %.2f | %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.2f | %s | %.0f | %s |\n",
			r.shape, r.mode, r.window.Seconds, f.triedBefore, cpu, perPods, share, f.writes, f.schedulerWrites, f.podStatusWrites,
			f.groupStatusWrites, f.events, gang, f.podAttempts, f.reservations, r.heapMB, schedHeap)
	}
}
