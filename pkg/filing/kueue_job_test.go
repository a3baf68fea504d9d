package filing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

const (
	kueueBlock = "cloud.provider.com/topology-block"
	kueueRack  = "cloud.provider.com/topology-rack"
	kueueHost  = "kubernetes.io/hostname"
)

// TestGangForJobKueue proves how Kueue's TAS annotations on a Job's pod template shape its
// gang: they are its topology (PodSet constraints, then the slice), they make a Job of
// several pods a gang even when KEP-5547's rule would not, lockstep's own annotations and
// the gang annotation win over them, and a Job Kueue manages is read for none of them.
func TestGangForJobKueue(t *testing.T) {
	names := sets.New(lt.SchedulerName)
	name := JobGroupName("train", "uid-train")
	tests := []struct {
		name string
		job  func() *batchv1.Job
		want *JobGang
		// problems are substrings, one per problem expected, in order.
		problems []string
	}{
		// The forms of Kueue's annotations, on an Indexed Job (a gang anyway).
		{name: "required", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}}},
		{name: "preferred", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetPreferredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Preferred(kueueRack)}}},
		{name: "unconstrained: a gang by the Job's shape, no constraint", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetUnconstrainedTopologyAnnotation, "true").Obj()
		}, want: &JobGang{Name: name, MinCount: 4}},
		{name: "required block, slices of 2 per host: PodSet constraint first, then the slice", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueBlock).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "2").Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueBlock), lt.Slices(kueueHost, 2)}}},
		{name: "preferred block, slices of 4 per rack", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(8).TemplateAnnotation(KueuePodSetPreferredTopologyAnnotation, kueueBlock).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueRack).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "4").Obj()
		}, want: &JobGang{Name: name, MinCount: 8, Topology: []v1alpha1.TopologyConstraint{lt.Preferred(kueueBlock), lt.Slices(kueueRack, 4)}}},
		{name: "slices alone", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(6).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "3").Obj()
		}, want: &JobGang{Name: name, MinCount: 6, Topology: []v1alpha1.TopologyConstraint{lt.Slices(kueueHost, 3)}}},
		{name: "min-count and Kueue topology together", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobMinCountAnnotation, "3").TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 3, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}}},

		// Kueue's annotations make a gang of a Job the shape rule leaves alone.
		{name: "non-indexed Job of parallelism 4 with a Kueue annotation: a gang", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}}},
		{name: "non-indexed Job with slices only: a gang", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "2").Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Slices(kueueHost, 2)}}},
		{name: "Indexed Job with completions > parallelism and a Kueue annotation: a gang", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetPreferredTopologyAnnotation, kueueRack).Obj()
			j.Spec.Completions = ptr.To[int32](16)
			return j
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Preferred(kueueRack)}}},
		{name: "non-indexed Job with unconstrained only: not a gang (nothing asks for a group)", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetUnconstrainedTopologyAnnotation, "true").Obj()
		}},
		{name: "parallelism 1 with a Kueue annotation: not a gang", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(1).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}},
		{name: "parallelism unset with a Kueue annotation: not a gang", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
			j.Spec.Parallelism = nil
			return j
		}},
		{name: "parallelism 1 opted in: a gang of one with the Kueue topology", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(1).Annotation(v1alpha1.JobGangAnnotation, "true").TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 1, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}}},
		{name: "gang false wins over Kueue's annotations", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).Annotation(v1alpha1.JobGangAnnotation, "false").TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}},
		{name: "gang false wins on an Indexed Job with Kueue's annotations", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobGangAnnotation, "false").TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "2").Obj()
		}},
		{name: "gang annotation not a boolean: Kueue's annotations still make the gang", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).Annotation(v1alpha1.JobGangAnnotation, "maybe").TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}},
			problems: []string{`scheduling.lockstep.dev/gang="maybe" is not true or false`}},

		// lockstep's own topology annotations on the Job win over Kueue's on the template.
		{name: "lockstep's required on the Job wins over Kueue's", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobTopologyRequiredAnnotation, kueueBlock).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "2").Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueBlock)}}},
		{name: "lockstep's preferred on the Job wins over Kueue's, on a Job Kueue's annotations make a gang", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).Annotation(v1alpha1.JobTopologyPreferredAnnotation, kueueBlock).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Preferred(kueueBlock)}}},
		{name: "lockstep's annotation invalid: a problem, and Kueue's are not read instead", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobTopologyRequiredAnnotation, "not a key").TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{`topology-required="not a key" is not a label key`}},
		{name: "lockstep's own topology alone does not make a non-indexed Job a gang", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).Annotation(v1alpha1.JobTopologyRequiredAnnotation, kueueBlock).Obj()
		}},

		// Kueue manages the Job: none of its annotations are read, and they make no gang.
		{name: "queue-name label on the Job", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
			j.Labels = map[string]string{KueueQueueNameLabel: "user-queue"}
			return j
		}},
		{name: "queue-name label on the pod template", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
			j.Spec.Template.Labels = map[string]string{KueueQueueNameLabel: "user-queue"}
			return j
		}},
		{name: "topology scheduling gate on the pod template", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
			j.Spec.Template.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: KueueTopologySchedulingGate}}
			return j
		}},
		{name: "Kueue-managed Indexed Job: still a gang by its shape, without Kueue's topology", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "2").Obj()
			j.Labels = map[string]string{KueueQueueNameLabel: "user-queue"}
			return j
		}, want: &JobGang{Name: name, MinCount: 4}},
		{name: "Kueue-managed Job keeps lockstep's own topology", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobTopologyRequiredAnnotation, kueueBlock).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
			j.Spec.Template.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: KueueTopologySchedulingGate}}
			return j
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueBlock)}}},
		{name: "empty queue-name label: not Kueue's", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).Obj()
			j.Labels = map[string]string{KueueQueueNameLabel: ""}
			return j
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}}},

		// Malformed annotations: problems, the rest honoured.
		{name: "required not a label key on an Indexed Job: a problem, no constraint", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, "not a key").Obj()
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{KueuePodSetRequiredTopologyAnnotation + `="not a key" is not a label key`}},
		{name: "required not a label key on a non-indexed Job: no gang", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, "not a key").Obj()
		}},
		{name: "required and preferred: required wins, a problem", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Parallelism(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueBlock).TemplateAnnotation(KueuePodSetPreferredTopologyAnnotation, kueueRack).Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueBlock)}},
			problems: []string{KueuePodSetPreferredTopologyAnnotation + " cannot be combined with " + KueuePodSetRequiredTopologyAnnotation}},
		{name: "slice size larger than the Job: slices ignored, a problem", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, kueueRack).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "8").Obj()
		}, want: &JobGang{Name: name, MinCount: 4, Topology: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}},
			problems: []string{KueuePodSetSliceSizeAnnotation + `="8" exceeds the 4 pods of the pod set`}},
		{name: "slice topology without size: a Job has no default, a problem", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).Obj()
		}, want: &JobGang{Name: name, MinCount: 4},
			problems: []string{KueuePodSetSliceRequiredTopologyAnnotation + " needs " + KueuePodSetSliceSizeAnnotation}},
		{name: "slice size not a number", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost).TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "two").Obj()
		}, want: &JobGang{Name: name, MinCount: 4},
			problems: []string{KueuePodSetSliceSizeAnnotation + `="two" is not a positive integer`}},
		{name: "every annotation malformed: problems of each, no panic", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobMinCountAnnotation, "0").TemplateAnnotation(KueuePodSetUnconstrainedTopologyAnnotation, "perhaps").TemplateAnnotation(KueuePodSetSliceRequiredTopologyAnnotation, "").TemplateAnnotation(KueuePodSetSliceSizeAnnotation, "-1").TemplateAnnotation(KueuePodSetGroupNameAnnotation, "7").Obj()
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{
			`min-count="0" is not a positive integer`,
			KueuePodSetUnconstrainedTopologyAnnotation + `="perhaps" is not true or false`,
			KueuePodSetSliceRequiredTopologyAnnotation + `="" is not a label key`,
			KueuePodSetGroupNameAnnotation + `="7" is empty or a number`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := GangForJob(tc.job(), names)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gang (-want +got):\n%s", diff)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %q, want %d containing %q", problems, len(tc.problems), tc.problems)
			}
			for i, want := range tc.problems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
}

