package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/test/integration/framework"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// Env is a running control plane with lockstep's CRDs installed.
type Env struct {
	// Config and Kubeconfig reach the apiserver as its superuser (the test's own clients,
	// the upstream controllers).
	Config     *rest.Config
	Kubeconfig string
	// LockstepConfig and LockstepKubeconfig reach it as lockstep's ServiceAccount, with the
	// RBAC of manifests/rbac.yaml: the scheduler and the workload controller run so.
	LockstepConfig     *rest.Config
	LockstepKubeconfig string
	Client             kubernetes.Interface
	Lockstep           versioned.Interface
	Extensions         apiextensionsclient.Interface
	// GroupAPI is the API the test writes its groups in (CreatePodGroups, CreateComposites,
	// CreatePods' members, conditions read): lockstep's kinds, or the native ones, which
	// StartFor serves.
	GroupAPI podgroup.API

	mu sync.Mutex
	// schedulers are those StartScheduler started (WaitIdle).
	schedulers []*Scheduler
}

// GroupAPIs are the APIs a test runs its groups in, for tests that run for both: lockstep's
// own kinds and the native scheduling.k8s.io ones.
var GroupAPIs = []podgroup.API{podgroup.APILockstep, podgroup.APINative}

// APIName names an API in subtest names.
func APIName(api podgroup.API) string {
	if api == podgroup.APINative {
		return "native"
	}
	return "lockstep"
}

// ForEachAPI runs test once per GroupAPI, as a subtest named for it.
func ForEachAPI(t *testing.T, test func(t *testing.T, api podgroup.API)) {
	t.Helper()
	for _, api := range GroupAPIs {
		t.Run(APIName(api), func(t *testing.T) { test(t, api) })
	}
}

// StartFor runs a kube-apiserver for a test of groups in api: Start, or StartServingNative
// with GroupAPI native (the scheduler then runs as its own process, StartScheduler).
func StartFor(t *testing.T, api podgroup.API) *Env {
	t.Helper()
	if api == podgroup.APINative {
		return StartServingNative(t)
	}
	return Start(t)
}

// lockstepUser is the identity manifests/rbac.yaml grants lockstep's permissions to.
var lockstepUser = rest.ImpersonationConfig{
	UserName: "system:serviceaccount:lockstep-system:lockstep-scheduler",
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:lockstep-system", "system:authenticated"},
}

// Start runs a kube-apiserver for the test, installs the CRDs and returns clients.
func Start(t *testing.T) *Env {
	t.Helper()
	env := StartWithoutCRDs(t)
	env.InstallCRDs(t)
	return env
}

// StartServingNative runs a kube-apiserver that serves the native scheduling.k8s.io kinds
// (Workload and PodGroup v1beta1, v1alpha3 with CompositePodGroup: the workload gates on, as
// a cluster that enables them, WorkloadWithJob for Jobs' spec.scheduling and the Job
// controller's groups), with lockstep's CRDs. The gates are the test process's, which
// an in-process scheduler would share: run lockstep as its own process (StartProcess), with
// its own gates off, as it is deployed.
func StartServingNative(t *testing.T) *Env {
	t.Helper()
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.GenericWorkload:                 true,
		features.CompositePodGroup:               true,
		features.TopologyAwareWorkloadScheduling: true,
		features.WorkloadWithJob:                 true,
	})
	env := startAPIServer(t, "--runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true")
	env.InstallCRDs(t)
	env.GroupAPI = podgroup.APINative
	return env
}

// StartWithoutCRDs runs a kube-apiserver for the test, without lockstep's CRDs.
func StartWithoutCRDs(t *testing.T) *Env {
	t.Helper()
	return startAPIServer(t)
}

func startAPIServer(t *testing.T, extra ...string) *Env {
	t.Helper()
	NoteFailure(t)
	flags := []string{
		"--endpoint-reconciler-type=none",
		// No service-account controller runs, and no node lifecycle controller would lift the
		// not-ready taint that TaintNodesByCondition puts on new nodes.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		// lockstep runs with the manifests' RBAC, and may set blockOwnerDeletion on the groups
		// it makes for Jobs and JobSets only as the RBAC lets it update their finalizers.
		"--authorization-mode=RBAC",
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
	}
	flags = append(flags, extra...)
	server := kubeapiservertesting.StartTestServerOrDie(t, nil, flags, framework.SharedEtcd())
	t.Cleanup(server.TearDownFn)
	cfg := rest.CopyConfig(server.ClientConfig)
	cfg.QPS, cfg.Burst = 500, 1000
	jsonCfg := rest.CopyConfig(cfg)
	jsonCfg.ContentType = "application/json" // CRDs do not speak protobuf
	env := &Env{
		Config:     cfg,
		Client:     kubernetes.NewForConfigOrDie(cfg),
		Lockstep:   versioned.NewForConfigOrDie(jsonCfg),
		Extensions: apiextensionsclient.NewForConfigOrDie(cfg),
	}
	env.Kubeconfig = writeKubeconfig(t, cfg)
	env.LockstepConfig = rest.CopyConfig(cfg)
	env.LockstepConfig.Impersonate = lockstepUser
	env.LockstepKubeconfig = writeKubeconfig(t, env.LockstepConfig)
	for _, f := range []string{"namespace.yaml", "rbac.yaml"} {
		if err := apply(context.Background(), env.Client, filepath.Join(RepoRoot(), "manifests", f)); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

// InstallCRDs creates every CRD in manifests/crds and waits until the API serves them.
func (e *Env) InstallCRDs(t *testing.T) {
	t.Helper()
	if err := InstallCRDs(context.Background(), e.Extensions, e.Lockstep); err != nil {
		t.Fatal(err)
	}
}

// InstallCRDs creates every CRD in manifests/crds, waits until each is established and
// until lockstep's API answers (discovery and the REST mapping lag establishment).
func InstallCRDs(ctx context.Context, extensions apiextensionsclient.Interface, lockstep versioned.Interface) error {
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "manifests", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in manifests/crds: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if _, err := extensions.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := lockstep.SchedulingV1alpha1().CompositePodGroups("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		_, err = lockstep.SchedulingV1alpha1().PodGroups("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("lockstep API not served: %w", err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for cfg into the test's temp dir.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteKubeconfig writes a kubeconfig for cfg (its server, CA, credentials) to path.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateGroups:     cfg.Impersonate.Groups,
	}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}
