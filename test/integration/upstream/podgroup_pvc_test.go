package upstream

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

// boundRWOPPVCs creates, for each name, a HostPath PersistentVolume and a claim of that name
// bound to it, both ReadWriteOncePod (upstream's createBoundRWOPPVC: no PV controller runs,
// so the claim is marked bound by its annotation and volume name).
func boundRWOPPVCs(claims ...string) step {
	return func(h *h) {
		ctx := context.Background()
		size := v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}
		rwop := []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
		dir := v1.HostPathDirectoryOrCreate
		for _, name := range claims {
			pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%s-%s", h.ns, name)}, Spec: v1.PersistentVolumeSpec{
				AccessModes: rwop, Capacity: size,
				PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt", Type: &dir}}}}
			if _, err := h.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
				h.t.Fatal(err)
			}
			pvc := &v1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "true"}},
				Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pv.Name, AccessModes: rwop, Resources: v1.VolumeResourceRequirements{Requests: size}}}
			if _, err := h.Client.CoreV1().PersistentVolumeClaims(h.ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
				h.t.Fatal(err)
			}
		}
	}
}

// withPVC mounts the claim named claim.
func withPVC(p pod, claim string) pod {
	p.mutate = func(o *v1.Pod) {
		o.Spec.Volumes = append(o.Spec.Volumes, v1.Volume{Name: claim, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
	return p
}

// Upstream's TestPodGroupSchedulingWithReadWriteOncePodPVC (podgroup_pvc_test.go): a gang of
// two pods on one node of 2 cpu, the first (created first) mounting the ReadWriteOncePod
// claim pvc-1, the second pvc-1 again (the gang cannot be placed) or pvc-2 (it can).
// Upstream starts a scheduler per case; here they share one.
func TestPodGroupSchedulingWithReadWriteOncePodPVC(t *testing.T) {
	runSuite(t, casesPodGroupSchedulingWithReadWriteOncePodPVC())
}

// casesPodGroupSchedulingWithReadWriteOncePodPVC are the cases of upstream's TestPodGroupSchedulingWithReadWriteOncePodPVC.
func casesPodGroupSchedulingWithReadWriteOncePodPVC() suite {
	pgPods := func(second string) step {
		return createPods(withPVC(pod{name: "pvc-pod-1", group: "pg", cpu: "1", priority: 200}, "pvc-1"),
			withPVC(pod{name: "pvc-pod-2", group: "pg", cpu: "1", priority: 200}, second))
	}
	node1 := nodes(node("node-1", 2))
	pg := createGroups(group{name: "pg", min: 2, priority: 200})
	return suite{cases: []ucase{
		{name: "two pods sharing a ReadWriteOncePod PVC keep the group unschedulable", steps: []step{
			boundRWOPPVCs("pvc-1"), node1, pg, pgPods("pvc-1"),
			unschedulablePods("pvc-pod-1", "pvc-pod-2"), groupCondition("pg", metav1.ConditionFalse, v1alpha1.ReasonUnschedulable)}},
		{name: "two pods with distinct ReadWriteOncePod PVCs are scheduled", steps: []step{
			boundRWOPPVCs("pvc-1", "pvc-2"), node1, pg, pgPods("pvc-2"), scheduled("pvc-pod-1", "pvc-pod-2")}},
	}}
}
