package v1

// Defaults of LockstepGangArgs.
const (
	// DefaultPermitTimeoutSeconds matches scheduler-plugins' coscheduling: a gang whose
	// members are popped together normally completes in seconds; a minute is the safety net
	// for members that never come.
	DefaultPermitTimeoutSeconds int64 = 60
	// DefaultBackoffSeconds matches the kube-scheduler's default pod max backoff.
	DefaultBackoffSeconds int64 = 10
)

// SetDefaults_LockstepGangArgs fills unset fields.
func SetDefaults_LockstepGangArgs(obj *LockstepGangArgs) {
	if obj.PermitTimeoutSeconds == nil {
		v := DefaultPermitTimeoutSeconds
		obj.PermitTimeoutSeconds = &v
	}
	if obj.BackoffSeconds == nil {
		v := DefaultBackoffSeconds
		obj.BackoffSeconds = &v
	}
}
