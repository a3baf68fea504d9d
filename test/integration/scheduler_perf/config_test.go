package schedulerperf

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestNoPlanConfig keeps the LockstepGangNoPlan mode's configuration equal to the shipped one
// but for planUnconstrainedGangs, so that the mode measures exactly what the flag changes.
func TestNoPlanConfig(t *testing.T) {
	shipped := readYAML(t, "../../../manifests/scheduler-config.yaml")
	noPlan := readYAML(t, "noplan-scheduler-config.yaml")
	if got := pluginArgs(t, noPlan, "LockstepTopology")["planUnconstrainedGangs"]; got != false {
		t.Fatalf("noplan-scheduler-config.yaml: planUnconstrainedGangs = %v, want false", got)
	}
	pluginArgs(t, noPlan, "LockstepTopology")["planUnconstrainedGangs"] = pluginArgs(t, shipped, "LockstepTopology")["planUnconstrainedGangs"]
	if diff := cmp.Diff(shipped, noPlan); diff != "" {
		t.Errorf("noplan-scheduler-config.yaml differs from the manifest beyond planUnconstrainedGangs (-manifest +noplan):\n%s", diff)
	}
}

// TestFixed32Config keeps the LockstepSlowBindsFixed32 mode's configuration equal to the
// shipped one but for maxBindsInFlight, 32 (the bound LockstepBind had before its window), so
// that the mode measures exactly what the window changes.
func TestFixed32Config(t *testing.T) {
	shipped := readYAML(t, "../../../manifests/scheduler-config.yaml")
	fixed := readYAML(t, "fixed32-scheduler-config.yaml")
	if got := pluginArgs(t, fixed, "LockstepBind")["maxBindsInFlight"]; got != float64(32) {
		t.Fatalf("fixed32-scheduler-config.yaml: maxBindsInFlight = %v, want 32", got)
	}
	if got := pluginArgs(t, shipped, "LockstepBind")["maxBindsInFlight"]; got == float64(32) {
		t.Fatalf("the manifest's maxBindsInFlight is 32 too: the mode compares nothing")
	}
	pluginArgs(t, fixed, "LockstepBind")["maxBindsInFlight"] = pluginArgs(t, shipped, "LockstepBind")["maxBindsInFlight"]
	if diff := cmp.Diff(shipped, fixed); diff != "" {
		t.Errorf("fixed32-scheduler-config.yaml differs from the manifest beyond maxBindsInFlight (-manifest +fixed32):\n%s", diff)
	}
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// pluginArgs returns the args of plugin name in the configuration's only profile.
func pluginArgs(t *testing.T, config map[string]any, name string) map[string]any {
	t.Helper()
	profile := config["profiles"].([]any)[0].(map[string]any)
	for _, pc := range profile["pluginConfig"].([]any) {
		pc := pc.(map[string]any)
		if pc["name"] == name {
			return pc["args"].(map[string]any)
		}
	}
	t.Fatalf("no %s pluginConfig", name)
	return nil
}
