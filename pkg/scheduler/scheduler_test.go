package scheduler

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"

	"github.com/lockstep-sched/lockstep/pkg/plugins/bind"
	"github.com/lockstep-sched/lockstep/pkg/plugins/gang"
	"github.com/lockstep-sched/lockstep/pkg/plugins/scout"
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
	for _, name := range []string{gang.Name, scout.Name, topology.Name, bind.Name} {
		if _, ok := a.Registry()[name]; !ok {
			t.Errorf("plugin %s not registered", name)
		}
	}
	if a.Elected() == b.Elected() {
		t.Error("two schedulers share their leadership")
	}
	if len(a.Plugins()) != 4 {
		t.Errorf("%d plugin options, want 4", len(a.Plugins()))
	}
}

// The binary's feature gate defaults are lockstep's, and the flag still sets them.
func TestFeatureDefaults(t *testing.T) {
	cmd := NewCommand()
	if utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation) {
		t.Error("NominatedNodeNameForExpectation on by default; want off (a PATCH per waiting gang member)")
	}
	for _, on := range []bool{true, false} {
		if err := cmd.Flags().Set("feature-gates", fmt.Sprintf("NominatedNodeNameForExpectation=%t", on)); err != nil {
			t.Fatal(err)
		}
		if err := cmd.PersistentPreRunE(cmd, nil); err != nil {
			t.Fatal(err)
		}
		if got := utilfeature.DefaultFeatureGate.Enabled(features.NominatedNodeNameForExpectation); got != on {
			t.Errorf("--feature-gates=NominatedNodeNameForExpectation=%t: gate %t", on, got)
		}
	}
}
