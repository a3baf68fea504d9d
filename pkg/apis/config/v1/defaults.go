package v1

// DefaultTopologyLevels are the well-known topology labels, broadest first.
var DefaultTopologyLevels = []string{
	"topology.kubernetes.io/zone",
	"topology.kubernetes.io/block",
	"topology.kubernetes.io/rack",
	"kubernetes.io/hostname",
}

// Defaults of LockstepTopologyArgs.
const (
	// DefaultPlanTTLSeconds matches the default permit timeout: a plan outlives the wait of
	// its placed members.
	DefaultPlanTTLSeconds int64 = 60
	// DefaultPlanTimeLimitMilliseconds bounds one plan; a plan of 750 gangs' worth of racks
	// on 5000 nodes takes a few milliseconds.
	DefaultPlanTimeLimitMilliseconds int32 = 200
)

// SetDefaults_LockstepTopologyArgs fills unset fields.
func SetDefaults_LockstepTopologyArgs(obj *LockstepTopologyArgs) {
	if len(obj.Levels) == 0 {
		obj.Levels = append([]string(nil), DefaultTopologyLevels...)
	}
	if obj.PlanTTLSeconds == nil {
		v := DefaultPlanTTLSeconds
		obj.PlanTTLSeconds = &v
	}
	if obj.PlanTimeLimitMilliseconds == nil {
		v := DefaultPlanTimeLimitMilliseconds
		obj.PlanTimeLimitMilliseconds = &v
	}
	if obj.PlanUnconstrainedGangs == nil {
		v := true
		obj.PlanUnconstrainedGangs = &v
	}
}

// Defaults of LockstepGangArgs.
const (
	// DefaultPermitTimeoutSeconds matches scheduler-plugins' coscheduling: a gang whose
	// members are popped together normally completes in seconds; a minute is the safety net
	// for members that never come.
	DefaultPermitTimeoutSeconds int64 = 60
	// DefaultBackoffSeconds matches the kube-scheduler's default pod max backoff.
	DefaultBackoffSeconds int64 = 10
	// DefaultJobGroupTimeoutSeconds leaves the Job controller two minutes of retries.
	DefaultJobGroupTimeoutSeconds int64 = 120
	// DefaultReserveAfterSeconds: a gang that has not fit for five minutes gets a reservation.
	// Long enough that ordinary churn (a gang waiting for a few pods to finish) reserves
	// nothing; short next to the hours a starved training job waits.
	DefaultReserveAfterSeconds int64 = 300
	// DefaultReservationTimeoutSeconds: half an hour of holding a domain whose pods do not
	// end is enough; the gang's turn comes again.
	DefaultReservationTimeoutSeconds int64 = 1800
	// DefaultPartialBindTimeoutSeconds: five minutes of retries outlast a webhook's or an
	// apiserver's passing refusal; a gang short longer than that holds room for nothing.
	DefaultPartialBindTimeoutSeconds int64 = 300
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
	if obj.JobGroupTimeoutSeconds == nil {
		v := DefaultJobGroupTimeoutSeconds
		obj.JobGroupTimeoutSeconds = &v
	}
	if obj.ReserveAfterSeconds == nil {
		v := DefaultReserveAfterSeconds
		obj.ReserveAfterSeconds = &v
	}
	if obj.ReservationTimeoutSeconds == nil {
		v := DefaultReservationTimeoutSeconds
		obj.ReservationTimeoutSeconds = &v
	}
	if obj.PartialBindTimeoutSeconds == nil {
		v := DefaultPartialBindTimeoutSeconds
		obj.PartialBindTimeoutSeconds = &v
	}
}

// DefaultMaxBindsInFlight: a ceiling far above what an apiserver takes at once, so that the
// adaptive window (pkg/plugins/bind, window.go), not a fixed bound, sets the pace; a fixed 32
// capped binds at 32 ÷ latency (128/s at 250 ms) whenever the apiserver was busy.
const DefaultMaxBindsInFlight int32 = 1024

// SetDefaults_LockstepBindArgs fills unset fields; qps and burst stay 0 (the scheduler's
// clientConnection values), which only the plugin knows.
func SetDefaults_LockstepBindArgs(obj *LockstepBindArgs) {
	if obj.MaxBindsInFlight == nil {
		v := DefaultMaxBindsInFlight
		obj.MaxBindsInFlight = &v
	}
	if obj.QPS == nil {
		obj.QPS = new(int32)
	}
	if obj.Burst == nil {
		obj.Burst = new(int32)
	}
}
