// Package scheduler assembles the lockstep scheduler: the upstream kube-scheduler command
// with lockstep's plugins registered and their args known to the config scheme.
package scheduler

import (
	"github.com/spf13/cobra"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// Registers lockstep's plugin args in the kube-scheduler's config scheme.
	_ "github.com/lockstep-sched/lockstep/pkg/apis/config/scheme"
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

// NewCommand returns the lockstep-scheduler command.
func NewCommand() *cobra.Command {
	cmd := app.NewSchedulerCommand(Plugins()...)
	cmd.Use = "lockstep-scheduler"
	cmd.Short = "lockstep-scheduler: kube-scheduler with gang, composite-gang and topology plugins"
	return cmd
}
