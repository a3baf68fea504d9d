package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockstep-sched/lockstep/internal/jobsetcontroller"
)

// The demo runs the upstream JobSet controller (sigs.k8s.io/jobset, the version pinned in
// tools/controllers/go.mod, which make demo-binaries builds into bin/jobset-controller) so that
// an example can be a JobSet and show the tree lockstep's workload controller gives it. It
// runs as test/integration/testenv does: no cert-manager and no webhook configurations, so
// JobSets must set what JobSet's webhook would default (see manifests/examples/08-jobset.yaml).

// jobSetCRD returns the JobSet CRD of the module tools/controllers pins, downloading the module
// if the build of bin/jobset-controller did not leave it in the module cache.
func (c *Cluster) jobSetCRD(ctx context.Context) (string, error) {
	dir, err := c.moduleDir(ctx, "controllers", "sigs.k8s.io/jobset")
	if err != nil {
		return "", err
	}
	path := jobsetcontroller.CRDPath(dir)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("the JobSet CRD: %w", err)
	}
	return path, nil
}

// moduleDir returns the directory of module, at the version the tools module tools/toolsModule
// pins, downloading it if the build of its binary did not leave it in the module cache.
func (c *Cluster) moduleDir(ctx context.Context, toolsModule, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module)
	cmd.Dir = filepath.Join(c.Root, "tools", toolsModule)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s from tools/%s: %w", module, toolsModule, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", err
	}
	return mod.Dir, nil
}

// waitJobSetsServed waits until JobSets can be listed. A CRD created a moment ago may have no
// conditions yet, which kubectl wait --for=condition=Established reports as an error
// instead of waiting.
func (c *Cluster) waitJobSetsServed(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.output(ctx, "get", "jobsets.jobset.x-k8s.io", "--all-namespaces")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the JobSet API is not served: %w", err)
	}
	return nil
}

// startJobSet runs the JobSet controller with the admin kubeconfig and waits until it is
// ready. Upstream's main always starts its webhook server: it gets a throwaway self-signed
// certificate in the work directory and a loopback port, and nothing ever calls it. Leader
// election and metrics are off: one replica, and no port the demo does not need.
func (c *Cluster) startJobSet(ctx context.Context) error {
	path, err := jobsetcontroller.WriteConfig(filepath.Join(c.Dir, "jobset"), c.ports.JobSetWebhook, c.ports.JobSetHealth)
	if err != nil {
		return err
	}
	// Level 2 logs the Jobs it creates and deletes.
	if err := c.start("jobset-controller", "jobset-controller", "--config="+path, "--kubeconfig="+c.Kubeconfig(), "--zap-log-level=2"); err != nil {
		return err
	}
	return c.waitHTTP(ctx, "jobset-controller", jobsetcontroller.ReadyURL(c.ports.JobSetHealth), time.Minute)
}
