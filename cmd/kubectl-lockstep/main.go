// Command kubectl-lockstep is a kubectl plugin: put it on PATH and run `kubectl lockstep get`
// to see gang trees, their conditions and where each pod landed in the topology.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	lockstepcli "github.com/lockstep-sched/lockstep/pkg/cli"
)

func main() {
	os.Exit(lockstepcli.Run(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:]))
}
