// Package validation checks lockstep's plugin args, as the in-tree
// pkg/scheduler/apis/config/validation does for upstream plugins.
package validation

import (
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
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
	if args.JobGroupTimeoutSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("jobGroupTimeoutSeconds"), args.JobGroupTimeoutSeconds, "must be greater than 0"))
	}
	if args.ReserveAfterSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("reserveAfterSeconds"), args.ReserveAfterSeconds, "must not be negative (0 turns reservations off)"))
	}
	if args.ReservationTimeoutSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("reservationTimeoutSeconds"), args.ReservationTimeoutSeconds, "must be greater than 0"))
	}
	if args.PartialBindTimeoutSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("partialBindTimeoutSeconds"), args.PartialBindTimeoutSeconds, "must be greater than 0"))
	}
	return errs.ToAggregate()
}

// ValidateLockstepTopologyArgs returns an error listing every invalid field.
func ValidateLockstepTopologyArgs(path *field.Path, args *config.LockstepTopologyArgs) error {
	var errs field.ErrorList
	if len(args.Levels) == 0 {
		errs = append(errs, field.Required(path.Child("levels"), "at least one topology level"))
	}
	seen := sets.New[string]()
	for i, l := range args.Levels {
		p := path.Child("levels").Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(l, p)...)
		if seen.Has(l) {
			errs = append(errs, field.Duplicate(p, l))
		}
		seen.Insert(l)
	}
	if args.PlanTTLSeconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("planTTLSeconds"), args.PlanTTLSeconds, "must be greater than 0"))
	}
	if args.PlanTimeLimitMilliseconds <= 0 {
		errs = append(errs, field.Invalid(path.Child("planTimeLimitMilliseconds"), args.PlanTimeLimitMilliseconds, "must be greater than 0"))
	}
	return errs.ToAggregate()
}

// ValidateLockstepBindArgs returns an error listing every invalid field.
func ValidateLockstepBindArgs(path *field.Path, args *config.LockstepBindArgs) error {
	var errs field.ErrorList
	if args.MaxBindsInFlight <= 0 {
		errs = append(errs, field.Invalid(path.Child("maxBindsInFlight"), args.MaxBindsInFlight, "must be greater than 0"))
	}
	if args.QPS < 0 {
		errs = append(errs, field.Invalid(path.Child("qps"), args.QPS, "must not be negative (0 takes clientConnection.qps)"))
	}
	if args.Burst < 0 {
		errs = append(errs, field.Invalid(path.Child("burst"), args.Burst, "must not be negative (0 takes clientConnection.burst)"))
	}
	return errs.ToAggregate()
}
