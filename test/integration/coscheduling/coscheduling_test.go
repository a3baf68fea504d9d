// Package coscheduling checks scheduler-plugins PodGroups (scheduling.x-k8s.io/v1alpha1,
// the CRD from the sigs.k8s.io/scheduler-plugins module) under lockstep, against a real
// apiserver with the real scheduler and workload controller: a flat gang created the way
// the MPI operator creates one (a launcher Job and worker pods), minResources, the status
// lockstep keeps, the CRD installed while lockstep runs, and the short names kubectl resolves
// with both CRDs served.
package coscheduling

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

// label is the scheduler-plugins membership label.
const label = "scheduling.x-k8s.io/pod-group"

// podGroup is a scheduler-plugins PodGroup.
func podGroup(ns, name string, minMember int64, spec map[string]any) *unstructured.Unstructured {
	s := map[string]any{"minMember": minMember}
	for k, v := range spec {
		s[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1",
		"kind":       "PodGroup",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       s,
	}}
}

type env struct {
	*testenv.Env
	t      *testing.T
	ns     string
	groups dynamic.ResourceInterface
}

// start runs the control plane (with the scheduler-plugins CRD unless withoutCRD), the Job
// and garbage collectors, lockstep's workload controller and scheduler, and kubelets that
// keep bound pods running.
func start(t *testing.T, withCRD bool, args testenv.GangArgs, nodes ...*v1.Node) *env {
	e := &env{Env: testenv.Start(t), t: t}
	if withCRD {
		e.InstallSchedulerPluginsCRD(t)
	}
	e.ns = e.Namespace(t, "cosched")
	e.CreateNodes(t, nodes...)
	e.StartKubeControllers(t)
	e.StartJobController(t)
	if args == nil {
		args = testenv.GangArgs{}
	}
	args["backoffSeconds"] = 1
	e.StartScheduler(t, args)
	e.RunPods(t, e.ns, nil)
	e.groups = dynamic.NewForConfigOrDie(e.Config).Resource(testenv.SchedulerPluginsPodGroupGVR).Namespace(e.ns)
	return e
}

func (e *env) createGroup(pg *unstructured.Unstructured) {
	e.t.Helper()
	if _, err := e.groups.Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// status returns a scheduler-plugins PodGroup's status.
func (e *env) status(name string) map[string]any {
	e.t.Helper()
	pg, err := e.groups.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	st, _, _ := unstructured.NestedMap(pg.Object, "status")
	return st
}

// waitPhase waits until a scheduler-plugins PodGroup's status has phase and the counts want.
func (e *env) waitPhase(name, phase string, want map[string]int64) map[string]any {
	e.t.Helper()
	var st map[string]any
	testenv.Eventually(e.t, 60*time.Second, fmt.Sprintf("PodGroup %s %s %v", name, phase, want), func() (bool, string) {
		st = e.status(name)
		if st["phase"] != phase {
			return false, fmt.Sprintf("status %v", st)
		}
		for k, v := range want {
			if got, _ := st[k].(int64); got != v {
				return false, fmt.Sprintf("status %v", st)
			}
		}
		return true, ""
	})
	return st
}

// TestMPIJobStylePodGroup creates what the MPI operator creates for an MPIJob of 4
// workers under scheduler-plugins' coscheduling: a PodGroup of minMember 5 with minResources
// and scheduleTimeoutSeconds, the worker pods, and the launcher as a batch Job, all labelled
// for the PodGroup. Nothing binds while the launcher does not exist (4 of 5), then all 5
// bind together, the launcher a member like the workers (not a gang of its own Job); the
// mirror PodGroup carries the scheduler-plugins PodGroup's settings, and its status is
// kept as scheduler-plugins' controller would.
func TestMPIJobStylePodGroup(t *testing.T) {
	e := start(t, true, nil, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	e.createGroup(podGroup(e.ns, "pi", 5, map[string]any{
		"scheduleTimeoutSeconds": int64(90),
		"minResources":           map[string]any{"cpu": "5"},
	}))
	var workers []string
	for i := range 4 {
		name := fmt.Sprintf("pi-worker-%d", i)
		workers = append(workers, name)
		e.CreatePods(t, lt.GroupPod(e.ns, name, "").Label(label, "pi").Req(lt.CPU("1")).Obj())
	}
	e.Settled(t, "no worker binds while the gang has 4 of 5 pods", func() (bool, string) {
		n := e.BoundCount(t, e.ns, workers...)
		return n == 0, fmt.Sprintf("%d bound", n)
	})
	// The status is the controller's write, not the scheduler's: idle is not enough to have it.
	e.waitPhase("pi", "Pending", nil)

	launcher := lt.MakeJob().Namespace(e.ns).Name("pi-launcher").Parallelism(1).Completions(1).BackoffLimit(0).
		TemplateLabel(label, "pi").Req(lt.CPU("1")).Obj()
	if _, err := e.Client.BatchV1().Jobs(e.ns).Create(context.Background(), launcher, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var launcherPod string
	testenv.Eventually(t, 30*time.Second, "the launcher's pod", func() (bool, string) {
		list, err := e.Client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=pi-launcher"})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%v", err)
		}
		launcherPod = list.Items[0].Name
		return true, ""
	})
	e.WaitBound(t, e.ns, append(workers, launcherPod)...)

	mirror, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), "pi", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lockstep's PodGroup mirroring pi: %v", err)
	}
	if g := mirror.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 5 {
		t.Errorf("mirror policy %+v, want gang of 5", mirror.Spec.SchedulingPolicy)
	}
	if ptr.Deref(mirror.Spec.ScheduleTimeoutSeconds, 0) != 90 || mirror.Spec.MinResources.Cpu().String() != "5" {
		t.Errorf("mirror scheduleTimeoutSeconds %v minResources %v, want 90 and cpu 5", mirror.Spec.ScheduleTimeoutSeconds, mirror.Spec.MinResources)
	}
	if ref := metav1.GetControllerOf(mirror); ref == nil || ref.Kind != "PodGroup" || ref.APIVersion != "scheduling.x-k8s.io/v1alpha1" {
		t.Errorf("mirror's controller %v, want the scheduler-plugins PodGroup", ref)
	}
	if _, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// (scheduler-plugins' current CRD has no status.scheduled: the apiserver prunes it.)
	st := e.waitPhase("pi", "Running", map[string]int64{"running": 5})
	if st["scheduleStartTime"] == nil {
		t.Errorf("status %v: want scheduleStartTime set", st)
	}
	groups, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups.Items) != 1 {
		t.Errorf("lockstep PodGroups %d, want only the mirror (the launcher Job gets no gang of its own)", len(groups.Items))
	}
}

