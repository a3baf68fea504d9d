package jobframework_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobs/job"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lsfake "github.com/lockstep-sched/lockstep/pkg/generated/clientset/versioned/fake"
	"github.com/lockstep-sched/lockstep/pkg/generated/informers/externalversions"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

const ns = "ns"

// The harness runs the Job adapter (kind 0) and the fake tree adapter (kind 1).
const (
	jobKind  = 0
	treeKind = 1
)

// treeGVK is the kind of the fake adapter's objects.
var treeGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Tree"}

// treeAdapter is a fake Adapter whose objects get the trees the test sets, so that the
// reconciler is tested apart from any real kind's rules.
type treeAdapter struct {
	objects  map[string]*metav1.PartialObjectMetadata // by namespace/name
	trees    map[string]*jobframework.Groups
	problems map[string][]string
	// claim is what GroupOfJob answers ("" for not mine); asked logs the calls.
	claim string
	id    string
	asked *[]string
}

var _ jobframework.Adapter = &treeAdapter{}

func newTreeAdapter() *treeAdapter {
	return &treeAdapter{objects: map[string]*metav1.PartialObjectMetadata{}, trees: map[string]*jobframework.Groups{}, problems: map[string][]string{}}
}

// add puts an object named name (UID "uid-<name>") whose tree is g.
func (a *treeAdapter) add(name string, g *jobframework.Groups, problems ...string) {
	a.objects[ns+"/"+name] = &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: treeGVK.GroupVersion().String(), Kind: treeGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
	}
	a.trees[ns+"/"+name] = g
	a.problems[ns+"/"+name] = problems
}

func (a *treeAdapter) GVK() schema.GroupVersionKind { return treeGVK }
func (a *treeAdapter) Watch(jobframework.Informers, func(string)) ([]cache.InformerSynced, error) {
	return nil, nil
}
func (a *treeAdapter) Get(namespace, name string) (jobframework.Object, error) {
	if o, ok := a.objects[namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, nil
}
func (a *treeAdapter) Groups(obj jobframework.Object, _ []*v1alpha1.PodGroup, _ sets.Set[string]) (*jobframework.Groups, []string) {
	key := obj.GetNamespace() + "/" + obj.GetName()
	return a.trees[key], a.problems[key]
}
func (a *treeAdapter) GroupOfJob(*batchv1.Job, sets.Set[string]) (string, bool) {
	if a.asked != nil {
		*a.asked = append(*a.asked, a.id)
	}
	return a.claim, a.claim != ""
}

// tree returns a Workload "<name>-wl" whose root CompositePodGroup "<name>-root"
// (minGroupCount len(pods)) has a PodGroup "<name>-<p>" (minCount 2) for each of pods.
func tree(name string, pods ...string) *jobframework.Groups {
	g := &jobframework.Groups{
		Workload: name + "-wl",
		Spec: v1alpha1.WorkloadSpec{CompositePodGroupTemplates: []v1alpha1.CompositePodGroupTemplate{{Name: "root",
			SchedulingPolicy:  v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: int32(len(pods))}},
			PodGroupTemplates: []v1alpha1.PodGroupTemplate{{Name: "member", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2}}}}}}},
		Composites: []jobframework.Group{{Name: name + "-root", Template: "root", Min: int32(len(pods))}},
	}
	for _, p := range pods {
		g.PodGroups = append(g.PodGroups, jobframework.Group{Name: name + "-" + p, Parent: name + "-root", Template: "member", Min: 2})
	}
	return g
}

