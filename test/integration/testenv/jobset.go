package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/internal/jobsetcontroller"
)

// The upstream JobSet controller (sigs.k8s.io/jobset, the version pinned in
// tools/jobset/go.mod) runs as its own process, built from the separate tools/jobset module
// so that its dependencies never touch lockstep's go.mod. No webhook is registered with
// the apiserver: test JobSets must set what the JobSet webhook would default (see
// DefaultJobSet).

// JobSetGVR is the JobSet resource served once the JobSet CRD is installed.
var JobSetGVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

var (
	jobsetOnce   sync.Once
	jobsetBinary string
	jobsetDir    string
	jobsetErr    error
)

// jobSetController builds bin/jobset-controller from tools/jobset once per test process and
// returns it with the directory of the sigs.k8s.io/jobset module (in the module cache).
func jobSetController(t *testing.T) (binary, moduleDir string) {
	t.Helper()
	jobsetOnce.Do(func() {
		tools := filepath.Join(RepoRoot(), "tools", "jobset")
		jobsetBinary = filepath.Join(RepoRoot(), "bin", "jobset-controller")
		build := exec.Command("go", "build", "-o", jobsetBinary, "sigs.k8s.io/jobset")
		build.Dir = tools
		if out, err := build.CombinedOutput(); err != nil {
			jobsetErr = fmt.Errorf("go build sigs.k8s.io/jobset in tools/jobset: %v\n%s", err, out)
			return
		}
		list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/jobset")
		list.Dir = tools
		out, err := list.Output()
		jobsetDir = strings.TrimSpace(string(out))
		if err != nil || jobsetDir == "" {
			jobsetErr = fmt.Errorf("go list -m sigs.k8s.io/jobset in tools/jobset: %q %v", out, err)
		}
	})
	if jobsetErr != nil {
		t.Fatal(jobsetErr)
	}
	return jobsetBinary, jobsetDir
}

// JobSetModuleDir is the directory of the sigs.k8s.io/jobset module (CRDs, examples).
func JobSetModuleDir(t *testing.T) string {
	t.Helper()
	_, dir := jobSetController(t)
	return dir
}

// StartJobSetController installs the JobSet CRD and runs the upstream JobSet controller
// manager against this test's apiserver until the test ends, and returns once it is ready.
// It runs without leader election, metrics, internal cert management or webhook
// configurations: its webhook server (which upstream's main always starts) listens on a
// free port with a throwaway self-signed certificate, and nothing calls it. Its log (at
// zap level 2: jobs created and deleted) is printed if the test failed.
func (e *Env) StartJobSetController(t *testing.T) *Process {
	t.Helper()
	bin, moduleDir := jobSetController(t)
	e.installJobSetCRD(t, jobsetcontroller.CRDPath(moduleDir))

	dir := t.TempDir()
	healthPort := freePort(t)
	cfgPath, err := jobsetcontroller.WriteConfig(dir, freePort(t), healthPort)
	if err != nil {
		t.Fatal(err)
	}

	p := run(t, "jobset-controller", dir, bin, "--config="+cfgPath, "--kubeconfig="+e.Kubeconfig, "--zap-log-level=2")

	// /readyz answers once the webhook server runs, which upstream's main starts after the
	// JobSet and Pod reconcilers are set up.
	readyz := jobsetcontroller.ReadyURL(healthPort)
	client := &http.Client{Timeout: 2 * time.Second}
	Eventually(t, 60*time.Second, "jobset-controller ready", func() (bool, string) {
		if exited, err := p.Exited(); exited {
			t.Fatalf("jobset-controller exited: %v\n%s", err, p.Tail(40))
		}
		resp, err := client.Get(readyz)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return p
}

// installJobSetCRD creates the JobSet CRD from path and waits until JobSets are served.
func (e *Env) installJobSetCRD(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	_, err = e.Extensions.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
	jobsets := dynamic.NewForConfigOrDie(e.Config).Resource(JobSetGVR)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := jobsets.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("JobSet CRD not served: %v", err)
	}
}

// DefaultJobSet sets in an unstructured JobSet's spec what the JobSet webhook would default
// on create (sigs.k8s.io/jobset pkg/webhooks/jobset_webhook.go, Default) where unset:
// successPolicy All, startupPolicy AnyOrder, network.enableDNSHostnames and
// publishNotReadyAddresses true, and per replicatedJob completionMode Indexed and pod
// restartPolicy OnFailure. Without successPolicy and network the controller dereferences
// nil pointers.
func DefaultJobSet(js map[string]any) {
	spec := jsChild(js, "spec")
	jsSetDefault(spec, "successPolicy", map[string]any{"operator": "All"})
	jsSetDefault(spec, "startupPolicy", map[string]any{"startupPolicyOrder": "AnyOrder"})
	network := jsChild(spec, "network")
	jsSetDefault(network, "enableDNSHostnames", true)
	jsSetDefault(network, "publishNotReadyAddresses", true)
	rjobs, _ := spec["replicatedJobs"].([]any)
	for _, r := range rjobs {
		rjob, ok := r.(map[string]any)
		if !ok {
			continue
		}
		jobSpec := jsChild(jsChild(rjob, "template"), "spec")
		jsSetDefault(jobSpec, "completionMode", "Indexed")
		jsSetDefault(jsChild(jsChild(jobSpec, "template"), "spec"), "restartPolicy", "OnFailure")
	}
}

// jsChild returns m[key] as a map, creating it when missing.
func jsChild(m map[string]any, key string) map[string]any {
	c, ok := m[key].(map[string]any)
	if !ok {
		c = map[string]any{}
		m[key] = c
	}
	return c
}

func jsSetDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}
