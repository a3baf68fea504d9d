package coscheduling

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// TestGroupsKueueTopology proves that a scheduler-plugins PodGroup's mirror takes Kueue's
// TAS annotations of its pods (the oldest lockstep member's) as its topology, unless the
// PodGroup carries lockstep's own topology annotations or Kueue manages the pods.
func TestGroupsKueueTopology(t *testing.T) {
	rackAndSlices := func(p *st.PodWrapper) *st.PodWrapper {
		return p.Annotation(filing.KueuePodSetRequiredTopologyAnnotation, lt.RackKey).
			Annotation(filing.KueuePodSetSliceRequiredTopologyAnnotation, lt.HostKey).Annotation(filing.KueuePodSetSliceSizeAnnotation, "2")
	}
	slice2 := lt.Slices(lt.HostKey, 2)
	tests := []struct {
		name         string
		pg           func() *podGroup
		pods         []*v1.Pod
		want         []v1alpha1.TopologyConstraint
		wantProblems []string
	}{
		{name: "Kueue's required and slices on the pods", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{rackAndSlices(member("g", 0)).Obj(), rackAndSlices(member("g", 1)).Obj()},
			want: []v1alpha1.TopologyConstraint{lt.Required(lt.RackKey), slice2}},
		{name: "read from the oldest lockstep member", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{member("g", 1).Obj(), member("g", 0).Annotation(filing.KueuePodSetPreferredTopologyAnnotation, lt.ZoneKey).Obj()},
			want: []v1alpha1.TopologyConstraint{lt.Preferred(lt.ZoneKey)}},
		{name: "lockstep's annotations on the PodGroup win", pg: func() *podGroup {
			pg := newPodGroup("g", 4)
			pg.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: lt.ZoneKey}
			return pg
		}, pods: []*v1.Pod{rackAndSlices(member("g", 0)).Obj()}, want: []v1alpha1.TopologyConstraint{lt.Required(lt.ZoneKey)}},
		{name: "queue-name label on the pod: Kueue's", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{rackAndSlices(member("g", 0)).Label(filing.KueueQueueNameLabel, "q").Obj()}},
		{name: "queue-name label on the PodGroup: Kueue's", pg: func() *podGroup {
			pg := newPodGroup("g", 4)
			pg.Labels = map[string]string{filing.KueueQueueNameLabel: "q"}
			return pg
		}, pods: []*v1.Pod{rackAndSlices(member("g", 0)).Obj()}},
		{name: "Kueue's topology gate on the pod", pg: func() *podGroup { return newPodGroup("g", 4) },
			pods: []*v1.Pod{rackAndSlices(member("g", 0)).SchedulingGates([]string{filing.KueueTopologySchedulingGate}).Obj()}},
		{name: "slice larger than minMember: a problem, the slice ignored", pg: func() *podGroup { return newPodGroup("g", 1) },
			pods: []*v1.Pod{rackAndSlices(member("g", 0)).Obj()}, want: []v1alpha1.TopologyConstraint{lt.Required(lt.RackKey)},
			wantProblems: []string{`podset-slice-size="2" exceeds the 1 pods`}},
		{name: "malformed: a problem, no constraint", pg: func() *podGroup { return newPodGroup("g", 2) },
			pods:         []*v1.Pod{member("g", 0).Annotation(filing.KueuePodSetRequiredTopologyAnnotation, "not a key").Obj()},
			wantProblems: []string{`podset-required-topology="not a key" is not a label key`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := tc.pg()
			f := newFixture(t, true, []*podGroup{pg}, tc.pods, []*batchv1.Job{memberJob("g")}, jobset.New())
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
