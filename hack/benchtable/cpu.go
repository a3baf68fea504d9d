package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/pprof/profile"
)

// schedulerCode matches the frames of the scheduler's own code in a profile of the
// benchmark's process, which also runs the kube-apiserver, its etcd client and the
// workload's pod creation: upstream's scheduler (queue, cache, framework, plugins, event
// handlers, binding) and lockstep's packages. Decoding of watch events (client-go, shared
// with the harness's informers) and the apiserver's work on the scheduler's requests are not
// counted.
var schedulerCode = regexp.MustCompile(`^(k8s\.io/kubernetes/pkg/scheduler|github\.com/lockstep-sched/lockstep/pkg)[./]`)

// filterScore matches the scheduler's search for a pod's node: PreFilter, Filter over the
// nodes and Score (findNodesThatFitPod, prioritizeNodes and the closures their parallel
// workers run): the part of a cycle that grows with the nodes. lockstep's planning runs in
// PreFilter and counts here too.
var filterScore = regexp.MustCompile(`^k8s\.io/kubernetes/pkg/scheduler\.(\(\*Scheduler\)\.(findNodesThatFitPod|findNodesThatPassFilters)|prioritizeNodes)($|\.)` +
	`|^k8s\.io/kubernetes/pkg/scheduler/framework/runtime\.\(\*frameworkImpl\)\.(RunPreFilterPlugins|RunFilterPlugins|RunFilterPluginsWithNominatedPods|RunPreScorePlugins|RunScorePlugins)($|\.)`)

// cpuSeconds is a run's CPU time in the scheduler's code and in its node search, from
// the CPU profile scheduler_perf writes for the measured op with -perf-cpuprofile, and the
// wall time the profile covers (the op: startCollectingMetrics to stopCollectingMetrics).
type cpuSeconds struct {
	scheduler, filterScore, total float64
	seconds                       float64
}

// profileOf finds the profile of mode/shape in dir with suffix ("-cpu.prof",
// "-end-mem.prof": <mode>_<shape>_<topic>[_<run id>]<suffix>); "" if there is none.
func profileOf(dir, mode, shape, suffix string) string {
	matches, _ := filepath.Glob(filepath.Join(dir, mode+"_"+shape+"_*"+suffix))
	for _, m := range matches {
		// 5000Nodes_3Gangs_3000Pods must not match 5000Nodes_3Gangs_3000Pods_1000PerGroup's.
		rest := strings.TrimPrefix(filepath.Base(m), mode+"_"+shape+"_")
		if !strings.HasPrefix(rest, "lockstep") {
			continue
		}
		return m
	}
	return ""
}

// readCPU attributes the samples of a CPU profile: a sample counts for the scheduler if any
// frame of its stack is the scheduler's code.
func readCPU(path string) (cpuSeconds, error) {
	p, err := readProfile(path)
	if err != nil {
		return cpuSeconds{}, err
	}
	cpu := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			cpu = i
		}
	}
	out := cpuSeconds{seconds: float64(p.DurationNanos) / 1e9}
	if cpu < 0 {
		return out, nil
	}
	for _, s := range p.Sample {
		ns := float64(s.Value[cpu]) / 1e9
		out.total += ns
		if hasFrame(s, schedulerCode) {
			out.scheduler += ns
		}
		if hasFrame(s, filterScore) {
			out.filterScore += ns
		}
	}
	return out, nil
}

// readHeap returns the heap in use, in MB, that the scheduler's code allocated, from the heap
// profile scheduler_perf writes at the end of the measured op with -perf-memprofile (after a
// GC: live objects). The scheduler's informer caches are allocated by client-go and not
// counted; the rest of the process's heap is the apiserver's.
func readHeap(path string) (float64, error) {
	p, err := readProfile(path)
	if err != nil {
		return 0, err
	}
	inuse := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			inuse = i
		}
	}
	if inuse < 0 {
		return 0, nil
	}
	var bytes int64
	for _, s := range p.Sample {
		if hasFrame(s, schedulerCode) {
			bytes += s.Value[inuse]
		}
	}
	return float64(bytes) / (1 << 20), nil
}

func readProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return profile.Parse(f)
}

// hasFrame reports whether a sample's stack holds a function that re matches.
func hasFrame(s *profile.Sample, re *regexp.Regexp) bool {
	for _, loc := range s.Location {
		for _, line := range loc.Line {
			if line.Function != nil && re.MatchString(line.Function.Name) {
				return true
			}
		}
	}
	return false
}

// schedulerWrites are the requests of the scheduler among those a workload's apiserver
// served (the rest are the harness's: nodes, namespaces, groups and pods created, and reads):
// binds, pod status (failed attempts, nominations, DisruptionTarget), pods deleted
// (preemption), events, and group status.
var schedulerWrites = []string{
	"POST pods/binding", "PATCH pods/status", "PUT pods/status", "DELETE pods",
	"POST events", "PATCH events", "PUT events",
	"PUT podgroups/status", "PATCH podgroups/status", "PUT compositepodgroups/status", "PATCH compositepodgroups/status",
}

// readWrites sums the scheduler's writes in the requests file of mode/shape in dir
// (requests_test.go), -1 if there is none.
func readWrites(dir, mode, shape string) (float64, error) {
	counts, err := readRequests(dir, mode, shape)
	if counts == nil || err != nil {
		return -1, err
	}
	n := 0.0
	for _, k := range schedulerWrites {
		n += counts[k]
	}
	return n, nil
}

// readRequests reads the requests a workload's apiserver served, by verb and resource (nil if
// they were not counted).
func readRequests(dir, mode, shape string) (map[string]float64, error) {
	data, err := os.ReadFile(filepath.Join(dir, mode+"_"+shape+"-requests.json"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var counts map[string]float64
	if err := json.Unmarshal(data, &counts); err != nil {
		return nil, err
	}
	return counts, nil
}
