// Package kuberaycontroller prepares the upstream KubeRay operator
// (github.com/ray-project/kuberay/ray-operator, built from the separate tools/lws-kuberay module)
// to run next to lockstep as the integration tests run it: it turns RayClusters into a head
// pod and worker pods (and Services), RayJobs into a RayCluster and a submitter batch/v1 Job,
// and, with the scheduler-plugins batch scheduler, gang-labelled RayClusters into
// scheduler-plugins PodGroups (scheduling.x-k8s.io/v1alpha1).
//
// What upstream's main (v1.4.0, main.go) does and how it is met here:
//   - Without --config it takes its configuration from flags (Args): leader election is on
//     by default and is turned off, metrics are served on :8080 by default and are turned off
//     (--metrics-addr=0), the health probe listens on a loopback port (ReadyURL).
//   - Its RayCluster, RayJob and RayService controllers all start at once and watch their
//     kinds: install the three CRDs (CRDPaths) first.
//   - Its only webhook (RayCluster validation) is registered only when the environment has
//     ENABLE_WEBHOOKS=true; it is not, so there is no webhook server and no certificate: a
//     RayCluster skips that validation (the CRD's schema still applies).
//   - It asks discovery whether the cluster is OpenShift (any *.openshift.io group); on the
//     test apiserver it is not, so it uses Ingresses, never Routes (none are created unless
//     a RayCluster asks for an ingress).
//   - The batch scheduler (Options.BatchScheduler, --batch-scheduler) is chosen once at start
//     (controllers/ray/batchscheduler/schedulermanager.go). With BatchSchedulerPlugins it
//     starts a second cache for scheduler-plugins PodGroups; it lists nothing until a gang
//     RayCluster is reconciled, so the PodGroup CRD need not exist at start, but a
//     RayCluster labelled GangSchedulingLabel fails to reconcile (no pods) until it does.
package kuberaycontroller

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Batch schedulers (--batch-scheduler) the tests run the operator with.
const (
	// BatchSchedulerNone is KubeRay's default: no batch scheduler, pods are created as their
	// templates say.
	BatchSchedulerNone = ""
	// BatchSchedulerPlugins is KubeRay's scheduler-plugins integration
	// (controllers/ray/batchscheduler/scheduler-plugins): for a RayCluster labelled
	// GangSchedulingLabel it creates a scheduler-plugins PodGroup named after the cluster
	// and labels every Ray pod PodGroupLabel=<cluster>. It never sets a pod's schedulerName
	// (KubeRay assumes the scheduler-plugins build replaces the default scheduler), so a
	// template's schedulerName: lockstep-scheduler is kept.
	BatchSchedulerPlugins = "scheduler-plugins"
)

// Labels KubeRay reads on a RayCluster or writes on its pods.
const (
	// GangSchedulingLabel on a RayCluster (any value, even "") asks the batch scheduler for a
	// gang: without it the scheduler-plugins integration does nothing.
	GangSchedulingLabel = "ray.io/gang-scheduling-enabled"
	// PodGroupLabel is the scheduler-plugins label the integration puts on a gang's pods,
	// valued the RayCluster's name (the PodGroup's).
	PodGroupLabel = "scheduling.x-k8s.io/pod-group"
	// ClusterLabel, NodeTypeLabel (head, worker), GroupLabel (headgroup or the worker group's
	// name) and IsRayNodeLabel ("yes") are on every Ray pod (controllers/ray/common/pod.go,
	// labelPod); the first three cannot be overridden by a template's labels.
	ClusterLabel   = "ray.io/cluster"
	NodeTypeLabel  = "ray.io/node-type"
	GroupLabel     = "ray.io/group"
	IsRayNodeLabel = "ray.io/is-ray-node"
	// HeadGroup is the ray.io/group of a head pod.
	HeadGroup = "headgroup"
	// CreatedByLabel is valued "kuberay-operator" on Ray pods and submitter Jobs; the
	// operator's cache only sees the Jobs that carry it.
	CreatedByLabel = "app.kubernetes.io/created-by"
	// OriginatedFromNameLabel and OriginatedFromCRDLabel name the RayJob (or RayService) a
	// RayCluster or submitter Job was made for.
	OriginatedFromNameLabel = "ray.io/originated-from-cr-name"
	OriginatedFromCRDLabel  = "ray.io/originated-from-crd"
)

// CRDPaths are the RayCluster, RayJob and RayService CRDs inside the
// github.com/ray-project/kuberay/ray-operator module directory.
func CRDPaths(moduleDir string) []string {
	dir := filepath.Join(moduleDir, "config", "crd", "bases")
	return []string{
		filepath.Join(dir, "ray.io_rayclusters.yaml"),
		filepath.Join(dir, "ray.io_rayjobs.yaml"),
		filepath.Join(dir, "ray.io_rayservices.yaml"),
	}
}

// Options configure the operator.
type Options struct {
	// BatchScheduler is BatchSchedulerNone or BatchSchedulerPlugins (KubeRay also knows
	// volcano and yunikorn, whose CRDs and schedulers the tests do not have).
	BatchScheduler string
}

// Args are the operator's command-line arguments: kubeconfig, leader election and metrics
// off, the health probe on 127.0.0.1:healthPort, logs in console format (zap's default
// level, info, at which KubeRay logs every reconcile step), and the batch scheduler. Flags
// are used rather than a --config file: the file's defaults turn leader election and
// metrics back on for anything it omits.
func Args(opts Options, kubeconfig string, healthPort int) ([]string, error) {
	switch opts.BatchScheduler {
	case BatchSchedulerNone, BatchSchedulerPlugins:
	default:
		return nil, fmt.Errorf("batch scheduler %q: only %q and none are supported here", opts.BatchScheduler, BatchSchedulerPlugins)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--enable-leader-election=false",
		"--metrics-addr=0",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
		"--log-stdout-encoder=console",
	}
	if opts.BatchScheduler != BatchSchedulerNone {
		args = append(args, "--batch-scheduler="+opts.BatchScheduler)
	}
	return args, nil
}

// ReadyURL is the operator's readiness probe (a ping): it answers once the manager runs,
// before its caches have synced.
func ReadyURL(healthPort int) string { return fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort) }
