package preemption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// A gang member in PreBind taken by upstream's preemption executor (the DefaultPreemption
// LockstepTopology runs for a pod in no gang): the member was allowed with its gang, so the
// executor may not cancel its binding cycle in memory (the gang would be left bound short,
// the member pending again); it deletes the member through the apiserver, as it deletes a
// bound victim, and takes the rest of the gang with it. The member stays in PreBind because
// its claim waits for a PersistentVolume controller that does not run here (VolumeBinding
// binds the volume, then waits for the controller to finish).
func TestPreemptorTakesAMemberInPreBindThroughTheAPI(t *testing.T) {
	env, ns, kubelets := setUp(t, podgroup.APILockstep, "prebind")
	env.CreatePriorityClass(t, top, 2000, false)
	const h0, h1 = "z0-b0-r0-h0", "z0-b0-r0-h1"
	ctx := context.Background()
	// A claim that can only be bound on h0, and only in PreBind (WaitForFirstConsumer).
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-" + ns}, Provisioner: "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	if _, err := env.Client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	size := v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}
	rwo := []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns}, Spec: v1.PersistentVolumeSpec{
		AccessModes: rwo, Capacity: size, StorageClassName: class.Name,
		PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt"}},
		NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{h0}}}}}}}}}
	created, err := env.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.Phase = v1.VolumeAvailable // as the PV controller would mark it
	if _, err := env.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}, Spec: v1.PersistentVolumeClaimSpec{
		AccessModes: rwo, StorageClassName: ptr.To(class.Name), Resources: v1.VolumeResourceRequirements{Requests: size}}}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Room for 2 cpu on h0 and on h1 only; the rest is taken by pods no preemptor may take.
	env.CreatePods(t, running(ns, "busy-h0", "", h0, "2", top), running(ns, "busy-h1", "", h1, "2", top),
		running(ns, "busy-r1h0", "", "z0-b0-r1-h0", "4", top), running(ns, "busy-r1h1", "", "z0-b0-r1-h1", "4", top))
	env.CreatePodGroups(t, lt.MakePodGroup().Namespace(ns).Name("train").Gang(2).PriorityClass(low).Obj())
	env.CreatePods(t, lt.InPriorityClass(lt.Member(ns, "train", 0).Req(lt.CPU("2")).PVC("data"), low).Obj(),
		lt.InPriorityClass(lt.Member(ns, "train", 1).Req(lt.CPU("2")), low).Obj())

	// The gang is allowed: train-1 binds on h1, train-0 is in PreBind on h0 (its volume bound
	// to its claim, the claim never marked bound).
	env.WaitBound(t, ns, "train-1")
	testenv.Eventually(t, wait, "train-0 in PreBind", func() (bool, string) {
		got, err := env.Client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Spec.ClaimRef != nil, fmt.Sprintf("volume's claim %v", got.Spec.ClaimRef)
	})
	env.AssertUnbound(t, ns, "train-0")

	// A pod in no gang that fits only on h0, where train-0 is the only pod it may take.
	env.CreatePods(t, lt.InPriorityClass(lt.GroupPod(ns, "urgent", "").Req(lt.CPU("2")).
		NodeSelector(map[string]string{v1.LabelHostname: h0}), high).Obj())
	if node := env.WaitBound(t, ns, "urgent")["urgent"]; node != h0 {
		t.Fatalf("urgent bound on %s, want %s", node, h0)
	}
	// train-0 was deleted through the apiserver, not sent back to the queue in memory.
	testenv.Eventually(t, wait, "train-0 deleted", func() (bool, string) {
		_, err := env.Client.CoreV1().Pods(ns).Get(ctx, "train-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
	env.WaitEvent(t, ns, "train-0", "Preempted", "Preempted by")
	events, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=train-0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "Preempted" && strings.Contains(e.Message, "in kube-scheduler memory") {
			t.Errorf("train-0's binding was cancelled in memory (%q): its gang was left bound short", e.Message)
		}
	}
	// The rest of the gang went with it, each member told why. train-1 runs: the kubelets see
	// its graceful deletion. train-0, never bound, may be deleted at once (gone above) before
	// they see it terminating; if they do, it says why too.
	testenv.Eventually(t, wait, "the gang evicted whole", func() (bool, string) {
		got := podNames(kubelets.Removed())
		return slices.Contains(got, "train-1") && len(got) <= 2, fmt.Sprintf("evicted: %v", got)
	})
	for _, p := range kubelets.Removed() {
		if p.Name != "train-0" && p.Name != "train-1" {
			t.Errorf("%s evicted: only the gang's members may be", p.Name)
		}
		if !hasDisruptionTarget(p) {
			t.Errorf("%s was deleted without the DisruptionTarget condition", p.Name)
		}
	}
}
