package job

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

func TestPreemptionWarnings(t *testing.T) {
	ignore := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}}
	failOnDisruption := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}}
	ignoreOther := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.PodReady, Status: v1.ConditionFalse}}}
	tests := []struct {
		name string
		job  *batchv1.Job
		want string // a substring of the warning, "" for none
	}{
		{"8 pods, default backoffLimit 6", lt.MakeJob().Name("j").Indexed(8).Obj(), "evicts its 8 pods at once and each eviction counts against backoffLimit (6)"},
		{"4 pods, default backoffLimit 6", lt.MakeJob().Name("j").Indexed(4).Obj(), ""},
		{"8 pods, backoffLimit 8", lt.MakeJob().Name("j").Indexed(8).BackoffLimit(8).Obj(), ""},
		{"8 pods, backoffLimit 0", lt.MakeJob().Name("j").Indexed(8).BackoffLimit(0).Obj(), "backoffLimit (0)"},
		{"disruptions ignored", lt.MakeJob().Name("j").Indexed(8).PodFailurePolicy(ignore).Obj(), ""},
		{"disruptions fail the Job", lt.MakeJob().Name("j").Indexed(8).PodFailurePolicy(failOnDisruption).Obj(), "podFailurePolicy"},
		{"another condition ignored", lt.MakeJob().Name("j").Indexed(8).PodFailurePolicy(ignoreOther).Obj(), "podFailurePolicy"},
		{"backoffLimitPerIndex", func() *batchv1.Job {
			j := lt.MakeJob().Name("j").Indexed(8).Obj()
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			return j
		}(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := New().Groups(tt.job, nil, sets.New("lockstep-scheduler"))
			if want == nil {
				t.Fatal("the Job gets no gang")
			}
			switch {
			case tt.want == "" && len(want.Warnings) != 0:
				t.Errorf("warnings %+v, want none", want.Warnings)
			case tt.want != "" && (len(want.Warnings) != 1 || want.Warnings[0].Reason != ReasonFailsOnPreemption || !strings.Contains(want.Warnings[0].Message, tt.want)):
				t.Errorf("warnings %+v, want one %s saying %q", want.Warnings, ReasonFailsOnPreemption, tt.want)
			}
		})
	}
}

// TestGroups proves which Jobs get no groups and lose those they have: a Job whose pods name
// a group of their own, and a suspended Job (queued in Kueue, or suspended by its owner),
// which gets its gang again, fresh, once resumed.
func TestGroups(t *testing.T) {
	names := sets.New(lt.SchedulerName)
	mine := lt.MakeJob().Namespace("ns").Name("j").Indexed(4).Obj()
	existing := []*v1alpha1.PodGroup{lt.MakePodGroup().Namespace("ns").Name(filing.JobGroupName("j", mine.UID)).Gang(4).Obj()}
	tests := []struct {
		name     string
		job      *batchv1.Job
		existing []*v1alpha1.PodGroup
		want     string // "gang", "none" (NoGroups) or "nil" (left alone)
	}{
		{"a gang Job", mine, nil, "gang"},
		{"a gang Job with its group", mine, existing, "gang"},
		{"suspended, no group yet", lt.MakeJob().Namespace("ns").Name("j").Indexed(4).Suspend(true).Obj(), nil, "none"},
		{"suspended with its group", lt.MakeJob().Namespace("ns").Name("j").Indexed(4).Suspend(true).Obj(), existing, "none"},
		{"resumed", lt.MakeJob().Namespace("ns").Name("j").Indexed(4).Suspend(false).Obj(), nil, "gang"},
		{"suspended, not a gang", lt.MakeJob().Namespace("ns").Name("j").Parallelism(1).Suspend(true).Obj(), nil, "nil"},
		{"pods name a scheduler-plugins PodGroup", lt.MakeJob().Namespace("ns").Name("j").Indexed(4).TemplateLabel(filing.SchedulerPluginsPodGroupLabel, "sp").Obj(), existing, "none"},
		{"pods name a lockstep PodGroup", lt.MakeJob().Namespace("ns").Name("j").Indexed(4).TemplateLabel(v1alpha1.PodGroupLabel, "mine").Obj(), nil, "none"},
		{"not a gang", lt.MakeJob().Namespace("ns").Name("j").Parallelism(1).Obj(), nil, "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _ := New().Groups(tt.job, tt.existing, names)
			got := "nil"
			switch {
			case g != nil && g.None:
				got = "none"
			case g != nil && len(g.PodGroups) == 1:
				got = "gang"
			}
			if got != tt.want {
				t.Errorf("Groups = %s (%+v), want %s", got, g, tt.want)
			}
		})
	}
}

// The Job's schedule-timeout-seconds annotation becomes its PodGroup's
// scheduleTimeoutSeconds; a Job that no longer gets a gang of its own keeps its group's.
func TestGroupsCarryTheScheduleTimeout(t *testing.T) {
	names := sets.New(lt.SchedulerName)
	annotated := lt.MakeJob().Namespace("ns").Name("j").Indexed(4).Annotation(v1alpha1.JobScheduleTimeoutAnnotation, "900").Obj()
	g, problems := New().Groups(annotated, nil, names)
	if len(problems) > 0 || g == nil || len(g.PodGroups) != 1 || ptr.Deref(g.PodGroups[0].ScheduleTimeoutSeconds, 0) != 900 {
		t.Fatalf("Groups = %+v (problems %v), want one PodGroup with scheduleTimeoutSeconds 900", g, problems)
	}
	plain := lt.MakeJob().Namespace("ns").Name("j").Parallelism(1).Obj()
	existing := []*v1alpha1.PodGroup{lt.MakePodGroup().Namespace("ns").Name("j-group").Gang(4).ScheduleTimeout(120).Obj()}
	g, _ = New().Groups(plain, existing, names)
	if g == nil || len(g.PodGroups) != 1 || ptr.Deref(g.PodGroups[0].ScheduleTimeoutSeconds, 0) != 120 {
		t.Fatalf("Groups = %+v, want its group kept with scheduleTimeoutSeconds 120", g)
	}
}
