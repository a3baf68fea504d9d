package gang

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

const testScheduler = "lockstep-scheduler"

func init() {
	schedmetrics.Register() // the framework records into the scheduler's metrics
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testEnv is a scheduling framework with LockstepGang at every extension point it
// implements, fed by fake clients and real informers.
type testEnv struct {
	ctx       context.Context
	fh        framework.Framework
	plugin    *Gang
	activated *activator
	recorder  *events.FakeRecorder
}

type activator struct{ pods []string }

func (a *activator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	for k := range pods {
		a.pods = append(a.pods, k)
	}
}

// newTestEnv starts the framework with the given group objects, pods and nodes.
func newTestEnv(t *testing.T, groups []runtime.Object, pods []*v1.Pod, nodes []*v1.Node) *testEnv {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)

	var kubeObjs []runtime.Object
	for _, p := range pods {
		kubeObjs = append(kubeObjs, p)
	}
	informerFactory := informers.NewSharedInformerFactory(kubefake.NewClientset(kubeObjs...), 0)
	env := &testEnv{ctx: ctx, activated: &activator{}, recorder: events.NewFakeRecorder(100)}
	registry := frameworkruntime.Registry{
		defaultbinder.Name: defaultbinder.New,
		Name: func(ctx context.Context, obj runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
			m, err := podgroup.NewManager(ctx, fh, fake.NewSimpleClientset(groups...))
			if err != nil {
				return nil, err
			}
			args, err := getArgs(obj)
			if err != nil {
				return nil, err
			}
			env.plugin = newGang(ctx, args, fh, m)
			return env.plugin, nil
		},
	}
	enabled := schedconfig.PluginSet{Enabled: []schedconfig.Plugin{{Name: Name}}}
	profile := &schedconfig.KubeSchedulerProfile{
		SchedulerName: testScheduler,
		Plugins: &schedconfig.Plugins{
			QueueSort:  enabled,
			PreFilter:  enabled,
			PostFilter: enabled,
			Reserve:    enabled,
			Permit:     enabled,
			Bind:       schedconfig.PluginSet{Enabled: []schedconfig.Plugin{{Name: defaultbinder.Name}}},
		},
		PluginConfig: []schedconfig.PluginConfig{{Name: Name, Args: defaultArgs()}},
	}
	fh, err := frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithInformerFactory(informerFactory),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodActivator(env.activated),
		frameworkruntime.WithEventRecorder(env.recorder),
		frameworkruntime.WithSnapshotSharedLister(cache.NewSnapshot(nil, nodes)),
	)
	if err != nil {
		t.Fatal(err)
	}
	env.fh = fh
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return env.plugin.groups.HasSynced(), nil
	}); err != nil {
		t.Fatal("pods never synced into the group model")
	}
	return env
}

func gangPG(name string, minCount int32, parent string) *v1alpha1.PodGroup {
	g := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pg-" + name), CreationTimestamp: metav1.NewTime(epoch)},
		Spec:       v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: minCount}}},
	}
	if parent != "" {
		g.Spec.ParentCompositePodGroupName = ptr.To(parent)
	}
	return g
}

func compositePG(name string, minGroupCount int32) *v1alpha1.CompositePodGroup {
	return &v1alpha1.CompositePodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("cpg-" + name), CreationTimestamp: metav1.NewTime(epoch)},
		Spec: v1alpha1.CompositePodGroupSpec{SchedulingPolicy: v1alpha1.CompositePodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: minGroupCount}}},
	}
}

// member returns pod <group>-<i>; group "" for a pod without group.
func member(group string, i int) *v1.Pod {
	name := fmt.Sprintf("%s-%d", group, i)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: map[string]string{}},
		Spec:       v1.PodSpec{SchedulerName: testScheduler},
	}
	if group != "" {
		p.Labels[v1alpha1.PodGroupLabel] = group
	}
	return p
}

func members(group string, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = member(group, i)
	}
	return out
}

func node(name, cpu string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}},
	}
}

func klogDiscard() klog.Logger { return klog.Background().V(10) }
