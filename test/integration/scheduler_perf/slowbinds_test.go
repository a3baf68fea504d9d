package schedulerperf

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
	"k8s.io/utils/ptr"
)

// slowBindsMode marks the modes whose apiserver answers binds slowly (PlainSlowBinds,
// NativeSlowBinds, LockstepSlowBinds, LockstepSlowBindsFixed32).
const slowBindsMode = "SlowBinds"

// defaultBindLatency is how long a bind takes in those modes; LOCKSTEP_BIND_LATENCY sets
// another (a Go duration).
const defaultBindLatency = 250 * time.Millisecond

// slowBinds, in a SlowBinds mode, makes the workload's apiserver take the bind latency to
// answer each bind, and nothing else: a validating webhook on pods/binding, served by this
// process, answers after that long. It is the cluster the issue describes, an apiserver busy
// with other writers, where a bind takes a quarter of a second: the in-process apiserver
// answers one in a millisecond, and LOCKSTEP_ETCD_LATENCY slows pod creation as much as the
// binds (docs/benchmarks.md, "Binds at a busy apiserver's pace"). Requests wait side by side,
// as at a busy apiserver: what caps binds is how many the scheduler keeps in flight.
func slowBinds(tCtx ktesting.TContext) error {
	if !strings.Contains(modeOf(tCtx), slowBindsMode) {
		return nil
	}
	latency := defaultBindLatency
	if s := os.Getenv("LOCKSTEP_BIND_LATENCY"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("LOCKSTEP_BIND_LATENCY: %w", err)
		}
		latency = d
	}
	var reviews atomic.Int64
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		reviews.Add(1)
		if review.Request.DryRun == nil || !*review.Request.DryRun {
			time.Sleep(latency)
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	tCtx.Cleanup(hook.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "slow-binds"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "slow-binds.bench.lockstep.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL + "/"), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"pods/binding"}},
			}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To(int32(30)),
		}},
	}
	client := tCtx.Client()
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(tCtx, config, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The apiserver calls the webhook once its informer has the configuration: wait until a
	// bind in dry run reaches it, so that the workload's first bind is slow too.
	probe := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "slow-binds-probe", Namespace: metav1.NamespaceDefault},
		Spec:       v1.PodSpec{SchedulerName: "none", Containers: []v1.Container{{Name: "c", Image: "none"}}},
	}
	if _, err := client.CoreV1().Pods(probe.Namespace).Create(tCtx, probe, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() {
		_ = client.CoreV1().Pods(probe.Namespace).Delete(tCtx, probe.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	}()
	binding := &v1.Binding{ObjectMeta: probe.ObjectMeta, Target: v1.ObjectReference{Kind: "Node", Name: "slow-binds-probe"}}
	err := wait.PollUntilContextTimeout(tCtx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_ = client.CoreV1().Pods(probe.Namespace).Bind(ctx, binding, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return reviews.Load() > 0, nil
	})
	if err != nil {
		return fmt.Errorf("the slow-binds webhook was never called: %w", err)
	}
	tCtx.Logf("binds take %v from now on (validating webhook %s)", latency, config.Name)
	return nil
}

// modeOf is the mode (test case) of tCtx's workload: BenchmarkPerfScheduling/<mode>/<shape>.
func modeOf(tCtx ktesting.TContext) string {
	parts := strings.Split(tCtx.Name(), "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}
