package jobset

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

const (
	testScheduler  = "lockstep-scheduler"
	otherScheduler = "default-scheduler"
	rackKey        = "topology.kubernetes.io/rack"
	zoneKey        = "topology.kubernetes.io/zone"
)

// ours are the profiles whose workloads get groups in these tests.
var ours = sets.New(testScheduler)

// rjob returns a ReplicatedJob of replicas child Jobs, each an Indexed Job of parallelism =
// completions = pods, whose pods use lockstep.
func rjob(name string, replicas, pods int32) replicatedJob {
	return replicatedJob{Name: name, Replicas: replicas, Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Parallelism:    ptr.To(pods),
		Completions:    ptr.To(pods),
		CompletionMode: ptr.To(batchv1.IndexedCompletion),
		Template:       v1.PodTemplateSpec{Spec: v1.PodSpec{SchedulerName: testScheduler}},
	}}}
}

// newJobSet returns a JobSet of rjobs, in namespace "ns", with UID "uid-<name>".
func newJobSet(name string, rjobs ...replicatedJob) *jobSet {
	return &jobSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: GVK.GroupVersion().String(), Kind: GVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec:       jobSetSpec{ReplicatedJobs: rjobs},
	}
}

func annotate(js *jobSet, kv ...string) *jobSet {
	if js.Annotations == nil {
		js.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		js.Annotations[kv[i]] = kv[i+1]
	}
	return js
}

func dependsOnAll(rj replicatedJob, status string, on ...string) replicatedJob {
	for _, o := range on {
		rj.DependsOn = append(rj.DependsOn, dependsOn{Name: o, Status: status})
	}
	return rj
}

// dnsLabel is the pattern of a Workload template name.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// checkTree asserts what holds of every tree treeOf returns, whatever the JobSet:
//   - names are unique per kind, at most 63 characters and valid object names;
//   - every Composite's Parent names a Composite listed before it (parents before children),
//     every PodGroup's Parent names a Composite that is not a root (JobSet > rjob > Job);
//   - the Workload's templates mirror the groups: one CompositePodGroupTemplate per root with
//     the root's template name, minGroupCount and constraints, one nested template per
//     ReplicatedJob CompositePodGroup, one PodGroupTemplate that every PodGroup under it
//     matches; template names are DNS labels unique within their level.
func checkTree(t *testing.T, g *jobframework.Groups) {
	t.Helper()
	checkName(t, "Workload", g.Workload)
	checkGroups(t, g)

	// The Workload's templates, as the groups say they should be.
	checkTemplateName := func(level, name string, seen sets.Set[string]) {
		if len(name) > 63 || !dnsLabel.MatchString(name) {
			t.Errorf("template %q (%s) is not a DNS label of at most 63 characters", name, level)
		}
		if seen.Has(name) {
			t.Errorf("template name %q is used twice at level %s", name, level)
		}
		seen.Insert(name)
	}
	if len(g.Spec.PodGroupTemplates) != 0 {
		t.Errorf("a JobSet's Workload has top-level PodGroupTemplates %v; want CompositePodGroupTemplates only", g.Spec.PodGroupTemplates)
	}
	var roots []jobframework.Group
	for _, c := range g.Composites {
		if c.Parent == "" {
			roots = append(roots, c)
		}
	}
	// The API allows MaxTemplates per level: the Workload describes the first ones.
	if len(g.Spec.CompositePodGroupTemplates) != min(len(roots), v1alpha1.MaxTemplates) {
		t.Fatalf("Workload has %d top-level templates, tree has %d roots", len(g.Spec.CompositePodGroupTemplates), len(roots))
	}
	roots = roots[:len(g.Spec.CompositePodGroupTemplates)]
	topNames := sets.New[string]()
	for i, root := range roots {
		tmpl := g.Spec.CompositePodGroupTemplates[i]
		checkTemplateName("root", tmpl.Name, topNames)
		if tmpl.Name != root.Template {
			t.Errorf("root %q is made from template %q, Workload's template %d is %q", root.Name, root.Template, i, tmpl.Name)
		}
		if got := tmpl.SchedulingPolicy.Gang; got == nil || got.MinGroupCount != root.Min {
			t.Errorf("template %q: gang %+v, root %q has minGroupCount %d", tmpl.Name, got, root.Name, root.Min)
		}
		if diff := cmp.Diff(root.Constraints(), tmpl.SchedulingConstraints); diff != "" {
			t.Errorf("template %q constraints differ from root %q (-root +template):\n%s", tmpl.Name, root.Name, diff)
		}
		var mids []jobframework.Group
		for _, c := range g.Composites {
			if c.Parent == root.Name {
				mids = append(mids, c)
			}
		}
		if len(tmpl.CompositePodGroupTemplates) != min(len(mids), v1alpha1.MaxTemplates) {
			t.Fatalf("template %q has %d nested templates, root %q has %d children", tmpl.Name, len(tmpl.CompositePodGroupTemplates), root.Name, len(mids))
		}
		mids = mids[:len(tmpl.CompositePodGroupTemplates)]
		midNames := sets.New[string]()
		for j, mid := range mids {
			mt := tmpl.CompositePodGroupTemplates[j]
			checkTemplateName(tmpl.Name, mt.Name, midNames)
			want := v1alpha1.CompositePodGroupTemplate{Name: mid.Template,
				SchedulingPolicy:      v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: mid.Min}},
				SchedulingConstraints: mid.Constraints(), PriorityClassName: mid.PriorityClassName, PodGroupTemplates: mt.PodGroupTemplates}
			if diff := cmp.Diff(want, mt); diff != "" {
				t.Errorf("nested template %d of %q differs from CompositePodGroup %q (-group +template):\n%s", j, tmpl.Name, mid.Name, diff)
			}
			if len(mt.PodGroupTemplates) != 1 {
				t.Errorf("nested template %q has %d PodGroupTemplates, want 1", mt.Name, len(mt.PodGroupTemplates))
				continue
			}
			pt := mt.PodGroupTemplates[0]
			children := 0
			for _, pg := range g.PodGroups {
				if pg.Parent != mid.Name {
					continue
				}
				children++
				want := v1alpha1.PodGroupTemplate{Name: pg.Template,
					SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: pg.Min}},
					SchedulingConstraints: pg.Constraints(), PriorityClassName: pg.PriorityClassName}
				if diff := cmp.Diff(want, pt); diff != "" {
					t.Errorf("PodGroup %q differs from its template %q/%q (-group +template):\n%s", pg.Name, mt.Name, pt.Name, diff)
				}
			}
			if children == 0 {
				t.Errorf("ReplicatedJob CompositePodGroup %q has no PodGroups", mid.Name)
			}
		}
	}
}

