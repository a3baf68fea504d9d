package jobframework_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/job"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/jobset"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// TestFilerAsksAdaptersInOrder proves that the Filer files a Job under the group of the
// first adapter that claims it, asks no adapter after that one, answers created as its
// Created field says, and answers "", false when no adapter claims the Job.
func TestFilerAsksAdaptersInOrder(t *testing.T) {
	tests := []struct {
		name      string
		claims    []string // what each adapter answers, "" for not mine
		created   bool
		wantName  string
		wantOK    bool
		wantAsked []string
	}{
		{name: "second of three claims it, created", claims: []string{"", "b", "c"}, created: true, wantName: "b", wantOK: true, wantAsked: []string{"0", "1"}},
		{name: "second of three claims it, not created", claims: []string{"", "b", "c"}, wantName: "b", wantAsked: []string{"0", "1"}},
		{name: "first claims it", claims: []string{"a", "b"}, created: true, wantName: "a", wantOK: true, wantAsked: []string{"0"}},
		{name: "none claims it", claims: []string{"", "", ""}, created: true, wantAsked: []string{"0", "1", "2"}},
		{name: "no adapters", created: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			var adapters []jobframework.Adapter
			for i, c := range tc.claims {
				a := newTreeAdapter()
				a.claim, a.id, a.asked = c, string(rune('0'+i)), &asked
				adapters = append(adapters, a)
			}
			f := jobframework.Filer{Adapters: adapters, Created: tc.created}
			name, ok := f.GroupOfJob(lt.MakeJob().Namespace(ns).Name("train").Indexed(4).Obj(), sets.New(lt.SchedulerName))
			if name != tc.wantName || ok != tc.wantOK {
				t.Errorf("GroupOfJob = %q, %v; want %q, %v", name, ok, tc.wantName, tc.wantOK)
			}
			if diff := cmp.Diff(tc.wantAsked, asked); diff != "" {
				t.Errorf("adapters asked (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilerWithRealAdapters proves that the Filer of the Job and JobSet adapters files a Job
// that is a gang by its own spec under its own PodGroup, a JobSet's child Job under the
// JobSet's (the Job adapter leaves it to the JobSet adapter), and no other Job.
func TestFilerWithRealAdapters(t *testing.T) {
	names := sets.New(lt.SchedulerName)
	f := jobframework.Filer{Adapters: []jobframework.Adapter{job.New(), jobset.New()}, Created: true}
	child := lt.MakeJob().Namespace(ns).Name("js-workers-0").Indexed(2).
		Label(jobset.LabelReplicatedJob, "workers").Label(jobset.LabelJobIndex, "0").Label(jobset.LabelRestartAttempt, "0").
		Owner(jobset.GVK.GroupVersion().String(), jobset.GVK.Kind, "js", "uid-js").Obj()
	tests := []struct {
		name     string
		job      *batchv1.Job
		wantName func(name string) bool
		wantOK   bool
	}{
		{name: "gang Job", job: lt.MakeJob().Namespace(ns).Name("train").Indexed(4).Obj(), wantOK: true,
			wantName: func(n string) bool { return n == filing.JobGroupName("train", "uid-train") }},
		{name: "JobSet child Job", job: child, wantOK: true,
			wantName: func(n string) bool { return n != "" && n != filing.JobGroupName(child.Name, child.UID) }},
		{name: "Job of parallelism 1", job: lt.MakeJob().Namespace(ns).Name("one").Indexed(1).Obj(), wantName: func(n string) bool { return n == "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name, ok := f.GroupOfJob(tc.job, names)
			if ok != tc.wantOK || !tc.wantName(name) {
				t.Errorf("GroupOfJob(%s) = %q, %v; want ok %v and another name", tc.job.Name, name, ok, tc.wantOK)
			}
		})
	}
}
