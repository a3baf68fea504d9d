package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	kubescheduler "k8s.io/kubernetes/pkg/scheduler"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/scheduler"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

func init() {
	// Several servers in one process must not fight over the global logging state.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
}

// GangArgs overrides LockstepGang's args from the manifests' configuration.
type GangArgs map[string]any

// Scheduler is a running lockstep scheduler.
type Scheduler struct {
	cancel context.CancelFunc
	done   chan struct{}
	// MetricsURL is the scheduler's /metrics endpoint (HTTPS, self-signed, no auth needed).
	MetricsURL string
	// sched is the scheduler when it runs in this process (nil for a process of its own);
	// profiles are its scheduler names (WaitIdle).
	sched    *kubescheduler.Scheduler
	profiles sets.Set[string]
}

// Metrics scrapes the scheduler's /metrics endpoint, as Prometheus would.
func (s *Scheduler) Metrics(t *testing.T) string {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(s.MetricsURL)
	if err != nil {
		t.Fatalf("scraping %s: %v", s.MetricsURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %d %v", s.MetricsURL, resp.StatusCode, err)
	}
	return string(body)
}

// freePort returns a port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// FreePort returns a local TCP port free now (the benchmarks' scheduler processes use it too),
// taken below the kernel's ephemeral range: a port the kernel handed out and took back would
// be handed out again as the local port of any outgoing connection (the tests open thousands
// to the apiserver) before the process that is told to listen on it starts.
func FreePort() (int, error) {
	low := 32768 // the kernel's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const floor = 10000
	if low-floor < 1000 { // a range that leaves too few ports below it: let the kernel choose
		return kernelPort()
	}
	for range 100 {
		port := floor + rand.IntN(low-floor)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port, nil
		}
	}
	return kernelPort()
}

// kernelPort returns a port the kernel chose as free now.
func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop stops the scheduler and waits until it has exited.
func (s *Scheduler) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
	configz.Delete("componentconfig")
	s.cancel = nil
}

// StartScheduler starts the lockstep scheduler in-process the way cmd/scheduler does (app.Setup
// with lockstep's plugins, then Scheduler.Run), with
// manifests/scheduler-config.yaml (leader election off, pointed at this test's apiserver,
// plugin args overridden by args). It is stopped when the test ends.
func (e *Env) StartScheduler(t *testing.T, args GangArgs) *Scheduler {
	t.Helper()
	// The binary's feature gate defaults, before options.NewOptions closes the gate, and
	// before the gate is read for the process below: NominatedNodeNameForExpectation is on
	// only for a test that asked (NominateWaiting), as in a deployment that asked, whichever
	// test of the package ran first.
	if err := scheduler.SetFeatureDefaults(); err != nil {
		t.Fatal(err)
	}
	if e.GroupAPI == podgroup.APINative {
		// The apiserver's workload gates are this process's: lockstep runs as its own, with
		// its gates off, as deployed.
		opts := ProcessOptions{Args: args}
		if utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation) {
			opts.FeatureGates = NominatedWaiting // NominateWaiting, for the process
		}
		p := e.StartProcess(t, "lockstep-scheduler", opts)
		s := &Scheduler{cancel: p.Kill, done: p.done, MetricsURL: p.MetricsURL, profiles: sets.New(lt.SchedulerName)}
		e.track(s)
		return s
	}
	cfgPath := e.schedulerConfig(t, args)
	opts := options.NewOptions()
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	effectiveVersion.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	registry := compatibility.NewComponentGlobalsRegistry()
	if err := registry.Register(compatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		t.Fatal(err)
	}
	opts.ComponentGlobalsRegistry = registry
	fs := pflag.NewFlagSet("lockstep-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	port := freePort(t)
	if err := fs.Parse([]string{
		"--config=" + cfgPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + t.TempDir(),
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
	}); err != nil {
		t.Fatal(err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	// The tests run lockstep's workload controller themselves (StartJobController), or not.
	ls := scheduler.New(scheduler.Options{WorkloadControllerElsewhere: true})
	cc, sched, err := app.Setup(ctx, opts, ls.Plugins()...)
	if err != nil {
		cancel()
		t.Fatalf("setting up the scheduler: %v", err)
	}
	s := &Scheduler{cancel: cancel, done: make(chan struct{}), MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", port),
		sched: sched, profiles: sets.New[string]()}
	for name := range sched.Profiles {
		s.profiles.Insert(name)
	}
	e.track(s)
	go func() {
		defer close(s.done)
		if err := ls.Run(ctx, cc, sched); err != nil {
			t.Logf("scheduler exited: %v", err)
		}
	}()
	t.Cleanup(s.Stop)
	return s
}

// track adds a scheduler to those WaitIdle waits for.
func (e *Env) track(s *Scheduler) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.schedulers = append(e.schedulers, s)
}

// schedulerConfig writes the manifests' configuration adapted to this test.
func (e *Env) schedulerConfig(t *testing.T, args GangArgs) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	// The scheduler's client at qps 500, above the manifests' 100, so that tests are not paced
	// by it; SCHEDULER_QPS sets it (burst twice that), for a measurement as deployed.
	qps := EnvInt(t, "SCHEDULER_QPS", 500)
	cfg["clientConnection"] = map[string]any{"kubeconfig": e.LockstepKubeconfig, "qps": qps, "burst": 2 * qps}
	for _, p := range cfg["profiles"].([]any) {
		for _, pc := range p.(map[string]any)["pluginConfig"].([]any) {
			pc := pc.(map[string]any)
			if pc["name"] != "LockstepGang" {
				continue
			}
			a := pc["args"].(map[string]any)
			for k, v := range args {
				a[k] = v
			}
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// NominatedWaiting is the feature gate setting under which the scheduler writes a waiting
// member's node as its nominatedNodeName (kube-scheduler's default, off in lockstep's), which
// WaitWaiting watches for.
const NominatedWaiting = "NominatedNodeNameForExpectation=true"

// NominateWaiting turns NominatedWaiting on for the in-process schedulers this test starts.
func NominateWaiting(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.NominatedNodeNameForExpectation, true)
}
