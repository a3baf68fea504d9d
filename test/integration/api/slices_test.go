package api

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// sliceSize's CEL rules: at least 1, mode Required, not exclusive, one per group, beside at
// most one Required and one Preferred key; PodGroups only.
func TestSliceValidation(t *testing.T) {
	env := testenv.Start(t)
	ns := env.Namespace(t, "slices")
	ctx := context.Background()
	slice := func(key string, n int32) v1alpha1.TopologyConstraint {
		return v1alpha1.TopologyConstraint{Key: key, SliceSize: ptr.To(n)}
	}
	required := v1alpha1.TopologyConstraint{Key: lt.BlockKey}
	preferred := v1alpha1.TopologyConstraint{Key: lt.RackKey, Mode: v1alpha1.TopologyPreferred}
	constraints := func(c ...v1alpha1.TopologyConstraint) *v1alpha1.SchedulingConstraints {
		return &v1alpha1.SchedulingConstraints{Topology: c}
	}
	tests := []struct {
		name string
		pg   *v1alpha1.SchedulingConstraints // on a PodGroup
		cpg  *v1alpha1.SchedulingConstraints // on a CompositePodGroup
		wl   *v1alpha1.SchedulingConstraints // on a Workload's CompositePodGroupTemplate
		want string                          // "" for accepted
	}{
		{name: "slices alone", pg: constraints(slice(lt.HostKey, 4))},
		{name: "required block, slices per host", pg: constraints(required, slice(lt.HostKey, 4))},
		{name: "required, preferred and slices", pg: constraints(required, preferred, slice(lt.HostKey, 4))},
		{name: "slices of 1", pg: constraints(slice(lt.HostKey, 1))},
		{name: "slices of 0", pg: constraints(slice(lt.HostKey, 0)), want: "should be greater than or equal to 1"},
		{name: "negative slices", pg: constraints(slice(lt.HostKey, -2)), want: "should be greater than or equal to 1"},
		{name: "preferred slices", pg: constraints(v1alpha1.TopologyConstraint{Key: lt.HostKey, Mode: v1alpha1.TopologyPreferred, SliceSize: ptr.To[int32](4)}),
			want: "sliceSize needs mode Required"},
		{name: "exclusive slices", pg: constraints(v1alpha1.TopologyConstraint{Key: lt.HostKey, Exclusive: true, SliceSize: ptr.To[int32](4)}),
			want: "sliceSize and exclusive cannot be combined"},
		{name: "two slice constraints", pg: constraints(slice(lt.RackKey, 8), slice(lt.HostKey, 4)),
			want: "at most one topology key with sliceSize"},
		{name: "two required keys beside slices", pg: constraints(required, v1alpha1.TopologyConstraint{Key: lt.ZoneKey}, slice(lt.HostKey, 4)),
			want: "at most one Required topology key"},
		{name: "four constraints", pg: constraints(required, preferred, slice(lt.HostKey, 4), preferred),
			want: "must have at most 3 items"},
		{name: "slices on a CompositePodGroup", cpg: constraints(slice(lt.HostKey, 4)),
			want: "sliceSize applies to PodGroups only"},
		{name: "a CompositePodGroup without slices", cpg: constraints(required)},
		{name: "slices on a CompositePodGroupTemplate", wl: constraints(slice(lt.HostKey, 4)),
			want: "sliceSize applies to PodGroups only"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "s" + string(rune('a'+i))
			var err error
			switch {
			case tc.pg != nil:
				pg := lt.MakePodGroup().Namespace(ns).Name(name).Gang(8).Topology(tc.pg.Topology...).Obj()
				_, err = env.Lockstep.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{})
			case tc.cpg != nil:
				cpg := lt.MakeCompositePodGroup().Namespace(ns).Name(name).Gang(2).Topology(tc.cpg.Topology...).Obj()
				_, err = env.Lockstep.SchedulingV1alpha1().CompositePodGroups(ns).Create(ctx, cpg, metav1.CreateOptions{})
			default:
				w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.WorkloadSpec{
					CompositePodGroupTemplates: []v1alpha1.CompositePodGroupTemplate{{
						Name:                  "job",
						SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: 1}},
						SchedulingConstraints: tc.wl,
					}}}}
				_, err = env.Lockstep.SchedulingV1alpha1().Workloads(ns).Create(ctx, w, metav1.CreateOptions{})
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A slice constraint's mode defaults to Required; minResources is kept as written.
	pg := lt.MakePodGroup().Namespace(ns).Name("defaults").Gang(8).Topology(slice(lt.HostKey, 4)).
		MinResources(map[v1.ResourceName]string{v1.ResourceCPU: "32", "nvidia.com/gpu": "8"}).Obj()
	if _, err := env.Lockstep.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := env.Lockstep.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "defaults", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Spec.SchedulingConstraints.Topology[0]; c.Mode != v1alpha1.TopologyRequired || ptr.Deref(c.SliceSize, 0) != 4 {
		t.Errorf("slice constraint read back as %+v, want mode Required and sliceSize 4", c)
	}
	if gpus := got.Spec.MinResources["nvidia.com/gpu"]; gpus.Value() != 8 {
		t.Errorf("minResources read back as %v, want 8 nvidia.com/gpu", got.Spec.MinResources)
	}
}
