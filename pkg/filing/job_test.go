package filing

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

func TestGangForJob(t *testing.T) {
	names := sets.New(lt.SchedulerName)
	name := JobGroupName("train", "uid-train")
	tests := []struct {
		name     string
		job      func() *batchv1.Job
		want     *JobGang
		problems []string
	}{
		{name: "indexed, completions == parallelism", job: func() *batchv1.Job { return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj() },
			want: &JobGang{Name: name, MinCount: 4}},
		{name: "parallelism 1", job: func() *batchv1.Job { return lt.MakeJob().Namespace("ns").Name("train").Indexed(1).Obj() }},
		{name: "non-indexed", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
			return j
		}},
		{name: "completions != parallelism", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.Spec.Completions = ptr.To[int32](8)
			return j
		}},
		{name: "another scheduler", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.Spec.Template.Spec.SchedulerName = "default-scheduler"
			return j
		}},
		{name: "owned by a JobSet", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: "js", Controller: ptr.To(true)}}
			return j
		}},
		{name: "brings its own group", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.Spec.Template.Labels = map[string]string{v1alpha1.PodGroupLabel: "mine"}
			return j
		}},
		{name: "its pods name a native PodGroup", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.Spec.Template.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("native")}
			return j
		}},
		{name: "spec.scheduling: the Job controller makes its native groups", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{}
			return j
		}},
		{name: "its pods name a scheduler-plugins PodGroup", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Obj()
			j.Spec.Template.Labels = map[string]string{SchedulerPluginsPodGroupLabel: "sp-group"}
			return j
		}},
		{name: "its pods name a scheduler-plugins PodGroup, with Kueue's topology annotations", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).TemplateAnnotation(KueuePodSetRequiredTopologyAnnotation, "topology.kubernetes.io/rack").Obj()
			j.Spec.Template.Labels = map[string]string{SchedulerPluginsPodGroupLabel: "sp-group"}
			return j
		}},
		{name: "its pods name a scheduler-plugins PodGroup, opted in by annotation", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobGangAnnotation, "true").Obj()
			j.Spec.Template.Labels = map[string]string{SchedulerPluginsPodGroupLabel: "sp-group"}
			return j
		}},
		{name: "opted in though not indexed", job: func() *batchv1.Job {
			j := lt.MakeJob().Namespace("ns").Name("train").Indexed(3).Annotation(v1alpha1.JobGangAnnotation, "true").Obj()
			j.Spec.CompletionMode = nil
			j.Spec.Completions = ptr.To[int32](10)
			return j
		}, want: &JobGang{Name: name, MinCount: 3}},
		{name: "opted out", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobGangAnnotation, "false").Obj()
		}},
		{name: "min-count, topology", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobMinCountAnnotation, "3").Annotation(v1alpha1.JobTopologyRequiredAnnotation, "topology.kubernetes.io/block").Annotation(v1alpha1.JobTopologyPreferredAnnotation, "topology.kubernetes.io/rack").Obj()
		}, want: &JobGang{Name: name, MinCount: 3, Topology: []v1alpha1.TopologyConstraint{
			{Key: "topology.kubernetes.io/block", Mode: v1alpha1.TopologyRequired},
			{Key: "topology.kubernetes.io/rack", Mode: v1alpha1.TopologyPreferred},
		}}},
		{name: "invalid annotations are reported and ignored", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobGangAnnotation, "maybe").Annotation(v1alpha1.JobMinCountAnnotation, "five").Annotation(v1alpha1.JobTopologyRequiredAnnotation, "not a key").Obj()
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{
			`annotation scheduling.lockstep.dev/gang="maybe" is not true or false; ignored`,
			`annotation scheduling.lockstep.dev/min-count="five" is not a positive integer; minCount stays 4`,
			`annotation scheduling.lockstep.dev/topology-required="not a key" is not a label key; ignored`,
		}},
		{name: "schedule timeout", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobScheduleTimeoutAnnotation, "900").Obj()
		}, want: &JobGang{Name: name, MinCount: 4, ScheduleTimeoutSeconds: ptr.To[int32](900)}},
		{name: "schedule timeout not a positive number", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobScheduleTimeoutAnnotation, "0").Obj()
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{
			`annotation scheduling.lockstep.dev/schedule-timeout-seconds="0" is not a positive number of seconds; the default timeout applies`,
		}},
		{name: "min-count above parallelism", job: func() *batchv1.Job {
			return lt.MakeJob().Namespace("ns").Name("train").Indexed(4).Annotation(v1alpha1.JobMinCountAnnotation, "5").Obj()
		}, want: &JobGang{Name: name, MinCount: 4}, problems: []string{
			`annotation scheduling.lockstep.dev/min-count="5" exceeds parallelism 4 and could never be met; minCount stays 4`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := GangForJob(tc.job(), names)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gang (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.problems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobGroupName(t *testing.T) {
	a, b := JobGroupName("train", "uid-1"), JobGroupName("train", "uid-2")
	if a == b || !strings.HasPrefix(a, "train-") {
		t.Errorf("names %q and %q: want distinct names per Job UID, starting with the Job's name", a, b)
	}
	long := JobGroupName(strings.Repeat("x", 200), "uid")
	if len(long) > 63 {
		t.Errorf("name of %d characters does not fit a label value", len(long))
	}
}
