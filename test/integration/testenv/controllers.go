package testenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"k8s.io/client-go/informers"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1beta1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	jobcontroller "k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/test/integration/util"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	"github.com/lockstep-sched/lockstep/pkg/scheduler"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// StartKubeControllers runs the upstream Job controller and garbage collector in-process,
// as kube-controller-manager would, until the test ends.
func (e *Env) StartKubeControllers(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	t.Cleanup(cancel)
	cfg := rest.CopyConfig(e.Config)
	informerSet := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "job-informers")), 0)
	// Where the native kinds are served (WorkloadWithJob on), the Job controller makes every
	// Job's native Workload and PodGroup, as kube-controller-manager does.
	var workloads schedulinginformers.WorkloadInformer
	var podGroups schedulinginformers.PodGroupInformer
	if e.GroupAPI == podgroup.APINative {
		workloads, podGroups = informerSet.Scheduling().V1beta1().Workloads(), informerSet.Scheduling().V1beta1().PodGroups()
	}
	jc, err := jobcontroller.NewController(ctx, kubernetes.NewForConfigOrDie(rest.AddUserAgent(cfg, "job-controller")),
		informerSet.Core().V1().Pods(), informerSet.Batch().V1().Jobs(), workloads, podGroups)
	if err != nil {
		t.Fatal(err)
	}
	startGC := util.CreateGCController(ctx, t, *cfg, informerSet)
	informerSet.Start(ctx.Done())
	go jc.Run(ctx, 2)
	startGC()
	informerSet.WaitForCacheSync(ctx.Done())
}

// JobGVR is batch/v1 Jobs.
var JobGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// JobController is a running lockstep Job controller.
type JobController struct {
	cancel context.CancelFunc
	done   chan struct{}
	e      *Env

	mu     sync.Mutex
	synced map[string]string // "Kind.group namespace/name" -> resourceVersion last synced
}

// Stop stops the controller and waits for it.
func (j *JobController) Stop() {
	if j.cancel == nil {
		return
	}
	j.cancel()
	<-j.done
	j.cancel = nil
}

// StartJobController runs lockstep's workload controller (Jobs and JobSets) for the
// lockstep-scheduler profile, as the binary does while it leads, until stopped or the test
// ends.
func (e *Env) StartJobController(t *testing.T) *JobController {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	// As lockstep's ServiceAccount: the manifests' RBAC is what lets it create groups owned,
	// with blockOwnerDeletion, by Jobs and JobSets.
	kubeClient := kubernetes.NewForConfigOrDie(e.LockstepConfig)
	adapters, f, err := scheduler.WorkloadKinds(ctx, e.LockstepConfig, kubeClient, informers.NewSharedInformerFactory(kubeClient, 0))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	j := &JobController{cancel: cancel, done: make(chan struct{}), e: e, synced: map[string]string{}}
	opts := jobframework.Options{SchedulerNames: []string{lt.SchedulerName}, Workers: 2, Synced: j.record}
	go func() {
		defer close(j.done)
		if err := jobframework.Run(ctx, e.LockstepConfig, adapters, f, opts); err != nil {
			t.Errorf("workload controller: %v", err)
		}
	}()
	t.Cleanup(j.Stop)
	return j
}

func (j *JobController) record(kind schema.GroupVersionKind, obj jobframework.Object) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.synced[kind.GroupKind().String()+" "+obj.GetNamespace()+"/"+obj.GetName()] = obj.GetResourceVersion()
}

// Settled checks cond once the controller has synced obj (of resource gvr) as the apiserver
// has it now, and every scheduler the test started is idle: a "no groups were made" check
// made after the controller has acted on what it was told, never after a bare wait.
func (j *JobController) Settled(t *testing.T, gvr schema.GroupVersionResource, namespace, name, what string, cond func() (bool, string)) {
	t.Helper()
	resources := dynamic.NewForConfigOrDie(j.e.Config).Resource(gvr).Namespace(namespace)
	Eventually(t, 60*time.Second, fmt.Sprintf("the controller synced %s %s/%s as it is", gvr.Resource, namespace, name), func() (bool, string) {
		obj, err := resources.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		rv := j.synced[obj.GroupVersionKind().GroupKind().String()+" "+namespace+"/"+name]
		return rv == obj.GetResourceVersion(), fmt.Sprintf("synced at %q, now %q", rv, obj.GetResourceVersion())
	})
	j.e.Settled(t, what, cond)
}
