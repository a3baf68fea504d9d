// Package trainercontroller prepares the upstream Kubeflow Trainer v2 controller manager
// (github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager, built from the separate
// tools/controllers module) to run next to lockstep and the JobSet controller without
// webhooks and without cert-manager, as the integration tests run it: it turns TrainJobs into
// JobSets and, for runtimes with the coscheduling podGroupPolicy, into scheduler-plugins
// PodGroups (scheduling.x-k8s.io/v1alpha1).
//
// What upstream's main (v2.3.0) does and how it is met here:
//   - It reads a config.trainer.kubeflow.org/v1alpha1 Configuration (--config, decoded
//     strictly; its defaults fill what is unset). Leader election, metrics and its own
//     certificate management (open-policy-agent/cert-controller, which would keep a Secret
//     in kubeflow-system and patch the caBundle of its two webhook configurations) are off:
//     with certManagement.enable false it just takes the certificates as given.
//   - It always registers its TrainJob and runtime webhooks on controller-runtime's webhook
//     server, which then must start, with a certificate read from the default cert dir,
//     $TMPDIR/k8s-webhook-server/serving-certs (the Configuration has no certDir). The
//     process gets TMPDIR set to its work directory (TempDirEnv) and a throwaway
//     self-signed certificate there; the server listens on a loopback port and nothing calls
//     it, as no webhook configuration is registered with the apiserver. TrainJobs and
//     runtimes therefore skip Trainer's validation and defaulting (the defaulter only stamps
//     runtimePatches' times), and the JobSets it creates skip JobSet's: a runtime's JobSet
//     template must set what JobSet's webhook would default.
//   - It needs the Trainer CRDs (CRDPaths) and the JobSet CRD installed before it starts:
//     its TrainJob controller watches JobSets. The PodGroup CRDs are optional: at setup its
//     coscheduling (and Volcano) plugin watches PodGroups only if the API serves them, and
//     otherwise skips the watch without failing (its log of that goes to a discarded
//     logger). A coscheduling TrainJob then fails to reconcile ("no matches for kind
//     PodGroup", event TrainJobResourcesCreationFailed) and gets no JobSet either. Install the
//     scheduler-plugins PodGroup CRD (PodGroupCRDPath) first, too; Volcano's is not needed.
//   - /readyz (ReadyURL) answers once its webhook server listens; its controllers are set
//     up right after, in a goroutine.
package trainercontroller

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockstep-sched/lockstep/internal/jobsetcontroller"
)

// CRDPaths are the TrainJob, TrainingRuntime and ClusterTrainingRuntime CRDs inside the
// github.com/kubeflow/trainer/v2 module directory.
func CRDPaths(moduleDir string) []string {
	dir := filepath.Join(moduleDir, "manifests", "base", "crds")
	return []string{
		filepath.Join(dir, "trainer.kubeflow.org_trainjobs.yaml"),
		filepath.Join(dir, "trainer.kubeflow.org_trainingruntimes.yaml"),
		filepath.Join(dir, "trainer.kubeflow.org_clustertrainingruntimes.yaml"),
	}
}

// PodGroupCRDPath is the scheduler-plugins PodGroup CRD (podgroups.scheduling.x-k8s.io)
// inside the directory of the sigs.k8s.io/scheduler-plugins module Trainer requires.
func PodGroupCRDPath(moduleDir string) string {
	return filepath.Join(moduleDir, "config", "crd", "bases", "scheduling.x-k8s.io_podgroups.yaml")
}

// WriteConfig writes into dir the controller manager's configuration and returns its path:
// leader election, metrics and certificate management off, the webhook server on
// 127.0.0.1:webhookPort, the health probe on healthPort. It also writes the webhook server's
// throwaway certificate where the process finds it when run with TempDirEnv(dir).
func WriteConfig(dir string, webhookPort, healthPort int) (string, error) {
	if err := os.MkdirAll(CertDir(dir), 0o700); err != nil {
		return "", err
	}
	if err := jobsetcontroller.SelfSignedCert(CertDir(dir)); err != nil {
		return "", err
	}
	config := fmt.Sprintf(`apiVersion: config.trainer.kubeflow.org/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
certManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
clientConnection:
  qps: 500
  burst: 1000
`, webhookPort, healthPort)
	path := filepath.Join(dir, "config.yaml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// CertDir is where the webhook server of a process run with TempDirEnv(dir) reads its
// certificate: controller-runtime's default, below os.TempDir().
func CertDir(dir string) string { return filepath.Join(dir, "k8s-webhook-server", "serving-certs") }

// TempDirEnv is the environment variable to run the process with so that its webhook server
// reads the certificate WriteConfig wrote into dir.
func TempDirEnv(dir string) string { return "TMPDIR=" + dir }

// ReadyURL is the probe that answers once the webhook server runs; the controllers are set up
// right after.
func ReadyURL(healthPort int) string { return fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort) }
