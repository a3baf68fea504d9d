package podgroup_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// A lockstep group written as a native one (its extensions as annotations) reads back as the
// same group, with a native key: a team moves between the APIs by changing apiVersion.
func TestNativeGroupsReadAsLockstepsOwn(t *testing.T) {
	timeout := lt.MakePodGroup().Namespace("ns").Name("g").Gang(4).ScheduleTimeout(30).Obj()
	timeout.Spec.ReserveAfterSeconds = ptr.To[int32](0)
	followers := lt.MakePodGroup().Namespace("ns").Name("g").Gang(8).Leaders(2).Obj()
	followers.Spec.SchedulingPolicy.Gang.FollowersTimeoutSeconds = ptr.To[int32](60)
	pgs := []*v1alpha1.PodGroup{
		lt.MakePodGroup().Namespace("ns").Name("g").Gang(4).Obj(),
		lt.MakePodGroup().Namespace("ns").Name("g").Basic().Obj(),
		lt.MakePodGroup().Namespace("ns").Name("g").Gang(4).Parent("root").DisruptedWhole().PriorityClass("high").Obj(),
		lt.MakePodGroup().Namespace("ns").Name("g").Gang(8).Topology(lt.Required(lt.RackKey), lt.Preferred(lt.HostKey)).Obj(),
		lt.MakePodGroup().Namespace("ns").Name("g").Gang(8).Topology(lt.Exclusive(lt.RackKey), lt.Slices(lt.HostKey, 4)).Obj(),
		lt.MakePodGroup().Namespace("ns").Name("g").Gang(8).Leaders(1).Obj(),
		followers,
		timeout,
	}
	for _, pg := range pgs {
		native := podgroup.ToNativePodGroup(pg)
		got, why := podgroup.FromNative(native)
		if why != "" {
			t.Fatalf("%+v: %s", native, why)
		}
		back := got.(*v1alpha1.PodGroup)
		if diff := cmp.Diff(pg.Spec, back.Spec); diff != "" {
			t.Errorf("spec read back differs (-want +got):\n%s", diff)
		}
		if k, _ := podgroup.KeyOfObject(back); k != (podgroup.Key{Kind: podgroup.KindPodGroup, Namespace: "ns", Name: "g", API: podgroup.APINative}) {
			t.Errorf("key %v, want the native PodGroup ns/g", k)
		}
	}
	cpg := lt.MakeCompositePodGroup().Namespace("ns").Name("root").Gang(2).Topology(lt.Required(lt.BlockKey), lt.Preferred(lt.RackKey)).Obj()
	got, why := podgroup.FromNative(podgroup.ToNativeCompositePodGroup(cpg))
	if why != "" {
		t.Fatal(why)
	}
	if diff := cmp.Diff(cpg.Spec, got.(*v1alpha1.CompositePodGroup).Spec); diff != "" {
		t.Errorf("composite spec read back differs (-want +got):\n%s", diff)
	}
}

// A native group's extension annotation that does not parse, or that its kind does not take,
// or a misspelt one, is a reason the group is Invalid, not ignored.
func TestNativeAnnotationsThatDoNotParse(t *testing.T) {
	tests := []struct {
		annotations map[string]string
		basic       bool
		want        string
	}{
		{annotations: map[string]string{podgroup.NativeScheduleTimeoutAnnotation: "soon"}, want: `"soon" is not an integer of at least 1`},
		{annotations: map[string]string{podgroup.NativeReserveAfterAnnotation: "-1"}, want: `"-1" is not an integer of at least 0`},
		{annotations: map[string]string{podgroup.NativeSliceSizeAnnotation: "4"}, want: "go together"},
		{annotations: map[string]string{podgroup.NativeSliceTopologyAnnotation: lt.HostKey, podgroup.NativeSliceSizeAnnotation: "0"}, want: "go together"},
		{annotations: map[string]string{podgroup.NativeLeadersAnnotation: "1"}, basic: true, want: "is for gang PodGroups"},
		{annotations: map[string]string{v1alpha1.GroupName + "/schedule-timeout": "30"}, want: "unknown annotation scheduling.lockstep.dev/schedule-timeout"},
	}
	for _, tc := range tests {
		w := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2)
		if tc.basic {
			w = w.Basic()
		}
		native := podgroup.ToNativePodGroup(w.Obj())
		native.Annotations = tc.annotations
		if _, why := podgroup.FromNative(native); !strings.Contains(why, tc.want) {
			t.Errorf("%v: problem %q, want one containing %q", tc.annotations, why, tc.want)
		}
	}
	if got, _ := podgroup.FromNative(&schedulingv1beta1.Workload{}); got != nil {
		t.Errorf("a Workload read as a group: %v", got)
	}
}
