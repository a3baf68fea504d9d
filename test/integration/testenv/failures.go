package testenv

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// failures are the package's tests that failed, named again at its very end (Main): a CI log
// shows its last lines first, and a package's last lines are otherwise etcd's shutdown.
var failures struct {
	mu    sync.Mutex
	names []string
}

// NoteFailure names t at the end of the package's output if it fails. Every kube-apiserver a
// test starts notes its test; a harness whose subtests share one notes each subtest.
func NoteFailure(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			failures.mu.Lock()
			defer failures.mu.Unlock()
			failures.names = append(failures.names, t.Name())
		}
	})
}

// reportFailures prints the failed tests' names, if any.
func reportFailures() {
	failures.mu.Lock()
	defer failures.mu.Unlock()
	if len(failures.names) > 0 {
		fmt.Fprintf(os.Stderr, "--- failed in this package: %s\n", strings.Join(failures.names, "; "))
	}
}

// quietLogger is a logger to stderr that goes quiet once told: etcd's output while the tests
// run, not the errors of its shutdown.
type quietLogger struct{ quiet atomic.Bool }

func (q *quietLogger) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		if !q.quiet.Load() {
			fmt.Fprintln(os.Stderr, prefix, args)
		}
	}, funcr.Options{})
}
