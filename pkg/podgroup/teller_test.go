package podgroup

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// statusPatches records the pod status patches a fake client receives, by pod name.
type statusPatches struct {
	mu      sync.Mutex
	patches map[string][]string
}

func (s *statusPatches) react(action k8stesting.Action) (bool, runtime.Object, error) {
	patch := action.(k8stesting.PatchAction)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.patches[patch.GetName()] = append(s.patches[patch.GetName()], string(patch.GetPatch()))
	return true, &v1.Pod{}, nil
}

func (s *statusPatches) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.patches {
		n += len(p)
	}
	return n
}

// blockingClient is a fake client whose pod patches call block first, outside the fake's
// lock (it serves one request at a time): what is in flight at once can be seen.
type blockingClient struct {
	*fake.Clientset
	block func()
}

func (c blockingClient) CoreV1() corev1client.CoreV1Interface {
	return blockingCore{c.Clientset.CoreV1(), c.block}
}

type blockingCore struct {
	corev1client.CoreV1Interface
	block func()
}

func (c blockingCore) Pods(ns string) corev1client.PodInterface {
	return blockingPods{c.CoreV1Interface.Pods(ns), c.block}
}

type blockingPods struct {
	corev1client.PodInterface
	block func()
}

func (p blockingPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*v1.Pod, error) {
	p.block()
	return p.PodInterface.Patch(ctx, name, pt, data, opts, sub...)
}

// newTestTeller returns a PodTeller whose informer holds pods, and what its client is sent;
// each patch calls block first.
func newTestTeller(t *testing.T, block func(), pods ...*v1.Pod) (*PodTeller, *statusPatches) {
	t.Helper()
	client := fake.NewClientset()
	sent := &statusPatches{patches: map[string][]string{}}
	client.PrependReactor("patch", "pods", sent.react)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return NewTeller(blockingClient{client, block}, corelisters.NewPodLister(indexer)), sent
}

// runTeller runs teller until the test ends.
func runTeller(t *testing.T, teller *PodTeller) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go teller.Run(ctx)
}

// A pod is written what it needs when its turn comes, read from the informer: once for all it
// was asked before then (the last message), nothing for a pod bound, finished, recreated or
// deleted meanwhile or already saying it, and a nomination cleared only while it still names
// the node the ended wait left.
func TestTellerWritesWhatEachPodNeeds(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	pending := lt.MakePod().Namespace("ns").Name("pending").UID("pending").Obj()
	nominated := func(name, node string) *v1.Pod {
		p := lt.MakePod().Namespace("ns").Name(name).UID(name).Obj()
		p.Status.NominatedNodeName = node
		return p
	}
	saysIt := pending.DeepCopy()
	saysIt.Name, saysIt.UID = "says-it", "says-it"
	saysIt.Status.Conditions = []v1.PodCondition{*unschedulable("second")}
	bound := lt.MakePod().Namespace("ns").Name("bound").UID("bound").Node("n1").Obj()
	finished := lt.MakePod().Namespace("ns").Name("finished").UID("finished").Obj()
	finished.Status.Phase = v1.PodSucceeded
	recreated := lt.MakePod().Namespace("ns").Name("recreated").UID("new").Obj()

	teller, sent := newTestTeller(t, func() {}, pending, saysIt, bound, finished, recreated,
		nominated("left", "n1"), nominated("renominated", "n2"), nominated("both", "n1"))
	askedAbout := func(name, uid string) *v1.Pod {
		return lt.MakePod().Namespace("ns").Name(name).UID(uid).Obj()
	}
	for _, name := range []string{"pending", "says-it", "bound", "finished", "gone", "both"} {
		teller.Tell(logger, []*v1.Pod{askedAbout(name, name)}, "first")
	}
	teller.Tell(logger, []*v1.Pod{askedAbout("pending", "pending"), askedAbout("says-it", "says-it"), askedAbout("recreated", "old"), askedAbout("both", "both")}, "second")
	teller.Unnominate(logger, nominated("left", "n1"))
	teller.Unnominate(logger, nominated("renominated", "n1"))
	teller.Unnominate(logger, nominated("both", "n1"))
	// One worker's steps, run here until nothing is queued: every write the Teller would make
	// has been made when the loop ends.
	for teller.queue.Len() > 0 {
		teller.next(context.Background())
	}

	type written struct {
		Condition string
		Cleared   bool
	}
	want := map[string]written{
		"pending": {Condition: "second"},
		"left":    {Cleared: true},
		"both":    {Condition: "second", Cleared: true},
	}
	sent.mu.Lock()
	defer sent.mu.Unlock()
	got := map[string]written{}
	for name, patches := range sent.patches {
		if len(patches) != 1 {
			t.Errorf("pod %s: %d writes %v, want one", name, len(patches), patches)
		}
		var patch struct {
			Status struct {
				Conditions        []v1.PodCondition `json:"conditions"`
				NominatedNodeName *string           `json:"nominatedNodeName"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(patches[0]), &patch); err != nil {
			t.Fatalf("pod %s: %v in %s", name, err, patches[0])
		}
		var w written
		for _, c := range patch.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				w.Condition = c.Message
			}
		}
		// A strategic merge patch clears a field with null: its raw form says whether it is there.
		var raw map[string]map[string]any
		if err := json.Unmarshal([]byte(patches[0]), &raw); err != nil {
			t.Fatal(err)
		}
		if v, ok := raw["status"]["nominatedNodeName"]; ok && v == nil {
			w.Cleared = true
		}
		got[name] = w
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// The Teller's writes share the scheduler's client and its rate limiter with the scheduling
// loop: at most tellWorkers of them wait for it at once, however many pods are to be told,
// so that the loop's own write never waits behind thousands.
func TestTellerKeepsFewWritesInFlight(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	var pods []*v1.Pod
	for i := range 50 {
		pods = append(pods, lt.Member("ns", "a", i).Obj())
	}
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{}) // one write may end per value sent
	teller, sent := newTestTeller(t, func() {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		<-release
		mu.Lock()
		inFlight--
		mu.Unlock()
	}, pods...)
	for _, p := range pods {
		teller.Tell(logger, []*v1.Pod{p}, "waits")
	}
	runTeller(t, teller)
	inFlightNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return inFlight
	}
	// Writes end one at a time, each once tellWorkers are waiting: a worker too many would
	// have its write waiting too by the time the remaining ones end.
	for range pods {
		if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return inFlightNow() >= min(tellWorkers, len(pods)-sent.count()), nil
		}); err != nil {
			t.Fatalf("%d writes in flight, %d written: %v", inFlightNow(), sent.count(), err)
		}
		release <- struct{}{}
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return sent.count() == len(pods), nil
	}); err != nil {
		t.Errorf("%d pods written, want %d", sent.count(), len(pods))
	}
	mu.Lock()
	defer mu.Unlock()
	if most != tellWorkers {
		t.Errorf("%d writes in flight at most, want %d", most, tellWorkers)
	}
}
