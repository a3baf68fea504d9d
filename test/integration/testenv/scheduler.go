package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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

// StartScheduler starts the lockstep scheduler in-process the way cmd/scheduler does, with
// manifests/scheduler-config.yaml (leader election off, pointed at this test's apiserver,
// plugin args overridden by args). It is stopped when the test ends.
func (e *Env) StartScheduler(t *testing.T, args GangArgs) *Scheduler {
	t.Helper()
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
	if err := fs.Parse([]string{"--config=" + cfgPath, "--secure-port=0"}); err != nil {
		t.Fatal(err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	cc, sched, err := app.Setup(ctx, opts, scheduler.Plugins()...)
	if err != nil {
		cancel()
		t.Fatalf("setting up the scheduler: %v", err)
	}
	s := &Scheduler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := app.Run(ctx, cc, sched); err != nil {
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
	cfg["clientConnection"] = map[string]any{"kubeconfig": e.Kubeconfig, "qps": 500, "burst": 1000}
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
