package podgroup

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/filing"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
)

// problemGauges scrapes lockstep_groups_invalid and lockstep_pods_waiting_for_group of m, as
// /metrics serves them: by reason, every reason present.
func problemGauges(t *testing.T, m *Model) (invalid, waiting map[string]float64) {
	t.Helper()
	reg := k8smetrics.NewKubeRegistry()
	reg.CustomMustRegister(&problemsCollector{model: m})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	invalid, waiting = map[string]float64{}, map[string]float64{}
	for _, f := range families {
		into := map[string]map[string]float64{"lockstep_groups_invalid": invalid, "lockstep_pods_waiting_for_group": waiting}[f.GetName()]
		if into == nil {
			t.Fatalf("unexpected family %s", f.GetName())
		}
		for _, s := range f.GetMetric() {
			if len(s.GetLabel()) != 1 || s.GetLabel()[0].GetName() != "reason" {
				t.Fatalf("%s has labels %v, want reason alone", f.GetName(), s.GetLabel())
			}
			into[s.GetLabel()[0].GetValue()] = s.GetGauge().GetValue()
		}
	}
	return invalid, waiting
}

// gauge is a reason gauge's expected values: every reason of reasons at 0 but those of set.
func gauge(reasons []string, set map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, r := range reasons {
		out[r] = 0
	}
	maps.Copy(out, set)
	return out
}

