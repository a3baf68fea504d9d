package churn

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// oracle watches every pod of the test as the apiserver reports it and checks, as binds
// happen, what lockstep promises; it knows the gangs from what the test created and the
// nodes from the objects it created, and never reads lockstep's conditions or logs:
//   - no gang stays partially bound (0 < bound < minCount) longer than its grace without
//     a member of it deleted in between: binds of a gang allowed whole land one after the
//     other, and a scheduler killed among them is replaced and finishes them, but neither
//     takes that long;
//   - no node's pods ever request more cpu than it has;
//   - every bound pod of a group with a Required constraint sits in one domain of its level
//     with the group's other bound pods.
type oracle struct {
	t     *testing.T
	mu    sync.Mutex
	gangs map[string]*gang
	// cpu is each node's allocatable cpu, in millicores; gone the nodes the test deleted.
	cpu  map[string]int64
	gone map[string]bool
	// bound are the bound, live pods: node and cpu request, by pod name; gangOf their gang.
	bound map[string]boundPod
	// partial is when each gang became partially bound; excused: a member of it was deleted
	// since; whole: it was bound whole once.
	partial map[string]time.Time
	excused map[string]bool
	whole   map[string]bool
	// fails are the violations seen, reported by check.
	fails []string
	// grace is how long a gang may be partially bound without a member deleted.
	grace time.Duration
	// wholeAt are the times gangs became bound whole (wholeNow: those that are);
	// conditionWrites count the changes of each pod's PodScheduled condition.
	wholeAt         []time.Time
	wholeNow        map[string]bool
	conditionWrites map[string]int
}

type boundPod struct {
	node string
	cpu  int64
	gang string
}

// partialGrace is how long a gang may be partially bound without a member deleted, in the
// churn of TestChurn.
const partialGrace = 45 * time.Second

// watch starts an oracle on the namespace's pods; it checks the partial gangs every second
// until the test ends.
func watch(t *testing.T, env *testenv.Env, ns string, nodes []*v1.Node, grace time.Duration) *oracle {
	o := &oracle{t: t, grace: grace, gangs: map[string]*gang{}, cpu: map[string]int64{}, gone: map[string]bool{}, bound: map[string]boundPod{},
		partial: map[string]time.Time{}, excused: map[string]bool{}, whole: map[string]bool{}, wholeNow: map[string]bool{}, conditionWrites: map[string]int{}}
	for _, n := range nodes {
		o.cpu[n.Name] = n.Status.Allocatable.Cpu().MilliValue()
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { o.observe(obj.(*v1.Pod)) },
		UpdateFunc: func(old, obj any) {
			o.countConditionWrite(old.(*v1.Pod), obj.(*v1.Pod))
			o.observe(obj.(*v1.Pod))
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			o.forget(obj.(*v1.Pod))
		},
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				o.overdue()
			}
		}
	}()
	return o
}

func (o *oracle) fail(format string, args ...any) {
	msg := fmt.Sprintf("%s: ", time.Now().Format("15:04:05.000")) + fmt.Sprintf(format, args...)
	o.fails = append(o.fails, msg)
}

// nodeDeleted tells the oracle the test deleted a node: its violation reports name the pods
// bound there (a bind can land as its node is deleted).
func (o *oracle) nodeDeleted(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gone[name] = true
}

// register tells the oracle of a gang the test creates, before its pods.
func (o *oracle) register(g *gang) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gangs[g.name] = &gang{name: g.name, min: g.min, topology: g.topology}
}