// controllerRef is the owner reference the reconciler puts on what an object controls.
func controllerRef(gvk schema.GroupVersionKind, name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: types.UID("uid-" + name),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

var jobGVK = batchv1.SchemeGroupVersion.WithKind("Job")

// workloadRef is the (non-controller) owner reference of a group on its Workload; the fake
// API assigns no UIDs.
func workloadRef(name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Workload", Name: name}
}

// harness is a Reconciler on fake clientsets and informers, driven one sync at a time.
type harness struct {
	t        *testing.T
	ctx      context.Context
	kube     *kubefake.Clientset
	ls       *lsfake.Clientset
	kubeInf  informers.SharedInformerFactory
	lsInf    externalversions.SharedInformerFactory
	r        *jobframework.Reconciler
	recorder *events.FakeRecorder
	trees    *treeAdapter
}

// newHarness starts a reconciler on an API holding jobs and lockstep objects.
func newHarness(t *testing.T, jobs []*batchv1.Job, objs ...runtime.Object) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var kubeObjs []runtime.Object
	for _, j := range jobs {
		kubeObjs = append(kubeObjs, j)
	}
	h := &harness{t: t, ctx: ctx, kube: kubefake.NewClientset(kubeObjs...), ls: lsfake.NewSimpleClientset(objs...),
		recorder: events.NewFakeRecorder(100), trees: newTreeAdapter()}
	h.kubeInf = informers.NewSharedInformerFactory(h.kube, 0)
	h.lsInf = externalversions.NewSharedInformerFactory(h.ls, 0)
	groups := h.lsInf.Scheduling().V1alpha1()
	r, err := jobframework.NewReconciler(h.ls, []jobframework.Adapter{job.New(), h.trees}, jobframework.Informers{Kube: h.kubeInf},
		jobframework.GroupInformers{Workloads: groups.Workloads(), Composites: groups.CompositePodGroups(), PodGroups: groups.PodGroups()},
		h.recorder, []string{lt.SchedulerName})
	if err != nil {
		t.Fatalf("NewReconciler: %v", err)
	}
	h.r = r
	h.kubeInf.Start(ctx.Done())
	h.lsInf.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		h.kubeInf.Shutdown()
		h.lsInf.Shutdown()
	})
	for typ, ok := range h.kubeInf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	for typ, ok := range h.lsInf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	h.settle()
	h.writes() // forget the informers' lists and watches
	return h
}

// sync syncs one object, then waits for the informers to see what it wrote.
func (h *harness) sync(kind int, name string) error {
	h.t.Helper()
	err := h.r.SyncForTest(h.ctx, kind, ns+"/"+name)
	h.settle()
	return err
}

func (h *harness) mustSync(kind int, name string) {
	h.t.Helper()
	if err := h.sync(kind, name); err != nil {
		h.t.Fatalf("sync %s: %v", name, err)
	}
}

