package jobset

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/controller/jobframework"
	"github.com/lockstep-sched/lockstep/pkg/filing"
)

const (
	blockKey = "topology.kubernetes.io/block"
	hostKey  = "kubernetes.io/hostname"
)

// kueueRJob returns rjob(name, replicas, pods) whose pod template carries the Kueue
// annotations kv.
func kueueRJob(name string, replicas, pods int32, kv ...string) replicatedJob {
	rj := rjob(name, replicas, pods)
	a := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	rj.Template.Spec.Template.Annotations = a
	return rj
}

// checkKueueTree asserts what holds of every tree, podset-group composites included (a
// root > group > ReplicatedJob > Job tree, which checkTree does not walk):
//   - names are valid object names of at most 63 characters, unique per kind; every
//     Composite's Parent is a Composite listed before it;
//   - no Composite has a sliceSize constraint (the API allows it on PodGroups only);
//   - every PodGroup's parent is a Composite that is not a root and has no Composite below;
//   - every Composite's minGroupCount is its number of direct children (a ReplicatedJob's:
//     replicas, which are its PodGroups);
//   - the Workload's templates mirror the Composites level by level, whatever the depth.
func checkKueueTree(t *testing.T, g *jobframework.Groups) {
	t.Helper()
	checkGroups(t, g)
	for _, c := range g.Composites {
		for _, tc := range c.Topology {
			if tc.SliceSize != nil {
				t.Errorf("CompositePodGroup %q has a sliceSize constraint %+v", c.Name, tc)
			}
		}
	}
	for i, pg := range g.PodGroups {
		if len(childrenOf(g.Composites, pg.Parent)) > 0 {
			t.Errorf("PodGroups[%d] %q: parent %q also has CompositePodGroups below it", i, pg.Name, pg.Parent)
		}
	}
	for _, c := range g.Composites {
		kids := len(childrenOf(g.Composites, c.Name)) + len(childrenOf(g.PodGroups, c.Name))
		if int(c.Min) != kids {
			t.Errorf("CompositePodGroup %q: minGroupCount %d, but %d children", c.Name, c.Min, kids)
		}
	}

	// The templates, level by level.
	var walk func(level string, tmpls []v1alpha1.CompositePodGroupTemplate, groups []jobframework.Group)
	walk = func(level string, tmpls []v1alpha1.CompositePodGroupTemplate, groups []jobframework.Group) {
		if len(tmpls) != min(len(groups), v1alpha1.MaxTemplates) {
			t.Errorf("%s: %d templates for %d CompositePodGroups %v", level, len(tmpls), len(groups), groupNames(groups))
			return
		}
		seen := sets.New[string]()
		for i, tmpl := range tmpls {
			c := groups[i]
			if seen.Has(tmpl.Name) {
				t.Errorf("%s: template name %q used twice", level, tmpl.Name)
			}
			seen.Insert(tmpl.Name)
			if len(tmpl.Name) > 63 || !dnsLabel.MatchString(tmpl.Name) {
				t.Errorf("%s: template name %q is not a DNS label", level, tmpl.Name)
			}
			if tmpl.Name != c.Template {
				t.Errorf("%s: template %d is %q, CompositePodGroup %q is made from %q", level, i, tmpl.Name, c.Name, c.Template)
			}
			if gang := tmpl.SchedulingPolicy.Gang; gang == nil || gang.MinGroupCount != c.Min {
				t.Errorf("%s: template %q gang %+v, CompositePodGroup %q has minGroupCount %d", level, tmpl.Name, gang, c.Name, c.Min)
			}
			if diff := cmp.Diff(c.Constraints(), tmpl.SchedulingConstraints); diff != "" {
				t.Errorf("%s: template %q constraints differ from CompositePodGroup %q (-group +template):\n%s", level, tmpl.Name, c.Name, diff)
			}
			walk(level+"/"+tmpl.Name, tmpl.CompositePodGroupTemplates, childrenOf(g.Composites, c.Name))
			pods := childrenOf(g.PodGroups, c.Name)
			if len(pods) == 0 {
				if len(tmpl.PodGroupTemplates) != 0 {
					t.Errorf("%s: template %q has PodGroupTemplates, CompositePodGroup %q no PodGroups", level, tmpl.Name, c.Name)
				}
				continue
			}
			if len(tmpl.PodGroupTemplates) != 1 {
				t.Errorf("%s: template %q has %d PodGroupTemplates, want 1", level, tmpl.Name, len(tmpl.PodGroupTemplates))
				continue
			}
			pt := tmpl.PodGroupTemplates[0]
			for _, pg := range pods {
				want := v1alpha1.PodGroupTemplate{Name: pg.Template,
					SchedulingPolicy:      v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: pg.Min}},
					SchedulingConstraints: pg.Constraints(), PriorityClassName: pg.PriorityClassName}
				if diff := cmp.Diff(want, pt); diff != "" {
					t.Errorf("%s: PodGroup %q differs from its template %q (-group +template):\n%s", level, pg.Name, pt.Name, diff)
				}
			}
		}
	}
	walk("workload", g.Spec.CompositePodGroupTemplates, childrenOf(g.Composites, ""))
}

