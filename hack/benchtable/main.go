// Command benchtable turns the data items scheduler_perf writes (-data-items-dir) into the
// comparison table of docs/benchmarks.md: per workload shape and mode (plain, native,
// lockstep), SchedulingThroughput average and percentiles, scheduling duration, pods per
// second over the whole measured op, the process's heap, the ratios lockstep / native and
// lockstep / plain (and heap / plain), and, where the run left them, the scheduler's CPU per
// 1000 pods from the workload's CPU profile (cpu.go) and its writes per pod from the
// apiserver's request counts. The waiting workloads, whose pods never schedule, get a table of
// their own: their costs per minute of a window in which nothing fits (waiting.go).
//
//	go run ./hack/benchtable DIR|FILE...
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

// item is one scheduler_perf data item.
type item struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels"`
}

// run is what the table shows of one workload of one mode.
type run struct {
	mode, shape string
	throughput  map[string]float64 // Average, Perc50, Perc90, Perc99
	duration    float64            // seconds
	pods        int
	heapMB      float64
	cpu         *cpuSeconds // with -perf-cpuprofile
	schedHeapMB float64     // with -perf-memprofile; -1 unknown
	writes      float64     // the scheduler's requests to the apiserver; -1 unknown
	victims     float64     // pods deleted or evicted (victims.go); -1 unknown
	window      *waitWindow // a waiting workload's window (waiting.go); nil for the others
	process     bool        // lockstep ran as its own process: CPU and heap are its own (process.go)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtable DIR|FILE...")
		os.Exit(2)
	}
	runs, err := load(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	write(os.Stdout, runs)
}