// TestPodSetTopology proves the precedence PodSetTopology applies for every adapter:
// lockstep's annotations on the workload object, else Kueue's on the pod template unless
// Kueue manages the workload; sizes are passed through to Kueue's rules.
func TestPodSetTopology(t *testing.T) {
	withKueue := func(kv ...string) *v1.PodTemplateSpec {
		t := &v1.PodTemplateSpec{}
		t.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			t.Annotations[kv[i]] = kv[i+1]
		}
		return t
	}
	rackAndSlices := func() *v1.PodTemplateSpec {
		return withKueue(KueuePodSetRequiredTopologyAnnotation, kueueRack,
			KueuePodSetSliceRequiredTopologyAnnotation, kueueHost, KueuePodSetSliceSizeAnnotation, "2")
	}
	tests := []struct {
		name           string
		own            map[string]string
		workloadLabels map[string]string
		tmpl           *v1.PodTemplateSpec
		size, def      int32
		want           KueueTopology
		problems       []string
	}{
		{name: "nothing"},
		{name: "no template, no own annotations", own: map[string]string{"example.com/x": "y"}},
		{name: "own annotations, no template", own: map[string]string{v1alpha1.JobTopologyRequiredAnnotation: kueueBlock},
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{lt.Required(kueueBlock)}}},
		{name: "Kueue's annotations", tmpl: rackAndSlices(), size: 8,
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)},
				Slice: ptr.To(lt.Slices(kueueHost, 2))}},
		{name: "group name is kept", tmpl: withKueue(KueuePodSetPreferredTopologyAnnotation, kueueRack, KueuePodSetGroupNameAnnotation, "leader-workers"),
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{lt.Preferred(kueueRack)}, GroupName: "leader-workers"}},
		{name: "own annotations win over Kueue's", own: map[string]string{v1alpha1.JobTopologyRequiredAnnotation: kueueBlock}, tmpl: rackAndSlices(), size: 8,
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{lt.Required(kueueBlock)}}},
		{name: "own annotations invalid: their problem, Kueue's not read", own: map[string]string{v1alpha1.JobTopologyPreferredAnnotation: "bad key"},
			tmpl: rackAndSlices(), size: 8, problems: []string{`topology-preferred="bad key" is not a label key`}},
		{name: "queue-name on the workload", workloadLabels: map[string]string{KueueQueueNameLabel: "q"}, tmpl: rackAndSlices(), size: 8},
		{name: "queue-name on the template", tmpl: func() *v1.PodTemplateSpec {
			t := rackAndSlices()
			t.Labels = map[string]string{KueueQueueNameLabel: "q"}
			return t
		}(), size: 8},
		{name: "topology gate on the template", tmpl: func() *v1.PodTemplateSpec {
			t := rackAndSlices()
			t.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: KueueTopologySchedulingGate}}
			return t
		}(), size: 8},
		{name: "another gate on the template is not Kueue's", tmpl: func() *v1.PodTemplateSpec {
			t := rackAndSlices()
			t.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
			return t
		}(), size: 8, want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)},
			Slice: ptr.To(lt.Slices(kueueHost, 2))}},
		{name: "Kueue-managed workload keeps lockstep's own annotations", own: map[string]string{v1alpha1.JobTopologyRequiredAnnotation: kueueBlock},
			workloadLabels: map[string]string{KueueQueueNameLabel: "q"}, tmpl: rackAndSlices(), size: 8,
			want: KueueTopology{PodSet: []v1alpha1.TopologyConstraint{lt.Required(kueueBlock)}}},
		{name: "pod set size is passed: a slice too large is a problem", tmpl: rackAndSlices(), size: 1,
			want:     KueueTopology{PodSet: []v1alpha1.TopologyConstraint{lt.Required(kueueRack)}},
			problems: []string{`exceeds the 1 pods of the pod set`}},
		{name: "slice size default is passed", tmpl: withKueue(KueuePodSetSliceRequiredTopologyAnnotation, kueueHost), size: 8, def: 4,
			want: KueueTopology{Slice: ptr.To(lt.Slices(kueueHost, 4))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := PodSetTopology(tc.own, tc.workloadLabels, tc.tmpl, tc.size, tc.def)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("topology (-want +got):\n%s", diff)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %q, want %d containing %q", problems, len(tc.problems), tc.problems)
			}
			for i, want := range tc.problems {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
}

// TestKueueTopologyConstraints proves Constraints: the PodSet's constraints, then the slice,
// on a copy (appending to it leaves the KueueTopology alone).
func TestKueueTopologyConstraints(t *testing.T) {
	s := ptr.To(lt.Slices(kueueHost, 2))
	podSet := []v1alpha1.TopologyConstraint{{Key: kueueRack, Mode: v1alpha1.TopologyRequired}}
	tests := []struct {
		name string
		kt   KueueTopology
		want []v1alpha1.TopologyConstraint
	}{
		{name: "none"},
		{name: "PodSet only", kt: KueueTopology{PodSet: podSet}, want: podSet},
		{name: "slice only", kt: KueueTopology{Slice: s}, want: []v1alpha1.TopologyConstraint{*s}},
		{name: "both, PodSet first", kt: KueueTopology{PodSet: podSet, Slice: s, GroupName: "ignored"}, want: []v1alpha1.TopologyConstraint{podSet[0], *s}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.kt.Constraints()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Constraints (-want +got):\n%s", diff)
			}
			if len(got) > 0 {
				got[0].Key = "mutated"
				if tc.kt.PodSet != nil && tc.kt.PodSet[0].Key == "mutated" {
					t.Errorf("Constraints shares its backing array with PodSet")
				}
				if tc.kt.PodSet == nil && tc.kt.Slice.Key == "mutated" {
					t.Errorf("Constraints returned the slice constraint itself")
				}
			}
		})
	}
}