// hasGroupComposites reports whether the tree has a CompositePodGroup between a root and
// the ReplicatedJob CompositePodGroups (checkTree covers the two-level trees only).
func hasGroupComposites(g *jobframework.Groups) bool {
	for _, c := range g.Composites {
		if c.Parent != "" && len(childrenOf(g.Composites, c.Name)) > 0 {
			return true
		}
	}
	return false
}

// TestTreeOfKueue proves how Kueue's TAS annotations on ReplicatedJob pod templates shape
// a JobSet's tree: PodSet constraints on the ReplicatedJob CompositePodGroup, slices on each
// child Job's PodGroup (whole Job: Required; divisor: sliceSize; otherwise ignored; never
// with exclusive placement), podset groups as a CompositePodGroup between the root and their
// ReplicatedJobs, and precedence (lockstep's annotations win; a Kueue-managed JobSet is not
// read).
func TestTreeOfKueue(t *testing.T) {
	required := func(key string) v1alpha1.TopologyConstraint {
		return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired}
	}
	preferred := func(key string) v1alpha1.TopologyConstraint {
		return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyPreferred}
	}
	sliceOf := func(key string, n int32) v1alpha1.TopologyConstraint {
		return v1alpha1.TopologyConstraint{Key: key, Mode: v1alpha1.TopologyRequired, SliceSize: ptr.To(n)}
	}
	exclusive := v1alpha1.TopologyConstraint{Key: rackKey, Mode: v1alpha1.TopologyRequired, Exclusive: true}
	const (
		req    = filing.KueuePodSetRequiredTopologyAnnotation
		pref   = filing.KueuePodSetPreferredTopologyAnnotation
		slice  = filing.KueuePodSetSliceRequiredTopologyAnnotation
		size   = filing.KueuePodSetSliceSizeAnnotation
		member = filing.KueuePodSetGroupNameAnnotation
	)
	// podGroupsOf returns the topology of each PodGroup under a ReplicatedJob's composite.
	podGroupsOf := func(t *testing.T, g *jobframework.Groups, n names, rj string, want int) [][]v1alpha1.TopologyConstraint {
		t.Helper()
		var out [][]v1alpha1.TopologyConstraint
		for _, pg := range childrenOf(g.PodGroups, n.replicatedJob(rj)) {
			out = append(out, pg.Topology)
		}
		if len(out) != want {
			t.Fatalf("rjob %s has %d PodGroups, want %d", rj, len(out), want)
		}
		return out
	}
	// noConstraints asserts that no group of the tree has constraints but those named.
	noConstraintsBut := func(t *testing.T, g *jobframework.Groups, except ...string) {
		t.Helper()
		for _, c := range append(append([]jobframework.Group{}, g.Composites...), g.PodGroups...) {
			if len(c.Topology) != 0 && !sets.New(except...).Has(c.Name) {
				t.Errorf("group %q has constraints %v, want none", c.Name, c.Topology)
			}
		}
	}
	tests := []struct {
		name         string
		js           func() *jobSet
		wantProblems []string
		check        func(t *testing.T, js *jobSet, g *jobframework.Groups, n names)
	}{
		{
			name: "required: the ReplicatedJob CompositePodGroup's constraint, nothing else",
			js: func() *jobSet {
				return newJobSet("req", kueueRJob("workers", 2, 4, req, rackKey), rjob("driver", 1, 1))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(rackKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("rjob workers constraints (-want +got):\n%s", diff)
				}
				noConstraintsBut(t, g, n.replicatedJob("workers"))
				if len(g.Composites) != 3 {
					t.Errorf("Composites %v, want root and 2 ReplicatedJobs (no group composite)", groupNames(g.Composites))
				}
			},
		},
		{
			name: "preferred: a Preferred constraint on the ReplicatedJob CompositePodGroup",
			js:   func() *jobSet { return newJobSet("pref", kueueRJob("workers", 3, 2, pref, blockKey)) },
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{preferred(blockKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("rjob workers constraints (-want +got):\n%s", diff)
				}
				noConstraintsBut(t, g, n.replicatedJob("workers"))
			},
		},
		{
			name: "unconstrained: no constraint anywhere",
			js: func() *jobSet {
				return newJobSet("unc", kueueRJob("workers", 2, 2, filing.KueuePodSetUnconstrainedTopologyAnnotation, "true"))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) { noConstraintsBut(t, g) },
		},
		{
			name: "slice of a whole Job: a Required constraint at the slice level on each child PodGroup",
			js: func() *jobSet {
				return newJobSet("whole", kueueRJob("workers", 2, 4, req, blockKey, slice, hostKey, size, "4"))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(blockKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("rjob constraints (-want +got):\n%s", diff)
				}
				for i, c := range podGroupsOf(t, g, n, "workers", 2) {
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(hostKey)}, c); diff != "" {
						t.Errorf("PodGroup %d constraints (-want +got):\n%s", i, diff)
					}
				}
				noConstraintsBut(t, g, n.replicatedJob("workers"), n.podGroup("workers", "0"), n.podGroup("workers", "1"))
			},
		},
		{
			name: "slice of a whole Job without slice-size: JobSet's default is the Job's pods (KEP-2724)",
			js:   func() *jobSet { return newJobSet("dflt", kueueRJob("workers", 2, 4, req, blockKey, slice, hostKey)) },
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				for i, c := range podGroupsOf(t, g, n, "workers", 2) {
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(hostKey)}, c); diff != "" {
						t.Errorf("PodGroup %d constraints (-want +got):\n%s", i, diff)
					}
				}
			},
		},
		{
			name: "slices dividing the Job: the slice constraint with sliceSize on each child PodGroup",
			js: func() *jobSet {
				return newJobSet("div", kueueRJob("workers", 3, 8, pref, blockKey, slice, rackKey, size, "2"))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{preferred(blockKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("rjob constraints (-want +got):\n%s", diff)
				}
				for i, c := range podGroupsOf(t, g, n, "workers", 3) {
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{sliceOf(rackKey, 2)}, c); diff != "" {
						t.Errorf("PodGroup %d constraints (-want +got):\n%s", i, diff)
					}
				}
			},
		},
		{
			name: "slices cut from the pods that run at once (parallelism 4, completions 8)",
			js: func() *jobSet {
				rj := kueueRJob("workers", 1, 4, slice, hostKey, size, "2")
				rj.Template.Spec.Completions = ptr.To[int32](8)
				return newJobSet("par", rj)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{sliceOf(hostKey, 2)}, podGroupsOf(t, g, n, "workers", 1)[0]); diff != "" {
					t.Errorf("PodGroup constraints (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "slices not dividing the Job: ignored with a problem",
			js: func() *jobSet {
				return newJobSet("nodiv", kueueRJob("workers", 2, 4, req, blockKey, slice, hostKey, size, "3"))
			},
			wantProblems: []string{"ReplicatedJob workers: slices of 3 pods cannot be cut from its Jobs of 4 pods"},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				for i, c := range podGroupsOf(t, g, n, "workers", 2) {
					if len(c) != 0 {
						t.Errorf("PodGroup %d constraints %v, want none", i, c)
					}
				}
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(blockKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("the PodSet constraint stays (-want +got):\n%s", diff)
				}
			},
		},
		{
			name:         "slices across child Jobs (larger than a Job, within the ReplicatedJob): ignored with a problem",
			js:           func() *jobSet { return newJobSet("across", kueueRJob("workers", 2, 4, slice, hostKey, size, "8")) },
			wantProblems: []string{"ReplicatedJob workers: slices of 8 pods cannot be cut from its Jobs of 4 pods"},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				noConstraintsBut(t, g)
			},
		},
		{
			name:         "slices larger than the ReplicatedJob: Kueue's problem, no constraint",
			js:           func() *jobSet { return newJobSet("big", kueueRJob("workers", 2, 4, slice, hostKey, size, "16")) },
			wantProblems: []string{`podset-slice-size="16" exceeds the 8 pods of the pod set`},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				noConstraintsBut(t, g)
			},
		},
		{
			name: "slices with exclusive placement: a problem, the exclusive constraint kept",
			js: func() *jobSet {
				return annotate(newJobSet("excl", kueueRJob("workers", 2, 4, req, blockKey, slice, hostKey, size, "2"), rjob("driver", 1, 1)),
					AnnotationExclusiveTopology, rackKey)
			},
			wantProblems: []string{"ReplicatedJob workers: Kueue slices cannot be combined with exclusive placement"},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				for _, pg := range g.PodGroups {
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{exclusive}, pg.Topology); diff != "" {
						t.Errorf("PodGroup %q constraints (-want +got):\n%s", pg.Name, diff)
					}
				}
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(blockKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("rjob constraints (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "podset group of two: a group composite with their topology between the root and them",
			js: func() *jobSet {
				return newJobSet("lws",
					kueueRJob("leader", 1, 1, req, rackKey, member, "lw"),
					rjob("driver", 1, 1),
					kueueRJob("workers", 2, 4, req, rackKey, member, "lw"))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				root := n.of(js.Name)
				group := childrenOf(g.Composites, root)[0]
				if !strings.HasPrefix(group.Name, "lws-group-lw-") || group.Template != "group-lw" || group.Min != 2 {
					t.Errorf("group composite %+v, want <jobset>-group-lw-<hash>, template group-lw, minGroupCount 2", group)
				}
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(rackKey)}, group.Topology); diff != "" {
					t.Errorf("group constraints (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{group.Name, n.replicatedJob("driver")}, groupNames(childrenOf(g.Composites, root))); diff != "" {
					t.Errorf("children of the root (-want +got):\n%s", diff)
				}
				if g.Composites[0].Min != 2 {
					t.Errorf("root minGroupCount %d, want 2: the group and driver", g.Composites[0].Min)
				}
				if diff := cmp.Diff([]string{n.replicatedJob("leader"), n.replicatedJob("workers")}, groupNames(childrenOf(g.Composites, group.Name))); diff != "" {
					t.Errorf("children of the group (-want +got):\n%s", diff)
				}
				for _, rj := range []string{"leader", "workers"} {
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(rackKey)}, constraintsOf(g, n.replicatedJob(rj))); diff != "" {
						t.Errorf("rjob %s constraints (-want +got):\n%s", rj, diff)
					}
				}
				noConstraintsBut(t, g, group.Name, n.replicatedJob("leader"), n.replicatedJob("workers"))
				if len(g.PodGroups) != 4 {
					t.Errorf("%d PodGroups, want 4", len(g.PodGroups))
				}
			},
		},
		{
			name: "podset group with preferred topology",
			js: func() *jobSet {
				return newJobSet("lwp", kueueRJob("leader", 1, 1, pref, blockKey, member, "g"), kueueRJob("workers", 1, 2, pref, blockKey, member, "g"))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				root := n.of(js.Name)
				kids := childrenOf(g.Composites, root)
				if len(kids) != 1 || g.Composites[0].Min != 1 {
					t.Fatalf("root children %v minGroupCount %d, want the group alone", groupNames(kids), g.Composites[0].Min)
				}
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{preferred(blockKey)}, kids[0].Topology); diff != "" {
					t.Errorf("group constraints (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "podset groups of another topology: a problem, the first's topology holds",
			js: func() *jobSet {
				return newJobSet("mismatch",
					kueueRJob("leader", 1, 1, req, rackKey, member, "g"),
					kueueRJob("workers", 1, 2, req, zoneKey, member, "g"))
			},
			wantProblems: []string{`ReplicatedJob workers is in podset group "g" but asks for another topology than leader`},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				group := childrenOf(g.Composites, n.of(js.Name))
				if len(group) != 1 || group[0].Min != 2 {
					t.Fatalf("root children %v, want one group of 2", groupNames(group))
				}
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(rackKey)}, group[0].Topology); diff != "" {
					t.Errorf("group constraints (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "podset group of one: no group composite, its ReplicatedJob under the root",
			js: func() *jobSet {
				return newJobSet("alone", kueueRJob("leader", 1, 1, req, rackKey, member, "g"), rjob("workers", 2, 2))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				root := n.of(js.Name)
				if diff := cmp.Diff([]string{root, n.replicatedJob("leader"), n.replicatedJob("workers")}, groupNames(g.Composites)); diff != "" {
					t.Errorf("Composites (-want +got):\n%s", diff)
				}
				if g.Composites[0].Min != 2 {
					t.Errorf("root minGroupCount %d, want 2", g.Composites[0].Min)
				}
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(rackKey)}, constraintsOf(g, n.replicatedJob("leader"))); diff != "" {
					t.Errorf("rjob leader constraints (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "two podset groups and a loner in one stage",
			js: func() *jobSet {
				return newJobSet("two",
					kueueRJob("a1", 1, 2, req, rackKey, member, "a"),
					kueueRJob("b1", 1, 2, req, blockKey, member, "b"),
					kueueRJob("a2", 2, 2, req, rackKey, member, "a"),
					rjob("solo", 1, 1),
					kueueRJob("b2", 1, 1, req, blockKey, member, "b"))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				kids := childrenOf(g.Composites, n.of(js.Name))
				if len(kids) != 3 || g.Composites[0].Min != 3 {
					t.Fatalf("root children %v minGroupCount %d, want group a, group b, solo", groupNames(kids), g.Composites[0].Min)
				}
				for i, want := range []struct {
					template string
					rjobs    []string
					key      string
				}{{"group-a", []string{"a1", "a2"}, rackKey}, {"group-b", []string{"b1", "b2"}, blockKey}} {
					if kids[i].Template != want.template {
						t.Errorf("root child %d template %q, want %q", i, kids[i].Template, want.template)
					}
					var wantKids []string
					for _, rj := range want.rjobs {
						wantKids = append(wantKids, n.replicatedJob(rj))
					}
					if diff := cmp.Diff(wantKids, groupNames(childrenOf(g.Composites, kids[i].Name))); diff != "" {
						t.Errorf("children of %s (-want +got):\n%s", want.template, diff)
					}
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(want.key)}, kids[i].Topology); diff != "" {
						t.Errorf("%s constraints (-want +got):\n%s", want.template, diff)
					}
				}
				if kids[2].Name != n.replicatedJob("solo") {
					t.Errorf("third root child %q, want rjob solo", kids[2].Name)
				}
			},
		},
		{
			name: "podset groups are per stage: the same group name in two stages gives two groups",
			js: func() *jobSet {
				return newJobSet("staged",
					kueueRJob("init-a", 1, 1, req, rackKey, member, "g"),
					kueueRJob("init-b", 1, 1, req, rackKey, member, "g"),
					dependsOnAll(kueueRJob("train-a", 1, 2, req, blockKey, member, "g"), DependencyFinish, "init-a", "init-b"),
					dependsOnAll(kueueRJob("train-b", 1, 2, req, blockKey, member, "g"), DependencyFinish, "init-a", "init-b"))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				roots := childrenOf(g.Composites, "")
				if len(roots) != 2 {
					t.Fatalf("roots %v, want 2 stages", groupNames(roots))
				}
				for i, key := range []string{rackKey, blockKey} {
					kids := childrenOf(g.Composites, roots[i].Name)
					if len(kids) != 1 || roots[i].Min != 1 || len(childrenOf(g.Composites, kids[0].Name)) != 2 {
						t.Fatalf("stage %d: root children %v, want one group of 2", i, groupNames(kids))
					}
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(key)}, kids[0].Topology); diff != "" {
						t.Errorf("stage %d group constraints (-want +got):\n%s", i, diff)
					}
				}
			},
		},
		{
			name: "a podset group named like a ReplicatedJob's group composite: names stay distinct",
			js: func() *jobSet {
				return newJobSet("clash",
					kueueRJob("a", 1, 1, req, rackKey, member, "x"),
					kueueRJob("b", 1, 1, req, rackKey, member, "x"),
					rjob("group-x", 1, 1))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if len(g.Composites) != 5 {
					t.Errorf("Composites %v, want root, group, a, b, group-x", groupNames(g.Composites))
				}
				kids := childrenOf(g.Composites, n.of(js.Name))
				if len(kids) != 2 || kids[1].Name != n.replicatedJob("group-x") || len(childrenOf(g.Composites, kids[0].Name)) != 2 {
					t.Errorf("root children %v, want the group of a and b, then rjob group-x", groupNames(kids))
				}
			},
		},
		{
			name: "podset group name that cannot name objects: a problem, no group",
			js: func() *jobSet {
				return newJobSet("badname",
					kueueRJob("a", 1, 1, req, rackKey, member, "Leader_Workers"),
					kueueRJob("b", 1, 1, req, rackKey, member, "Leader_Workers"),
					kueueRJob("c", 1, 1, req, rackKey, member, strings.Repeat("g", 58)),
					kueueRJob("d", 1, 1, req, rackKey, member, strings.Repeat("g", 58)))
			},
			wantProblems: []string{`podset group name "Leader_Workers"`, `podset group name "Leader_Workers"`, "podset group name", "podset group name"},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if hasGroupComposites(g) {
					t.Errorf("Composites %v, want no group composite", groupNames(g.Composites))
				}
				for _, rj := range []string{"a", "b", "c", "d"} {
					if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(rackKey)}, constraintsOf(g, n.replicatedJob(rj))); diff != "" {
						t.Errorf("rjob %s keeps its PodSet constraint (-want +got):\n%s", rj, diff)
					}
				}
			},
		},
		{
			name: "long podset group name of 57 characters: a group, names fit",
			js: func() *jobSet {
				long := strings.Repeat("g", 57)
				return newJobSet(strings.Repeat("j", 63),
					kueueRJob("a", 1, 1, req, rackKey, member, long), kueueRJob("b", 1, 1, req, rackKey, member, long))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if !hasGroupComposites(g) {
					t.Errorf("Composites %v, want a group composite", groupNames(g.Composites))
				}
			},
		},
		{
			name: "podset group with slices: Kueue's problem, no group",
			js: func() *jobSet {
				return newJobSet("gslice",
					kueueRJob("a", 1, 2, req, rackKey, member, "g", slice, hostKey, size, "2"),
					kueueRJob("b", 1, 2, req, rackKey, member, "g"))
			},
			wantProblems: []string{"podset-group-name cannot be combined with slice topology"},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if hasGroupComposites(g) {
					t.Errorf("Composites %v, want no group composite (b alone is a group of one)", groupNames(g.Composites))
				}
			},
		},
		{
			name: "queue-name label on the JobSet: Kueue's, no Kueue constraint and no group",
			js: func() *jobSet {
				js := newJobSet("kueued",
					kueueRJob("leader", 1, 1, req, rackKey, member, "lw"),
					kueueRJob("workers", 2, 4, req, rackKey, member, "lw", slice, hostKey, size, "2"))
				js.Labels = map[string]string{filing.KueueQueueNameLabel: "user-queue"}
				return js
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				noConstraintsBut(t, g)
				if len(g.Composites) != 3 {
					t.Errorf("Composites %v, want root and 2 ReplicatedJobs", groupNames(g.Composites))
				}
			},
		},
		{
			name: "Kueue's topology gate on a pod template: that ReplicatedJob is not read",
			js: func() *jobSet {
				gated := kueueRJob("gated", 1, 2, req, rackKey)
				gated.Template.Spec.Template.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: filing.KueueTopologySchedulingGate}}
				return newJobSet("gate", gated, kueueRJob("free", 1, 2, req, blockKey))
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(blockKey)}, constraintsOf(g, n.replicatedJob("free"))); diff != "" {
					t.Errorf("rjob free constraints (-want +got):\n%s", diff)
				}
				noConstraintsBut(t, g, n.replicatedJob("free"))
			},
		},
		{
			name: "lockstep's annotation on the Job template wins over Kueue's on its pod template",
			js: func() *jobSet {
				rj := kueueRJob("workers", 2, 4, req, rackKey, slice, hostKey, size, "2", member, "g")
				rj.Template.Annotations = map[string]string{v1alpha1.JobTopologyRequiredAnnotation: zoneKey}
				return newJobSet("own", rj, kueueRJob("leader", 1, 1, req, rackKey, member, "g"))
			},
			// None of workers' Kueue annotations are read: no problem of theirs either.
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(zoneKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("rjob workers constraints (-want +got):\n%s", diff)
				}
				for _, pg := range childrenOf(g.PodGroups, n.replicatedJob("workers")) {
					if len(pg.Topology) != 0 {
						t.Errorf("PodGroup %q constraints %v, want no Kueue slice", pg.Name, pg.Topology)
					}
				}
				if hasGroupComposites(g) {
					t.Errorf("Composites %v: workers is not in Kueue's group, leader is alone", groupNames(g.Composites))
				}
			},
		},
		{
			name: "JobSet topology and Kueue's: the root's and the ReplicatedJob's",
			js: func() *jobSet {
				return annotate(newJobSet("both", kueueRJob("workers", 1, 4, req, rackKey)), v1alpha1.JobTopologyRequiredAnnotation, zoneKey)
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(zoneKey)}, constraintsOf(g, n.of(js.Name))); diff != "" {
					t.Errorf("root constraints (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]v1alpha1.TopologyConstraint{required(rackKey)}, constraintsOf(g, n.replicatedJob("workers"))); diff != "" {
					t.Errorf("rjob constraints (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "malformed Kueue annotations: problems, no panic, nothing applied",
			js: func() *jobSet {
				return newJobSet("bad",
					kueueRJob("a", 1, 2, req, "not a key", member, "g"),
					kueueRJob("b", 1, 2, slice, hostKey, size, "zero"),
					kueueRJob("c", 1, 2, member, "42"))
			},
			wantProblems: []string{
				`podset-required-topology="not a key" is not a label key`,
				"podset-group-name needs",
				`podset-slice-size="zero" is not a positive integer`,
				`podset-group-name="42" is empty or a number`,
			},
			check: func(t *testing.T, js *jobSet, g *jobframework.Groups, n names) {
				noConstraintsBut(t, g)
				if hasGroupComposites(g) {
					t.Errorf("Composites %v, want no group composite", groupNames(g.Composites))
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
			if g == nil {
				t.Fatalf("treeOf = nil, want a tree")
			}
			checkKueueTree(t, g)
			if !hasGroupComposites(g) {
				checkTree(t, g)
			}
			if tc.check != nil {
				tc.check(t, js, g, names{jobSet: js.Name, uid: js.UID})
			}
		})
	}
}

// TestTreeOfKueueRestarts proves that a podset group's composite is named for the restart
// attempt like every other group, and that checkKueueTree's invariants hold across attempts.
func TestTreeOfKueueRestarts(t *testing.T) {
	js := newJobSet("lws",
		kueueRJob("leader", 1, 1, filing.KueuePodSetRequiredTopologyAnnotation, rackKey, filing.KueuePodSetGroupNameAnnotation, "lw"),
		kueueRJob("workers", 2, 2, filing.KueuePodSetRequiredTopologyAnnotation, rackKey, filing.KueuePodSetGroupNameAnnotation, "lw"))
	seen := sets.New[string]()
	for attempt := int32(0); attempt < 3; attempt++ {
		js.Status.Restarts = attempt
		g, problems := treeOf(js, ours)
		if g == nil || len(problems) != 0 {
			t.Fatalf("attempt %d: treeOf = %v, problems %q", attempt, g, problems)
		}
		checkKueueTree(t, g)
		for _, c := range g.Composites {
			if seen.Has(c.Name) {
				t.Errorf("attempt %d reuses CompositePodGroup name %q", attempt, c.Name)
			}
			seen.Insert(c.Name)
		}
	}
}
