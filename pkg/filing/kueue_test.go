package filing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
)

func TestKueueTopologyFromAnnotations(t *testing.T) {
	const (
		block = "cloud.provider.com/topology-block"
		rack  = "cloud.provider.com/topology-rack"
		host  = "kubernetes.io/hostname"
	)
	required := func(key string) v1alpha1.TopologyConstraint {
		return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired}
	}
	preferred := func(key string) v1alpha1.TopologyConstraint {
		return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyPreferred}
	}
	slice := func(key string, n int32) *v1alpha1.TopologyConstraint {
		return &v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired, SliceSize: ptr.To(n)}
	}
	tests := []struct {
		name        string
		annotations map[string]string
		size, def   int32 // podSetSize, sliceSizeDefault
		want        KueueTopology
		// problems are substrings, one per problem expected.
		problems []string
	}{
		{name: "none"},
		{name: "other annotations", annotations: map[string]string{"example.com/x": "y"}},
		{name: "required", annotations: map[string]string{KueuePodSetRequiredTopologyAnnotation: rack},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}}},
		{name: "preferred", annotations: map[string]string{KueuePodSetPreferredTopologyAnnotation: rack},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{preferred(rack)}}},
		{name: "unconstrained", annotations: map[string]string{KueuePodSetUnconstrainedTopologyAnnotation: "true"}},
		{name: "unconstrained false", annotations: map[string]string{KueuePodSetUnconstrainedTopologyAnnotation: "false"}},
		{name: "slice", size: 8, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4"},
			want: KueueTopology{Slice: slice(host, 4)}},
		{name: "required block, slices of 4 per host", size: 8, annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation:      block,
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4"},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(block)}, Slice: slice(host, 4)}},
		{name: "preferred block, slices of 4 per host (two-level)", size: 8, annotations: map[string]string{
			KueuePodSetPreferredTopologyAnnotation:     block,
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4"},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{preferred(block)}, Slice: slice(host, 4)}},
		{name: "unconstrained with slices", size: 8, annotations: map[string]string{
			KueuePodSetUnconstrainedTopologyAnnotation: "true",
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4"},
			want: KueueTopology{Slice: slice(host, 4)}},
		{name: "slice size defaults (JobSet: parallelism)", size: 8, def: 4, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host},
			want: KueueTopology{Slice: slice(host, 4)}},
		{name: "slice size set overrides the default", size: 8, def: 4, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "2"},
			want: KueueTopology{Slice: slice(host, 2)}},
		{name: "slice size need not divide the pod set (one short slice)", size: 6, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4"},
			want: KueueTopology{Slice: slice(host, 4)}},
		{name: "slice size with unknown pod set size", annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "64"},
			want: KueueTopology{Slice: slice(host, 64)}},
		{name: "group", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: rack, KueuePodSetGroupNameAnnotation: "lws-group"},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}, GroupName: "lws-group"}},
		{name: "group with preferred", annotations: map[string]string{
			KueuePodSetPreferredTopologyAnnotation: rack, KueuePodSetGroupNameAnnotation: "g"},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{preferred(rack)}, GroupName: "g"}},

		// Malformed or conflicting: the offending annotation is ignored.
		{name: "required not a label key", annotations: map[string]string{KueuePodSetRequiredTopologyAnnotation: "not a key"},
			problems: []string{KueuePodSetRequiredTopologyAnnotation + `="not a key" is not a label key`}},
		{name: "preferred empty", annotations: map[string]string{KueuePodSetPreferredTopologyAnnotation: ""},
			problems: []string{KueuePodSetPreferredTopologyAnnotation + `="" is not a label key`}},
		{name: "required and preferred: required wins", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: block, KueuePodSetPreferredTopologyAnnotation: rack},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(block)}},
			problems: []string{KueuePodSetPreferredTopologyAnnotation + " cannot be combined with " + KueuePodSetRequiredTopologyAnnotation}},
		{name: "unconstrained with required", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: rack, KueuePodSetUnconstrainedTopologyAnnotation: "true"},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}},
			problems: []string{KueuePodSetUnconstrainedTopologyAnnotation + " cannot be combined with " + KueuePodSetRequiredTopologyAnnotation}},
		{name: "unconstrained with preferred", annotations: map[string]string{
			KueuePodSetPreferredTopologyAnnotation: rack, KueuePodSetUnconstrainedTopologyAnnotation: "true"},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{preferred(rack)}},
			problems: []string{KueuePodSetUnconstrainedTopologyAnnotation + " cannot be combined with " + KueuePodSetPreferredTopologyAnnotation}},
		{name: "all three", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: block, KueuePodSetPreferredTopologyAnnotation: rack, KueuePodSetUnconstrainedTopologyAnnotation: "true"},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(block)}},
			problems: []string{KueuePodSetPreferredTopologyAnnotation + " cannot be combined",
				KueuePodSetUnconstrainedTopologyAnnotation + " cannot be combined"}},
		{name: "unconstrained not a boolean", annotations: map[string]string{KueuePodSetUnconstrainedTopologyAnnotation: "yes please"},
			problems: []string{KueuePodSetUnconstrainedTopologyAnnotation + `="yes please" is not true or false`}},
		{name: "slice topology not a label key", size: 8, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: "a/b/c", KueuePodSetSliceSizeAnnotation: "4"},
			problems: []string{KueuePodSetSliceRequiredTopologyAnnotation + `="a/b/c" is not a label key`}},
		{name: "slice size 0", size: 8, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "0"},
			problems: []string{KueuePodSetSliceSizeAnnotation + `="0" is not a positive integer`}},
		{name: "slice size negative", size: 8, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "-4"},
			problems: []string{KueuePodSetSliceSizeAnnotation + `="-4" is not a positive integer`}},
		{name: "slice size not an integer", size: 8, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4.5"},
			problems: []string{KueuePodSetSliceSizeAnnotation + `="4.5" is not a positive integer`}},
		{name: "slice size beyond int32", size: 8, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4294967296"},
			problems: []string{"is not a positive integer"}},
		{name: "bad slice size does not fall back to the default", size: 8, def: 4, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "x"},
			problems: []string{KueuePodSetSliceSizeAnnotation + `="x" is not a positive integer`}},
		{name: "slice size larger than the pod set", size: 6, annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation:      rack,
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "8"},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}},
			problems: []string{KueuePodSetSliceSizeAnnotation + `="8" exceeds the 6 pods of the pod set`}},
		{name: "slice topology without size and no default", size: 8, annotations: map[string]string{
			KueuePodSetSliceRequiredTopologyAnnotation: host},
			problems: []string{KueuePodSetSliceRequiredTopologyAnnotation + " needs " + KueuePodSetSliceSizeAnnotation}},
		{name: "slice size without slice topology", size: 8, annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: rack, KueuePodSetSliceSizeAnnotation: "4"},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}},
			problems: []string{KueuePodSetSliceSizeAnnotation + " needs " + KueuePodSetSliceRequiredTopologyAnnotation}},
		{name: "group name is a number", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: rack, KueuePodSetGroupNameAnnotation: "42"},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}},
			problems: []string{KueuePodSetGroupNameAnnotation + `="42" is empty or a number`}},
		{name: "group name empty", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: rack, KueuePodSetGroupNameAnnotation: ""},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}},
			problems: []string{KueuePodSetGroupNameAnnotation + `="" is empty or a number`}},
		{name: "group name without required or preferred", annotations: map[string]string{
			KueuePodSetGroupNameAnnotation: "g"},
			problems: []string{KueuePodSetGroupNameAnnotation + " needs"}},
		{name: "group name with unconstrained", annotations: map[string]string{
			KueuePodSetUnconstrainedTopologyAnnotation: "true", KueuePodSetGroupNameAnnotation: "g"},
			problems: []string{KueuePodSetGroupNameAnnotation + " needs"}},
		{name: "group name whose required key was ignored", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: "not a key", KueuePodSetGroupNameAnnotation: "g"},
			problems: []string{"is not a label key", KueuePodSetGroupNameAnnotation + " needs"}},
		{name: "group name with slices", size: 8, annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation:      rack,
			KueuePodSetSliceRequiredTopologyAnnotation: host, KueuePodSetSliceSizeAnnotation: "4",
			KueuePodSetGroupNameAnnotation: "g"},
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}, Slice: slice(host, 4)},
			problems: []string{KueuePodSetGroupNameAnnotation + " cannot be combined with slice topology"}},
		{name: "group name with a stray slice size", annotations: map[string]string{
			KueuePodSetRequiredTopologyAnnotation: rack, KueuePodSetSliceSizeAnnotation: "4", KueuePodSetGroupNameAnnotation: "g"},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{required(rack)}},
			problems: []string{KueuePodSetSliceSizeAnnotation + " needs",
				KueuePodSetGroupNameAnnotation + " cannot be combined with slice topology"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := KueueTopologyFromAnnotations(tc.annotations, tc.size, tc.def)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("topology (-want +got):\n%s", diff)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %q, want %d containing %q", problems, len(tc.problems), tc.problems)
			}
			for i, want := range tc.problems {
				if !strings.Contains(problems[i], want) || !strings.HasSuffix(problems[i], "ignored") {
					t.Errorf("problem %q, want one containing %q and saying what is ignored", problems[i], want)
				}
			}
		})
	}
}

func TestManagedByKueue(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		gates  []v1.PodSchedulingGate
		want   bool
	}{
		{name: "nothing"},
		{name: "queue name", labels: map[string]string{KueueQueueNameLabel: "user-queue"}, want: true},
		{name: "empty queue name", labels: map[string]string{KueueQueueNameLabel: ""}},
		{name: "topology gate", gates: []v1.PodSchedulingGate{{Name: "other"}, {Name: KueueTopologySchedulingGate}}, want: true},
		{name: "other gate", gates: []v1.PodSchedulingGate{{Name: "example.com/gate"}}},
		{name: "annotations alone do not mean Kueue", labels: map[string]string{"app": "train"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManagedByKueue(tc.labels, tc.gates); got != tc.want {
				t.Errorf("ManagedByKueue = %v, want %v", got, tc.want)
			}
		})
	}
}