// settle waits until the informer caches hold what the API holds: the reconciler reads the
// objects it controls from them.
func (h *harness) settle() {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		c, l := h.ls.SchedulingV1alpha1(), h.lsInf.Scheduling().V1alpha1()
		wls, err := c.Workloads("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		cachedWls, _ := l.Workloads().Lister().List(labels.Everything())
		cpgs, err := c.CompositePodGroups("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		cachedCpgs, _ := l.CompositePodGroups().Lister().List(labels.Everything())
		pgs, err := c.PodGroups("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		cachedPgs, _ := l.PodGroups().Lister().List(labels.Everything())
		jobs, err := h.kube.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		cachedJobs, _ := h.kubeInf.Batch().V1().Jobs().Lister().List(labels.Everything())
		return caughtUp(wls.Items, cachedWls, func(o *v1alpha1.Workload) any { return o.Spec }) &&
			caughtUp(cpgs.Items, cachedCpgs, func(o *v1alpha1.CompositePodGroup) any { return o.Spec }) &&
			caughtUp(pgs.Items, cachedPgs, func(o *v1alpha1.PodGroup) any { return o.Spec }) &&
			caughtUp(jobs.Items, cachedJobs, func(o *batchv1.Job) any { return []any{o.Spec, o.Status} }), nil
	})
	if err != nil {
		h.t.Fatalf("the informer caches did not catch up with the API: %v", err)
	}
}

// caughtUp reports whether cached holds the objects of api, metadata and spec alike.
func caughtUp[T any, PT interface {
	*T
	metav1.Object
}](api []T, cached []PT, spec func(PT) any) bool {
	if len(api) != len(cached) {
		return false
	}
	byKey := map[string]PT{}
	for _, c := range cached {
		byKey[c.GetNamespace()+"/"+c.GetName()] = c
	}
	for i := range api {
		a := PT(&api[i])
		c, ok := byKey[a.GetNamespace()+"/"+a.GetName()]
		if !ok || !equality.Semantic.DeepEqual(a.GetOwnerReferences(), c.GetOwnerReferences()) ||
			!equality.Semantic.DeepEqual(a.GetAnnotations(), c.GetAnnotations()) || !equality.Semantic.DeepEqual(spec(a), spec(c)) {
			return false
		}
	}
	return true
}

// writes returns the creates, updates and deletes sent to lockstep's API since the last
// call, as "verb resource/name".
func (h *harness) writes() []string {
	var out []string
	for _, a := range h.ls.Actions() {
		var name string
		switch a := a.(type) {
		case clienttesting.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case clienttesting.UpdateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case clienttesting.DeleteAction:
			name = a.GetName()
		default:
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+name)
	}
	h.ls.ClearActions()
	return out
}

// events returns the events recorded since the last call.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// reasons returns the reasons of events, in order.
func reasons(events []string) []string {
	var out []string
	for _, e := range events {
		if f := strings.Fields(e); len(f) > 1 {
			out = append(out, f[1])
		}
	}
	return out
}

func (h *harness) podGroup(name string) *v1alpha1.PodGroup {
	h.t.Helper()
	pg, err := h.ls.SchedulingV1alpha1().PodGroups(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("PodGroup %s: %v", name, err)
	}
	return pg
}

func (h *harness) composite(name string) *v1alpha1.CompositePodGroup {
	h.t.Helper()
	cpg, err := h.ls.SchedulingV1alpha1().CompositePodGroups(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("CompositePodGroup %s: %v", name, err)
	}
	return cpg
}

func (h *harness) workload(name string) *v1alpha1.Workload {
	h.t.Helper()
	wl, err := h.ls.SchedulingV1alpha1().Workloads(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("Workload %s: %v", name, err)
	}
	return wl
}

// names returns the names of all objects of lockstep's kinds in the API, as "resource/name".
func (h *harness) names() []string {
	h.t.Helper()
	var out []string
	wls, _ := h.ls.SchedulingV1alpha1().Workloads("").List(h.ctx, metav1.ListOptions{})
	for _, o := range wls.Items {
		out = append(out, "workloads/"+o.Name)
	}
	cpgs, _ := h.ls.SchedulingV1alpha1().CompositePodGroups("").List(h.ctx, metav1.ListOptions{})
	for _, o := range cpgs.Items {
		out = append(out, "compositepodgroups/"+o.Name)
	}
	pgs, _ := h.ls.SchedulingV1alpha1().PodGroups("").List(h.ctx, metav1.ListOptions{})
	for _, o := range pgs.Items {
		out = append(out, "podgroups/"+o.Name)
	}
	h.ls.ClearActions()
	slices.Sort(out)
	return out
}

// TestReconcilerCreatesJobGang proves that an Indexed Job that is a gang gets exactly one
// Workload and one PodGroup, both named filing.JobGroupName, the Workload controlled by the
// Job and the PodGroup by the Job (blocking its deletion) and owned by the Workload; and that
// syncing again writes nothing and records nothing.
func TestReconcilerCreatesJobGang(t *testing.T) {
	j := lt.MakeJob().Namespace(ns).Name("train").Indexed(4).Obj()
	h := newHarness(t, []*batchv1.Job{j})
	h.mustSync(jobKind, "train")

	name := filing.JobGroupName(j.Name, j.UID)
	if diff := cmp.Diff([]string{"create workloads/" + name, "create podgroups/" + name}, h.writes()); diff != "" {
		t.Errorf("writes of the first sync (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"WorkloadCreated", "PodGroupCreated"}, reasons(h.events())); diff != "" {
		t.Errorf("events of the first sync (-want +got):\n%s", diff)
	}
	wl := h.workload(name)
	if diff := cmp.Diff([]metav1.OwnerReference{controllerRef(jobGVK, j.Name)}, wl.OwnerReferences); diff != "" {
		t.Errorf("Workload owner references (-want +got):\n%s", diff)
	}
	wantSpec := v1alpha1.WorkloadSpec{
		ControllerRef: &v1alpha1.TypedLocalObjectReference{APIGroup: "batch", Kind: "Job", Name: j.Name},
		PodGroupTemplates: []v1alpha1.PodGroupTemplate{{Name: filing.JobTemplateName,
			SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 4}}}},
	}
	if diff := cmp.Diff(wantSpec, wl.Spec); diff != "" {
		t.Errorf("Workload spec (-want +got):\n%s", diff)
	}
	pg := h.podGroup(name)
	if diff := cmp.Diff([]metav1.OwnerReference{controllerRef(jobGVK, j.Name), workloadRef(name)}, pg.OwnerReferences); diff != "" {
		t.Errorf("PodGroup owner references (-want +got):\n%s", diff)
	}
	// Both are found from the Job's name (theirs is hashed).
	madeFor := map[string]string{v1alpha1.MadeForKindLabel: "Job", v1alpha1.MadeForNameLabel: "train"}
	for kind, labels := range map[string]map[string]string{"Workload": wl.Labels, "PodGroup": pg.Labels} {
		if diff := cmp.Diff(madeFor, labels); diff != "" {
			t.Errorf("%s labels (-want +got):\n%s", kind, diff)
		}
	}
	wantPG := v1alpha1.PodGroupSpec{
		WorkloadRef:      &v1alpha1.WorkloadReference{WorkloadName: name, TemplateName: filing.JobTemplateName},
		SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 4}},
	}
	if diff := cmp.Diff(wantPG, pg.Spec); diff != "" {
		t.Errorf("PodGroup spec (-want +got):\n%s", diff)
	}

	h.mustSync(jobKind, "train")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("a second sync wrote %v; want nothing", w)
	}
	if e := h.events(); len(e) != 0 {
		t.Errorf("a second sync recorded %v; want nothing", e)
	}
	if diff := cmp.Diff([]string{"podgroups/" + name, "workloads/" + name}, h.names()); diff != "" {
		t.Errorf("objects after two syncs (-want +got):\n%s", diff)
	}
}

