package gangpreemption

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// evictionWorkers bounds the parallel API calls of one preemption.
const evictionWorkers = 16

// Evict deletes the choice's victims in the background (the tree's members wait for them to
// be gone), through upstream's executor: a waiting victim is rejected in memory, a bound one
// gets the DisruptionTarget condition and is deleted, and each gets an event naming the
// preemptor. plugin names the plugin that preempts.
func Evict(ctx context.Context, executor *preemption.Executor, by *Preemptor, c *Choice, plugin string) {
	if executor == nil {
		return
	}
	victims := c.Pods()
	cand := &candidate{name: c.Domain.Name, victims: &extenderv1.Victims{Pods: victims, NumPDBViolations: int64(c.Cost.PDB)}, gangs: c.Cost.Gangs}
	logger := klog.FromContext(ctx)
	evicting.Add(1)
	go func() {
		defer evicting.Done()
		ctx := klog.NewContext(context.WithoutCancel(ctx), logger)
		workqueue.ParallelizeUntil(ctx, evictionWorkers, len(victims), func(i int) {
			if _, err := executor.PreemptPod(ctx, cand, by, victims[i], plugin); err != nil {
				logger.Error(err, "Evicting a victim of gang preemption", "victim", klog.KObj(victims[i]), "root", by.Gang.Root)
			}
		})
	}()
}

// evicting counts the evictions Evict runs in the background.
var evicting sync.WaitGroup

// WaitEvictions waits until no eviction Evict started is still running: what a preemption
// decided to evict has been evicted (a test's "nothing evicted" check waits for it).
func WaitEvictions() { evicting.Wait() }

// Preemptor is the preempting tree as upstream's executor names it in the victims' events
// and DisruptionTarget condition ("preempting to accommodate a higher priority gang
// PodGroup ns/name").
type Preemptor struct {
	Gang podgroup.Preemptor
	// Pending are the tree's groups with their pending members.
	Pending   *podgroup.GroupView
	Scheduler string
}

var _ preemption.ExecutorPreemptor = &Preemptor{}

func (x *Preemptor) GetName() string       { return x.Gang.Root.Name }
func (x *Preemptor) GetNamespace() string  { return x.Gang.Root.Namespace }
func (x *Preemptor) SchedulerName() string { return x.Scheduler }
func (x *Preemptor) Obj() runtime.Object   { return x.Gang.Object }
func (x *Preemptor) Priority() int32       { return x.Gang.Priority }
func (x *Preemptor) Type() string          { return "gang " + x.Gang.Root.String() }

func (x *Preemptor) UID() types.UID {
	if o, err := meta.Accessor(x.Gang.Object); err == nil {
		return o.GetUID()
	}
	return ""
}

// Pods are the tree's pending members, followers left out (they do not exist yet).
func (x *Preemptor) Pods() map[string]*v1.Pod {
	out := map[string]*v1.Pod{}
	x.Pending.Walk(func(g *podgroup.GroupView) {
		for _, p := range g.Pending {
			if !podgroup.IsFollower(p) {
				out[p.Name] = p
			}
		}
	})
	return out
}

// candidate is the domain freed, as upstream's executor takes it.
type candidate struct {
	name    string
	victims *extenderv1.Victims
	gangs   int
}

var _ preemption.Candidate = &candidate{}

func (c *candidate) Victims() *extenderv1.Victims { return c.victims }
func (c *candidate) Name() string                 { return c.name }
func (c *candidate) NumPodGroupDisruptions() int  { return c.gangs }
