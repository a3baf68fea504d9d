package scheduler

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobgroups"
)

func TestCommandOffersTheJobController(t *testing.T) {
	cmd := NewCommand()
	for _, name := range []string{"job-controller", "job-controller-workers", "config", "kubeconfig", "leader-elect"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("flag --%s missing", name)
		}
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.HelpFunc()(cmd, nil)
	if !strings.Contains(out.String(), "--job-controller") {
		t.Error("--help does not show --job-controller")
	}
}

// The Job controller takes its cluster, its profiles and its lease namespace from the
// scheduler's configuration file.
func TestJobControllerSetupFromConfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: `+kubeconfig+`
leaderElection:
  leaderElect: true
  resourceNamespace: lockstep-system
profiles:
  - schedulerName: lockstep-scheduler
  - schedulerName: lockstep-batch
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := NewCommand()
	if err := cmd.Flags().Parse([]string{"--config=" + config, "--job-controller"}); err != nil {
		t.Fatal(err)
	}
	cfg, opts, err := jobControllerSetup(cmd.Flags())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://10.0.0.1:6443" {
		t.Errorf("host %q", cfg.Host)
	}
	want := jobgroups.Options{SchedulerNames: []string{"lockstep-scheduler", "lockstep-batch"}, LeaderElect: true,
		LeaseNamespace: "lockstep-system", LeaseName: jobgroups.Name}
	if diff := cmp.Diff(want, opts); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}