// Invalid groups count by reason while they are invalid, and no longer once they are fixed
// or deleted: the gauge follows the model both ways.
func TestInvalidGroupsGauge(t *testing.T) {
	pg := func(name string) *lt.PodGroupWrapper { return lt.MakePodGroup().Namespace("ns").Name(name).Gang(1) }
	cpg := func(name string) *lt.CompositePodGroupWrapper {
		return lt.MakeCompositePodGroup().Namespace("ns").Name(name).Gang(1)
	}
	badKey := []v1alpha1.TopologyConstraint{{Key: "not-a-level"}}
	goodKey := []v1alpha1.TopologyConstraint{{Key: "rack"}}
	unparsable := ToNativePodGroup(pg("native").Obj())
	unparsable.Annotations = map[string]string{NativeScheduleTimeoutAnnotation: "soon"}
	parsable := ToNativePodGroup(pg("native").ScheduleTimeout(30).Obj())

	type step struct {
		what string
		do   func(m *Model)
		want map[string]float64 // the reasons not at 0
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "missing parent: created, then fixed",
			steps: []step{
				{"a PodGroup under a missing parent", func(m *Model) { m.OnGroup(nil, pg("a").Parent("p").Obj()) }, map[string]float64{InvalidMissingParent: 1}},
				{"its child", func(m *Model) { m.OnGroup(nil, pg("b").Parent("a").Obj()) }, map[string]float64{InvalidMissingParent: 1, InvalidParentIsPodGroup: 1}},
				{"the parent created", func(m *Model) { m.OnGroup(nil, cpg("p").Obj()) }, map[string]float64{InvalidParentIsPodGroup: 1}},
				{"the PodGroup named as a parent deleted", func(m *Model) { m.OnGroupDelete(pg("b").Parent("a").Obj()) }, nil},
			},
		},
		{
			name: "missing parent: deleted",
			steps: []step{
				{"a PodGroup under a missing parent", func(m *Model) { m.OnGroup(nil, pg("a").Parent("p").Obj()) }, map[string]float64{InvalidMissingParent: 1}},
				{"deleted", func(m *Model) { m.OnGroupDelete(pg("a").Parent("p").Obj()) }, nil},
			},
		},
		{
			name: "cycle, and the groups below it",
			steps: []step{
				{"a under b", func(m *Model) { m.OnGroup(nil, cpg("a").Parent("b").Obj()) }, map[string]float64{InvalidMissingParent: 1}},
				{"b under a", func(m *Model) { m.OnGroup(nil, cpg("b").Parent("a").Obj()) }, map[string]float64{InvalidCycle: 2}},
				{"a PodGroup below", func(m *Model) { m.OnGroup(nil, pg("leaf").Parent("a").Obj()) }, map[string]float64{InvalidCycle: 3}},
				{"b deleted", func(m *Model) { m.OnGroupDelete(cpg("b").Parent("a").Obj()) }, map[string]float64{InvalidMissingParent: 2}},
				{"b created again as a root", func(m *Model) { m.OnGroup(nil, cpg("b").Obj()) }, nil},
			},
		},
		{
			name: "too deep",
			steps: []step{
				{"five levels", func(m *Model) {
					m.OnGroup(nil, cpg("d1").Obj())
					m.OnGroup(nil, cpg("d2").Parent("d1").Obj())
					m.OnGroup(nil, cpg("d3").Parent("d2").Obj())
					m.OnGroup(nil, cpg("d4").Parent("d3").Obj())
					m.OnGroup(nil, pg("leaf").Parent("d4").Obj())
				}, map[string]float64{InvalidTooDeep: 1}},
				{"the fifth deleted", func(m *Model) { m.OnGroupDelete(pg("leaf").Parent("d4").Obj()) }, nil},
			},
		},
		{
			name: "topology: created, fixed, broken again, deleted",
			steps: []step{
				{"a key that is no level", func(m *Model) { m.OnGroup(nil, pg("t").Topology(badKey...).Obj()) }, map[string]float64{InvalidTopology: 1}},
				{"a level", func(m *Model) { m.OnGroup(pg("t").Topology(badKey...).Obj(), pg("t").Topology(goodKey...).Obj()) }, nil},
				{"no level again", func(m *Model) { m.OnGroup(pg("t").Topology(goodKey...).Obj(), pg("t").Topology(badKey...).Obj()) }, map[string]float64{InvalidTopology: 1}},
				{"deleted", func(m *Model) { m.OnGroupDelete(pg("t").Topology(badKey...).Obj()) }, nil},
			},
		},
		{
			name: "a native group's annotation: created, fixed, broken again, deleted",
			steps: []step{
				{"unparsable", func(m *Model) { m.OnNativeGroup(nil, unparsable) }, map[string]float64{InvalidSpec: 1}},
				{"fixed", func(m *Model) { m.OnNativeGroup(unparsable, parsable) }, nil},
				{"broken again", func(m *Model) { m.OnNativeGroup(parsable, unparsable) }, map[string]float64{InvalidSpec: 1}},
				{"deleted", func(m *Model) { m.OnNativeGroupDelete(unparsable) }, nil},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := testModel(t)
			m.ReadNative(KindPodGroup)
			m.AddProfile(Profile{Name: testScheduler, Validators: []Validator{func(_ Key, topology []v1alpha1.TopologyConstraint) string {
				for _, c := range topology {
					if c.Key != "rack" {
						return "topology key " + c.Key + " is not a configured level (rack)"
					}
				}
				return ""
			}}})
			if invalid, _ := problemGauges(t, m); !maps.Equal(invalid, gauge(invalidReasons, nil)) {
				t.Fatalf("before any group: %v, want all 0", invalid)
			}
			for _, s := range tc.steps {
				s.do(m)
				invalid, waiting := problemGauges(t, m)
				if want := gauge(invalidReasons, s.want); !maps.Equal(invalid, want) {
					t.Errorf("%s: lockstep_groups_invalid %v, want %v", s.what, invalid, want)
				}
				if want := gauge(waitingReasons, nil); !maps.Equal(waiting, want) {
					t.Errorf("%s: lockstep_pods_waiting_for_group %v, want %v (no pods)", s.what, waiting, want)
				}
			}
		})
	}
}