// TestReconcilerFollowsParallelism proves that a Job's PodGroup keeps its name and follows
// the Job's parallelism, whether or not the Job still matches the gang rule: minCount and the
// Workload's template are updated, once, with one MinCountChanged event.
func TestReconcilerFollowsParallelism(t *testing.T) {
	tests := []struct {
		name   string
		change func(j *batchv1.Job)
		want   int32
	}{
		{name: "parallelism and completions 4 to 2", want: 2, change: func(j *batchv1.Job) {
			j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
		}},
		{name: "parallelism alone 4 to 2: no longer the rule, the PodGroup stays", want: 2, change: func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr.To[int32](2)
		}},
		{name: "parallelism and completions 4 to 8", want: 8, change: func(j *batchv1.Job) {
			j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](8), ptr.To[int32](8)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// backoffLimit 8: at 8 pods, no warning that a preemption would fail it.
			j := lt.MakeJob().Namespace(ns).Name("train").Indexed(4).BackoffLimit(8).Obj()
			name := filing.JobGroupName(j.Name, j.UID)
			h := newHarness(t, []*batchv1.Job{j})
			h.mustSync(jobKind, j.Name)
			h.writes()
			h.events()

			upd := j.DeepCopy()
			tc.change(upd)
			if _, err := h.kube.BatchV1().Jobs(ns).Update(h.ctx, upd, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("updating the Job: %v", err)
			}
			h.settle()
			h.mustSync(jobKind, j.Name)
			if diff := cmp.Diff([]string{"update podgroups/" + name, "update workloads/" + name}, h.writes()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			events := h.events()
			if diff := cmp.Diff([]string{"MinCountChanged"}, reasons(events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			} else if want := fmt.Sprintf("from 4 to %d", tc.want); !strings.Contains(events[0], want) {
				t.Errorf("event %q does not say %q", events[0], want)
			}
			if got := h.podGroup(name).Spec.SchedulingPolicy.Gang.MinCount; got != tc.want {
				t.Errorf("PodGroup minCount = %d, want %d", got, tc.want)
			}
			if got := h.workload(name).Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount; got != tc.want {
				t.Errorf("Workload template minCount = %d, want %d", got, tc.want)
			}

			h.mustSync(jobKind, j.Name)
			if w, e := h.writes(), h.events(); len(w)+len(e) != 0 {
				t.Errorf("a sync after the change wrote %v and recorded %v; want nothing", w, e)
			}
		})
	}
}

// TestReconcilerLeavesAlone proves that nothing is written for objects that get no groups:
// Jobs that are not gangs, Jobs of other schedulers or owners, opted-out Jobs, objects that
// finished before they got any group, and objects that no longer exist.
func TestReconcilerLeavesAlone(t *testing.T) {
	tests := []struct {
		name string
		job  *batchv1.Job         // synced with the Job adapter, or
		tree *jobframework.Groups // the fake adapter's object's tree
		gone bool                 // the object does not exist
	}{
		{name: "Job of parallelism 1", job: lt.MakeJob().Namespace(ns).Name("one").Indexed(1).Obj()},
		{name: "Job of another scheduler", job: lt.MakeJob().Namespace(ns).Name("other").Indexed(4).SchedulerName("default-scheduler").Obj()},
		{name: "Job run by a JobSet", job: lt.MakeJob().Namespace(ns).Name("child").Indexed(4).Owner("jobset.x-k8s.io/v1alpha2", "JobSet", "js", "js").Obj()},
		{name: "Job opted out", job: lt.MakeJob().Namespace(ns).Name("out").Indexed(4).Annotation(v1alpha1.JobGangAnnotation, "false").Obj()},
		{name: "Job that finished before it got groups", job: lt.MakeJob().Namespace(ns).Name("done").Indexed(4).Condition(batchv1.JobComplete, v1.ConditionTrue).Obj()},
		{name: "object whose adapter says no tree", tree: nil},
		{name: "object that finished before it got groups", tree: func() *jobframework.Groups {
			g := tree("t", "0", "1")
			g.Finished = true
			return g
		}()},
		{name: "object that does not exist", gone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var jobs []*batchv1.Job
			if tc.job != nil {
				jobs = append(jobs, tc.job)
			}
			h := newHarness(t, jobs)
			var err error
			switch {
			case tc.job != nil:
				err = h.sync(jobKind, tc.job.Name)
			case tc.gone:
				err = h.sync(treeKind, "missing")
			default:
				h.trees.add("t", tc.tree)
				err = h.sync(treeKind, "t")
			}
			if err != nil {
				t.Errorf("sync: %v", err)
			}
			if w := h.writes(); len(w) != 0 {
				t.Errorf("sync wrote %v; want nothing", w)
			}
			if e := h.events(); len(e) != 0 {
				t.Errorf("sync recorded %v; want nothing", e)
			}
		})
	}
}

