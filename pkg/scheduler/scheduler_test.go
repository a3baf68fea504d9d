package scheduler

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstep-sched/lockstep/pkg/plugins/gang"
	"github.com/lockstep-sched/lockstep/pkg/plugins/topology"
)

func TestCommandOffersKubeSchedulerAndLockstepFlags(t *testing.T) {
	cmd := NewCommand()
	for _, name := range []string{"workload-controller", "workload-controller-workers", "config", "kubeconfig", "leader-elect", "v"} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("flag --%s missing", name)
		}
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.HelpFunc()(cmd, nil)
	for _, want := range []string{"--workload-controller", "Lockstep flags:", "Leader election flags:"} {
		if !strings.Contains(strings.ToLower(out.String()), strings.ToLower(want)) {
			t.Errorf("--help does not show %q", want)
		}
	}
}

// Every plugin of a Scheduler's registry is there, and two Schedulers share nothing.
func TestRegistry(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	for _, name := range []string{gang.Name, topology.Name} {
		if _, ok := a.Registry()[name]; !ok {
			t.Errorf("plugin %s not registered", name)
		}
	}
	if a.Elected() == b.Elected() {
		t.Error("two schedulers share their leadership")
	}
	if len(a.Plugins()) != 2 {
		t.Errorf("%d plugin options, want 2", len(a.Plugins()))
	}
}
