// Package scheduler assembles the lockstep scheduler: the upstream kube-scheduler command
// with lockstep's plugins registered and their args known to the config scheme, and, with
// --job-controller, lockstep's Job controller in the same process.
package scheduler

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	// Registers lockstep's plugin args in the kube-scheduler's config scheme.
	_ "github.com/lockstep-sched/lockstep/pkg/apis/config/scheme"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobgroups"
	"github.com/lockstep-sched/lockstep/pkg/plugins/gang"
	"github.com/lockstep-sched/lockstep/pkg/plugins/topology"
)

// Plugins returns the registry options of lockstep's plugins.
func Plugins() []app.Option {
	return []app.Option{
		app.WithPlugin(gang.Name, gang.New),
		app.WithPlugin(topology.Name, topology.New),
	}
}

// NewCommand returns the lockstep-scheduler command: every kube-scheduler flag, plus
// --job-controller.
func NewCommand() *cobra.Command {
	cmd := app.NewSchedulerCommand(Plugins()...)
	cmd.Use = "lockstep-scheduler"
	cmd.Short = "lockstep-scheduler: kube-scheduler with gang, composite-gang and topology plugins"

	fs := pflag.NewFlagSet("lockstep", pflag.ContinueOnError)
	enabled := fs.Bool("job-controller", false, "Also run lockstep's Job controller in this process: it creates a Workload and a PodGroup for every Job of the configured profiles that gets a gang. It elects its own leader (Lease lockstep-job-controller, in the scheduler's lease namespace) when the scheduler does.")
	workers := fs.Int("job-controller-workers", 2, "Jobs the Job controller syncs in parallel.")
	cmd.Flags().AddFlagSet(fs)
	help := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		help(c, args)
		fmt.Fprintf(c.OutOrStdout(), "\nLockstep flags:\n\n%s", fs.FlagUsages())
	})

	runE := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if *enabled {
			cfg, opts, err := jobControllerSetup(c.Flags())
			if err != nil {
				return fmt.Errorf("--job-controller: %w", err)
			}
			opts.Workers = *workers
			go func() {
				if err := jobgroups.Run(context.Background(), cfg, opts); err != nil {
					klog.ErrorS(err, "Job controller failed")
					os.Exit(1)
				}
			}()
		}
		return runE(c, args)
	}
	return cmd
}

// jobControllerSetup finds, from the scheduler's own flags and configuration file, how the
// Job controller reaches the cluster, which profiles' Jobs it serves and where it elects
// its leader.
func jobControllerSetup(flags *pflag.FlagSet) (*rest.Config, jobgroups.Options, error) {
	value := func(name string) string {
		if f := flags.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	opts := jobgroups.Options{
		SchedulerNames: []string{"default-scheduler"},
		LeaderElect:    value("leader-elect") != "false",
		LeaseNamespace: "kube-system",
		LeaseName:      jobgroups.Name,
	}
	kubeconfig := value("kubeconfig")
	if path := value("config"); path != "" {
		cc, err := options.LoadConfigFromFile(klog.Background(), path)
		if err != nil {
			return nil, opts, err
		}
		if cc.ClientConnection.Kubeconfig != "" {
			kubeconfig = cc.ClientConnection.Kubeconfig
		}
		opts.SchedulerNames = nil
		for _, p := range cc.Profiles {
			opts.SchedulerNames = append(opts.SchedulerNames, p.SchedulerName)
		}
		opts.LeaderElect = cc.LeaderElection.LeaderElect
		if cc.LeaderElection.ResourceNamespace != "" {
			opts.LeaseNamespace = cc.LeaderElection.ResourceNamespace
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags(value("master"), kubeconfig)
	return cfg, opts, err
}