// Pods held because their PodGroup does not exist count by reason while they wait, and no
// longer once the group exists, they are deleted, terminating, bound, or scheduled without a
// gang; a group deleted under them counts them again.
func TestPodsWaitingForGroupGauge(t *testing.T) {
	job := lt.MakeJob().Namespace("ns").Name("train").Indexed(2).Obj()
	jobGroup := lt.MakePodGroup().Namespace("ns").Name(filing.JobGroupName("train", job.UID)).Gang(2).Obj()
	ownedBy := func(i int) *v1.Pod {
		p := lt.Member("ns", job.Name, i).Obj()
		p.Labels = nil
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
		return p
	}
	named := lt.Member("ns", "g", 0).Obj()
	named1 := lt.Member("ns", "g", 1).Obj()
	group := lt.MakePodGroup().Namespace("ns").Name("g").Gang(2).Obj()
	terminating := named1.DeepCopy()
	terminating.DeletionTimestamp = ptr.To(metav1.NewTime(epoch))
	bound := named.DeepCopy()
	bound.Spec.NodeName = "n1"
	native := lt.MakePod().Namespace("ns").Name("native-0").UID("native-0").Obj()
	native.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("native")}
	nativeGroup := ToNativePodGroup(lt.MakePodGroup().Namespace("ns").Name("native").Gang(1).Obj())
	mpi := []*v1.Pod{labelled("mpi", 0, epoch), labelled("mpi", 1, epoch)}
	mirror := lt.MakePodGroup().Namespace("ns").Name("mpi").Gang(2).Obj()

	type step struct {
		what string
		do   func(t *testing.T, m *Model, clk *simClock)
		want map[string]float64 // the reasons not at 0
	}
	add := func(pods ...*v1.Pod) func(*testing.T, *Model, *simClock) {
		return func(_ *testing.T, m *Model, _ *simClock) {
			for _, p := range pods {
				m.OnPod(nil, p)
			}
		}
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "a group the pods' label names: created, deleted, created",
			steps: []step{
				{"two pods", add(named, named1), map[string]float64{WaitingLabel: 2}},
				{"the group created", func(_ *testing.T, m *Model, _ *simClock) { m.OnGroup(nil, group) }, nil},
				{"the group deleted", func(_ *testing.T, m *Model, _ *simClock) { m.OnGroupDelete(group) }, map[string]float64{WaitingLabel: 2}},
				{"the group created again", func(_ *testing.T, m *Model, _ *simClock) { m.OnGroup(nil, group) }, nil},
			},
		},
		{
			name: "a group the pods' label names: the pods leave",
			steps: []step{
				{"two pods", add(named, named1), map[string]float64{WaitingLabel: 2}},
				{"one terminating", func(_ *testing.T, m *Model, _ *simClock) { m.OnPod(named1, terminating) }, map[string]float64{WaitingLabel: 1}},
				{"the other bound (by another scheduler, or before the group went)", func(_ *testing.T, m *Model, _ *simClock) { m.OnPod(named, bound) }, nil},
				{"both deleted", func(_ *testing.T, m *Model, _ *simClock) { m.OnPodDelete(terminating); m.OnPodDelete(bound) }, nil},
			},
		},
		{
			name: "a group the pods' label names: the pods deleted",
			steps: []step{
				{"two pods", add(named, named1), map[string]float64{WaitingLabel: 2}},
				{"one deleted", func(_ *testing.T, m *Model, _ *simClock) { m.OnPodDelete(named) }, map[string]float64{WaitingLabel: 1}},
				{"the other deleted", func(_ *testing.T, m *Model, _ *simClock) { m.OnPodDelete(named1) }, nil},
			},
		},
		{
			name: "a Job's gang: created by the workload controller",
			steps: []step{
				{"the Job's pods", add(ownedBy(0), ownedBy(1)), map[string]float64{WaitingJob: 2}},
				{"its PodGroup created", func(_ *testing.T, m *Model, _ *simClock) { m.OnGroup(nil, jobGroup) }, nil},
			},
		},
		{
			name: "a Job's gang: never created",
			steps: []step{
				{"the Job's pods, admitted", func(t *testing.T, m *Model, _ *simClock) {
					for _, p := range []*v1.Pod{ownedBy(0), ownedBy(1)} {
						m.OnPod(nil, p)
						if v := m.Gate().Admit(klog.Background(), p); v.Code != MissingGroup {
							t.Fatalf("Admit(%s) = %+v, want MissingGroup", p.Name, v)
						}
					}
				}, map[string]float64{WaitingJob: 2}},
				{"a minute later", func(_ *testing.T, _ *Model, clk *simClock) { clk.Step(time.Minute) }, map[string]float64{WaitingJob: 2}},
				{"past jobGroupTimeout: scheduled without a gang", func(_ *testing.T, _ *Model, clk *simClock) { clk.Step(2 * time.Minute) }, nil},
			},
		},
		{
			name: "a group object of another scheduler's API: mirrored",
			steps: []step{
				{"its pods", add(mpi...), map[string]float64{WaitingLabelledObject: 2}},
				{"one deleted", func(_ *testing.T, m *Model, _ *simClock) { m.OnPodDelete(mpi[1]) }, map[string]float64{WaitingLabelledObject: 1}},
				{"its mirror created", func(_ *testing.T, m *Model, _ *simClock) { m.OnGroup(nil, mirror) }, nil},
			},
		},
		{
			name: "a native group",
			steps: []step{
				{"a pod naming it", add(native), map[string]float64{WaitingNative: 1}},
				{"the group created", func(_ *testing.T, m *Model, _ *simClock) { m.OnNativeGroup(nil, nativeGroup) }, nil},
				{"the group deleted", func(_ *testing.T, m *Model, _ *simClock) { m.OnNativeGroupDelete(nativeGroup) }, map[string]float64{WaitingNative: 1}},
				{"the pod deleted", func(_ *testing.T, m *Model, _ *simClock) { m.OnPodDelete(native) }, nil},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk, _, w, _ := labelModel(t) // files Jobs' pods as JobGangs does, and labelled pods
			w.seen.Insert("ns/mpi")
			m.ReadNative(KindPodGroup)
			factory := informers.NewSharedInformerFactory(kubefake.NewClientset(job), 0)
			m.book.SetJobs(factory.Batch().V1().Jobs().Lister())
			if err := factory.Batch().V1().Jobs().Informer().GetStore().Add(job); err != nil {
				t.Fatal(err)
			}
			if _, waiting := problemGauges(t, m); !maps.Equal(waiting, gauge(waitingReasons, nil)) {
				t.Fatalf("before any pod: %v, want all 0", waiting)
			}
			for _, s := range tc.steps {
				s.do(t, m, clk)
				invalid, waiting := problemGauges(t, m)
				if want := gauge(waitingReasons, s.want); !maps.Equal(waiting, want) {
					t.Errorf("%s: lockstep_pods_waiting_for_group %v, want %v", s.what, waiting, want)
				}
				if want := gauge(invalidReasons, nil); !maps.Equal(invalid, want) {
					t.Errorf("%s: lockstep_groups_invalid %v, want %v (no invalid group)", s.what, invalid, want)
				}
			}
		})
	}
}

