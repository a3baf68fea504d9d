package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/features"

	"github.com/lockstep-sched/lockstep/pkg/version"
)

// NewCommand returns the lockstep-scheduler command: every kube-scheduler flag, plus
// lockstep's. It runs the scheduler as kube-scheduler's command does (logging set up first,
// then app.Setup and app.Run), through Scheduler.Run, so that lockstep's leader-only parts
// follow kube-scheduler's lease.
func NewCommand() *cobra.Command {
	if err := SetFeatureDefaults(); err != nil {
		klog.Background().Error(err, "lockstep's feature gate defaults not applied")
	}
	opts := options.NewOptions()
	var lsOpts Options
	cmd := &cobra.Command{
		Use:   "lockstep-scheduler",
		Short: "lockstep-scheduler: kube-scheduler with gang, composite-gang and topology plugins",
		Long: `lockstep-scheduler is the Kubernetes scheduler with lockstep's plugins compiled in:
gang scheduling (PodGroups bind all together or not at all), composite gangs
(CompositePodGroups) and hierarchical topology. Pods opt in with
spec.schedulerName: lockstep-scheduler; run it with a KubeSchedulerConfiguration whose
profile enables LockstepGang and LockstepTopology, as manifests/ does.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, opts, lsOpts)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	lockstepFlags(nfs.FlagSet("lockstep"), &lsOpts)
	for _, f := range nfs.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	return cmd
}

func lockstepFlags(fs *pflag.FlagSet, o *Options) {
	fs.BoolVar(&o.WorkloadController, "workload-controller", true, "Run lockstep's workload controller: it creates a Workload and groups for every Job that gets a gang and every JobSet of the configured profiles. It runs only while this scheduler leads (it follows the scheduler's leader election). With --workload-controller=false, the pods of those workloads wait for no group (groups created otherwise are still honoured).")
	fs.IntVar(&o.WorkloadControllerWorkers, "workload-controller-workers", 2, "Workloads the workload controller syncs in parallel.")
	// The flags of lockstep 0.1, when the controller knew only Jobs and was off by default.
	fs.BoolVar(&o.WorkloadController, "job-controller", true, "Same as --workload-controller.")
	fs.IntVar(&o.WorkloadControllerWorkers, "job-controller-workers", 2, "Same as --workload-controller-workers.")
	fs.Var(&negated{&o.IgnoreNativeGroups}, "native-groups", "Schedule the native scheduling.k8s.io PodGroups and CompositePodGroups (and the pods whose spec.schedulingGroup names one) wherever the cluster serves them, from the moment it does, as lockstep's own kinds. With --native-groups=false (or without the RBAC to list them), lockstep reads only its own kinds, and a pod's spec.schedulingGroup files nothing: the pod is filed by its labels or its Job, as any.")
	fs.Lookup("native-groups").NoOptDefVal = "true"
	_ = fs.MarkDeprecated("job-controller", "use --workload-controller (on by default)")
	_ = fs.MarkDeprecated("job-controller-workers", "use --workload-controller-workers")
}

// run is kube-scheduler's runCommand with lockstep's Scheduler in the middle.
func run(cmd *cobra.Command, opts *options.Options, lsOpts Options) error {
	if printVersion(cmd) {
		return nil
	}
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	// Logging is set up before anything starts that logs (the Job controller among them).
	if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())
	if fg.Enabled(features.GenericWorkload) && !lsOpts.IgnoreNativeGroups {
		// The framework's own workload scheduling would take the pods of native groups into
		// its pod-group cycle, away from lockstep's plugins.
		return fmt.Errorf("feature gate %s is on in lockstep's scheduler: lockstep schedules the native groups itself; leave the gate off here (it belongs on the apiserver), or run with --native-groups=false", features.GenericWorkload)
	}
	if opts.InformerName == nil {
		name, err := cache.NewInformerName("kube-scheduler")
		if err != nil {
			return err
		}
		opts.InformerName = name
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()
	ctx = klog.NewContext(ctx, klog.Background())
	ls := New(lsOpts)
	cc, sched, err := app.Setup(ctx, opts, ls.Plugins()...)
	if err != nil {
		return err
	}
	fg.(featuregate.MutableFeatureGate).AddMetrics()
	opts.ComponentGlobalsRegistry.AddMetrics()
	return ls.Run(ctx, cc, sched)
}

// printVersion answers --version with lockstep's version, which names the Kubernetes
// framework it is built on (kube-scheduler's own answer would name only the framework), and
// --version=raw with the same as JSON. It reports whether it printed; --version=vX.Y.Z keeps
// kube-scheduler's meaning (the version the component reports) and runs.
func printVersion(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("version")
	if f == nil {
		return false
	}
	switch f.Value.String() {
	case "true":
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", cmd.Name(), version.Get())
	case "raw":
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		_ = enc.Encode(version.Get())
	default:
		return false
	}
	return true
}

// negated is a boolean flag that sets its target to the opposite: --native-groups=false sets
// IgnoreNativeGroups, whose zero value (read them) is the default.
type negated struct{ target *bool }

func (n *negated) String() string {
	if n.target == nil {
		return "true"
	}
	return strconv.FormatBool(!*n.target)
}

func (n *negated) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*n.target = !b
	return nil
}

func (n *negated) Type() string { return "bool" }
