package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	lsfake "github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
)

// The plugin fails as kubectl does: "error: ..." on stderr, no log line, exit code 1.
func TestRunPrintsErrorsAsKubectlDoes(t *testing.T) {
	for _, args := range [][]string{
		{"get", "--no-such-flag"},
		{"explain"}, // explain needs what to explain
		{"get", "--kubeconfig", "/nonexistent/kubeconfig"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}, args)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
			errLines := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "error: ") {
					errLines++
				}
				// klog's header: a severity letter and the date, "E1202 10:04:05.123456".
				if len(l) > 5 && strings.ContainsRune("IWEF", rune(l[0])) && strings.Trim(l[1:5], "0123456789") == "" {
					t.Errorf("stderr has a log line: %q", l)
				}
			}
			if errLines != 1 {
				t.Errorf("stderr:\n%s\nwant one line starting with \"error: \"", errOut.String())
			}
		})
	}
}

// The CRDs are named as a likely cause only when lockstep's kinds are not served.
func TestListBlamesTheCRDsOnlyWhenTheKindIsNotServed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		blame bool
	}{
		{"not served", apierrors.NewNotFound(schema.GroupResource{Group: "scheduling.lockstep.dev", Resource: "podgroups"}, ""), true},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.lockstep.dev", Resource: "podgroups"}, "", errors.New("no RBAC")), false},
		{"timeout", apierrors.NewTimeoutError("slow", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := lsfake.NewSimpleClientset()
			ls.PrependReactor("list", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, tc.err })
			_, err := List(context.Background(), kubefake.NewClientset(), ls, "demo")
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Contains(err.Error(), "CRDs"); got != tc.blame {
				t.Errorf("error %q names the CRDs: %v, want %v", err, got, tc.blame)
			}
		})
	}
}

// The API server's warnings are shown as kubectl shows them, once each, but for the
// deprecation of the native groups' scheduling.k8s.io version, sent on every request.
func TestWarningsAreShownAsKubectlShowsThem(t *testing.T) {
	var out bytes.Buffer
	h := NewWarningHandler(&out)
	for range 3 {
		h.HandleWarningHeader(299, "", "scheduling.k8s.io/v1beta1 PodGroup is deprecated in v1.40+, unavailable in v1.43+")
		h.HandleWarningHeader(299, "", "spec.foo is ignored")
	}
	if got, want := out.String(), "Warning: spec.foo is ignored\n"; got != want {
		t.Errorf("warnings shown %q, want %q", got, want)
	}
}
