package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"

	"github.com/spf13/pflag"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/scheduler"
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

// FreePort returns a local TCP port free now (the benchmarks' scheduler processes use it too).
func FreePort() (int, error) {
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
		return &Scheduler{cancel: p.Kill, done: p.done, MetricsURL: p.MetricsURL}
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
	s := &Scheduler{cancel: cancel, done: make(chan struct{}), MetricsURL: fmt.Sprintf("https://127.0.0.1:%d/metrics", port)}
	go func() {
		defer close(s.done)
		if err := ls.Run(ctx, cc, sched); err != nil {
			t.Logf("scheduler exited: %v", err)
		}
	}()
	t.Cleanup(s.Stop)
	return s
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
	cfg["clientConnection"] = map[string]any{"kubeconfig": e.LockstepKubeconfig, "qps": 500, "burst": 1000}
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
