package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
	"github.com/lockstep-sched/lockstep/pkg/kueueworkloads"
)

// kueueWorkload is the Workload Kueue makes for a Job it queues (v1beta1), with its
// conditions.
func kueueWorkload(name, job, queue string, conditions ...map[string]any) *unstructured.Unstructured {
	conds := make([]any, len(conditions))
	for i, c := range conditions {
		c["lastTransitionTime"] = "2026-11-24T12:00:00Z"
		conds[i] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
		"metadata": map[string]any{"namespace": "demo", "name": name, "ownerReferences": []any{map[string]any{
			"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": job + "-uid", "controller": true}}},
		"spec":   map[string]any{"queueName": queue},
		"status": map[string]any{"conditions": conds},
	}}
}

// kueueCluster serves Kueue's Workloads, and its visibility API's pending workloads of
// LocalQueue team-a (the Workload job-train-1 third in it).
func kueueCluster(objs ...runtime.Object) dynamic.Interface {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kueueworkloads.GVR: "WorkloadList"}, objs...)
	dyn.PrependReactor("get", "localqueues", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "pendingworkloads" || a.(clienttesting.GetAction).GetName() != "team-a" {
			return false, nil, nil
		}
		return true, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "visibility.kueue.x-k8s.io/v1beta1", "kind": "PendingWorkloadsSummary",
			"items": []any{map[string]any{"metadata": map[string]any{"name": "job-train-1"}, "positionInLocalQueue": int64(2)}},
		}}, nil
	})
	return dyn
}

// run runs `kubectl lockstep command args` on the cluster of get's tests (with the
// scheduler's Deployment or not), with dyn as its dynamic client (nil: none), and returns its
// output, its error output and its error.
func run(t *testing.T, withScheduler bool, dyn dynamic.Interface, command string, args ...string) (string, string, error) {
	t.Helper()
	kube, ls := cluster(withScheduler)
	var out, errOut bytes.Buffer
	co := clusterOptions{streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}}
	co.clients = func() (kubernetes.Interface, versioned.Interface, string, error) { return kube, ls, "demo", nil }
	if dyn != nil {
		co.dynamicClient = func() (dynamic.Interface, error) { return dyn, nil }
	}
	cmd := newGetCommand(&getOptions{clusterOptions: co})
	if command == "explain" {
		cmd = newExplainCommand(&explainOptions{clusterOptions: co, now: nowForTests})
	}
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// A Job Kueue holds has no gang tree: get and explain say where it is queued and why, from
// its Kueue Workload, instead of "no gang tree holds".
func TestGetAndExplainSayWhatKueueHolds(t *testing.T) {
	dyn := kueueCluster(
		kueueWorkload("job-train-1", "train", "team-a", map[string]any{"type": "QuotaReserved", "status": "False", "reason": "Pending",
			"message": "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 4 more needed"}),
		kueueWorkload("job-eval-2", "eval", "team-b"),
		kueueWorkload("job-done-3", "done", "team-b", map[string]any{"type": "Admitted", "status": "True", "reason": "Admitted", "message": "admitted"}),
	)
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"job/train"}, want: "Job demo/train is queued in Kueue: Workload job-train-1, LocalQueue team-a, position 2; not admitted (Pending): couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 4 more needed; lockstep makes its gang tree once Kueue admits it"},
		{args: []string{"train"}, want: "Job demo/train is queued in Kueue: Workload job-train-1, LocalQueue team-a, position 2"},
		{args: []string{"job/eval"}, want: "Job demo/eval is queued in Kueue: Workload job-eval-2, LocalQueue team-b; not admitted yet (Kueue has not tried it)"},
		{args: []string{"job/done"}, want: "Job demo/done is admitted by Kueue (Workload job-done-3, LocalQueue team-b) and has no gang tree yet"},
		{args: []string{"job/train", "job/missing"}, want: "Job demo/train is queued in Kueue", wantErr: "no gang tree holds job/missing"},
		{args: []string{"jobset/train"}, wantErr: "no gang tree holds jobset/train"},
	} {
		for _, command := range []string{"get", "explain"} {
			out, _, err := run(t, true, dyn, command, tc.args...)
			if tc.wantErr == "" && err != nil {
				t.Errorf("%s %q: %v", command, tc.args, err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("%s %q: error %v, want one saying %q", command, tc.args, err, tc.wantErr)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("%s %q:\n%s\nwant %q in it", command, tc.args, out, tc.want)
			}
		}
	}
	// With a tree found, what Kueue holds is said after it; as YAML, apart from the list.
	out, errOut, err := run(t, true, dyn, "get", "other", "job/train", "-o", "yaml")
	if err != nil || !strings.Contains(out, "kind: GangTreeList") || strings.Contains(out, "Kueue") || !strings.Contains(errOut, "Job demo/train is queued in Kueue") {
		t.Errorf("get other job/train -o yaml: %v\nout:\n%s\nerr:\n%s\nwant the tree as YAML and Kueue's word apart", err, out, errOut)
	}
}
