package schedulerperf

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The modes whose name ends in processSuffix (LockstepGangNativeAPI) run lockstep's binary as
// its own process, as it is deployed, with manifests/scheduler-config.yaml, against the
// workload's apiserver. They schedule the native scheduling.k8s.io objects: scheduler_perf
// runs the apiserver and its scheduler in one process under one set of feature gates, the
// native kinds need GenericWorkload on at the apiserver, and lockstep runs with it off (on,
// the framework's own pod-group cycle takes the native groups' pods; the binary refuses it).
// The in-process scheduler of these modes has only the default profile and ignores the pods.
//
// The process's CPU and heap are its own, not a profile's: the edges of the measured op are
// marked by the ConfigMaps of templates/process-marker.yaml, the process's CPU time
// (/proc/<pid>/stat) is read at each, its heap in use (its /metrics) at the end, and
// <mode>_<shape>-process.json holds them for hack/benchtable. The whole process counts (its
// client's decoding too), where the in-process modes count the scheduler's frames only: the
// process rows overstate the scheduler's CPU, if anything.
const processSuffix = "NativeAPI"

// processLabel marks the ConfigMaps at the edges of a process mode's measured op.
const processLabel = "bench.lockstep.dev/process"

// processFigures is what <mode>_<shape>-process.json holds.
type processFigures struct {
	// Seconds between the edges; CPUSeconds the process spent between them.
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// HeapMB: the process's heap in use at the end edge (go_memstats_heap_inuse_bytes).
	HeapMB float64 `json:"heapMB"`
}

// processMode reports whether the workload of tCtx runs lockstep as its own process.
func processMode(tCtx ktesting.TContext) bool {
	mode := modeOf(tCtx)
	return strings.HasPrefix(mode, "Lockstep") && strings.HasSuffix(mode, processSuffix)
}

// startProcess runs lockstep's binary against the workload's apiserver until the workload
// ends, waits until it is ready, and records its figures at the process markers.
func startProcess(tCtx ktesting.TContext) error {
	bin, err := testenv.SchedulerBinary()
	if err != nil {
		return err
	}
	dir := tCtx.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, tCtx.RESTConfig()); err != nil {
		return err
	}
	config, err := processConfig(dir, kubeconfig)
	if err != nil {
		return err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return err
	}
	verbosity := "0"
	if f := flag.Lookup("v"); f != nil {
		verbosity = f.Value.String()
	}
	logPath := filepath.Join(dir, "lockstep-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--config="+config, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+dir, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "-v="+verbosity)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	tCtx.Cleanup(func() {
		// Stopped as a Deployment's pod is: SIGTERM, then SIGKILL after a grace period.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if tCtx.Failed() {
			data, _ := os.ReadFile(logPath)
			tCtx.Logf("log of lockstep-scheduler (last 4 KiB):\n%s", data[max(0, len(data)-4096):])
		}
	})
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the process's self-signed serving certificate
		DisableKeepAlives: true,
	}}
	err = wait.PollUntilContextTimeout(tCtx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("lockstep-scheduler exited; see %s", logPath)
		default:
		}
		_, err := get(client, base+"/readyz")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("lockstep-scheduler not ready: %w", err)
	}
	recordProcess(tCtx, cmd.Process.Pid, func() (float64, error) { return heapInUse(client, base+"/metrics") })
	return nil
}

// processConfig writes manifests/scheduler-config.yaml with the workload's kubeconfig and
// no leader election (scheduler_perf runs none: the process leads at once).
func processConfig(dir, kubeconfig string) (string, error) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "manifests", "scheduler-config.yaml"))
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return "", err
	}
	conn, _ := cfg["clientConnection"].(map[string]any)
	if conn == nil {
		conn = map[string]any{}
	}
	conn["kubeconfig"] = kubeconfig
	cfg["clientConnection"] = conn
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "scheduler-config.yaml")
	return path, os.WriteFile(path, out, 0o600)
}

// recordProcess watches for the process markers; at each it reads the process's CPU time,
// at the end its heap, and writes the figures when the workload ends.
func recordProcess(tCtx ktesting.TContext, pid int, heap func() (float64, error)) {
	path := dataFile(tCtx, "-process.json")
	if path == "" {
		return
	}
	type edge struct {
		at     time.Time
		cpu    float64
		heapMB float64
	}
	var mu sync.Mutex
	edges := map[string]edge{}
	watchMarkers(tCtx, processLabel, func(name string) {
		e := edge{at: time.Now()}
		var err error
		if e.cpu, err = cpuSeconds(pid); err != nil {
			tCtx.Logf("process edge %s: %v", name, err)
			return
		}
		if name == "stop" {
			inUse, err := heap()
			if err != nil {
				tCtx.Logf("process edge %s: %v", name, err)
				return
			}
			e.heapMB = inUse / (1 << 20)
		}
		mu.Lock()
		defer mu.Unlock()
		edges[name] = e
	}, func() {
		mu.Lock()
		defer mu.Unlock()
		start, ok1 := edges["start"]
		end, ok2 := edges["stop"]
		if !ok1 || !ok2 {
			tCtx.Logf("process markers not both seen: no %s", path)
			return
		}
		writeJSON(tCtx, path, processFigures{Seconds: end.at.Sub(start.at).Seconds(), CPUSeconds: end.cpu - start.cpu, HeapMB: end.heapMB})
	})
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on Linux).
const clockTicks = 100

// cpuSeconds is the CPU time (user and system) process pid has used so far.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(data))
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a /proc/<pid>/stat line, whose
// second field (the command, in parentheses) may hold spaces.
func parseStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	fields := strings.Fields(stat[i+1:]) // fields[0] is field 3 (state)
	if len(fields) < 13 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	return (utime + stime) / clockTicks, nil
}

// heapInUse reads go_memstats_heap_inuse_bytes from the process's metrics.
func heapInUse(client *http.Client, url string) (float64, error) {
	body, err := get(client, url)
	if err != nil {
		return 0, err
	}
	v, ok := testenv.Sample(string(body), `go_memstats_heap_inuse_bytes`)
	if !ok {
		return 0, fmt.Errorf("no go_memstats_heap_inuse_bytes in %s", url)
	}
	return v, nil
}

func get(client *http.Client, url string) ([]byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return body, nil
}

// A process's CPU time is read past its command, which may hold spaces and parentheses.
func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		stat string
		want float64
		err  bool
	}{
		{stat: "4242 (lockstep-schedu) S 1 4242 4242 0 -1 4194560 9000 0 0 0 250 50 0 0 20 0 12 0 100 0 0", want: 3},
		{stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 0 0", want: 0.03},
		{stat: "7 (short) R 1 7", err: true},
		{stat: "no parenthesis", err: true},
	}
	for _, tc := range tests {
		got, err := parseStatCPU(tc.stat)
		if (err != nil) != tc.err || (!tc.err && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("parseStatCPU(%q) = %v, %v; want %v (error %v)", tc.stat, got, err, tc.want, tc.err)
		}
	}
}
