package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned"
)

// runExplain runs `kubectl lockstep explain args` on the cluster of get's tests; forbidPods
// denies listing pods of every namespace, as for a user who may only read their own.
func runExplain(t *testing.T, forbidPods bool, args ...string) (string, error) {
	t.Helper()
	kube, ls := cluster(true)
	if forbidPods {
		kube.(*kubefake.Clientset).PrependReactor("list", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() == "" {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
			}
			return false, nil, nil
		})
	}
	var out, errOut bytes.Buffer
	o := &explainOptions{clusterOptions: clusterOptions{streams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}},
		now: nowForTests}
	o.clients = func() (kubernetes.Interface, versioned.Interface, string, error) { return kube, ls, "demo", nil }
	cmd := newExplainCommand(o)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func nowForTests() time.Time { return time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) }

func TestExplainCommand(t *testing.T) {
	out, err := runExplain(t, false, "pod/other-0")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"PodGroup demo/other  gang minCount=1", "1 pod pending", "the cluster: 1 node, free", "What would make it fit:"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain pod/other-0:\n%s\nwant %q in it", out, want)
		}
	}
	if strings.Contains(out, "finetune") {
		t.Errorf("explain pod/other-0:\n%s\nwant the pod's tree alone", out)
	}

	out, err = runExplain(t, false, "other", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kind: GangExplanationList") || !strings.Contains(out, "fits: 1") {
		t.Errorf("explain -o yaml:\n%s\nwant a GangExplanationList with the room counted", out)
	}

	out, err = runExplain(t, true, "other")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Room was not counted: listing the pods of every namespace is not allowed to you.") {
		t.Errorf("explain without access to every namespace's pods:\n%s\nwant it to say room was not counted", out)
	}
}

func TestExplainSaysWhatItDidNotFind(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job/missing"}, "no gang tree holds job/missing in namespace demo"},
		{nil, "requires at least 1 arg"},
		{[]string{"other", "-o", "wide"}, "--output must be one of text, json, yaml"},
	} {
		_, err := runExplain(t, false, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("explain %q: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
