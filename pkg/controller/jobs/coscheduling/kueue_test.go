package coscheduling

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// TestGroupsKueueTopology proves that a scheduler-plugins PodGroup's mirror takes Kueue's
// TAS annotations of its pods (the oldest lockstep member's) as its topology, unless the
// PodGroup carries lockstep's own topology annotations or Kueue manages the pods.
func TestGroupsKueueTopology(t *testing.T) {
	const hostKey = "kubernetes.io/hostname"
	required := func(key string) v1alpha1.TopologyConstraint {
		return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired}
	}
	annotated := func(p *v1.Pod, kv ...string) *v1.Pod {
		p.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
		return p
	}
	rackAndSlices := func(p *v1.Pod) *v1.Pod {
		return annotated(p, podgroup.KueuePodSetRequiredTopologyAnnotation, rackKey,
			podgroup.KueuePodSetSliceRequiredTopologyAnnotation, hostKey, podgroup.KueuePodSetSliceSizeAnnotation, "2")
	}
	slice2 := v1alpha1.TopologyConstraint{Key: hostKey, Mode: v1alpha1.TopologyRequired, SliceSize: func() *int32 { n := int32(2); return &n }()}
	tests := []struct {
		name         string
		pg           func() *podGroup
		pods         []*v1.Pod
		want         []v1alpha1.TopologyConstraint
		wantProblems []string
	}{
		{name: "Kueue's required and slices on the pods", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{rackAndSlices(member("g", 0, "pending")), rackAndSlices(member("g", 1, "pending"))},
			want: []v1alpha1.TopologyConstraint{required(rackKey), slice2}},
		{name: "read from the oldest lockstep member", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{member("g", 1, "pending"), annotated(member("g", 0, "pending"), podgroup.KueuePodSetPreferredTopologyAnnotation, zoneKey)},
			want: []v1alpha1.TopologyConstraint{{Key: zoneKey, Mode: v1alpha1.TopologyPreferred}}},
		{name: "lockstep's annotations on the PodGroup win", pg: func() *podGroup {
			pg := newPodGroup("g", 4)
			pg.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: zoneKey}
			return pg
		}, pods: []*v1.Pod{rackAndSlices(member("g", 0, "pending"))}, want: []v1alpha1.TopologyConstraint{required(zoneKey)}},
		{name: "queue-name label on the pod: Kueue's", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{func() *v1.Pod {
				p := rackAndSlices(member("g", 0, "pending"))
				p.Labels[podgroup.KueueQueueNameLabel] = "q"
				return p
			}()}},
		{name: "queue-name label on the PodGroup: Kueue's", pg: func() *podGroup {
			pg := newPodGroup("g", 4)
			pg.Labels = map[string]string{podgroup.KueueQueueNameLabel: "q"}
			return pg
		}, pods: []*v1.Pod{rackAndSlices(member("g", 0, "pending"))}},
		{name: "Kueue's topology gate on the pod", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{func() *v1.Pod {
				p := rackAndSlices(member("g", 0, "pending"))
				p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: podgroup.KueueTopologySchedulingGate}}
				return p
			}()}},
		{name: "slice larger than minMember: a problem, the slice ignored", pg: func() *podGroup { return newPodGroup("g", 1) },
			pods: []*v1.Pod{rackAndSlices(member("g", 0, "pending"))}, want: []v1alpha1.TopologyConstraint{required(rackKey)},
			wantProblems: []string{`podset-slice-size="2" exceeds the 1 pods`}},
		{name: "malformed: a problem, no constraint", pg: func() *podGroup { return newPodGroup("g", 2) },
			pods:         []*v1.Pod{annotated(member("g", 0, "pending"), podgroup.KueuePodSetRequiredTopologyAnnotation, "not a key")},
			wantProblems: []string{`podset-required-topology="not a key" is not a label key`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := tc.pg()
			f := newFixture(t, true, []*podGroup{pg}, tc.pods, nil, jobset.New())
			got, problems := f.a.Groups(f.get(t, pg.Name), nil, ours)
			if got == nil || len(got.PodGroups) != 1 {
				t.Fatalf("Groups = %+v, want one PodGroup", got)
			}
			if diff := cmp.Diff(tc.want, got.PodGroups[0].Topology); diff != "" {
				t.Errorf("PodGroup topology (-want +got):\n%s", diff)
			}
			var tmplTopology []v1alpha1.TopologyConstraint
			if c := got.Spec.PodGroupTemplates[0].SchedulingConstraints; c != nil {
				tmplTopology = c.Topology
			}
			if diff := cmp.Diff(tc.want, tmplTopology); diff != "" {
				t.Errorf("template topology (-want +got):\n%s", diff)
			}
			if len(problems) != len(tc.wantProblems) {
				t.Fatalf("problems %q, want %d matching %q", problems, len(tc.wantProblems), tc.wantProblems)
			}
			for i, want := range tc.wantProblems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
}