// observe records a pod as the apiserver shows it now.
func (o *oracle) observe(p *v1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	gang := p.Labels[v1alpha1.PodGroupLabel]
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	if _, seen := o.bound[p.Name]; seen {
		return
	}
	cpu := int64(0)
	for _, c := range p.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
	}
	o.bound[p.Name] = boundPod{node: p.Spec.NodeName, cpu: cpu, gang: gang}
	// Capacity, from the nodes as the test made them.
	used := int64(0)
	for _, b := range o.bound {
		if b.node == p.Spec.NodeName {
			used += b.cpu
		}
	}
	if alloc, ok := o.cpu[p.Spec.NodeName]; ok && used > alloc {
		o.fail("node %s: pods request %dm cpu of %dm once %s bound", p.Spec.NodeName, used, alloc, p.Name)
	}
	g := o.gangs[gang]
	if g == nil {
		return
	}
	// One domain for a Required group.
	if key := requiredKey(g); key != "" {
		domains := map[string][]string{}
		for name, b := range o.bound {
			if b.gang == gang {
				d := testenv.Domain(b.node, key)
				domains[d] = append(domains[d], name)
			}
		}
		if len(domains) > 1 {
			var orphans []string
			for name, b := range o.bound {
				if b.gang == gang && o.gone[b.node] {
					orphans = append(orphans, name)
				}
			}
			sort.Strings(orphans)
			o.fail("gang %s requires one %s, its bound pods are in %v (of them on deleted nodes: %v)", gang, key, domains, orphans)
		}
	}
	o.settle(gang)
}

// forget records that a pod is gone: its gang's partial state is excused.
func (o *oracle) forget(p *v1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.bound, p.Name)
	gang := p.Labels[v1alpha1.PodGroupLabel]
	if _, ok := o.gangs[gang]; ok {
		o.excused[gang] = true
		o.settle(gang)
	}
}

// settle updates a gang's partial state from its bound pods.
func (o *oracle) settle(gang string) {
	g := o.gangs[gang]
	n := o.boundOf(gang)
	switch {
	case n >= g.min:
		if !o.wholeNow[gang] {
			o.wholeAt = append(o.wholeAt, time.Now())
			o.wholeNow[gang] = true
		}
		o.whole[gang] = true
		delete(o.partial, gang)
		delete(o.excused, gang)
	case n == 0:
		delete(o.wholeNow, gang)
		delete(o.partial, gang)
		delete(o.excused, gang)
	default:
		delete(o.wholeNow, gang)
		if _, ok := o.partial[gang]; !ok {
			o.partial[gang] = time.Now()
		}
	}
}

func (o *oracle) boundOf(gang string) int {
	n := 0
	for _, b := range o.bound {
		if b.gang == gang {
			n++
		}
	}
	return n
}

// overdue flags the gangs partially bound for longer than the grace with no member deleted.
func (o *oracle) overdue() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for gang, since := range o.partial {
		if o.excused[gang] || time.Since(since) < o.grace {
			continue
		}
		o.fail("gang %s partially bound (%d of minCount %d) for %s with no member deleted", gang, o.boundOf(gang), o.gangs[gang].min, time.Since(since).Round(time.Second))
		o.excused[gang] = true // once
	}
}

// countConditionWrite counts a change of a pod's PodScheduled condition.
func (o *oracle) countConditionWrite(old, cur *v1.Pod) {
	was, is := scheduledCondition(old), scheduledCondition(cur)
	if is == nil || (was != nil && was.Status == is.Status && was.Reason == is.Reason && was.Message == is.Message) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.conditionWrites[cur.Name]++
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	_, c := podutil.GetPodCondition(&p.Status, v1.PodScheduled)
	return c
}

// wholeSince returns when gangs became bound whole after t.
func (o *oracle) wholeSince(t time.Time) []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []time.Time
	for _, w := range o.wholeAt {
		if w.After(t) {
			out = append(out, w)
		}
	}
	return out
}

// conditionWritesOf returns the number of PodScheduled condition changes of the named pods.
func (o *oracle) conditionWritesOf(pods []string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, p := range pods {
		n += o.conditionWrites[p]
	}
	return n
}

// wholeOnce reports whether the oracle saw a gang bound whole.
func (o *oracle) wholeOnce(gang string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.whole[gang]
}

// check reports the violations seen so far.
func (o *oracle) check() {
	o.mu.Lock()
	defer o.mu.Unlock()
	sort.Strings(o.fails)
	for _, f := range o.fails {
		o.t.Error(f)
	}
}

// requiredKey is the level of a gang's Required constraint, "" for none.
func requiredKey(g *gang) string {
	for _, c := range g.topology {
		if c.Mode != v1alpha1.TopologyPreferred && c.SliceSize == nil {
			return c.Key
		}
	}
	return ""
}
