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
	if got := topologyArgs(t, noPlan)["planUnconstrainedGangs"]; got != false {
		t.Fatalf("noplan-scheduler-config.yaml: planUnconstrainedGangs = %v, want false", got)
	}
	topologyArgs(t, noPlan)["planUnconstrainedGangs"] = topologyArgs(t, shipped)["planUnconstrainedGangs"]
	if diff := cmp.Diff(shipped, noPlan); diff != "" {
		t.Errorf("noplan-scheduler-config.yaml differs from the manifest beyond planUnconstrainedGangs (-manifest +noplan):\n%s", diff)
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

// topologyArgs returns the LockstepTopology args of the configuration's only profile.
func topologyArgs(t *testing.T, config map[string]any) map[string]any {
	t.Helper()
	profile := config["profiles"].([]any)[0].(map[string]any)
	for _, pc := range profile["pluginConfig"].([]any) {
		pc := pc.(map[string]any)
		if pc["name"] == "LockstepTopology" {
			return pc["args"].(map[string]any)
		}
	}
	t.Fatal("no LockstepTopology pluginConfig")
	return nil
}
