// Command demo runs lockstep's local demo cluster: `go run ./hack/demo up` (make demo) starts
// it and submits the examples; `go run ./hack/demo down` (make demo-down) stops it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/lockstep-sched/lockstep/hack/demo/cluster"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: demo up|down|status")
		os.Exit(2)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		fail(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	c := cluster.New(root, os.Stdout)
	switch os.Args[1] {
	case "up":
		err = c.Up(ctx)
	case "down":
		err = c.Down()
		if err == nil {
			fmt.Println("==> the demo cluster is stopped")
		}
	case "status":
		err = c.Report(ctx, os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "demo:", err)
	os.Exit(1)
}
