package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Follow calls see with every event of watchFunc from resourceVersion on, in the apiserver's
// order of writes (a watch resumed across its timeouts, never relisted: nothing is missed or
// reordered), until the test ends; a watch error fails the test. The tests' oracles read
// binds as they happen with it, rather than lockstep's conditions.
func Follow(t *testing.T, resourceVersion string, watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error), see func(watch.Event)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{WatchFuncWithContext: watchFunc})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			if ev.Type == watch.Error {
				t.Errorf("watch: %v", describeStatus(ev.Object))
				continue
			}
			see(ev)
		}
	}()
	t.Cleanup(func() { rw.Stop(); cancel(); <-done })
}

// FollowPods calls see with every write to a pod of namespace ns (deleted: the pod is gone)
// from now until the test ends, in the apiserver's order: the state seen at a bind includes
// every earlier write to any pod. ns must have no pods yet, so that none is missed. A bound
// pod whose node changes fails the test: that must never happen.
func (e *Env) FollowPods(t *testing.T, ns string, see func(p *v1.Pod, deleted bool)) {
	t.Helper()
	pods := e.Client.CoreV1().Pods(ns)
	list, err := pods.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("namespace %s has pods already", ns)
	}
	nodes := map[types.UID]string{} // the node of each pod seen, "" while unbound
	Follow(t, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) },
		func(ev watch.Event) {
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				return
			}
			if prev := nodes[p.UID]; prev != "" && prev != p.Spec.NodeName {
				t.Errorf("pod watch: pod %s moved from node %q to %q", p.Name, prev, p.Spec.NodeName)
			}
			if ev.Type == watch.Deleted {
				delete(nodes, p.UID)
			} else {
				nodes[p.UID] = p.Spec.NodeName
			}
			see(p, ev.Type == watch.Deleted)
		})
}

func describeStatus(o runtime.Object) string {
	if s, ok := o.(*metav1.Status); ok {
		return strings.TrimSpace(s.Message)
	}
	return fmt.Sprintf("%T", o)
}
