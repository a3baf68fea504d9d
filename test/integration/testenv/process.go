package testenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// schedulerBinary builds bin/lockstep-scheduler from this checkout once per test process:
// the tests that kill and restart the scheduler run the real binary.
func schedulerBinary(t *testing.T) string {
	t.Helper()
	bin, err := SchedulerBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// SchedulerBinary builds bin/lockstep-scheduler from this checkout, once per process, and
// returns its path (the benchmarks run it as its own process too).
func SchedulerBinary() (string, error) {
	buildOnce.Do(func() {
		binary = filepath.Join(RepoRoot(), "bin", "lockstep-scheduler")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/scheduler")
		cmd.Dir = RepoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/scheduler: %v\n%s", err, out)
		}
	})
	return binary, buildErr
}

// ProcessOptions configure a scheduler process.
type ProcessOptions struct {
	// Args override LockstepGang's args of the manifests' configuration.
	Args GangArgs
	// LeaderElect runs leader election on a short lease (2s), as replicas of a Deployment do.
	LeaderElect bool
	// NoWorkloadController adds --workload-controller=false.
	NoWorkloadController bool
	// Verbosity is the -v level (default 2, or $LOCKSTEP_TEST_VERBOSITY).
	Verbosity int
	// FeatureGates is the value of --feature-gates ("" for none).
	FeatureGates string
}

// Process is a lockstep-scheduler running as its own process.
type Process struct {
	Name       string
	MetricsURL string
	cmd        *exec.Cmd
	logPath    string
	done       chan struct{}
	exitErr    error
}

// StartProcess runs bin/lockstep-scheduler against this test's apiserver with the manifests'
// configuration. It is killed when the test ends; its log is printed if the test failed.
func (e *Env) StartProcess(t *testing.T, name string, opts ProcessOptions) *Process {
	t.Helper()
	bin := schedulerBinary(t)
	cfgPath := e.processConfig(t, opts)
	port := freePort(t)
	dir := t.TempDir()
	if v, err := strconv.Atoi(os.Getenv("LOCKSTEP_TEST_VERBOSITY")); err == nil && opts.Verbosity == 0 {
		opts.Verbosity = v // for reading a failed run's log (with LOCKSTEP_TEST_LOGS)
	}
	args := []string{
		"--config=" + cfgPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + dir,
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
		"-v=" + strconv.Itoa(max(opts.Verbosity, 2)),
	}
	if opts.NoWorkloadController {
		args = append(args, "--workload-controller=false")
	}
	if opts.FeatureGates != "" {
		args = append(args, "--feature-gates="+opts.FeatureGates)
	}
	p := run(t, name, dir, bin, args...)
	p.MetricsURL = fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	return p
}

// run starts bin with args, its output logged in dir, killed when the test ends; its log is
// printed (and kept, see keepLog) if the test failed.
func run(t *testing.T, name, dir, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("log of %s (last 80 lines):\n%s", name, p.Tail(80))
			p.keepLog(t)
		}
	})
	return p
}

// processConfig writes the manifests' configuration for a process: the test's kubeconfig,
// LockstepGang args, and leader election on a short lease in lockstep-system (where the
// manifests' RBAC lets it hold one), or off.
func (e *Env) processConfig(t *testing.T, opts ProcessOptions) string {
	t.Helper()
	path := e.schedulerConfig(t, opts.Args)
	if !opts.LeaderElect {
		return path
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["leaderElection"] = map[string]any{
		"leaderElect":       true,
		"resourceName":      "lockstep-scheduler",
		"resourceNamespace": "lockstep-system",
		"leaseDuration":     "2s",
		"renewDeadline":     "1500ms",
		"retryPeriod":       "500ms",
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kill kills the process at once (SIGKILL), as a node failure or an OOM kill would, and
// waits until it is gone.
func (p *Process) Kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.exitErr
	default:
		return false, nil
	}
}

// keepLog copies the whole log into $LOCKSTEP_TEST_LOGS, when set, so a failed run can be
// read in full (the test output shows only its tail).
func (p *Process) keepLog(t *testing.T) {
	dir := os.Getenv("LOCKSTEP_TEST_LOGS")
	if dir == "" {
		return
	}
	dst := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+p.Name+".log")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		if err := os.WriteFile(dst, []byte(p.Log()), 0o644); err == nil {
			t.Logf("whole log of %s: %s", p.Name, dst)
		}
	}
}

// Tail returns the last n lines of the process' log.
func (p *Process) Tail(n int) string {
	data, _ := os.ReadFile(p.logPath)
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Log returns the process' whole log.
func (p *Process) Log() string {
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

// Metrics scrapes the process' /metrics; "" if it does not answer.
func (p *Process) Metrics() string {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, p.MetricsURL, nil)
	resp, err := client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// Metric returns the value of the first sample of /metrics whose line matches the pattern
// (a regexp of the name and labels, e.g. `lockstep_group_status_writes_total\{reason="Scheduled"\}`),
// and false if there is none.
func (p *Process) Metric(pattern string) (float64, bool) { return Sample(p.Metrics(), pattern) }

// Sample returns the value of the first sample of a /metrics body whose line matches the
// pattern (a regexp of the name and labels), and false if there is none.
func Sample(metrics, pattern string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + pattern + ` ([0-9.e+-]+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// Leading reports whether the process holds the scheduler's lease (lockstep_leader).
func (p *Process) Leading() bool {
	v, ok := p.Metric(`lockstep_leader`)
	return ok && v == 1
}