// The gauges as /metrics serves them: every reason from the start, at 0 without a model
// (the metrics reference lists them so), the scheduler's model's counts once it is set.
func TestGroupProblemsExposition(t *testing.T) {
	head := "\n# HELP lockstep_groups_invalid [ALPHA] " + invalidGroupsHelp + "\n# TYPE lockstep_groups_invalid gauge\n"
	waitingHead := "# HELP lockstep_pods_waiting_for_group [ALPHA] " + waitingForGroupHelp + "\n# TYPE lockstep_pods_waiting_for_group gauge\n"
	series := func(name string, reasons []string, set map[string]int) string {
		var b strings.Builder
		for _, r := range reasons {
			fmt.Fprintf(&b, "%s{reason=%q} %d\n", name, r, set[r])
		}
		return b.String()
	}
	if err := testutil.CustomCollectAndCompare(&problemsCollector{}, strings.NewReader(head+series("lockstep_groups_invalid", invalidReasons, nil)+
		waitingHead+series("lockstep_pods_waiting_for_group", waitingReasons, nil))); err != nil {
		t.Errorf("without a model: %v", err)
	}

	m, _, _ := testModel(t)
	m.OnGroup(nil, lt.MakePodGroup().Namespace("ns").Name("a").Gang(1).Parent("nope").Obj())
	m.OnPod(nil, lt.Member("ns", "missing", 0).Obj())
	pendingSource.Store(m)
	t.Cleanup(func() { pendingSource.Store(nil) })
	want := head + series("lockstep_groups_invalid", invalidReasons, map[string]int{InvalidMissingParent: 1}) +
		waitingHead + series("lockstep_pods_waiting_for_group", waitingReasons, map[string]int{WaitingLabel: 1})
	if err := testutil.CustomCollectAndCompare(&problemsCollector{}, strings.NewReader(want)); err != nil {
		t.Errorf("with the scheduler's model: %v", err)
	}
}
