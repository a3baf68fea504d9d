package kuberay

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lockstep-sched/lockstep/internal/kuberaycontroller"
	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// With the operator's scheduler-plugins batch scheduler on, a RayCluster labelled
// ray.io/gang-scheduling-enabled (a head and 3 workers, minReplicas 2, 2 cpu each) gets from
// KubeRay a scheduler-plugins PodGroup named after it (minMember head + replicas = 4, owned by
// the RayCluster, not as controller), and its pods the label scheduling.x-k8s.io/pod-group.
// lockstep still makes exactly one group for it: the RayCluster's Workload and PodGroup,
// controlled by the RayCluster, minCount head + minReplicas = 3; nothing of lockstep's is
// controlled by the scheduler-plugins PodGroup. The cluster binds whole on room for its 4 pods.
func TestKubeRaySchedulerPluginsIntegrationOn(t *testing.T) {
	e := start(t, []testenv.KubeRayOption{testenv.KubeRayBatchScheduler(kuberaycontroller.BatchSchedulerPlugins)},
		lt.MakeNode("node-a", "4").Obj(), lt.MakeNode("node-b", "4").Obj())
	rc := e.create("RayCluster", "ray", map[string]string{kuberaycontroller.GangSchedulingLabel: "true"}, nil,
		clusterSpec("2", group{replicas: 3, minReplicas: 2, maxReplicas: 3}))

	var sp *unstructured.Unstructured
	testenv.Eventually(t, 60*time.Second, "KubeRay's scheduler-plugins PodGroup ray", func() (bool, string) {
		var err error
		sp, err = e.dyn.Resource(testenv.SchedulerPluginsPodGroupGVR).Namespace(e.ns).Get(context.Background(), "ray", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	checkSchedulerPluginsPodGroup(t, sp, rc, 4, "8", "4Gi")

	pods := e.waitCluster("ray", 3, 4)
	for i := range pods {
		p := &pods[i]
		e.checkRayPod(p, rc)
		if got := p.Labels[kuberaycontroller.PodGroupLabel]; got != "ray" {
			t.Errorf("pod %s: label %s=%q, want ray", p.Name, kuberaycontroller.PodGroupLabel, got)
		}
	}
	e.checkBoundWhole("ray", 3)
	pg := e.clusterGroup(rc, 3)
	e.WaitCondition(t, "CompositePodGroup", e.ns, pg.Name, metav1.ConditionTrue, v1alpha1.ReasonScheduled, "placed together")

	e.controller.Settled(t, testenv.SchedulerPluginsPodGroupGVR, e.ns, "ray", "one lockstep group, the RayCluster's, none of the scheduler-plugins PodGroup's", func() (bool, string) {
		wls, cpgs, pgs := e.groups()
		state := describeGroups(wls, cpgs, pgs)
		for i := range wls {
			if refersTo(wls[i].OwnerReferences, sp) {
				return false, state
			}
		}
		for i := range cpgs {
			if refersTo(cpgs[i].OwnerReferences, sp) {
				return false, state
			}
		}
		for i := range pgs {
			if refersTo(pgs[i].OwnerReferences, sp) {
				return false, state
			}
		}
		_, ok, _ := e.treeOf(rc, 3)
		return ok, state
	})
}

// refersTo reports whether refs name obj, by UID or as a scheduler-plugins PodGroup.
func refersTo(refs []metav1.OwnerReference, obj *unstructured.Unstructured) bool {
	for _, r := range refs {
		if r.UID == obj.GetUID() || (r.Kind == "PodGroup" && r.APIVersion == obj.GetAPIVersion()) {
			return true
		}
	}
	return false
}

// checkSchedulerPluginsPodGroup checks the PodGroup KubeRay made for RayCluster rc: minMember,
// minResources cpu and memory, and an owner reference to rc that is not a controller's.
func checkSchedulerPluginsPodGroup(t *testing.T, pg, rc *unstructured.Unstructured, minMember int64, cpu, memory string) {
	t.Helper()
	spec, _ := json.Marshal(pg.Object["spec"])
	t.Logf("scheduler-plugins PodGroup %s: spec=%s ownerReferences=%s", pg.GetName(), spec, owners(pg.GetOwnerReferences()))
	if mm, _, _ := unstructured.NestedInt64(pg.Object, "spec", "minMember"); mm != minMember {
		t.Errorf("PodGroup %s: minMember %d, want %d", pg.GetName(), mm, minMember)
	}
	res, _, _ := unstructured.NestedStringMap(pg.Object, "spec", "minResources")
	for name, want := range map[string]string{"cpu": cpu, "memory": memory} {
		if got, err := resource.ParseQuantity(res[name]); err != nil || got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("PodGroup %s: minResources %s %q, want %s", pg.GetName(), name, res[name], want)
		}
	}
	refs := pg.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != rc.GetUID() || refs[0].Kind != "RayCluster" || refs[0].Controller != nil && *refs[0].Controller {
		t.Errorf("PodGroup %s: ownerReferences %s, want the RayCluster %s, not as controller", pg.GetName(), owners(refs), rc.GetName())
	}
}
