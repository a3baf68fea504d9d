package podgroup

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	"github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	listers "github.com/lockstep-sched/lockstep/pkg/generated/listers/scheduling/v1alpha1"
)

// Weeks in a test: a seeded run of the group model and its status writer through
// SOAK_GANGS (100,000) gangs, at most soakLive at a time, each created, run through one life
// — scheduled and completed; failed and backed off; deleted mid-attempt; preempted; partially
// bound and released; suspended by its queue; a composite tree — and deleted. At the end,
// with every gang gone, every per-group and per-pod map of the model, its book and its status
// writer is empty, and the heap retained is what it was after the first gangs: nothing is
// kept per gang that ever ran. SOAK_SEED=n replays a seed.
func TestSoakKeepsNothingPerGangThatRan(t *testing.T) {
	gangs := 100000
	if n, err := strconv.Atoi(os.Getenv("SOAK_GANGS")); err == nil {
		gangs = n
	}
	seed := int64(1)
	if s, err := strconv.ParseInt(os.Getenv("SOAK_SEED"), 10, 64); err == nil {
		seed = s
	}
	s := newSoak(t, seed)
	var baseline uint64
	for i := 0; i < gangs; i++ {
		s.start(i)
		for len(s.live) >= soakLive {
			s.finishOne()
		}
		if i%200 == 199 {
			s.clk.Step(20 * time.Second)
			s.rec.take()
			s.rec.takeEvicted()
			s.syncStatus()
		}
		if i == 2000 {
			baseline = s.retained()
		}
	}
	for len(s.live) > 0 {
		s.finishOne()
	}
	s.clk.Step(time.Hour) // every timer the gangs armed has fired or was stopped
	s.syncStatus()
	s.rec.take()
	s.rec.takeEvicted()

	for kind, n := range s.m.Sizes() {
		if n != 0 {
			t.Errorf("the model keeps %d %s after every gang is gone", n, kind)
		}
	}
	if n := s.w.Remembered(); n != 0 {
		t.Errorf("the status writer remembers %d groups after every gang is gone", n)
	}
	if n := s.clk.Len(); n != 0 {
		t.Errorf("%d timers pending after every gang is gone", n)
	}
	after := s.retained()
	t.Logf("seed %d: %d gangs (%v); heap retained after 2000 gangs %d KiB, at the end %d KiB", seed, gangs, s.lives, baseline/1024, after/1024)
	if gangs > 2000 && after > baseline+8<<20 {
		t.Errorf("heap retained grew from %d KiB to %d KiB over %d gangs", baseline/1024, after/1024, gangs)
	}
}

// soakLive is how many gangs live at once in the soak.
const soakLive = 64

type soakGang struct {
	kind   string
	groups []Key // root first
	pods   []*v1.Pod
	job    *batchv1.Job
}

type soak struct {
	t      *testing.T
	rnd    *rand.Rand
	m      *Model
	clk    *simClock
	rec    *recorder
	w      *StatusWriter
	client *fake.Clientset
	groups cache.Indexer
	jobs   cache.Store
	queue  *statusKeys
	live   []*soakGang
	lives  map[string]int
}

func newSoak(t *testing.T, seed int64) *soak {
	clk := newSimClock(epoch)
	rec := &recorder{rejected: map[string]string{}, gone: sets.New[types.UID]()}
	q := &statusKeys{}
	m := New(Options{Scheduler: rec, Evictor: rec, Clock: clk, Status: q, Logger: logr.Discard()})
	m.AddProfile(Profile{Name: testScheduler})
	m.Lead()
	factory := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
	client := fake.NewSimpleClientset()
	groups := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	w := NewStatusWriter(client, listers.NewPodGroupLister(groups), listers.NewCompositePodGroupLister(groups), nil)
	w.now = clk.Now
	return &soak{t: t, rnd: rand.New(rand.NewSource(seed)), m: m, clk: clk, rec: rec, w: w, client: client, groups: groups,
		jobs: factory.Batch().V1().Jobs().Informer().GetStore(), queue: q, lives: map[string]int{}}
}

var soakKinds = []string{"scheduled", "failed", "deleted-waiting", "preempted", "partial", "suspended", "composite"}