// TestReconcilerCreatesTree proves that a tree is created as the adapter says: the Workload
// (controllerRef to the object), every CompositePodGroup and PodGroup with its parent,
// template, minimum, constraints and priority, each controlled by the object and owned by
// the Workload; that a second sync writes nothing, and that a changed minGroupCount is
// brought in step with one MinGroupCountChanged event.
func TestReconcilerCreatesTree(t *testing.T) {
	g := tree("t", "0", "1")
	g.Composites[0].Topology = []v1alpha1.TopologyConstraint{{Key: lt.ZoneKey, Mode: v1alpha1.TopologyRequired}}
	g.Composites[0].PriorityClassName = "high"
	// root > mid > PodGroups: parents below the root are set too.
	g.Composites = append(g.Composites, jobframework.Group{Name: "t-mid", Parent: "t-root", Template: "mid", Min: 2, PriorityClassName: "high"})
	for i := range g.PodGroups {
		g.PodGroups[i].Parent = "t-mid"
		g.PodGroups[i].PriorityClassName = "high"
	}
	h := newHarness(t, nil)
	h.trees.add("t", g)
	h.mustSync(treeKind, "t")

	want := []string{"create workloads/t-wl", "create compositepodgroups/t-root", "create compositepodgroups/t-mid",
		"create podgroups/t-0", "create podgroups/t-1"}
	if diff := cmp.Diff(want, h.writes()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"WorkloadCreated", "CompositePodGroupCreated", "CompositePodGroupCreated", "PodGroupCreated", "PodGroupCreated"},
		reasons(h.events())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	wl := h.workload("t-wl")
	if diff := cmp.Diff([]metav1.OwnerReference{controllerRef(treeGVK, "t")}, wl.OwnerReferences); diff != "" {
		t.Errorf("Workload owner references (-want +got):\n%s", diff)
	}
	wantSpec := *g.Spec.DeepCopy()
	wantSpec.ControllerRef = &v1alpha1.TypedLocalObjectReference{APIGroup: treeGVK.Group, Kind: treeGVK.Kind, Name: "t"}
	if diff := cmp.Diff(wantSpec, wl.Spec); diff != "" {
		t.Errorf("Workload spec (-want +got):\n%s", diff)
	}
	owners := []metav1.OwnerReference{controllerRef(treeGVK, "t"), workloadRef("t-wl")}
	parent := func(p string) *string {
		if p == "" {
			return nil
		}
		return ptr.To(p)
	}
	for _, c := range g.Composites {
		cpg := h.composite(c.Name)
		want := v1alpha1.CompositePodGroupSpec{
			ParentCompositePodGroupName: parent(c.Parent),
			WorkloadRef:                 &v1alpha1.WorkloadReference{WorkloadName: "t-wl", TemplateName: c.Template},
			SchedulingPolicy:            v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: c.Min}},
			SchedulingConstraints:       c.Constraints(),
			PriorityClassName:           c.PriorityClassName,
		}
		if diff := cmp.Diff(want, cpg.Spec); diff != "" {
			t.Errorf("CompositePodGroup %s spec (-want +got):\n%s", c.Name, diff)
		}
		if diff := cmp.Diff(owners, cpg.OwnerReferences); diff != "" {
			t.Errorf("CompositePodGroup %s owner references (-want +got):\n%s", c.Name, diff)
		}
	}
	for _, p := range g.PodGroups {
		pg := h.podGroup(p.Name)
		want := v1alpha1.PodGroupSpec{
			ParentCompositePodGroupName: parent(p.Parent),
			WorkloadRef:                 &v1alpha1.WorkloadReference{WorkloadName: "t-wl", TemplateName: p.Template},
			SchedulingPolicy:            v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: p.Min}},
			PriorityClassName:           p.PriorityClassName,
		}
		if diff := cmp.Diff(want, pg.Spec); diff != "" {
			t.Errorf("PodGroup %s spec (-want +got):\n%s", p.Name, diff)
		}
		if diff := cmp.Diff(owners, pg.OwnerReferences); diff != "" {
			t.Errorf("PodGroup %s owner references (-want +got):\n%s", p.Name, diff)
		}
	}

	h.mustSync(treeKind, "t")
	if w, e := h.writes(), h.events(); len(w)+len(e) != 0 {
		t.Errorf("a second sync wrote %v and recorded %v; want nothing", w, e)
	}

	g.Composites[1].Min = 1
	h.mustSync(treeKind, "t")
	if diff := cmp.Diff([]string{"update compositepodgroups/t-mid"}, h.writes()); diff != "" {
		t.Errorf("writes after minGroupCount changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"MinGroupCountChanged"}, reasons(h.events())); diff != "" {
		t.Errorf("events after minGroupCount changed (-want +got):\n%s", diff)
	}
	if got := h.composite("t-mid").Spec.SchedulingPolicy.Gang.MinGroupCount; got != 1 {
		t.Errorf("minGroupCount of t-mid = %d, want 1", got)
	}
}

