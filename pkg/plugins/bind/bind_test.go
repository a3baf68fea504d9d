package bind

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	st "github.com/lockstep-sched/lockstep/pkg/testing"
)

// bindings counts the bind requests a fake clientset receives: how many are outstanding at
// once, and which pods were bound.
type bindings struct {
	mu          sync.Mutex
	outstanding int
	most        int
	bound       map[string]string
	release     chan struct{} // each request waits for one value, when set
	fail        []error       // returned by the first requests, in order
}

func (b *bindings) react(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	binding := action.(clienttesting.CreateAction).GetObject().(*v1.Binding)
	b.mu.Lock()
	b.outstanding++
	b.most = max(b.most, b.outstanding)
	b.mu.Unlock()
	if b.release != nil {
		<-b.release
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outstanding--
	if len(b.fail) > 0 {
		err := b.fail[0]
		b.fail = b.fail[1:]
		return true, nil, err
	}
	b.bound[binding.Name] = binding.Target.Name
	return true, nil, nil
}

func newBind(slots int64, b *bindings) *Bind {
	b.bound = map[string]string{}
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", b.react)
	return &Bind{client: client, window: NewWindow(slots, time.Now)}
}

// A released gang's binds go out at most maxBindsInFlight at a time (the window never grows
// past it), and every member binds.
func TestBindsInFlightAreBounded(t *testing.T) {
	for _, tc := range []struct {
		slots int64
		pods  int
	}{{slots: 1, pods: 10}, {slots: 3, pods: 40}, {slots: 32, pods: 20}} {
		t.Run(fmt.Sprintf("%d slots, %d pods", tc.slots, tc.pods), func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			b := &bindings{release: make(chan struct{})}
			pl := newBind(tc.slots, b)
			var wg sync.WaitGroup
			statuses := make([]*fwk.Status, tc.pods)
			for i := range tc.pods {
				wg.Add(1)
				go func() {
					defer wg.Done()
					pod := st.MakePod().Namespace("ns").Name(fmt.Sprintf("p-%d", i)).Obj()
					statuses[i] = pl.Bind(ctx, nil, pod, fmt.Sprintf("n-%d", i))
				}()
			}
			for range tc.pods {
				b.release <- struct{}{}
			}
			wg.Wait()
			for i, s := range statuses {
				if !s.IsSuccess() {
					t.Errorf("pod %d: %v", i, s)
				}
			}
			if len(b.bound) != tc.pods {
				t.Errorf("%d pods bound, want %d", len(b.bound), tc.pods)
			}
			if b.most > int(tc.slots) {
				t.Errorf("%d binds outstanding at once, want at most %d", b.most, tc.slots)
			}
		})
	}
}

// Binds are retried as upstream's DefaultBinder retries them (internal errors, unavailable apiserver); other errors fail the bind.
func TestBindRetries(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name    string
		fail    []error
		wantErr bool
	}{
		{name: "bound"},
		{name: "unavailable, then bound", fail: []error{apierrors.NewServiceUnavailable("again")}},
		{name: "internal error twice, then bound", fail: []error{apierrors.NewInternalError(fmt.Errorf("a")), apierrors.NewInternalError(fmt.Errorf("b"))}},
		{name: "forbidden", fail: []error{apierrors.NewForbidden(gr, "p", fmt.Errorf("no"))}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			b := &bindings{fail: tc.fail}
			pl := newBind(2, b)
			s := pl.Bind(ctx, nil, st.MakePod().Namespace("ns").Name("p").Obj(), "n")
			if s.IsSuccess() == tc.wantErr {
				t.Fatalf("status %v, want error %v", s, tc.wantErr)
			}
			if !tc.wantErr && b.bound["p"] != "n" {
				t.Errorf("pod bound to %q, want n", b.bound["p"])
			}
		})
	}
}

// A bind whose context ends while it waits for a slot fails without a request.
func TestBindWaitingForSlotCancelled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	b := &bindings{}
	pl := newBind(1, b)
	if err := pl.window.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if s := pl.Bind(ctx, nil, st.MakePod().Namespace("ns").Name("p").Obj(), "n"); s.IsSuccess() {
		t.Fatal("bind succeeded without a slot")
	}
	if len(b.bound) != 0 {
		t.Errorf("bound %v", b.bound)
	}
}

// The bind client has a rate limiter of its own, at the args' limits or the scheduler's.
func TestClientConfig(t *testing.T) {
	shared := rest.Config{QPS: 50, Burst: 100}
	tests := []struct {
		name      string
		base      rest.Config
		args      config.LockstepBindArgs
		wantQPS   float32
		wantBurst int
		limited   bool
	}{
		{name: "clientConnection's limits", base: shared, wantQPS: 50, wantBurst: 100, limited: true},
		{name: "args' limits", base: shared, args: config.LockstepBindArgs{QPS: 400, Burst: 800}, wantQPS: 400, wantBurst: 800, limited: true},
		{name: "client-go's defaults", wantQPS: rest.DefaultQPS, wantBurst: rest.DefaultBurst, limited: true},
		{name: "no limit", base: rest.Config{QPS: -1}, wantQPS: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			cfg := clientConfig(&base, &tc.args)
			if cfg.QPS != tc.wantQPS || cfg.Burst != tc.wantBurst {
				t.Errorf("qps %v burst %d, want %v %d", cfg.QPS, cfg.Burst, tc.wantQPS, tc.wantBurst)
			}
			if (cfg.RateLimiter != nil) != tc.limited {
				t.Errorf("rate limiter %v, want one: %v", cfg.RateLimiter, tc.limited)
			}
			if cfg.RateLimiter != nil && cfg.RateLimiter.QPS() != tc.wantQPS {
				t.Errorf("rate limiter at %v qps, want %v", cfg.RateLimiter.QPS(), tc.wantQPS)
			}
			if cfg.RateLimiter != nil && cfg.RateLimiter == base.RateLimiter {
				t.Error("the bind client shares the scheduler's rate limiter")
			}
		})
	}
}

// kubeconfigHandle is a framework handle with the scheduler's kubeconfig, as the plugin's
// factory gets it.
type kubeconfigHandle struct{ fwk.Handle }

func (kubeconfigHandle) KubeConfig() *rest.Config {
	return &rest.Config{Host: "https://127.0.0.1:6443"}
}

// The LockstepBinds of a scheduler's profiles bind through one window: maxBindsInFlight
// bounds the scheduler's binds together (the least any profile sets), not each profile's.
func TestProfilesShareOneWindow(t *testing.T) {
	var windows Windows
	a, err := New(context.Background(), &config.LockstepBindArgs{MaxBindsInFlight: 64}, kubeconfigHandle{}, &windows)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(context.Background(), &config.LockstepBindArgs{MaxBindsInFlight: 16}, kubeconfigHandle{}, &windows)
	if err != nil {
		t.Fatal(err)
	}
	wa, wb := a.(*Bind).window, b.(*Bind).window
	if wa != wb {
		t.Fatal("two profiles bind through two windows: together they may have twice maxBindsInFlight outstanding")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	taken := 0
	for wa.Acquire(ctx) == nil {
		taken++
	}
	if taken != 16 {
		t.Errorf("%d binds outstanding at once, want the least maxBindsInFlight of the profiles, 16", taken)
	}
}
