package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// processFigures are what a mode that runs lockstep as its own process (LockstepGangNativeAPI)
// records: <mode>_<shape>-process.json, written by
// test/integration/scheduler_perf/process_test.go. Its CPU is the whole process's over the
// measured op (no profile tells the scheduler's frames from its client's); its heap the
// process's heap in use at the op's end.
type processFigures struct {
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpuSeconds"`
	HeapMB     float64 `json:"heapMB"`
}

// readProcess reads the process figures of mode/shape in dir, nil if there are none.
func readProcess(dir, mode, shape string) (*processFigures, error) {
	data, err := os.ReadFile(filepath.Join(dir, mode+"_"+shape+"-process.json"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p processFigures
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// applyProcess makes a process mode's figures its scheduler CPU and heap: the profiles of
// the benchmark's process hold the apiserver and an idle default scheduler, not lockstep.
// The node-search share is unknown (filterScore < 0).
func (r *run) applyProcess(p *processFigures) {
	r.cpu = &cpuSeconds{scheduler: p.CPUSeconds, total: p.CPUSeconds, filterScore: -1, seconds: p.Seconds}
	r.schedHeapMB = p.HeapMB
	r.process = true
}