// TestMinResourcesRefusesAGangTheClusterCannotHold: a PodGroup whose minResources exceed
// the cluster's free allocatable binds nothing, and its condition says which resource is
// short; other pods schedule as usual.
func TestMinResourcesRefusesAGangTheClusterCannotHold(t *testing.T) {
	e := start(t, true, nil, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	e.createGroup(podGroup(e.ns, "big", 2, map[string]any{"minResources": map[string]any{"cpu": "9"}}))
	e.CreatePods(t, lt.GroupPod(e.ns, "big-0", "").Label(label, "big").Req(lt.CPU("1")).Obj(),
		lt.GroupPod(e.ns, "big-1", "").Label(label, "big").Req(lt.CPU("1")).Obj())
	e.waitMirror("big")
	e.WaitCondition(t, "PodGroup", e.ns, "big", metav1.ConditionFalse, "Unschedulable", "minResources cpu=9")
	e.AssertUnbound(t, e.ns, "big-0", "big-1")
	e.CreatePods(t, lt.GroupPod(e.ns, "plain", "").Req(lt.CPU("1")).Obj())
	e.WaitBound(t, e.ns, "plain")
}

// TestCRDInstalledWhileLockstepRuns: without the scheduler-plugins CRD, a labelled pod
// waits for its PodGroup for jobGroupTimeoutSeconds, then is scheduled as a pod of no group
// (as scheduler-plugins does when the PodGroup is missing) and told why; once the CRD is
// installed, with no restart, PodGroups are gangs.
func TestCRDInstalledWhileLockstepRuns(t *testing.T) {
	e := start(t, false, testenv.GangArgs{"jobGroupTimeoutSeconds": 4}, lt.MakeNode("n1", "4").Obj(), lt.MakeNode("n2", "4").Obj())
	e.CreatePods(t, lt.GroupPod(e.ns, "early", "").Label(label, "none").Req(lt.CPU("1")).Obj())
	e.WaitEvent(t, e.ns, "early", "PodGroupMissing", "scheduled without gang semantics")
	e.WaitBound(t, e.ns, "early")

	e.InstallSchedulerPluginsCRD(t)
	e.createGroup(podGroup(e.ns, "late", 3, nil))
	e.CreatePods(t, lt.GroupPod(e.ns, "late-0", "").Label(label, "late").Req(lt.CPU("1")).Obj(),
		lt.GroupPod(e.ns, "late-1", "").Label(label, "late").Req(lt.CPU("1")).Obj())
	e.Settled(t, "2 of 3 members do not bind", func() (bool, string) {
		n := e.BoundCount(t, e.ns, "late-0", "late-1")
		return n == 0, fmt.Sprintf("%d bound", n)
	})
	e.CreatePods(t, lt.GroupPod(e.ns, "late-2", "").Label(label, "late").Req(lt.CPU("1")).Obj())
	e.WaitBound(t, e.ns, "late-0", "late-1", "late-2")
	e.waitPhase("late", "Running", map[string]int64{"running": 3})
}

// waitMirror waits for lockstep's PodGroup mirroring scheduler-plugins PodGroup name.
func (e *env) waitMirror(name string) {
	e.t.Helper()
	testenv.Eventually(e.t, 30*time.Second, "lockstep's PodGroup mirroring "+name, func() (bool, string) {
		_, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// TestShortNamesResolveAsKubectlDoes serves the real scheduler-plugins CRD next to
// lockstep's and resolves short names the way kubectl does (discovery and its shortcut
// expander): `pg` is scheduler-plugins' PodGroup, as a migrating team's runbooks expect,
// lockstep's own short names reach lockstep's kinds, and no short name is claimed by both.
func TestShortNamesResolveAsKubectlDoes(t *testing.T) {
	e := testenv.Start(t)
	e.InstallSchedulerPluginsCRD(t)
	disc := memory.NewMemCacheClient(e.Client.Discovery())
	var warnings []string
	expander := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(disc), disc,
		func(w string) { warnings = append(warnings, w) })
	for short, want := range map[string]schema.GroupResource{
		"pg":     testenv.SchedulerPluginsPodGroupGVR.GroupResource(),
		"pgs":    testenv.SchedulerPluginsPodGroupGVR.GroupResource(),
		"lspg":   v1alpha1.Resource("podgroups"),
		"lscpg":  v1alpha1.Resource("compositepodgroups"),
		"lswl":   v1alpha1.Resource("workloads"),
		"lspgs":  v1alpha1.Resource("podgroups"),
		"lscpgs": v1alpha1.Resource("compositepodgroups"),
	} {
		got, err := expander.ResourceFor(schema.GroupVersionResource{Resource: short})
		if err != nil || got.GroupResource() != want {
			t.Errorf("kubectl get %s: %v (%v), want %v", short, got.GroupResource(), err, want)
		}
	}
	if len(warnings) > 0 {
		t.Errorf("kubectl would warn: %q", warnings)
	}

	_, lists, err := e.Client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]sets.Set[string]{}
	for _, list := range lists {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, r := range list.APIResources {
			for _, n := range append(append([]string{}, r.ShortNames...), r.Categories...) {
				if claims[n] == nil {
					claims[n] = sets.New[string]()
				}
				claims[n].Insert(gv.Group)
			}
		}
	}
	for n, groups := range claims {
		if groups.Has(v1alpha1.SchemeGroupVersion.Group) && groups.Len() > 1 {
			t.Errorf("%q is claimed by %v", n, sets.List(groups))
		}
	}
}

// TestIndexedJobOfASchedulerPluginsPodGroupGetsNoGroupOfItsOwn: an Indexed Job (a gang by
// lockstep's Job rule) whose pods name a scheduler-plugins PodGroup binds as that PodGroup's
// gang, through its mirror, and gets no Workload or PodGroup of its own, which its pods would
// never join ("0/0 pods, waiting for pods" for good). Groups made for it before (by an
// earlier release, here by hand) are deleted.
func TestIndexedJobOfASchedulerPluginsPodGroupGetsNoGroupOfItsOwn(t *testing.T) {
	e := start(t, true, nil, lt.MakeNode("n1", "4").Obj())
	ctx := context.Background()
	e.createGroup(podGroup(e.ns, "sp-idx", 2, nil))
	job := lt.MakeJob().Namespace(e.ns).Name("sp-idx").Indexed(2).TemplateLabel(label, "sp-idx").Req(lt.CPU("1")).Obj()
	job, err := e.Client.BatchV1().Jobs(e.ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The phantoms an earlier release made for the Job.
	phantom := filing.JobGroupName(job.Name, job.UID)
	owner := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}
	wl := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: phantom, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: v1alpha1.WorkloadSpec{PodGroupTemplates: []v1alpha1.PodGroupTemplate{{Name: filing.JobTemplateName,
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2}}}}}}
	if _, err := e.Lockstep.SchedulingV1alpha1().Workloads(e.ns).Create(ctx, wl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg := lt.MakePodGroup().Namespace(e.ns).Name(phantom).Gang(2).Owner("batch/v1", "Job", job.Name, string(job.UID)).Obj()
	if _, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	e.waitPhase("sp-idx", "Running", map[string]int64{"running": 2})
	testenv.Eventually(t, 60*time.Second, "only the mirror and its Workload left", func() (bool, string) {
		pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		wls, err := e.Lockstep.SchedulingV1alpha1().Workloads(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var have []string
		for _, p := range pgs.Items {
			have = append(have, "PodGroup "+p.Name)
		}
		for _, w := range wls.Items {
			have = append(have, "Workload "+w.Name)
		}
		return fmt.Sprint(have) == "[PodGroup sp-idx Workload sp-idx]", fmt.Sprint(have) // the mirror and its Workload
	})
	e.WaitEvent(t, e.ns, "sp-idx", "PodGroupDeleted", "the pods name a group of their own")
	// A second phantom, made after the first was deleted, reaches the controller's informer
	// after that deletion: once the controller has deleted it too, it has synced the Job on
	// the news of the first deletion (one object's syncs never overlap), and made nothing.
	again := lt.MakePodGroup().Namespace(e.ns).Name(phantom+"-again").Gang(2).Owner("batch/v1", "Job", job.Name, string(job.UID)).Obj()
	if _, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Create(ctx, again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the second phantom deleted", func() (bool, string) {
		_, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).Get(ctx, again.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	e.Settled(t, "no group made again for the Job", func() (bool, string) {
		pgs, err := e.Lockstep.SchedulingV1alpha1().PodGroups(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pgs.Items) == 1, fmt.Sprintf("%d PodGroups", len(pgs.Items))
	})
}
