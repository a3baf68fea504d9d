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
// tools/controllers/go.mod) runs as its own process, built from the separate tools/controllers
// module so that its dependencies never touch lockstep's go.mod. No webhook is registered with
// the apiserver: test JobSets must set what the JobSet webhook would default (see
// DefaultJobSet).

// JobSetGVR is the JobSet resource served once the JobSet CRD is installed.
var JobSetGVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// toolBuild is an upstream controller built from a module under tools/ once per test process.
type toolBuild struct {
	// module is the directory under tools/ whose go.mod pins the controller.
	module     string
	once       sync.Once
	binary     string
	moduleDirs []string
	err        error
}

var jobsetBuild = toolBuild{module: "controllers"}

// get builds package pkg of the b.module module under tools/ into bin/name once per test process
// and returns the binary with the directories (in the module cache) of modules, in order: the
// upstream modules' CRDs are read from there.
func (b *toolBuild) get(t *testing.T, name, pkg string, modules ...string) (binary string, moduleDirs []string) {
	t.Helper()
	b.once.Do(func() {
		tools := filepath.Join(RepoRoot(), "tools", b.module)
		b.binary = filepath.Join(RepoRoot(), "bin", name)
		build := exec.Command("go", "build", "-o", b.binary, pkg)
		build.Dir = tools
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s in tools/%s: %v\n%s", pkg, b.module, err, out)
			return
		}
		list := exec.Command("go", append([]string{"list", "-m", "-f", "{{.Dir}}"}, modules...)...)
		list.Dir = tools
		out, err := list.Output()
		b.moduleDirs = strings.Fields(string(out))
		if err != nil || len(b.moduleDirs) != len(modules) {
			b.err = fmt.Errorf("go list -m %s in tools/%s: %q %v", strings.Join(modules, " "), b.module, out, err)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.binary, b.moduleDirs
}

// jobSetController builds bin/jobset-controller once per test process and returns it with the
// directory of the sigs.k8s.io/jobset module.
func jobSetController(t *testing.T) (binary, moduleDir string) {
	t.Helper()
	bin, dirs := jobsetBuild.get(t, "jobset-controller", "sigs.k8s.io/jobset", "sigs.k8s.io/jobset")
	return bin, dirs[0]
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
	e.installCRD(t, jobsetcontroller.CRDPath(moduleDir), JobSetGVR)

	dir := t.TempDir()
	healthPort := freePort(t)
	cfgPath, err := jobsetcontroller.WriteConfig(dir, freePort(t), healthPort)
	if err != nil {
		t.Fatal(err)
	}

	p := run(t, "jobset-controller", dir, bin, "--config="+cfgPath, "--kubeconfig="+e.Kubeconfig, "--zap-log-level=2")

	// /readyz answers once the webhook server runs, which upstream's main starts after the
	// JobSet and Pod reconcilers are set up.
	waitReady(t, p, jobsetcontroller.ReadyURL(healthPort))
	return p
}

// waitReady waits up to a minute until url (a controller's readiness probe) answers 200 OK,
// and fails the test at once if the process exits.
func waitReady(t *testing.T, p *Process, url string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	Eventually(t, 60*time.Second, p.Name+" ready", func() (bool, string) {
		if exited, err := p.Exited(); exited {
			t.Fatalf("%s exited: %v\n%s", p.Name, err, p.Tail(40))
		}
		resp, err := client.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// installCRD creates the CRD in the file at path (upstream's, from the module cache) and
// waits until the API serves gvr, one of its resources.
func (e *Env) installCRD(t *testing.T, path string, gvr schema.GroupVersionResource) {
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
	resources := dynamic.NewForConfigOrDie(e.Config).Resource(gvr)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := resources.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not served: %v", crd.Name, err)
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
