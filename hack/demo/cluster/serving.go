package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/lockstep-sched/lockstep/internal/kuberaycontroller"
	"github.com/lockstep-sched/lockstep/internal/lwscontroller"
)

// The demo runs the upstream LeaderWorkerSet controller (sigs.k8s.io/lws) and KubeRay
// operator (github.com/ray-project/kuberay/ray-operator), both from tools/lws-kuberay, which make
// demo-binaries builds into bin/, so that examples can serve a model across hosts and run a
// Ray cluster, each replica or cluster placed as one gang (manifests/examples/10-*, 11-*).
// They run as test/integration/testenv runs them: LWS with its webhooks registered by URL on
// loopback (its pod webhook labels the pods it makes; without it there are no workers) and a
// throwaway certificate; KubeRay without webhooks. kube-controller-manager's StatefulSet
// controller makes LWS's pods.

const (
	lwsProcess     = "lws-controller"
	kubeRayProcess = "kuberay-operator"
)

// installLWS installs the LeaderWorkerSet CRD and LWS's webhook configurations and returns the
// certificates its webhook server must serve, with the paths the webhooks call.
func (c *Cluster) installLWS(ctx context.Context, client kubernetes.Interface) (*lwscontroller.Certs, []string, error) {
	dir, err := c.moduleDir(ctx, "lws-kuberay", "sigs.k8s.io/lws")
	if err != nil {
		return nil, nil, err
	}
	if err := c.kubectl(ctx, "apply", "--server-side", "-f", lwscontroller.CRDPath(dir)); err != nil {
		return nil, nil, err
	}
	certs, err := lwscontroller.NewCerts()
	if err != nil {
		return nil, nil, err
	}
	mutating, validating, err := lwscontroller.WebhookConfigurations(dir, lwscontroller.WebhookBaseURL(c.ports.LWSWebhook), certs.CA)
	if err != nil {
		return nil, nil, err
	}
	paths, err := lwscontroller.WebhookPaths(mutating, validating)
	if err != nil {
		return nil, nil, err
	}
	admission := client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return nil, nil, err
	}
	return certs, paths, nil
}

// startLWS runs the LWS controller manager and waits until its webhooks answer: its readiness
// probe answers before they are registered, and until they are, LeaderWorkerSets cannot be
// created (failurePolicy Fail, as upstream's).
func (c *Cluster) startLWS(ctx context.Context, certs *lwscontroller.Certs, paths []string) error {
	path, err := lwscontroller.WriteConfig(filepath.Join(c.Dir, "lws"), certs, c.ports.LWSWebhook, c.ports.LWSHealth)
	if err != nil {
		return err
	}
	if err := c.start(lwsProcess, lwsProcess, "--config="+path, "--kubeconfig="+c.Kubeconfig(), "--zap-log-level=2"); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, lwsProcess, lwscontroller.ReadyURL(c.ports.LWSHealth), 2*time.Minute); err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := lwscontroller.WebhookBaseURL(c.ports.LWSWebhook)
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if err := c.alive(lwsProcess); err != nil {
			return false, err
		}
		for _, p := range paths {
			resp, err := client.Post(base+p, "application/json", strings.NewReader("{}"))
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusNotFound {
				return false, nil
			}
		}
		return true, nil
	})
}

// installKubeRay installs the RayCluster, RayJob and RayService CRDs.
func (c *Cluster) installKubeRay(ctx context.Context) error {
	dir, err := c.moduleDir(ctx, "lws-kuberay", "github.com/ray-project/kuberay/ray-operator")
	if err != nil {
		return err
	}
	for _, crd := range kuberaycontroller.CRDPaths(dir) {
		// Server-side: KubeRay's CRDs are too big for client-side apply's annotation.
		if err := c.kubectl(ctx, "apply", "--server-side", "-f", crd); err != nil {
			return err
		}
	}
	return nil
}

// startKubeRay runs the KubeRay operator (no batch scheduler: lockstep's RayCluster adapter
// makes the gang) and waits until it is ready.
func (c *Cluster) startKubeRay(ctx context.Context) error {
	args, err := kuberaycontroller.Args(kuberaycontroller.Options{}, c.Kubeconfig(), c.ports.KubeRayHealth)
	if err != nil {
		return err
	}
	if err := c.start(kubeRayProcess, kubeRayProcess, args...); err != nil {
		return err
	}
	return c.waitHTTP(ctx, kubeRayProcess, kuberaycontroller.ReadyURL(c.ports.KubeRayHealth), 2*time.Minute)
}

// waitServed waits until the resources (kubectl's names) can be listed.
func (c *Cluster) waitServed(ctx context.Context, resources ...string) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.output(ctx, "get", strings.Join(resources, ","), "--all-namespaces")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%v not served: %w", resources, err)
	}
	return nil
}