// TestReconcilerDeletesObsoleteGroups proves that the groups an object controls that its tree
// no longer lists (a restart's previous attempt, a scaled-down ReplicatedJob) are deleted,
// those it still lists are kept, the Workload stays, and groups the object does not control
// are never touched.
func TestReconcilerDeletesObsoleteGroups(t *testing.T) {
	foreign := lt.MakePodGroup().Namespace(ns).Name("someone-else").Owner(treeGVK.GroupVersion().String(), treeGVK.Kind, "other", "uid-other").Obj()
	unowned := lt.MakeCompositePodGroup().Namespace(ns).Name("by-hand").Obj()
	tests := []struct {
		name        string
		before      *jobframework.Groups
		after       *jobframework.Groups
		wantWrites  []string
		wantObjects []string
	}{
		{
			name:   "restart: every group of the previous attempt replaced",
			before: tree("t", "a0", "a1"),
			after: func() *jobframework.Groups {
				g := tree("t", "b0", "b1")
				g.Composites[0].Name = "t-root2"
				for i := range g.PodGroups {
					g.PodGroups[i].Parent = "t-root2"
				}
				return g
			}(),
			wantWrites: []string{"create compositepodgroups/t-root2", "create podgroups/t-b0", "create podgroups/t-b1",
				"delete podgroups/t-a0", "delete podgroups/t-a1", "delete compositepodgroups/t-root"},
			wantObjects: []string{"compositepodgroups/by-hand", "compositepodgroups/t-root2", "podgroups/someone-else",
				"podgroups/t-b0", "podgroups/t-b1", "workloads/t-wl"},
		},
		{
			name:   "the pods now name groups of their own: the Workload and every group go",
			before: tree("t", "0", "1"),
			after:  jobframework.NoGroups(),
			wantWrites: []string{"delete podgroups/t-0", "delete podgroups/t-1", "delete compositepodgroups/t-root",
				"delete workloads/t-wl"},
			wantObjects: []string{"compositepodgroups/by-hand", "podgroups/someone-else"},
		},
		{
			name:        "one PodGroup no longer listed",
			before:      tree("t", "0", "1", "2"),
			after:       tree("t", "0", "1"),
			wantWrites:  []string{"update compositepodgroups/t-root", "delete podgroups/t-2"},
			wantObjects: []string{"compositepodgroups/by-hand", "compositepodgroups/t-root", "podgroups/someone-else", "podgroups/t-0", "podgroups/t-1", "workloads/t-wl"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, foreign.DeepCopy(), unowned.DeepCopy())
			h.trees.add("t", tc.before)
			h.mustSync(treeKind, "t")
			h.writes()
			h.events()

			h.trees.trees[ns+"/t"] = tc.after
			h.mustSync(treeKind, "t")
			if diff := cmp.Diff(tc.wantWrites, h.writes()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantObjects, h.names()); diff != "" {
				t.Errorf("objects after the sync (-want +got):\n%s", diff)
			}
			var deletions int
			for _, r := range reasons(h.events()) {
				if strings.HasSuffix(r, "Deleted") {
					deletions++
				}
			}
			if want := strings.Count(strings.Join(tc.wantWrites, " "), "delete "); deletions != want {
				t.Errorf("%d deletion events, want %d (one per deleted group)", deletions, want)
			}

			h.mustSync(treeKind, "t")
			if w := h.writes(); len(w) != 0 {
				t.Errorf("a sync after the deletions wrote %v; want nothing", w)
			}
		})
	}
}