func load(paths []string) ([]*run, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			matches, _ := filepath.Glob(filepath.Join(p, "*.json"))
			files = append(files, matches...)
		} else {
			files = append(files, p)
		}
	}
	byName := map[string]*run{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			DataItems []item `json:"dataItems"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, it := range doc.DataItems {
			mode, shape, ok := split(it.Labels["Name"])
			if !ok || mode == "Warmup" {
				continue
			}
			key := mode + "/" + shape
			r := byName[key]
			if r == nil {
				r = &run{mode: mode, shape: shape, pods: podsOf(shape)}
				byName[key] = r
				if r.writes, err = readWrites(filepath.Dir(f), mode, shape); err != nil {
					return nil, fmt.Errorf("requests of %s: %w", key, err)
				}
				if r.victims, err = readVictims(filepath.Dir(f), mode, shape); err != nil {
					return nil, fmt.Errorf("victims of %s: %w", key, err)
				}
				if r.window, err = readWindow(filepath.Dir(f), mode, shape); err != nil {
					return nil, fmt.Errorf("window of %s: %w", key, err)
				}
				r.schedHeapMB = -1
				if prof := profileOf(filepath.Dir(f), mode, shape, "-end-mem.prof"); prof != "" {
					if r.schedHeapMB, err = readHeap(prof); err != nil {
						return nil, fmt.Errorf("%s: %w", prof, err)
					}
				}
				if prof := profileOf(filepath.Dir(f), mode, shape, "-cpu.prof"); prof != "" {
					cpu, err := readCPU(prof)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", prof, err)
					}
					r.cpu = &cpu
				}
				proc, err := readProcess(filepath.Dir(f), mode, shape)
				if err != nil {
					return nil, fmt.Errorf("process figures of %s: %w", key, err)
				}
				if proc != nil {
					r.applyProcess(proc)
				}
			}
			switch it.Labels["Metric"] {
			case "SchedulingThroughput":
				r.throughput = it.Data
			case "SchedulingDuration":
				r.duration = it.Data["Duration"]
			case "heap_memory_usage":
				r.heapMB = it.Data["Max"]
			}
		}
	}
	var runs []*run
	for _, r := range byName {
		runs = append(runs, r)
	}
	return runs, nil
}

// split parses "BenchmarkPerfScheduling/<mode>/<shape>/<namespace>".
func split(name string) (mode, shape string, ok bool) {
	parts := strings.Split(name, "/")
	if len(parts) < 3 {
		return "", "", false
	}
	return parts[1], parts[2], true
}

var (
	countRE     = regexp.MustCompile(`(\d+)(Pods|Plain)(_|$)`)
	preemptorRE = regexp.MustCompile(`(\d+)PreemptorGangs?_(\d+)Pods(_|$)`)
)

// podsOf reads the number of pods from a shape name: "5000Nodes_1000Gangs_3000Pods" → 3000,
// "..._2000Pods_2000Plain" → 4000. Upstream's workload_preemption names count pods per gang:
// "100Nodes_10PreemptorGangs_10Pods_Evicting_1000InitPods" → 100 (the preemptors, the pods
// measured).
func podsOf(shape string) int {
	if m := preemptorRE.FindStringSubmatch(shape); m != nil {
		gangs, _ := strconv.Atoi(m[1])
		perGang, _ := strconv.Atoi(m[2])
		return gangs * perGang
	}
	n := 0
	for _, m := range countRE.FindAllStringSubmatch(shape, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// family maps a mode to the comparison it belongs to and its role in it.
func family(mode string) (group, role string) {
	switch {
	case strings.HasPrefix(mode, "Plain"):
		// Plain, PlainGPU...: the baseline of the shapes they run.
		return strings.TrimPrefix(mode, "Plain"), "plain"
	case strings.HasPrefix(mode, "Native"):
		return strings.TrimPrefix(mode, "Native"), "native"
	case strings.HasPrefix(mode, "Lockstep"):
		// LockstepGangNativeAPI: lockstep on the native objects, compared with the Gang
		// family's native and plain modes (process.go); LockstepSlowBindsFixed32: lockstep
		// with its bind window capped at 32, compared with the SlowBinds family's.
		group := strings.TrimSuffix(strings.TrimPrefix(mode, "Lockstep"), "NativeAPI")
		return strings.TrimSuffix(group, "Fixed32"), "lockstep"
	}
	return mode, mode
}

// write prints the table of the workloads that schedule their pods and, after it, that of
// the waiting workloads (waiting.go), whose pods never schedule.
func write(w io.Writer, runs []*run) {
	var scheduling, waiting []*run
	for _, r := range runs {
		if r.window != nil {
			waiting = append(waiting, r)
		} else {
			scheduling = append(scheduling, r)
		}
	}
	if len(scheduling) > 0 {
		writeScheduling(w, scheduling) // sorts them
		if slices.ContainsFunc(scheduling, func(r *run) bool { return preempting(r.mode) && r.victims >= 0 }) {
			fmt.Fprintln(w)
			writeVictims(w, scheduling)
		}
	}
	if len(waiting) > 0 {
		if len(scheduling) > 0 {
			fmt.Fprintln(w)
		}
		writeWaiting(w, waiting)
	}
}

func writeScheduling(w io.Writer, runs []*run) {
	plains := map[string]*run{}
	native := map[string]*run{}
	for _, r := range runs {
		group, role := family(r.mode)
		switch role {
		case "plain":
			plains[group+"/"+r.shape] = r
		case "native":
			native[group+"/"+r.shape] = r
		}
	}
	// plain is the baseline of a family's shape: its own plain mode's (PlainGPU for
	// LockstepGPU), else Plain's (for LockstepGang, NativeTopology...). Families may share
	// shape names (upstream's GangPreemptionBasic and GangPreemptionAffinity do).
	plain := func(group, shape string) *run {
		if p := plains[group+"/"+shape]; p != nil {
			return p
		}
		return plains["/"+shape]
	}
	sort.Slice(runs, func(i, j int) bool {
		gi, _ := family(runs[i].mode)
		gj, _ := family(runs[j].mode)
		if gi != gj {
			if order(gi) != order(gj) {
				return order(gi) < order(gj)
			}
			return gi < gj
		}
		if runs[i].shape != runs[j].shape {
			return runs[i].shape < runs[j].shape
		}
		return runs[i].mode > runs[j].mode // Plain, Native, Lockstep
	})
	fmt.Fprintln(w, "| Shape | Mode | Throughput avg | p50 | p90 | p99 | Duration (s) | Pods/s | Heap (MB) | lockstep / native | lockstep / plain | heap / plain | scheduler heap (MB) | scheduler CPU s / 1000 pods | of which PreFilter, Filter, Score | scheduler share of CPU | scheduler writes / pod |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range runs {
		group, role := family(r.mode)
		if role == "plain" {
			continue // shown with each family below
		}
		if role == "native" || (role == "lockstep" && native[group+"/"+r.shape] == nil) {
			if p := plain(group, r.shape); p != nil {
				fmt.Fprintln(w, row(p, "plain", "", "", ""))
			}
		}
		vsNative, vsPlain, heap := "", "", ""
		if role == "lockstep" {
			vsNative = ratio(r, native[group+"/"+r.shape])
			vsPlain = ratio(r, plain(group, r.shape))
			if !r.process { // the process's heap is in the scheduler heap column
				heap = heapRatio(r, plain(group, r.shape))
			}
		}
		fmt.Fprintln(w, row(r, r.mode, vsNative, vsPlain, heap))
	}
}

func order(group string) int {
	for i, g := range []string{"Gang", "GangNoPlan", "SlowBinds", "Topology", "PreferredRack", "GPU", "AntiAffinity", "Composite", "Mixed",
		"Exclusive", "Preemption", "GangPreemptionPodGroups", "GangPreemptionAffinity", "GangPreemptionRack",
		"Starvation", "StarvationPodGroup"} {
		if g == group {
			return i
		}
	}
	return 99
}

func row(r *run, mode, vsNative, vsPlain, heap string) string {
	t := func(k string) string {
		if r.throughput == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f", r.throughput[k])
	}
	podsPerSecond := "–"
	if r.duration > 0 && r.pods > 0 {
		podsPerSecond = fmt.Sprintf("%.1f", float64(r.pods)/r.duration)
	}
	cpu, filterScore, share := "–", "–", "–"
	if r.cpu != nil && r.pods > 0 {
		perThousand := 1000 / float64(r.pods)
		cpu = fmt.Sprintf("%.2f", r.cpu.scheduler*perThousand)
		if r.cpu.filterScore >= 0 {
			filterScore = fmt.Sprintf("%.2f", r.cpu.filterScore*perThousand)
		}
		if r.process {
			cpu += " (process)"
		} else if r.cpu.total > 0 {
			share = fmt.Sprintf("%.0f%%", 100*r.cpu.scheduler/r.cpu.total)
		}
	}
	schedHeap := "–"
	if r.schedHeapMB >= 0 {
		schedHeap = fmt.Sprintf("%.1f", r.schedHeapMB)
	}
	writes := "–"
	if r.writes >= 0 && r.pods > 0 {
		writes = fmt.Sprintf("%.2f", r.writes/float64(r.pods))
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %.1f | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |",
		r.shape, mode, t("Average"), t("Perc50"), t("Perc90"), t("Perc99"), r.duration, podsPerSecond, r.heapMB, vsNative, vsPlain, heap, schedHeap, cpu, filterScore, share, writes)
}

// heapRatio compares the process's peak heap in use during the measured op.
func heapRatio(r, base *run) string {
	if base == nil || base.heapMB <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r.heapMB/base.heapMB)
}

// ratio compares pods per second over the whole measured op (throughput averages are
// missing for runs shorter than the 1 s sampling period).
func ratio(r, base *run) string {
	if base == nil || r.duration <= 0 || base.duration <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", base.duration/r.duration)
}
