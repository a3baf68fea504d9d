package upstream

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// Upstream's TestPodGroupSchedulingWithPodAntiAffinity (podgroup_affinity_test.go): a gang
// of two pods labeled app=foo, the first (created first) pinned to node-1 and repelling
// app=foo pods from its node, the second with no anti-affinity of its own: the gang must
// not put them on one node. Upstream starts a scheduler per case; here they share one.
func TestPodGroupSchedulingWithPodAntiAffinity(t *testing.T) {
	runSuite(t, casesPodGroupSchedulingWithPodAntiAffinity())
}

// casesPodGroupSchedulingWithPodAntiAffinity are the cases of upstream's TestPodGroupSchedulingWithPodAntiAffinity.
func casesPodGroupSchedulingWithPodAntiAffinity() suite {
	pg := createGroups(group{name: "pg", min: 2, priority: 200})
	fooApp := func(o *v1.Pod) {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		o.Labels["app"] = "foo"
	}
	anti := pod{name: "anti-pod", group: "pg", cpu: "1", priority: 200, mutate: func(o *v1.Pod) {
		fooApp(o)
		o.Spec.NodeSelector = map[string]string{lt.HostKey: "node-1"}
		o.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			TopologyKey: lt.HostKey, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "foo"}}}}}}
	}}
	plain := pod{name: "plain-pod", group: "pg", cpu: "1", priority: 200, mutate: fooApp}
	return suite{cases: []ucase{
		{name: "anti-affinity honored across the cycle on a multi-topology cluster", steps: []step{
			nodes(node("node-1", 2), node("node-2", 2)), pg, createPods(anti, plain),
			scheduled("anti-pod", "plain-pod"), onNodes([]string{"anti-pod"}, "node-1"), onNodes([]string{"plain-pod"}, "node-2")}},
		{name: "anti-affinity keeps the group unschedulable on a single-topology cluster", steps: []step{
			nodes(node("node-1", 2)), pg, createPods(anti, plain),
			unschedulablePods("anti-pod", "plain-pod"), groupCondition("pg", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable)}},
	}}
}