// childrenOf returns the groups whose Parent is parent, in order.
func childrenOf(groups []jobframework.Group, parent string) []jobframework.Group {
	var out []jobframework.Group
	for _, g := range groups {
		if g.Parent == parent {
			out = append(out, g)
		}
	}
	return out
}

func groupNames(groups []jobframework.Group) []string {
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		out = append(out, g.Name)
	}
	return out
}

func constraintsOf(g *jobframework.Groups, name string) []v1alpha1.TopologyConstraint {
	for _, c := range append(append([]jobframework.Group{}, g.Composites...), g.PodGroups...) {
		if c.Name == name {
			return c.Topology
		}
	}
	return nil
}

// TestTreeOf proves the shape of the tree a JobSet gets (one stage root, a CompositePodGroup
// per ReplicatedJob, a PodGroup per child Job), how stages, schedulers, annotations and the
// Job specs change it, and that checkTree's invariants hold for every JobSet.
func TestTreeOf(t *testing.T) {
	tests := []struct {
		name string
		js   func() *jobSet
		// wantNil: lockstep leaves the JobSet alone.
		wantNil bool
		// wantProblems are substrings of the problems, one each, in order.
		wantProblems []string
		check        func(t *testing.T, js *jobSet, g *jobframework.Groups)
	}{
		{
			name: "2 ReplicatedJobs x 2 replicas x parallelism 4: one root, 2 rjob CPGs, 4 PodGroups",
			js:   func() *jobSet { return newJobSet("train", rjob("driver", 2, 4), rjob("workers", 2, 4)) },
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				root := n.of(js.Name)
				wantComposites := []jobframework.Group{
					{Name: root, Template: "jobset", Min: 2},
					{Name: n.replicatedJob("driver"), Parent: root, Template: "driver", Min: 2},
					{Name: n.replicatedJob("workers"), Parent: root, Template: "workers", Min: 2},
				}
				wantPodGroups := []jobframework.Group{
					{Name: n.podGroup("driver", "0"), Parent: n.replicatedJob("driver"), Template: "job", Min: 4},
					{Name: n.podGroup("driver", "1"), Parent: n.replicatedJob("driver"), Template: "job", Min: 4},
					{Name: n.podGroup("workers", "0"), Parent: n.replicatedJob("workers"), Template: "job", Min: 4},
					{Name: n.podGroup("workers", "1"), Parent: n.replicatedJob("workers"), Template: "job", Min: 4},
				}
				if g.Workload != filing.JobGroupName(js.Name, js.UID) {
					t.Errorf("Workload = %q, want %q", g.Workload, filing.JobGroupName(js.Name, js.UID))
				}
				if diff := cmp.Diff(wantComposites, g.Composites); diff != "" {
					t.Errorf("Composites (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(wantPodGroups, g.PodGroups); diff != "" {
					t.Errorf("PodGroups (-want +got):\n%s", diff)
				}
				job := v1alpha1.PodGroupTemplate{Name: "job", SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 4}}}
				rjobTmpl := func(name string) v1alpha1.CompositePodGroupTemplate {
					return v1alpha1.CompositePodGroupTemplate{Name: name,
						SchedulingPolicy:  v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: 2}},
						PodGroupTemplates: []v1alpha1.PodGroupTemplate{job}}
				}
				wantSpec := v1alpha1.WorkloadSpec{CompositePodGroupTemplates: []v1alpha1.CompositePodGroupTemplate{{Name: "jobset",
					SchedulingPolicy:           v1alpha1.CompositePodGroupSchedulingPolicy{Gang: &v1alpha1.GangCompositePodGroupSchedulingPolicy{MinGroupCount: 2}},
					CompositePodGroupTemplates: []v1alpha1.CompositePodGroupTemplate{rjobTmpl("driver"), rjobTmpl("workers")}}}}
				if diff := cmp.Diff(wantSpec, g.Spec); diff != "" {
					t.Errorf("Workload spec (-want +got):\n%s", diff)
				}
				if g.Finished {
					t.Errorf("Finished = true for a JobSet with no status")
				}
			},
		},
		{
			name: "long JobSet and ReplicatedJob names sharing a long prefix: names still unique and short",
			js: func() *jobSet {
				long := strings.Repeat("j", 60)
				return newJobSet(long, rjob(strings.Repeat("r", 55)+"a", 3, 2), rjob(strings.Repeat("r", 55)+"b", 3, 2))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				if len(g.Composites) != 3 || len(g.PodGroups) != 6 {
					t.Fatalf("got %d composites and %d PodGroups, want 3 and 6", len(g.Composites), len(g.PodGroups))
				}
				// Uniqueness and length are checkTree's; the cut prefixes are equal, so only the
				// hash tells them apart.
				a, b := childrenOf(g.Composites, g.Composites[0].Name)[0], childrenOf(g.Composites, g.Composites[0].Name)[1]
				if a.Name[:54] != b.Name[:54] || a.Name == b.Name {
					t.Errorf("rjob CPGs %q and %q: want the same cut prefix told apart by the hash", a.Name, b.Name)
				}
			},
		},
		{
			name: "startupPolicyOrder InOrder: one root per ReplicatedJob, in order",
			js: func() *jobSet {
				js := newJobSet("staged", rjob("init", 1, 1), rjob("workers", 3, 4), rjob("eval", 2, 2))
				js.Spec.StartupPolicy = &startupPolicy{StartupPolicyOrder: InOrder}
				return js
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				roots := childrenOf(g.Composites, "")
				want := []string{n.stage("init"), n.stage("workers"), n.stage("eval")}
				if diff := cmp.Diff(want, groupNames(roots)); diff != "" {
					t.Fatalf("roots (-want +got):\n%s", diff)
				}
				for i, rj := range []string{"init", "workers", "eval"} {
					if want := fmt.Sprintf("stage-%d", i); roots[i].Min != 1 || roots[i].Template != want {
						t.Errorf("root %d = %+v, want minGroupCount 1 and template %q", i, roots[i], want)
					}
					if diff := cmp.Diff([]string{n.replicatedJob(rj)}, groupNames(childrenOf(g.Composites, roots[i].Name))); diff != "" {
						t.Errorf("children of root %d (-want +got):\n%s", i, diff)
					}
				}
			},
		},
		{
			name: "dependsOn: ReplicatedJobs with the same dependencies share a root, roots in start order",
			js: func() *jobSet {
				return newJobSet("deps",
					rjob("driver", 1, 1),
					dependsOnAll(rjob("workers", 2, 4), DependencyReady, "driver"),
					rjob("coordinator", 1, 1),
					dependsOnAll(rjob("ps", 2, 2), DependencyReady, "driver"),
					dependsOnAll(rjob("eval", 1, 2), DependencyFinish, "workers"),
				)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				roots := childrenOf(g.Composites, "")
				want := [][]string{{"driver", "coordinator"}, {"workers", "ps"}, {"eval"}}
				if len(roots) != len(want) {
					t.Fatalf("roots = %v, want %d stages", groupNames(roots), len(want))
				}
				for i, stage := range want {
					if roots[i].Name != n.stage(stage[0]) || roots[i].Min != int32(len(stage)) {
						t.Errorf("root %d = %q minGroupCount %d, want %q minGroupCount %d", i, roots[i].Name, roots[i].Min, n.stage(stage[0]), len(stage))
					}
					var wantKids []string
					for _, rj := range stage {
						wantKids = append(wantKids, n.replicatedJob(rj))
					}
					if diff := cmp.Diff(wantKids, groupNames(childrenOf(g.Composites, roots[i].Name))); diff != "" {
						t.Errorf("children of root %d (-want +got):\n%s", i, diff)
					}
				}
			},
		},
		{
			name: "a ReplicatedJob named like another's stage root does not share its name",
			js: func() *jobSet {
				js := newJobSet("clash", rjob("a", 1, 1), rjob("a-stage", 1, 1))
				js.Spec.StartupPolicy = &startupPolicy{StartupPolicyOrder: InOrder}
				return js
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				if len(g.Composites) != 4 {
					t.Errorf("got %d composites, want 2 roots and 2 ReplicatedJob CPGs", len(g.Composites))
				}
			},
		},
		{
			name: "a ReplicatedJob whose pods use another scheduler is left out",
			js: func() *jobSet {
				other := rjob("other", 3, 2)
				other.Template.Spec.Template.Spec.SchedulerName = otherScheduler
				return newJobSet("mixed", rjob("mine", 2, 2), other)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				if diff := cmp.Diff([]string{n.of(js.Name), n.replicatedJob("mine")}, groupNames(g.Composites)); diff != "" {
					t.Errorf("Composites (-want +got):\n%s", diff)
				}
				if g.Composites[0].Min != 1 {
					t.Errorf("root minGroupCount = %d, want 1 (the other scheduler's ReplicatedJob does not count)", g.Composites[0].Min)
				}
				for _, pg := range g.PodGroups {
					if pg.Parent != n.replicatedJob("mine") {
						t.Errorf("PodGroup %q under %q, want only PodGroups of %q", pg.Name, pg.Parent, "mine")
					}
				}
			},
		},
		{
			name: "a ReplicatedJob whose pods name a lockstep PodGroup of their own is left out",
			js: func() *jobSet {
				own := rjob("own", 1, 2)
				own.Template.Spec.Template.Labels = map[string]string{v1alpha1.PodGroupLabel: "mine"}
				return newJobSet("mixed", rjob("tree", 2, 2), own)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				if diff := cmp.Diff([]string{n.of(js.Name), n.replicatedJob("tree")}, groupNames(g.Composites)); diff != "" {
					t.Errorf("Composites (-want +got):\n%s", diff)
				}
				if g.None {
					t.Errorf("None for a JobSet with a ReplicatedJob of its own")
				}
			},
		},
		{
			name: "pods labelled with a scheduler-plugins PodGroup (Trainer's coscheduling policy) stay in the JobSet's tree",
			js: func() *jobSet {
				js := newJobSet("coscheduled", rjob("a", 1, 2), rjob("b", 1, 2))
				for i := range js.Spec.ReplicatedJobs {
					js.Spec.ReplicatedJobs[i].Template.Spec.Template.Labels = map[string]string{filing.SchedulerPluginsPodGroupLabel: "coscheduled"}
				}
				return js
			},
			check: func(t *testing.T, _ *jobSet, g *jobframework.Groups) {
				if g.None || len(g.PodGroups) != 2 {
					t.Errorf("groups %+v, want the tree's PodGroup per ReplicatedJob", g)
				}
			},
		},
		{
			name: "every ReplicatedJob's pods name a native PodGroup: no groups, those it has go",
			js: func() *jobSet {
				js := newJobSet("native", rjob("a", 1, 2), rjob("b", 1, 2))
				for i := range js.Spec.ReplicatedJobs {
					js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("native")}
				}
				return js
			},
			check: func(t *testing.T, _ *jobSet, g *jobframework.Groups) {
				if !g.None || len(g.Composites)+len(g.PodGroups) != 0 {
					t.Errorf("groups %+v, want None", g)
				}
			},
		},
		{
			name: "every ReplicatedJob's pods name a lockstep PodGroup: no groups, those it has go",
			js: func() *jobSet {
				js := newJobSet("own", rjob("a", 1, 2), rjob("b", 1, 2))
				for i := range js.Spec.ReplicatedJobs {
					js.Spec.ReplicatedJobs[i].Template.Spec.Template.Labels = map[string]string{v1alpha1.PodGroupLabel: "mine"}
				}
				return js
			},
			check: func(t *testing.T, _ *jobSet, g *jobframework.Groups) {
				if !g.None || len(g.Composites)+len(g.PodGroups) != 0 {
					t.Errorf("groups %+v, want None", g)
				}
			},
		},
		{
			name: "suspended (queued in Kueue, or by its owner): no groups, those it has go",
			js: func() *jobSet {
				js := newJobSet("queued", rjob("a", 1, 2))
				js.Spec.Suspend = ptr.To(true)
				return js
			},
			check: func(t *testing.T, _ *jobSet, g *jobframework.Groups) {
				if !g.None {
					t.Errorf("groups %+v, want None", g)
				}
			},
		},
		{
			name: "every ReplicatedJob uses another scheduler: nil",
			js: func() *jobSet {
				js := newJobSet("theirs", rjob("a", 1, 2), rjob("b", 1, 2))
				for i := range js.Spec.ReplicatedJobs {
					js.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulerName = otherScheduler
				}
				return js
			},
			wantNil: true,
		},
		{
			name:    "no ReplicatedJobs: nil",
			js:      func() *jobSet { return newJobSet("empty") },
			wantNil: true,
		},
		{
			name: "gang annotation false: opted out",
			js: func() *jobSet {
				return annotate(newJobSet("out", rjob("a", 2, 2)), v1alpha1.JobGangAnnotation, "false")
			},
			wantNil: true,
		},
		{
			name: "gang annotation true: the tree, no problem",
			js:   func() *jobSet { return annotate(newJobSet("in", rjob("a", 2, 2)), v1alpha1.JobGangAnnotation, "true") },
		},
		{
			name: "gang annotation maybe: a problem, the tree still made",
			js: func() *jobSet {
				return annotate(newJobSet("maybe", rjob("a", 2, 2)), v1alpha1.JobGangAnnotation, "maybe")
			},
			wantProblems: []string{`scheduling.lockstep.dev/gang="maybe"`},
		},
		{
			name: "topology annotations on the JobSet: the root's constraints only",
			js: func() *jobSet {
				return annotate(newJobSet("topo", rjob("a", 2, 2), rjob("b", 1, 2)),
					v1alpha1.JobTopologyRequiredAnnotation, zoneKey, v1alpha1.JobTopologyPreferredAnnotation, rackKey)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				want := []v1alpha1.TopologyConstraint{{Key: zoneKey, Mode: v1alpha1.TopologyRequired}, {Key: rackKey, Mode: v1alpha1.TopologyPreferred}}
				if diff := cmp.Diff(want, g.Composites[0].Topology); diff != "" {
					t.Errorf("root constraints (-want +got):\n%s", diff)
				}
				for _, c := range append(append([]jobframework.Group{}, g.Composites[1:]...), g.PodGroups...) {
					if len(c.Topology) != 0 {
						t.Errorf("group %q has constraints %v, want none: the JobSet's annotations are the root's", c.Name, c.Topology)
					}
				}
			},
		},
		{
			name: "topology annotation on a ReplicatedJob's Job template: that rjob CPG's constraints",
			js: func() *jobSet {
				a := rjob("a", 2, 2)
				a.Template.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: rackKey}
				return newJobSet("rjtopo", a, rjob("b", 2, 2))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				want := []v1alpha1.TopologyConstraint{{Key: rackKey, Mode: v1alpha1.TopologyRequired}}
				if diff := cmp.Diff(want, constraintsOf(g, n.replicatedJob("a"))); diff != "" {
					t.Errorf("constraints of rjob a (-want +got):\n%s", diff)
				}
				for _, name := range []string{n.of(js.Name), n.replicatedJob("b"), n.podGroup("a", "0")} {
					if c := constraintsOf(g, name); len(c) != 0 {
						t.Errorf("group %q has constraints %v, want none", name, c)
					}
				}
			},
		},
		{
			name: "invalid topology keys: problems, no constraints",
			js: func() *jobSet {
				a := rjob("a", 1, 2)
				a.Template.Annotations = map[string]string{v1alpha1.JobTopologyPreferredAnnotation: "not a key!"}
				return annotate(newJobSet("badtopo", a), v1alpha1.JobTopologyRequiredAnnotation, "-bad/")
			},
			wantProblems: []string{`topology-required="-bad/" is not a label key`, `topology-preferred="not a key!" is not a label key`},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				for _, c := range append(append([]jobframework.Group{}, g.Composites...), g.PodGroups...) {
					if len(c.Topology) != 0 {
						t.Errorf("group %q has constraints %v from an invalid key", c.Name, c.Topology)
					}
				}
			},
		},
		{
			name: "exclusive topology: each child PodGroup requires its own domain",
			js: func() *jobSet {
				return annotate(newJobSet("excl", rjob("a", 2, 4), rjob("b", 3, 2)), AnnotationExclusiveTopology, rackKey)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				want := []v1alpha1.TopologyConstraint{{Key: rackKey, Mode: v1alpha1.TopologyRequired, Exclusive: true}}
				if len(g.PodGroups) != 5 {
					t.Fatalf("got %d PodGroups, want 5", len(g.PodGroups))
				}
				for _, pg := range g.PodGroups {
					if diff := cmp.Diff(want, pg.Topology); diff != "" {
						t.Errorf("PodGroup %q constraints (-want +got):\n%s", pg.Name, diff)
					}
				}
				for _, c := range g.Composites {
					if len(c.Topology) != 0 {
						t.Errorf("CompositePodGroup %q has constraints %v; exclusive placement is per child Job", c.Name, c.Topology)
					}
				}
			},
		},
		{
			name: "exclusive topology with an invalid key: a problem, no constraint",
			js: func() *jobSet {
				return annotate(newJobSet("badexcl", rjob("a", 2, 4)), AnnotationExclusiveTopology, "bad key")
			},
			wantProblems: []string{`exclusive-topology="bad key" is not a label key`},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				for _, pg := range g.PodGroups {
					if len(pg.Topology) != 0 {
						t.Errorf("PodGroup %q has constraints %v from an invalid key", pg.Name, pg.Topology)
					}
				}
			},
		},
		{
			name: "minCount is the pods that run at once: parallelism 4, completions 2 gives 2",
			js: func() *jobSet {
				a := rjob("a", 1, 4)
				a.Template.Spec.Completions = ptr.To[int32](2)
				b := rjob("b", 1, 4)
				b.Template.Spec.Completions = ptr.To[int32](8)
				c := rjob("c", 1, 4)
				c.Template.Spec.Parallelism, c.Template.Spec.Completions = nil, nil
				d := rjob("d", 1, 4)
				d.Template.Spec.Parallelism = ptr.To[int32](0)
				return newJobSet("mins", a, b, c, d)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				for rj, want := range map[string]int32{"a": 2, "b": 4, "c": 1, "d": 1} {
					for _, pg := range childrenOf(g.PodGroups, n.replicatedJob(rj)) {
						if pg.Min != want {
							t.Errorf("rjob %s: PodGroup minCount = %d, want %d", rj, pg.Min, want)
						}
					}
				}
			},
		},
		{
			name: "replicas 0 or unset: treated as 1",
			js:   func() *jobSet { return newJobSet("zero", rjob("a", 0, 2)) },
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				if mid := g.Composites[1]; mid.Min != 1 {
					t.Errorf("rjob CPG minGroupCount = %d, want 1", mid.Min)
				}
				if diff := cmp.Diff([]string{n.podGroup("a", "0")}, groupNames(g.PodGroups)); diff != "" {
					t.Errorf("PodGroups (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "priority: a ReplicatedJob's groups get its pods' priority, roots the first's",
			js: func() *jobSet {
				a, b := rjob("a", 1, 2), rjob("b", 1, 2)
				a.Template.Spec.Template.Spec.PriorityClassName = "high"
				b.Template.Spec.Template.Spec.PriorityClassName = "low"
				return newJobSet("prio", a, b)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				n := names{jobSet: js.Name, uid: js.UID}
				for name, want := range map[string]string{n.of(js.Name): "high", n.replicatedJob("a"): "high", n.replicatedJob("b"): "low",
					n.podGroup("a", "0"): "high", n.podGroup("b", "0"): "low"} {
					for _, c := range append(append([]jobframework.Group{}, g.Composites...), g.PodGroups...) {
						if c.Name == name && c.PriorityClassName != want {
							t.Errorf("group %q priority = %q, want %q", name, c.PriorityClassName, want)
						}
					}
				}
			},
		},
		{
			name: "9 stages: the Workload describes 8 (the API's limit), every group is made; long names stay valid",
			js: func() *jobSet {
				var rjs []replicatedJob
				for i := range 9 {
					rjs = append(rjs, rjob(fmt.Sprintf("%s-%d", strings.Repeat("r", 57), i), 1, 1))
				}
				js := newJobSet("a", rjs...)
				js.Spec.StartupPolicy = &startupPolicy{StartupPolicyOrder: InOrder}
				return js
			},
			wantProblems: []string{"9 stages: the Workload describes the first 8"},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				if n := len(childrenOf(g.Composites, "")); n != 9 {
					t.Errorf("%d roots, want 9", n)
				}
			},
		},
		{
			name: "9 ReplicatedJobs in one stage: the stage's template describes 8, every group is made",
			js: func() *jobSet {
				var rjs []replicatedJob
				for i := range 9 {
					rjs = append(rjs, rjob(fmt.Sprintf("w%d", i), 1, 1))
				}
				return newJobSet("wide", rjs...)
			},
			wantProblems: []string{"stage 0 has 9 ReplicatedJobs"},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups) {
				if n := len(g.PodGroups); n != 9 {
					t.Errorf("%d PodGroups, want 9", n)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js := tc.js()
			g, problems := treeOf(js, ours)
			if len(problems) != len(tc.wantProblems) {
				t.Errorf("problems = %q, want %d matching %q", problems, len(tc.wantProblems), tc.wantProblems)
			} else {
				for i, p := range problems {
					if !strings.Contains(p, tc.wantProblems[i]) {
						t.Errorf("problem %d = %q, want it to mention %q", i, p, tc.wantProblems[i])
					}
				}
			}
			if tc.wantNil {
				if g != nil {
					t.Errorf("treeOf = %+v, want nil (lockstep leaves the JobSet alone)", g)
				}
				return
			}
			if g == nil {
				t.Fatalf("treeOf = nil, want a tree")
			}
			if !g.None {
				checkTree(t, g)
			}
			if tc.check != nil {
				tc.check(t, js, g)
			}
		})
	}
}