// TestReconcilerRefusesGroupsOfOthers proves that when an object of the name a tree wants
// exists and is not controlled by the workload object, sync fails with an error naming it and
// records a warning, and leaves that object as it is.
func TestReconcilerRefusesGroupsOfOthers(t *testing.T) {
	j := lt.MakeJob().Namespace(ns).Name("train").Indexed(4).Obj()
	jobGroup := filing.JobGroupName(j.Name, j.UID)
	otherOwner := []metav1.OwnerReference{controllerRef(treeGVK, "other")}
	otherGV, otherKind, otherName, otherUID := treeGVK.GroupVersion().String(), treeGVK.Kind, "other", "uid-other"
	tests := []struct {
		name       string
		existing   runtime.Object
		job        bool // sync the Job, not the tree
		wantErr    string
		wantReason string
	}{
		{name: "PodGroup controlled by another object",
			existing: lt.MakePodGroup().Namespace(ns).Name("t-1").Owner(otherGV, otherKind, otherName, otherUID).Obj(),
			wantErr:  `PodGroup "t-1" exists and is not controlled by Tree "t"`, wantReason: "FailedCreatePodGroup"},
		{name: "PodGroup of no controller",
			existing: lt.MakePodGroup().Namespace(ns).Name("t-0").Obj(),
			wantErr:  `PodGroup "t-0" exists and is not controlled by Tree "t"`, wantReason: "FailedCreatePodGroup"},
		{name: "CompositePodGroup controlled by another object",
			existing: lt.MakeCompositePodGroup().Namespace(ns).Name("t-root").Owner(otherGV, otherKind, otherName, otherUID).Obj(),
			wantErr:  `CompositePodGroup "t-root" exists and is not controlled by Tree "t"`, wantReason: "FailedCreateCompositePodGroup"},
		{name: "Workload controlled by another object",
			existing: &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "t-wl", OwnerReferences: otherOwner}},
			wantErr:  `Workload "t-wl" exists and is not controlled by Tree "t"`, wantReason: "FailedCreateWorkload"},
		{name: "Job's PodGroup controlled by another object", job: true,
			existing: lt.MakePodGroup().Namespace(ns).Name(jobGroup).Owner(otherGV, otherKind, otherName, otherUID).Obj(),
			wantErr:  fmt.Sprintf(`PodGroup %q exists and is not controlled by Job "train"`, jobGroup), wantReason: "FailedCreatePodGroup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, []*batchv1.Job{j.DeepCopy()}, tc.existing.DeepCopyObject())
			h.trees.add("t", tree("t", "0", "1"))
			var err error
			if tc.job {
				err = h.sync(jobKind, j.Name)
			} else {
				err = h.sync(treeKind, "t")
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("sync error = %v, want one containing %q", err, tc.wantErr)
			}
			if r := reasons(h.events()); !slices.Contains(r, tc.wantReason) {
				t.Errorf("events %v, want a %s warning", r, tc.wantReason)
			}
			existing := tc.existing.(metav1.Object)
			for _, w := range h.writes() {
				if strings.HasSuffix(w, "/"+existing.GetName()) && !strings.HasPrefix(w, "create ") {
					t.Errorf("sync wrote %q to the object it does not control", w)
				}
			}
		})
	}
}

// TestReconcilerReportsProblemsOnce proves that every problem an adapter reports becomes one
// InvalidAnnotation warning on the object, not one per sync; a new problem is reported when
// it appears, and the same problem on another object is that object's own.
func TestReconcilerReportsProblemsOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.trees.add("t", tree("t", "0"), "bad one", "bad two")
	h.trees.add("u", nil, "bad one")
	h.mustSync(treeKind, "t")
	events := h.events()
	var warnings []string
	for _, e := range events {
		if strings.HasPrefix(e, v1.EventTypeWarning+" InvalidAnnotation ") {
			warnings = append(warnings, strings.TrimPrefix(e, v1.EventTypeWarning+" InvalidAnnotation "))
		}
	}
	if diff := cmp.Diff([]string{"bad one", "bad two"}, warnings); diff != "" {
		t.Errorf("InvalidAnnotation warnings of the first sync (-want +got):\n%s", diff)
	}
	for i := 0; i < 3; i++ {
		h.mustSync(treeKind, "t")
		if e := h.events(); len(e) != 0 {
			t.Errorf("sync %d recorded %v; want the problems reported once", i+2, e)
		}
	}
	h.trees.problems[ns+"/t"] = []string{"bad one", "bad three"}
	h.mustSync(treeKind, "t")
	if diff := cmp.Diff([]string{v1.EventTypeWarning + " InvalidAnnotation bad three"}, h.events()); diff != "" {
		t.Errorf("events when a new problem appears (-want +got):\n%s", diff)
	}
	h.mustSync(treeKind, "u")
	if diff := cmp.Diff([]string{v1.EventTypeWarning + " InvalidAnnotation bad one"}, h.events()); diff != "" {
		t.Errorf("events of another object with the same problem (-want +got):\n%s", diff)
	}
}

