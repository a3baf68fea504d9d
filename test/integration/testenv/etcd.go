package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/test/integration/framework"
)

// RepoRoot is the root of the lockstep checkout.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// EnsureEtcd puts an etcd binary on PATH (for harnesses that start etcd themselves).
func EnsureEtcd() error { return ensureEtcd() }

// ensureEtcd puts an etcd binary on PATH: one already there, or bin/etcd, built from the
// version pinned in go.mod when missing (make builds it beforehand; go test alone works too).
func ensureEtcd() error {
	if _, err := exec.LookPath("etcd"); err == nil {
		return nil
	}
	bin := filepath.Join(RepoRoot(), "bin")
	if _, err := os.Stat(filepath.Join(bin, "etcd")); err != nil {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "etcd"), "go.etcd.io/etcd/server/v3")
		cmd.Dir = RepoRoot()
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building etcd: %w", err)
		}
	}
	return os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Main runs a test package with one etcd for all its tests; every test gets its own
// kube-apiserver with its own etcd prefix. Call it from TestMain.
//
// The klog flags are registered, so `go test ... -args -v=4` shows the scheduler's
// decisions for a failing scenario.
func Main(m *testing.M) {
	if flag.CommandLine.Lookup("v") == nil {
		klog.InitFlags(nil)
	}
	if err := ensureEtcd(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	etcdLog := &quietLogger{}
	url, stop, err := framework.RunCustomEtcd(etcdLog.logger(), "lockstep_etcd", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		os.Exit(1)
	}
	os.Setenv("KUBE_INTEGRATION_ETCD_URL", url)
	code := m.Run()
	etcdLog.quiet.Store(true)
	stop()
	reportFailures()
	os.Exit(code)
}
