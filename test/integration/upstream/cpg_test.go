package upstream

import (
	"context"
	"fmt"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cpgPods returns the pods <pg>-pod-<i> of PodGroup pg, one per cpu request (priority 100).
func cpgPods(pg string, cpus ...int) []pod {
	var out []pod
	for i, c := range cpus {
		out = append(out, pod{name: fmt.Sprintf("%s-pod-%d", pg, i), group: pg, cpu: fmt.Sprint(c), priority: 100})
	}
	return out
}

// podNames returns the names of pods.
func podNames(ps ...[]pod) []string {
	var out []string
	for _, list := range ps {
		for _, p := range list {
			out = append(out, p.name)
		}
	}
	return out
}

func createPodList(ps ...[]pod) step {
	var all []pod
	for _, list := range ps {
		all = append(all, list...)
	}
	return createPods(all...)
}

// Upstream's TestCPGScheduling (cpg_test.go): composite trees on one node.
func TestCPGScheduling(t *testing.T) { runSuite(t, casesCPGScheduling()) }

// casesCPGScheduling are the cases of upstream's TestCPGScheduling.
func casesCPGScheduling() suite {
	cpg := func(name, parent string, min int32) group {
		return group{name: name, composite: true, min: min, parent: parent, priority: 100}
	}
	pg := func(name, parent string, min int32) group {
		return group{name: name, min: min, parent: parent, priority: 100}
	}
	var (
		h1, h2, h3 = cpgPods("pg1", 1, 1, 1), cpgPods("pg2", 1, 1, 1), cpgPods("pg3", 100, 100, 100)
		h4, h5, h6 = cpgPods("pg4", 1, 1, 1), cpgPods("pg5", 1, 1, 1), cpgPods("pg6", 1, 1, 1)
		h7         = cpgPods("pg7", 100, 100, 100)
	)
	return suite{cases: []ucase{
		{name: "TestCPGHierarchicalScheduling", steps: []step{
			nodes(node("node1", 20)),
			createGroups(cpg("cpg-root", "", 2), cpg("cpg-sub1", "cpg-root", 2), cpg("cpg-sub2", "cpg-root", 0), cpg("cpg-sub3", "cpg-root", 2),
				pg("pg1", "cpg-sub1", 3), pg("pg2", "cpg-sub1", 3), pg("pg3", "cpg-sub1", 3), pg("pg4", "cpg-sub2", 0),
				pg("pg5", "cpg-sub2", 3), pg("pg6", "cpg-sub3", 3), pg("pg7", "cpg-sub3", 3)),
			createPodList(h1, h2, h3, h4, h5, h6, h7),
			scheduled(podNames(h1, h2, h4, h5)...), unschedulablePods(podNames(h3, h6, h7)...)}},
		{name: "TestCPGMinGroupCount", steps: []step{
			nodes(node("node1", 20)),
			createGroups(cpg("cpg-root", "", 2), pg("pg1", "cpg-root", 3), pg("pg2", "cpg-root", 3), pg("pg3", "cpg-root", 3)),
			createPodList(cpgPods("pg1", 1, 1, 1), cpgPods("pg2", 1, 1, 1), cpgPods("pg3", 100, 1, 1)),
			scheduled(podNames(cpgPods("pg1", 1, 1, 1), cpgPods("pg2", 1, 1, 1))...),
			unschedulablePods(podNames(cpgPods("pg3", 100, 1, 1))...)}},
		{name: "TestCPGBasicWithGangChildren", steps: []step{
			nodes(node("node1", 20)),
			createGroups(cpg("cpg-root", "", 0), pg("pg1", "cpg-root", 3), pg("pg2", "cpg-root", 3)),
			createPodList(cpgPods("pg1", 1, 1, 1), cpgPods("pg2", 100, 1, 1)),
			scheduled(podNames(cpgPods("pg1", 1, 1, 1))...), unschedulablePods(podNames(cpgPods("pg2", 100, 1, 1))...)}},
		{name: "TestCPGBasicWithBasicChildren", steps: []step{
			nodes(node("node1", 20)),
			createGroups(cpg("cpg-root", "", 0), pg("pg1", "cpg-root", 0), pg("pg2", "cpg-root", 0)),
			createPodList(cpgPods("pg1", 1, 1), cpgPods("pg2", 1, 1)),
			scheduled(podNames(cpgPods("pg1", 1, 1), cpgPods("pg2", 1, 1))...)}},
		{name: "TestCPGGangWithBasicChildren", steps: []step{
			nodes(node("node1", 8)),
			createGroups(cpg("cpg-root", "", 2), pg("pg1", "cpg-root", 0), pg("pg2", "cpg-root", 0), pg("pg3", "cpg-root", 0)),
			createPodList(cpgPods("pg1", 1, 1, 1), cpgPods("pg2", 1, 1, 1), cpgPods("pg3", 10, 10, 10)),
			scheduled(podNames(cpgPods("pg1", 1, 1, 1), cpgPods("pg2", 1, 1, 1))...),
			unschedulablePods(podNames(cpgPods("pg3", 10, 10, 10))...)}},
		{name: "TestCPGBasicWithUnschedulableBasicChildren", steps: []step{
			nodes(node("node1", 20)),
			createGroups(cpg("cpg-root", "", 0), pg("pg1", "cpg-root", 0), pg("pg2", "cpg-root", 0)),
			createPodList(cpgPods("pg1", 50, 50), cpgPods("pg2", 50, 50)),
			unschedulablePods(podNames(cpgPods("pg1", 50, 50), cpgPods("pg2", 50, 50))...)}},
		{name: "TestCPGDynamicChildAddition", steps: []step{
			nodes(node("node1", 20)),
			createGroups(cpg("cpg-root", "", 0), pg("pg1", "cpg-root", 0)),
			createPodList(cpgPods("pg1", 1, 1)), scheduled("pg1-pod-0", "pg1-pod-1"),
			createGroups(pg("pg2", "cpg-root", 0)), createPodList(cpgPods("pg2", 1, 1)), scheduled("pg2-pod-0", "pg2-pod-1"),
			createGroups(cpg("cpg-sub", "cpg-root", 2), pg("sub-pg1", "cpg-sub", 0)),
			createPodList(cpgPods("sub-pg1", 1, 1)), unschedulablePods("sub-pg1-pod-0", "sub-pg1-pod-1"),
			createGroups(pg("sub-pg2", "cpg-sub", 0)), createPodList(cpgPods("sub-pg2", 1, 1)),
			scheduled("sub-pg1-pod-0", "sub-pg1-pod-1", "sub-pg2-pod-0", "sub-pg2-pod-1")}},
	}}
}

// Upstream's TestPodGroupDependentRequiredValidation: the apiserver's own validation (a
// PodGroup with a parent needs a workloadRef), which lockstep relies on and does not change.
func TestPodGroupDependentRequiredValidation(t *testing.T) {
	runSuite(t, casesPodGroupDependentRequiredValidation())
}

// casesPodGroupDependentRequiredValidation are the cases of upstream's TestPodGroupDependentRequiredValidation.
func casesPodGroupDependentRequiredValidation() suite {
	return suite{cases: []ucase{{name: "TestPodGroupDependentRequiredValidation", steps: []step{func(h *h) {
		ctx := context.Background()
		pass := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "pg-pass"}}
		pass.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
		pass.Spec.ParentCompositePodGroupName = new(string)
		*pass.Spec.ParentCompositePodGroupName = "some-cpg"
		pass.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: "some-workload", TemplateName: "some-template"}
		if _, err := h.Client.SchedulingV1beta1().PodGroups(h.ns).Create(ctx, pass, metav1.CreateOptions{}); err != nil {
			h.t.Errorf("pg-pass refused: %v", err)
		}
		fail := pass.DeepCopy()
		fail.Name, fail.Spec.WorkloadRef = "pg-fail", nil
		if _, err := h.Client.SchedulingV1beta1().PodGroups(h.ns).Create(ctx, fail, metav1.CreateOptions{}); err == nil {
			h.t.Error("pg-fail (a parent, no workloadRef) was accepted")
		}
	}}}}}
}
