package scheme_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	_ "github.com/lockstep-sched/lockstep/pkg/apis/config/scheme"
)

// The scheduler decodes LockstepGangArgs from a KubeSchedulerConfiguration into the typed,
// defaulted internal args, like the in-tree plugins' args.
func TestDecodeLockstepGangArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		want *config.LockstepGangArgs
	}{
		{
			name: "explicit",
			args: "permitTimeoutSeconds: 30\n          backoffSeconds: 2\n          reserveAfterSeconds: 0\n          partialBindTimeoutSeconds: 60",
			want: &config.LockstepGangArgs{PermitTimeoutSeconds: 30, BackoffSeconds: 2, JobGroupTimeoutSeconds: 120, ReserveAfterSeconds: 0, ReservationTimeoutSeconds: 1800, PartialBindTimeoutSeconds: 60},
		},
		{
			name: "defaults",
			args: "{}",
			want: &config.LockstepGangArgs{PermitTimeoutSeconds: 60, BackoffSeconds: 10, JobGroupTimeoutSeconds: 120, ReserveAfterSeconds: 300, ReservationTimeoutSeconds: 1800, PartialBindTimeoutSeconds: 300},
		},
		{
			name: "partly set",
			args: "backoffSeconds: 0",
			want: &config.LockstepGangArgs{PermitTimeoutSeconds: 60, BackoffSeconds: 0, JobGroupTimeoutSeconds: 120, ReserveAfterSeconds: 300, ReservationTimeoutSeconds: 1800, PartialBindTimeoutSeconds: 300},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, ok := decodeArgs(t, "LockstepGang", tc.args).(*config.LockstepGangArgs)
			if !ok {
				t.Fatal("args not decoded as *config.LockstepGangArgs")
			}
			args.TypeMeta = tc.want.TypeMeta
			if diff := cmp.Diff(tc.want, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// LockstepBindArgs: qps and burst default to 0, the scheduler's clientConnection values.
func TestDecodeLockstepBindArgs(t *testing.T) {
	tests := []struct {
		name string
		args string
		want *config.LockstepBindArgs
	}{
		{name: "defaults", args: "{}", want: &config.LockstepBindArgs{MaxBindsInFlight: 1024}},
		{name: "explicit", args: "maxBindsInFlight: 8\n          qps: 300\n          burst: 600", want: &config.LockstepBindArgs{MaxBindsInFlight: 8, QPS: 300, Burst: 600}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, ok := decodeArgs(t, "LockstepBind", tc.args).(*config.LockstepBindArgs)
			if !ok {
				t.Fatal("args not decoded as *config.LockstepBindArgs")
			}
			args.TypeMeta = tc.want.TypeMeta
			if diff := cmp.Diff(tc.want, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// decodeArgs decodes args (YAML indented as a plugin's args) of plugin through the
// scheduler's configuration loader.
func decodeArgs(t *testing.T, plugin, args string) runtime.Object {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: lockstep-scheduler
    pluginConfig:
      - name: ` + plugin + `
        args:
          ` + args + "\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := options.LoadConfigFromFile(logger, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range got.Profiles[0].PluginConfig {
		if pc.Name == plugin {
			return pc.Args
		}
	}
	t.Fatalf("no %s plugin config", plugin)
	return nil
}

// The shipped configuration decodes.
func TestManifestConfigDecodes(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	got, err := options.LoadConfigFromFile(logger, filepath.Join("..", "..", "..", "..", "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Profiles[0].SchedulerName != "lockstep-scheduler" {
		t.Errorf("profile %q, want lockstep-scheduler", got.Profiles[0].SchedulerName)
	}
}
