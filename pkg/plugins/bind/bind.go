// Package bind implements LockstepBind, the binder of lockstep's profiles. It binds as
// upstream's DefaultBinder does (a Binding, retried on conflicts and timeouts), with two
// differences that matter when a gang of a thousand pods is released at once:
//
//   - its client is its own, with its own rate limit, so that binds never wait behind the
//     scheduler's other writes (pod status patches after failed attempts, nominations,
//     preemptions), which share kube-scheduler's client and its clientConnection limit;
//   - the binds outstanding at once are bounded by a window that adapts to what the
//     apiserver sustains (window.go: it grows while binds succeed promptly, and shrinks when
//     they are refused, fail or slow down), at most maxBindsInFlight, taken in the order the
//     pods reached the binder: a released gang goes out as fast as the apiserver takes its
//     binds, never as one request per member at the same moment.
package bind

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/lockstep-sched/lockstep/pkg/apis/config"
	configv1 "github.com/lockstep-sched/lockstep/pkg/apis/config/v1"
	"github.com/lockstep-sched/lockstep/pkg/apis/config/validation"
)

// Name is the name of the plugin used in the plugin registry and configurations.
const Name = "LockstepBind"

// Bind is the LockstepBind plugin.
type Bind struct {
	client kubernetes.Interface
	window *Window
}

var _ fwk.BindPlugin = &Bind{}

// Windows holds the one window of a scheduler's profiles (a scheduler binds through one
// apiserver): the first LockstepBind builds it, and each profile's maxBindsInFlight caps it,
// so that the bound holds for the scheduler's binds together, whatever profile they are of.
type Windows struct {
	mu     sync.Mutex
	window *Window
}

// of returns the window, built at max binds, or capped at max.
func (ws *Windows) of(max int64) *Window {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.window == nil {
		ws.window = newObservedWindow(max)
	} else {
		ws.window.Cap(max)
	}
	return ws.window
}

// New builds the plugin from its (defaulted, internal) args: a client of its own from the
// scheduler's kubeconfig, with the args' rate limit (or the kubeconfig's, which is the
// scheduler's clientConnection), and the scheduler's window (windows).
func New(_ context.Context, obj runtime.Object, h fwk.Handle, windows *Windows) (fwk.Plugin, error) {
	args, err := getArgs(obj)
	if err != nil {
		return nil, err
	}
	if err := validation.ValidateLockstepBindArgs(field.NewPath(Name+"Args"), args); err != nil {
		return nil, err
	}
	if h.KubeConfig() == nil {
		return nil, fmt.Errorf("%s needs the scheduler's kubeconfig to build its client", Name)
	}
	client, err := kubernetes.NewForConfig(clientConfig(h.KubeConfig(), args))
	if err != nil {
		return nil, err
	}
	RegisterMetrics()
	return &Bind{client: client, window: windows.of(int64(args.MaxBindsInFlight))}, nil
}

// clientConfig is the bind client's configuration: the scheduler's, with a rate limiter of
// its own (a copy without one gets its own token bucket) at the args' limits where set.
func clientConfig(base *rest.Config, args *config.LockstepBindArgs) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.RateLimiter = nil
	if args.QPS > 0 {
		cfg.QPS = float32(args.QPS)
	}
	if args.Burst > 0 {
		cfg.Burst = int(args.Burst)
	}
	if cfg.QPS == 0 { // what client-go would do
		cfg.QPS, cfg.Burst = rest.DefaultQPS, rest.DefaultBurst
	}
	if cfg.QPS > 0 { // a negative QPS turns client-go's rate limiting off
		cfg.RateLimiter = newObservedLimiter(cfg.QPS, cfg.Burst)
	}
	return rest.AddUserAgent(cfg, "lockstep-binder")
}

// getArgs accepts the typed args the scheduler decoded, or nil for the defaults.
func getArgs(obj runtime.Object) (*config.LockstepBindArgs, error) {
	if obj == nil {
		return &config.LockstepBindArgs{MaxBindsInFlight: configv1.DefaultMaxBindsInFlight}, nil
	}
	args, ok := obj.(*config.LockstepBindArgs)
	if !ok {
		return nil, fmt.Errorf("want args of type %sArgs, got %T", Name, obj)
	}
	return args, nil
}

// Name returns the name of the plugin.
func (b *Bind) Name() string { return Name }

// Bind waits for room in the window (behind the binds that came first), then binds the pod
// as DefaultBinder does, and tells the window how it went.
func (b *Bind) Bind(ctx context.Context, _ fwk.CycleState, p *v1.Pod, nodeName string) *fwk.Status {
	logger := klog.FromContext(ctx)
	start := time.Now()
	if err := b.window.Acquire(ctx); err != nil {
		return fwk.AsStatus(fmt.Errorf("waiting for room among the binds in flight: %w", err))
	}
	metrics.slotWait.Observe(time.Since(start).Seconds())
	metrics.inFlight.Inc()
	logger.V(3).Info("Attempting to bind pod to node", "pod", klog.KObj(p), "node", klog.KRef("", nodeName))
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	sent := time.Now()
	err := util.BindPod(ctx, b.client, binding)
	metrics.inFlight.Dec()
	b.window.Release(err, time.Since(sent))
	if err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}