// TestTreeOfRestarts proves that a restart (status.restarts) gives every group a fresh name,
// so that the new child Jobs' pods never join the previous attempt's gangs, while the
// Workload keeps its name; and that a JobSet recreated under the same name (new UID) shares
// no name with its predecessor at all.
func TestTreeOfRestarts(t *testing.T) {
	staged := func() *jobSet {
		js := newJobSet("staged", rjob("init", 1, 1), rjob("workers", 2, 4))
		js.Spec.StartupPolicy = &startupPolicy{StartupPolicyOrder: InOrder}
		return js
	}
	tests := []struct {
		name string
		js   func() *jobSet
	}{
		{name: "one stage", js: func() *jobSet { return newJobSet("train", rjob("driver", 2, 4), rjob("workers", 2, 4)) }},
		{name: "staged", js: staged},
		{name: "long names", js: func() *jobSet { return newJobSet(strings.Repeat("x", 63), rjob(strings.Repeat("y", 63), 2, 2)) }},
	}
	allNames := func(g *jobframework.Groups) sets.Set[string] {
		return sets.New(append(groupNames(g.Composites), groupNames(g.PodGroups)...)...)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var prev *jobframework.Groups
			for attempt := int32(0); attempt < 3; attempt++ {
				js := tc.js()
				js.Status.Restarts = attempt
				g, _ := treeOf(js, ours)
				if g == nil {
					t.Fatalf("attempt %d: treeOf = nil", attempt)
				}
				checkTree(t, g)
				if prev != nil {
					if g.Workload != prev.Workload {
						t.Errorf("attempt %d: Workload %q, attempt %d's was %q; want the same", attempt, g.Workload, attempt-1, prev.Workload)
					}
					if both := allNames(g).Intersection(allNames(prev)); both.Len() > 0 {
						t.Errorf("attempt %d reuses group names of attempt %d: %v", attempt, attempt-1, sets.List(both))
					}
					if len(g.Composites) != len(prev.Composites) || len(g.PodGroups) != len(prev.PodGroups) {
						t.Errorf("attempt %d changed the tree's shape", attempt)
					}
				}
				prev = g
			}
			first, _ := treeOf(tc.js(), ours)
			again := tc.js()
			again.UID = "recreated"
			second, _ := treeOf(again, ours)
			if first.Workload == second.Workload {
				t.Errorf("a recreated JobSet reuses its predecessor's Workload name %q", first.Workload)
			}
			if both := allNames(first).Intersection(allNames(second)); both.Len() > 0 {
				t.Errorf("a recreated JobSet reuses group names: %v", sets.List(both))
			}
		})
	}
}

