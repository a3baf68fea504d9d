package scheduler

import (
	"errors"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/features"
)

// featureDefaults are lockstep's defaults of kube-scheduler feature gates where they differ
// from kube-scheduler's; --feature-gates still sets them.
var featureDefaults = map[featuregate.Feature]bool{
	// On in kube-scheduler 1.37 (beta), it writes every pod's node as its nominatedNodeName
	// before the pod waits at Permit: for a gang, one PATCH per member on the scheduler's
	// client, before the gang's first bind, and a thousand of them when a 1000-pod gang is
	// placed. lockstep's waits are short (the planner places a gang in one burst) and a new
	// leader plans waiting gangs again, so the nomination is a request no member needs.
	// Nominations for preemption are written either way.
	features.NominatedNodeNameForExpectation: false,
}

var setFeatureDefaults = sync.OnceValue(func() error {
	var errs []error
	for f, v := range featureDefaults {
		errs = append(errs, utilfeature.DefaultMutableFeatureGate.OverrideDefault(f, v))
	}
	return errors.Join(errs...)
})

// SetFeatureDefaults applies lockstep's feature gate defaults to kube-scheduler's gate. It
// must run before the gate is added to a flag set (options.NewOptions); later calls return
// the first one's result.
func SetFeatureDefaults() error { return setFeatureDefaults() }
