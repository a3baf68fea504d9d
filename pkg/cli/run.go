package cli

import (
	"fmt"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/component-base/cli"
)

// Run runs kubectl-lockstep with args and returns its exit code. It fails as kubectl does: the
// error printed as "error: ..." on stderr, not as a log line (component-base's cli.Run logs
// errors once logging is set up, which every command does).
func Run(streams genericiooptions.IOStreams, args []string) int {
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	if err := cli.RunNoErrOutput(cmd); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
		return 1
	}
	return 0
}