// TestTreeOfFinished proves that a JobSet is Finished once it has a terminal state or a True
// Completed or Failed condition, and not before; its tree is still returned (the groups
// that exist stay).
func TestTreeOfFinished(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status}
	}
	tests := []struct {
		name   string
		status jobSetStatus
		want   bool
	}{
		{name: "no status"},
		{name: "terminal state Completed", status: jobSetStatus{TerminalState: "Completed"}, want: true},
		{name: "terminal state Failed", status: jobSetStatus{TerminalState: "Failed"}, want: true},
		{name: "Completed True", status: jobSetStatus{Conditions: []metav1.Condition{cond("Completed", metav1.ConditionTrue)}}, want: true},
		{name: "Failed True", status: jobSetStatus{Conditions: []metav1.Condition{cond("StartupPolicyCompleted", metav1.ConditionTrue), cond("Failed", metav1.ConditionTrue)}}, want: true},
		{name: "Completed False", status: jobSetStatus{Conditions: []metav1.Condition{cond("Completed", metav1.ConditionFalse)}}},
		{name: "Suspended True", status: jobSetStatus{Conditions: []metav1.Condition{cond("Suspended", metav1.ConditionTrue)}}},
		{name: "restarted", status: jobSetStatus{Restarts: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js := newJobSet("fin", rjob("a", 2, 2))
			js.Status = tc.status
			g, _ := treeOf(js, ours)
			if g == nil {
				t.Fatalf("treeOf = nil, want a tree")
			}
			if g.Finished != tc.want {
				t.Errorf("Finished = %v for status %+v, want %v", g.Finished, tc.status, tc.want)
			}
			if len(g.PodGroups) != 2 {
				t.Errorf("got %d PodGroups, want the whole tree (2) whether finished or not", len(g.PodGroups))
			}
		})
	}
}

