package main

import (
	"fmt"
	"io"
	"strings"
)

// Preemption workloads are compared by what they evicted as well as by their pace: the
// victims are the pods the scheduler deleted or evicted during the workload (the harness
// deletes none in these shapes), every one of the low priority the shapes give victims.

// readVictims returns the pods deleted or evicted during a workload, -1 if its requests were
// not counted.
func readVictims(dir, mode, shape string) (float64, error) {
	counts, err := readRequests(dir, mode, shape)
	if counts == nil || err != nil {
		return -1, err
	}
	return counts["DELETE pods"] + counts["POST pods/eviction"], nil
}

// preempting reports whether a mode's workloads measure preemption.
func preempting(mode string) bool { return strings.Contains(mode, "Preemption") }

// writeVictims prints, for the preemption workloads, the victims and the pace of each mode.
func writeVictims(w io.Writer, runs []*run) {
	fmt.Fprintln(w, "| Shape | Mode | Victims | Pods/s |")
	fmt.Fprintln(w, "|---|---|---:|---:|")
	for _, r := range runs {
		if !preempting(r.mode) || r.victims < 0 {
			continue
		}
		podsPerSecond := "–"
		if r.duration > 0 && r.pods > 0 {
			podsPerSecond = fmt.Sprintf("%.1f", float64(r.pods)/r.duration)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %s |\n", r.shape, r.mode, r.victims, podsPerSecond)
	}
}
