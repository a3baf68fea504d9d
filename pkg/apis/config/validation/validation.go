// Package validation checks lockstep's plugin args, as the in-tree
// pkg/scheduler/apis/config/validation does for upstream plugins.
package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
)

// ValidateLockstepGangArgs returns an error listing every invalid field.
func ValidateLockstepGangArgs(path *field.Path, args *config.LockstepGangArgs) error {
	var errs field.ErrorList
	if args.PermitTimeoutSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("permitTimeoutSeconds"), args.PermitTimeoutSeconds, "must be greater than 0"))
	}
	if args.BackoffSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("backoffSeconds"), args.BackoffSeconds, "must not be negative"))
	}
	return errs.ToAggregate()
}