// TestNamesOfAreDistinct proves the naming scheme's promise over a grid of prefixes: names of
// different prefixes, attempts or UIDs differ even when the visible prefix is cut to the same.
func TestNamesOfAreDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, uid := range []types.UID{"u1", "u2"} {
		for attempt := 0; attempt < 3; attempt++ {
			n := names{jobSet: "js", uid: uid, attempt: attempt}
			for _, p := range []string{"a", strings.Repeat("p", 70) + "1", strings.Repeat("p", 70) + "2", strings.Repeat("p", 54)} {
				name := n.of(p)
				id := fmt.Sprintf("uid %s attempt %d prefix %q", uid, attempt, p)
				if len(name) > 63 {
					t.Errorf("%s: name %q longer than 63", id, name)
				}
				if other, dup := seen[name]; dup {
					t.Errorf("%s and %s both give %q", id, other, name)
				}
				seen[name] = id
			}
		}
	}
}

// checkName asserts that name is a valid object name of at most 63 characters.
func checkName(t *testing.T, kind, name string) {
	t.Helper()
	if len(name) > 63 {
		t.Errorf("%s name %q is %d characters, more than 63", kind, name, len(name))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Errorf("%s name %q is not a valid object name: %v", kind, name, errs)
	}
}

// checkGroups asserts what holds of the groups of every tree: valid names, unique per kind;
// every Composite's Parent a Composite listed before it; every PodGroup's parent a Composite
// that is not a root. It returns the Composites by name.
func checkGroups(t *testing.T, g *jobframework.Groups) map[string]jobframework.Group {
	t.Helper()
	composites := map[string]jobframework.Group{}
	for i, c := range g.Composites {
		checkName(t, "CompositePodGroup", c.Name)
		if _, dup := composites[c.Name]; dup {
			t.Errorf("Composites[%d]: CompositePodGroup name %q is used twice", i, c.Name)
		}
		if c.Parent != "" {
			if _, ok := composites[c.Parent]; !ok {
				t.Errorf("Composites[%d] %q: parent %q is not a CompositePodGroup listed before it", i, c.Name, c.Parent)
			}
		}
		composites[c.Name] = c
	}
	pgs := sets.New[string]()
	for i, pg := range g.PodGroups {
		checkName(t, "PodGroup", pg.Name)
		if pgs.Has(pg.Name) {
			t.Errorf("PodGroups[%d]: PodGroup name %q is used twice", i, pg.Name)
		}
		pgs.Insert(pg.Name)
		if parent, ok := composites[pg.Parent]; !ok || parent.Parent == "" {
			t.Errorf("PodGroups[%d] %q: parent %q is not a non-root CompositePodGroup of the tree", i, pg.Name, pg.Parent)
		}
	}
	return composites
}
