// Package jobset runs lockstep with the real JobSet controller (v0.12.0, built from
// tools/controllers) against the test control plane, without webhooks: controller_test.go checks
// that the controller runs as expected there (child Jobs and pods with JobSet's labels);
// gangs_test.go submits JobSets to lockstep.
package jobset

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
}

func TestJobSetCreatesJobsAndPods(t *testing.T) {
	env := testenv.Start(t)
	env.StartKubeControllers(t)
	controller := env.StartJobSetController(t)
	ns := env.Namespace(t, "smoke")
	ctx := context.Background()

	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2",
		"kind":       "JobSet",
		"metadata":   map[string]any{"name": "train", "namespace": ns},
		"spec": map[string]any{
			"replicatedJobs": []any{map[string]any{
				"name":     "workers",
				"replicas": int64(2),
				"template": map[string]any{"spec": map[string]any{
					"parallelism": int64(2),
					"completions": int64(2),
					"template": map[string]any{"spec": map[string]any{
						"schedulerName": "default-scheduler",
						"containers":    []any{map[string]any{"name": "c", "image": "busybox"}},
					}},
				}},
			}},
		},
	}}
	testenv.DefaultJobSet(js.Object)
	jobsets := dynamic.NewForConfigOrDie(env.Config).Resource(testenv.JobSetGVR).Namespace(ns)
	created, err := jobsets.Create(ctx, js, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var jobs []batchv1.Job
	testenv.Eventually(t, 60*time.Second, "2 child Jobs", func() (bool, string) {
		list, err := env.Client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=train"})
		if err != nil {
			return false, err.Error()
		}
		jobs = list.Items
		return len(jobs) == 2, fmt.Sprintf("%d jobs", len(jobs))
	})
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].Name < jobs[j].Name })
	for i, job := range jobs {
		want := map[string]string{
			"jobset.sigs.k8s.io/jobset-name":            "train",
			"jobset.sigs.k8s.io/jobset-uid":             string(created.GetUID()),
			"jobset.sigs.k8s.io/replicatedjob-name":     "workers",
			"jobset.sigs.k8s.io/replicatedjob-replicas": "2",
			"jobset.sigs.k8s.io/global-replicas":        "2",
			"jobset.sigs.k8s.io/job-index":              fmt.Sprint(i),
			"jobset.sigs.k8s.io/job-global-index":       fmt.Sprint(i),
			"jobset.sigs.k8s.io/restart-attempt":        "0",
			"jobset.sigs.k8s.io/group-name":             "default",
			"jobset.sigs.k8s.io/group-replicas":         "2",
			"jobset.sigs.k8s.io/job-group-index":        fmt.Sprint(i),
		}
		if name := fmt.Sprintf("train-workers-%d", i); job.Name != name {
			t.Errorf("job %d is %s, want %s", i, job.Name, name)
		}
		checkLabels(t, "job "+job.Name, job.Labels, want)
		checkLabels(t, "pod template of "+job.Name, job.Spec.Template.Labels, want)
		if job.Labels["jobset.sigs.k8s.io/job-key"] == "" {
			t.Errorf("job %s has no job-key label", job.Name)
		}
		if ref := metav1.GetControllerOf(&job); ref == nil || ref.Kind != "JobSet" || ref.UID != created.GetUID() {
			t.Errorf("job %s is not controlled by the JobSet: %v", job.Name, ref)
		}
		if job.Spec.Template.Spec.Subdomain != "train" {
			t.Errorf("job %s pod subdomain %q, want train", job.Name, job.Spec.Template.Spec.Subdomain)
		}
	}

	testenv.Eventually(t, 60*time.Second, "4 pods", func() (bool, string) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "jobset.sigs.k8s.io/jobset-name=train"})
		if err != nil {
			return false, err.Error()
		}
		perJob := map[string]int{}
		for _, p := range list.Items {
			if p.Labels["jobset.sigs.k8s.io/replicatedjob-name"] != "workers" || p.Labels[batchv1.JobCompletionIndexAnnotation] == "" {
				return false, fmt.Sprintf("pod %s labels %v", p.Name, p.Labels)
			}
			perJob[p.Labels["jobset.sigs.k8s.io/job-index"]]++
		}
		return len(list.Items) == 4 && perJob["0"] == 2 && perJob["1"] == 2, fmt.Sprintf("%d pods, per job index %v", len(list.Items), perJob)
	})

	if _, err := env.Client.CoreV1().Services(ns).Get(ctx, "train", metav1.GetOptions{}); err != nil {
		t.Errorf("headless service train: %v", err)
	}
	// A JobSet missing a webhook default shows up only as recovered panics in the log
	// (conflicts on status updates are routine "Reconciler error"s).
	if strings.Contains(controller.Log(), "panic") {
		t.Errorf("the JobSet controller panicked while reconciling:\n%s", controller.Tail(40))
	}
}

func checkLabels(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: label %s=%q, want %q", what, k, got[k], v)
		}
	}
}