// start creates gang i and takes it through the first part of its life.
func (s *soak) start(i int) {
	g := &soakGang{kind: soakKinds[s.rnd.Intn(len(soakKinds))]}
	s.lives[g.kind]++
	name := fmt.Sprintf("g%d", i)
	n := 1 + s.rnd.Intn(4)
	switch g.kind {
	case "composite":
		s.addGroup(g, lt.MakeCompositePodGroup().Namespace("ns").Name(name).Gang(2).Obj())
		for c := range 2 {
			child := fmt.Sprintf("%s-c%d", name, c)
			s.addGroup(g, lt.MakePodGroup().Namespace("ns").Name(child).Gang(int32(n)).Parent(name).Obj())
			g.pods = append(g.pods, s.addPods(child, n)...)
		}
	case "suspended":
		job := lt.MakeJob().Namespace("ns").Name(name).UID("job-" + name).Indexed(int32(n)).Obj()
		g.job = job
		if err := s.jobs.Add(job); err != nil {
			s.t.Fatal(err)
		}
		s.m.OnJob(job)
		s.addGroup(g, lt.MakePodGroup().Namespace("ns").Name(filing.JobGroupName(name, job.UID)).Gang(int32(n)).Obj())
		w := &lt.JobWrapper{Job: *job}
		for j := range n {
			p := w.Pod(j).CreationTimestamp(metav1.NewTime(s.clk.Now())).Obj()
			s.m.OnPod(nil, p)
			g.pods = append(g.pods, p)
		}
	default:
		s.addGroup(g, lt.MakePodGroup().Namespace("ns").Name(name).Gang(int32(n)).Obj())
		g.pods = s.addPods(name, n)
	}
	bg := klog.Background()
	switch g.kind {
	case "scheduled", "preempted", "partial", "composite":
		for _, p := range g.pods {
			a := assumed(p, "n1")
			s.m.Permits().Reserve(bg, a, "n1")
			s.m.Permits().Permit(bg, a, testPolicy)
		}
		for j, p := range g.pods {
			if g.kind == "partial" && j == len(g.pods)-1 {
				s.m.Permits().Unreserve(bg, assumed(p, "n1")) // a webhook refused the bind
				continue
			}
			bound := assumed(p, "n1")
			s.m.OnPod(p, bound)
			g.pods[j] = bound
		}
		if g.kind == "preempted" {
			s.m.Permits().NotePreempted(g.groups[0], "preempted by gang ns/hi (priority 1000), which takes rack r1")
		}
	case "failed":
		a := assumed(g.pods[0], "n1")
		s.m.Permits().Reserve(bg, a, "n1")
		s.m.Permits().Permit(bg, a, testPolicy)
		s.m.Permits().Fail(bg, g.pods[len(g.pods)-1], "0/1 nodes are available: 1 Insufficient cpu", testPolicy)
	case "deleted-waiting":
		for _, p := range g.pods[:max(1, len(g.pods)-1)] {
			a := assumed(p, "n1")
			s.m.Permits().Reserve(bg, a, "n1")
			s.m.Permits().Permit(bg, a, testPolicy)
		}
	case "suspended":
		a := assumed(g.pods[0], "n1")
		s.m.Permits().Reserve(bg, a, "n1")
		s.m.Permits().Permit(bg, a, testPolicy)
		suspended := g.job.DeepCopy()
		suspended.Spec.Suspend = ptrTo(true)
		if err := s.jobs.Update(suspended); err != nil {
			s.t.Fatal(err)
		}
		s.m.OnJobUpdate(g.job, suspended)
		g.job = suspended
	}
	s.live = append(s.live, g)
}

// finishOne ends the life of a random live gang: its pods and groups (and Job) go, in an
// order that depends on its kind.
func (s *soak) finishOne() {
	i := s.rnd.Intn(len(s.live))
	g := s.live[i]
	s.live = append(s.live[:i], s.live[i+1:]...)
	deleteGroups := func() {
		for j := len(g.groups) - 1; j >= 0; j-- {
			k := g.groups[j]
			obj, _, _ := s.groups.GetByKey(k.Namespace + "/" + k.Name)
			if obj == nil {
				continue
			}
			if err := s.groups.Delete(obj); err != nil {
				s.t.Fatal(err)
			}
			_ = s.client.Tracker().Delete(groupResource(k), k.Namespace, k.Name)
			s.m.OnGroupDelete(obj)
		}
	}
	deletePods := func() {
		for _, p := range g.pods {
			s.m.OnPodDelete(p)
		}
	}
	if g.kind == "deleted-waiting" || s.rnd.Intn(4) == 0 {
		deleteGroups() // the group goes first: its members wait for a PodGroup that is gone
		deletePods()
	} else {
		deletePods()
		deleteGroups()
	}
	if g.job != nil {
		if err := s.jobs.Delete(g.job); err != nil {
			s.t.Fatal(err)
		}
		s.m.OnJobDelete(g.job)
	}
}

func groupResource(k Key) schema.GroupVersionResource {
	if k.Kind == KindCompositePodGroup {
		return v1alpha1.SchemeGroupVersion.WithResource("compositepodgroups")
	}
	return v1alpha1.SchemeGroupVersion.WithResource("podgroups")
}

// addGroup creates a group object in the model, the status writer's lister and client.
func (s *soak) addGroup(g *soakGang, obj any) {
	k, _ := KeyOfObject(obj)
	if err := s.groups.Add(obj); err != nil {
		s.t.Fatal(err)
	}
	var err error
	switch o := obj.(type) {
	case *v1alpha1.PodGroup:
		err = s.client.Tracker().Add(o)
	case *v1alpha1.CompositePodGroup:
		err = s.client.Tracker().Add(o)
	}
	if err != nil {
		s.t.Fatal(err)
	}
	s.m.OnGroup(nil, obj)
	g.groups = append(g.groups, k)
}

func (s *soak) addPods(group string, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		out[i] = lt.Member("ns", group, i).Obj()
		s.m.OnPod(nil, out[i])
	}
	return out
}

// syncStatus writes the conditions of the groups the model queued, as the writer's worker
// would.
func (s *soak) syncStatus() {
	keys := s.queue.keys
	s.queue.keys = nil
	seen := map[Key]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := s.w.sync(context.Background(), s.m.Gate(), k); err != nil {
			s.t.Fatal(err)
		}
	}
	s.client.ClearActions()
}

// retained is the heap in use after a collection.
func (s *soak) retained() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