// TestReconcilerReportsJobProblemsOnce proves the same of the Job adapter's problems, whether
// the Job gets a gang or not.
func TestReconcilerReportsJobProblemsOnce(t *testing.T) {
	gang := lt.MakeJob().Namespace(ns).Name("gang").Indexed(4).Annotation(v1alpha1.JobGangAnnotation, "maybe").Obj()
	single := lt.MakeJob().Namespace(ns).Name("single").Indexed(1).Annotation(v1alpha1.JobGangAnnotation, "maybe").Obj()
	tests := []struct {
		job         *batchv1.Job
		wantReasons []string
	}{
		{job: gang, wantReasons: []string{"InvalidAnnotation", "WorkloadCreated", "PodGroupCreated"}},
		{job: single, wantReasons: []string{"InvalidAnnotation"}},
	}
	for _, tc := range tests {
		t.Run(tc.job.Name, func(t *testing.T) {
			h := newHarness(t, []*batchv1.Job{tc.job})
			h.mustSync(jobKind, tc.job.Name)
			if diff := cmp.Diff(tc.wantReasons, reasons(h.events())); diff != "" {
				t.Errorf("events of the first sync (-want +got):\n%s", diff)
			}
			h.mustSync(jobKind, tc.job.Name)
			if e := h.events(); len(e) != 0 {
				t.Errorf("the second sync recorded %v; want nothing", e)
			}
		})
	}
}

// TestReconcilerKeepsFinishedGroups proves that once an object finished, the groups it has
// stay (completed members count for their gangs) and none is created or deleted, even when
// its tree changes.
func TestReconcilerKeepsFinishedGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.trees.add("t", tree("t", "0", "1"))
	h.mustSync(treeKind, "t")
	before := h.names()
	h.writes()
	h.events()

	g := tree("t", "2")
	g.Finished = true
	h.trees.trees[ns+"/t"] = g
	h.mustSync(treeKind, "t")
	if w, e := h.writes(), h.events(); len(w)+len(e) != 0 {
		t.Errorf("sync of a finished object wrote %v and recorded %v; want nothing", w, e)
	}
	if diff := cmp.Diff(before, h.names()); diff != "" {
		t.Errorf("objects of a finished object changed (-before +after):\n%s", diff)
	}
}

// TestReconcilerWarnsOfJobsPreemptionWouldFail: a gang Job of 8 pods with the default
// backoffLimit (6) and no podFailurePolicy is warned once, not at every sync.
func TestReconcilerWarnsOfJobsPreemptionWouldFail(t *testing.T) {
	h := newHarness(t, []*batchv1.Job{lt.MakeJob().Namespace(ns).Name("big").Indexed(8).Obj()})
	h.mustSync(jobKind, "big")
	if diff := cmp.Diff([]string{"GangJobFailsOnPreemption", "WorkloadCreated", "PodGroupCreated"}, reasons(h.events())); diff != "" {
		t.Errorf("events of the first sync (-want +got):\n%s", diff)
	}
	h.mustSync(jobKind, "big")
	if e := h.events(); len(e) != 0 {
		t.Errorf("a second sync recorded %v; want nothing", e)
	}
}

// TestReconcilerTellsWhatItSynced proves that Options.Synced hears of a sync only once it left
// nothing to retry, with the object as it was synced: a sync that failed, or of an object
// that is gone, is not news that the controller has acted.
func TestReconcilerTellsWhatItSynced(t *testing.T) {
	j := lt.MakeJob().Namespace(ns).Name("train").Indexed(2).Obj()
	h := newHarness(t, []*batchv1.Job{j})
	var synced []string
	h.r.SetSyncedForTest(func(kind schema.GroupVersionKind, obj jobframework.Object) {
		synced = append(synced, kind.Kind+" "+obj.GetNamespace()+"/"+obj.GetName())
	})
	refused := true
	h.ls.PrependReactor("create", "workloads", func(clienttesting.Action) (bool, runtime.Object, error) {
		return refused, nil, fmt.Errorf("refused")
	})
	if err := h.sync(jobKind, "train"); err == nil {
		t.Fatal("a sync whose create was refused succeeded")
	}
	if err := h.sync(jobKind, "gone"); err != nil {
		t.Fatalf("sync of a missing Job: %v", err)
	}
	if len(synced) != 0 {
		t.Errorf("told of %v after a failed sync and a missing object; want nothing", synced)
	}
	refused = false
	h.mustSync(jobKind, "train")
	if diff := cmp.Diff([]string{"Job ns/train"}, synced); diff != "" {
		t.Errorf("told of (-want +got):\n%s", diff)
	}
}
