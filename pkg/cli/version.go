package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lockstep-sched/lockstep/pkg/version"
)

// newVersionCommand prints the plugin's version: the same that the scheduler's --version
// and the image's labels carry when make built them from the same commit.
func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			switch output {
			case "":
				_, err := fmt.Fprintf(streams.Out, "kubectl-lockstep %s\n", version.Get())
				return err
			case "json":
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(version.Get())
			default:
				return fmt.Errorf("--output must be json or empty, not %q", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: empty for one line, or json.")
	return cmd
}
