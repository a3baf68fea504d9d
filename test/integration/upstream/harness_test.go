// Package upstream runs every case of upstream's own integration tests for workload
// scheduling and pod-group preemption (k8s.io/kubernetes v1.37.1,
// test/integration/scheduler/podgroup and preemption) against lockstep: the same nodes, native
// Workloads, PodGroups, CompositePodGroups and pods, the same steps and the same expectations
// within upstream's waits, on a kube-apiserver that serves the native kinds and with
// lockstep's binary and shipped configuration as the scheduler. The cases are written from
// reading upstream's, in lockstep's test dialect, one suite per upstream test function under
// its name (cases_test.go lists them, checks that every upstream case has an entry, and that
// docs/upstream-cases.md counts them); a case that differs says why (ucase.differs).
//
// Differences that hold for every case:
//   - pods name lockstep-scheduler; upstream's run under the default scheduler with the
//     workload gates on (its GangScheduling plugin);
//   - upstream's tests read the scheduler's queue to tell a pod held before any attempt
//     (no quorum, a gated member, no PodGroup yet) from one refused by an attempt; a separate
//     binary has no such window, so both are read from the API: the pod unbound with its
//     PodScheduled condition False, reason Unschedulable, or its group's condition False,
//     reason Unschedulable, and for a missing PodGroup the event saying so;
//   - each tree of groups gets a native Workload of its own (createWorkloads);
//   - the topology labels "zone", "block" and "rack" are lockstep's shipped levels
//     (topology.kubernetes.io/zone, ...), which a group's keys must be among;
//   - upstream's apiserver runs without Priority admission and its pods set spec.priority;
//     here pods and PodGroups name a PriorityClass of that value (prio-<n>), as on a cluster.
package upstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The label keys upstream's nodes carry, as lockstep's shipped levels.
const (
	zone  = lt.ZoneKey
	block = lt.BlockKey
	rack  = lt.RackKey
)

// The waits are upstream's: wait.ForeverTestTimeout for a pod to be scheduled or refused
// (podgroup tests, preemption_test.go), 10 s for a pod to be scheduled, refused or evicted by a
// group's preemption and 5 s for a victim to go (podgrouppreemption_test.go), each plus
// processMargin: lockstep is a separate process that hears of every write through its
// informers, and its answers come back the same way.
const (
	upstreamShortWait = 5 * time.Second  // podgrouppreemption_test.go: a victim preempted
	upstreamWait      = 10 * time.Second // podgrouppreemption_test.go: every other wait
	upstreamForever   = 30 * time.Second // wait.ForeverTestTimeout
	processMargin     = 10 * time.Second // lockstep's informers, both ways
)

// cluster is one control plane serving the native kinds and one lockstep scheduler with the
// shipped configuration (manifests/scheduler-config.yaml; args overrides), shared by the cases
// of a suite: each case runs in a namespace of its own, on nodes of its own (the previous
// case's pods and nodes are deleted first).
type cluster struct {
	*testenv.Env
	classes map[int32]bool
	nodes   []string
	ns      string
	n       int
}

func startCluster(t *testing.T, args testenv.GangArgs) *cluster {
	env := testenv.StartServingNative(t)
	env.StartScheduler(t, args)
	return &cluster{Env: env, classes: map[int32]bool{}}
}

// h is one case being run.
type h struct {
	*cluster
	t *testing.T
	// groups are the case's groups made so far, by name and in order; workloads the
	// Workloads made for their trees.
	groups    map[string]group
	order     []group
	workloads map[string]bool
}

// step is one step of a case.
type step func(h *h)

// ucase is one upstream case: its exact name, its steps, and, where lockstep's outcome differs
// from upstream's and the steps check lockstep's, why (docs/upstream-cases.md says it too).
type ucase struct {
	name    string
	steps   []step
	differs string
}

// suite is the cases of one upstream test function, with the steps each starts with, and
// where the shipped configuration will not do, what the scheduler runs with instead and why.
type suite struct {
	cases   []ucase
	common  []step
	args    testenv.GangArgs
	argsWhy string
}

// runSuite runs a suite on a cluster of its own.
func runSuite(t *testing.T, s suite) {
	if s.args != nil {
		t.Logf("not the shipped configuration: %v, for %s", s.args, s.argsWhy)
	}
	startCluster(t, s.args).run(t, s.cases, s.common...)
}

// run runs the cases one after the other on c, each in a fresh namespace on fresh nodes.
func (c *cluster) run(t *testing.T, cases []ucase, common ...step) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.differs != "" {
				t.Logf("differs from upstream: %s", tc.differs)
			}
			testenv.NoteFailure(t)
			c.reset(t)
			hh := &h{cluster: c, t: t, groups: map[string]group{}, workloads: map[string]bool{}}
			for _, s := range append(append([]step(nil), common...), tc.steps...) {
				s(hh)
			}
		})
	}
}

// reset deletes the previous case's pods and nodes and makes a namespace for the next.
func (c *cluster) reset(t *testing.T) {
	ctx := context.Background()
	if c.ns != "" {
		if err := c.Client.CoreV1().Pods(c.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, "the previous case's pods gone", func() (bool, string) {
			list, err := c.Client.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{})
			return err == nil && len(list.Items) == 0, fmt.Sprint(err)
		})
	}
	for _, n := range c.nodes {
		if err := c.Client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	c.nodes = nil
	c.n++
	c.ns = c.Namespace(t, fmt.Sprintf("upstream-%d", c.n))
}

// node is a node of upstream's tests: cpu cores, 32 pods, labels.
func node(name string, cpu int, labels ...string) *v1.Node {
	w := lt.MakeNode(name, fmt.Sprint(cpu))
	for i := 0; i+1 < len(labels); i += 2 {
		w = w.Label(labels[i], labels[i+1])
	}
	return w.Obj()
}

func nodes(ns ...*v1.Node) step {
	return func(h *h) {
		h.CreateNodes(h.t, ns...)
		for _, n := range ns {
			h.nodes = append(h.nodes, n.Name)
		}
	}
}

// class returns the PriorityClass of value p, creating it once.
func (h *h) class(p int32) string {
	name := fmt.Sprintf("prio-%d", p)
	if !h.classes[p] {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: p}
		if _, err := h.Client.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			h.t.Fatal(err)
		}
		h.classes[p] = true
	}
	return name
}

// pod describes a pod of a case.
type pod struct {
	name     string
	group    string
	cpu      string
	priority int32 // 0: none
	node     string
	grace0   bool
	gated    bool
	mutate   func(*v1.Pod)
}

func (h *h) podObj(p pod) *v1.Pod {
	w := lt.MakePod().Namespace(h.ns).Name(p.name).Req(lt.CPU(p.cpu))
	if p.group != "" {
		w = w.PodGroupName(p.group)
	}
	if p.node != "" {
		w = w.Node(p.node)
	}
	if p.grace0 {
		w = w.TerminationGracePeriodSeconds(0)
	}
	if p.gated {
		w = w.SchedulingGates([]string{"foo-gate"})
	}
	obj := w.Obj()
	obj.UID = ""
	if p.priority != 0 {
		obj.Spec.PriorityClassName = h.class(p.priority)
	}
	if p.mutate != nil {
		p.mutate(obj)
	}
	return obj
}

func createPods(ps ...pod) step {
	return func(h *h) {
		for _, p := range ps {
			obj := h.podObj(p)
			h.create(func() error {
				_, err := h.Client.CoreV1().Pods(h.ns).Create(context.Background(), obj, metav1.CreateOptions{})
				return err
			})
		}
	}
}

// create runs a create, again while the Priority admission plugin has not seen a
// PriorityClass just made.
func (h *h) create(do func() error) {
	h.t.Helper()
	testenv.Eventually(h.t, 30*time.Second, "create", func() (bool, string) {
		err := do()
		if err != nil && strings.Contains(err.Error(), "no PriorityClass with name") {
			return false, err.Error()
		}
		if err != nil {
			h.t.Fatal(err)
		}
		return true, ""
	})
}

// group describes a native PodGroup (v1beta1) or, with composite, a CompositePodGroup
// (v1alpha3).
type group struct {
	name      string
	composite bool
	min       int32 // 0: basic
	key       string
	parent    string
	priority  int32
	all       bool // disruptionMode all
	noRef     bool // no workloadRef
}

func (h *h) createGroup(g group) {
	ctx := context.Background()
	var class string
	if g.priority != 0 {
		class = h.class(g.priority)
	}
	var parent *string
	if g.parent != "" {
		parent = &g.parent
	}
	if g.composite {
		c := &schedulingv1alpha3.CompositePodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: g.name}}
		c.Spec.ParentCompositePodGroupName, c.Spec.PriorityClassName = parent, class
		c.Spec.WorkloadRef = &schedulingv1alpha3.WorkloadReference{WorkloadName: h.workloadOf(g), TemplateName: g.name}
		if g.min > 0 {
			c.Spec.SchedulingPolicy.Gang = &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: g.min}
		} else {
			c.Spec.SchedulingPolicy.Basic = &schedulingv1alpha3.CompositeBasicSchedulingPolicy{}
		}
		if g.key != "" {
			c.Spec.SchedulingConstraints = &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: g.key}}}
		}
		if g.all {
			c.Spec.DisruptionMode = &schedulingv1alpha3.CompositeDisruptionMode{All: &schedulingv1alpha3.AllCompositeDisruptionMode{}}
		}
		h.create(func() error {
			_, err := h.Client.SchedulingV1alpha3().CompositePodGroups(h.ns).Create(ctx, c, metav1.CreateOptions{})
			return err
		})
		return
	}
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: g.name}}
	pg.Spec.ParentCompositePodGroupName, pg.Spec.PriorityClassName = parent, class
	if !g.noRef {
		pg.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: h.workloadOf(g), TemplateName: g.name}
	}
	if g.min > 0 {
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: g.min}
	} else {
		pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	}
	if g.key != "" {
		pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: g.key}}}
	}
	if g.all {
		pg.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	}
	h.create(func() error {
		_, err := h.Client.SchedulingV1beta1().PodGroups(h.ns).Create(ctx, pg, metav1.CreateOptions{})
		return err
	})
}

// disruptAll is g with disruptionMode all.
func disruptAll(g group) group {
	g.all = true
	return g
}

// workloadOf names the Workload a group is made from: its tree's, named after the topmost
// group of the tree the case made (the root, or the highest whose parent is missing).
func (h *h) workloadOf(g group) string {
	for g.parent != "" {
		parent, ok := h.groups[g.parent]
		if !ok {
			break
		}
		g = parent
	}
	return g.name + "-workload"
}

// createWorkloads creates the native Workload of each tree of the case's groups that has none
// yet, as upstream's cases create theirs: a template per group, nested as the groups are, of
// each group's name, policy and constraints. A tree's Workload is made once every composite
// group in it has a child (the API refuses a composite template without one), so a tree made
// group by group gets it with its first leaf, and groups added to a tree after that have no
// template there (lockstep reads the groups, never the Workload).
func (h *h) createWorkloads() {
	children := map[string][]group{}
	var roots []group
	for _, g := range h.order {
		if _, ok := h.groups[g.parent]; g.parent != "" && ok {
			children[g.parent] = append(children[g.parent], g)
		} else {
			roots = append(roots, g)
		}
	}
	var complete func(g group) bool
	complete = func(g group) bool {
		if !g.composite {
			return true
		}
		for _, c := range children[g.name] {
			if !complete(c) {
				return false
			}
		}
		return len(children[g.name]) > 0
	}
	for _, root := range roots {
		name := root.name + "-workload"
		if root.noRef || h.workloads[name] || !complete(root) {
			continue
		}
		wl := &schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}}
		wl.Spec.PodGroupTemplates, wl.Spec.CompositePodGroupTemplates = templates([]group{root}, children)
		h.create(func() error {
			_, err := h.Client.SchedulingV1beta1().Workloads(h.ns).Create(context.Background(), wl, metav1.CreateOptions{})
			return err
		})
		h.workloads[name] = true
	}
}

// templates returns the templates of groups gs and, nested, of their children.
func templates(gs []group, children map[string][]group) ([]schedulingv1beta1.PodGroupTemplate, []schedulingv1beta1.CompositePodGroupTemplate) {
	var pgs []schedulingv1beta1.PodGroupTemplate
	var cpgs []schedulingv1beta1.CompositePodGroupTemplate
	for _, g := range gs {
		var topology []schedulingv1beta1.TopologyConstraint
		if g.key != "" {
			topology = []schedulingv1beta1.TopologyConstraint{{Key: g.key}}
		}
		if !g.composite {
			tpl := schedulingv1beta1.PodGroupTemplate{Name: g.name}
			if g.min > 0 {
				tpl.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: g.min}
			} else {
				tpl.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
			}
			if topology != nil {
				tpl.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: topology}
			}
			pgs = append(pgs, tpl)
			continue
		}
		tpl := schedulingv1beta1.CompositePodGroupTemplate{Name: g.name}
		if g.min > 0 {
			tpl.SchedulingPolicy.Gang = &schedulingv1beta1.CompositeGangSchedulingPolicy{MinGroupCount: g.min}
		} else {
			tpl.SchedulingPolicy.Basic = &schedulingv1beta1.CompositeBasicSchedulingPolicy{}
		}
		if topology != nil {
			tpl.SchedulingConstraints = &schedulingv1beta1.CompositePodGroupSchedulingConstraints{Topology: topology}
		}
		tpl.PodGroupTemplates, tpl.CompositePodGroupTemplates = templates(children[g.name], children)
		cpgs = append(cpgs, tpl)
	}
	return pgs, cpgs
}

func createGroups(gs ...group) step {
	return func(h *h) {
		for _, g := range gs {
			h.groups[g.name] = g
			h.order = append(h.order, g)
		}
		h.createWorkloads()
		for _, g := range gs {
			h.createGroup(g)
		}
	}
}

// setMinCount updates a native PodGroup's minCount (mutable upstream).
func setMinCount(name string, min int32) step {
	return func(h *h) { h.SetMinCount(h.t, h.ns, name, min) }
}

func deletePods(names ...string) step {
	return func(h *h) {
		for _, n := range names {
			if err := h.Client.CoreV1().Pods(h.ns).Delete(context.Background(), n, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				h.t.Fatal(err)
			}
		}
	}
}

// deletePodGroup deletes a native PodGroup, clearing its finalizers first (as upstream's
// step does: no controller here would), and waits until it is gone.
func deletePodGroup(name string) step {
	return func(h *h) {
		ctx := context.Background()
		pgs := h.Client.SchedulingV1beta1().PodGroups(h.ns)
		testenv.OnLatest(h.t, func() error {
			pg, err := pgs.Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(pg.Finalizers) == 0 {
				return err
			}
			pg.Finalizers = nil
			_, err = pgs.Update(ctx, pg, metav1.UpdateOptions{})
			return err
		})
		if err := pgs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			h.t.Fatal(err)
		}
		testenv.Eventually(h.t, 30*time.Second, "PodGroup "+name+" gone", func() (bool, string) {
			_, err := pgs.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}

func ungate(name string) step {
	return func(h *h) { h.Ungate(h.t, h.ns, name) }
}

// state is what the API says of a pod.
func (h *h) state(name string) (*v1.Pod, bool) {
	p, err := h.Client.CoreV1().Pods(h.ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return p, true
}

// unschedulable reports whether the scheduler refused (or holds, saying why) an unbound pod.
func unschedulable(p *v1.Pod) (bool, string) {
	if p.Spec.NodeName != "" {
		return false, "bound to " + p.Spec.NodeName
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return true, c.Message
		}
	}
	return false, "no Unschedulable condition"
}

// wait waits, as long as upstream waits for a pod (wait.ForeverTestTimeout) and a margin, until
// ok holds for every named pod.
func (h *h) wait(what string, names []string, ok func(p *v1.Pod, exists bool) (bool, string)) {
	h.t.Helper()
	h.waitUpTo(upstreamForever, what, names, ok)
}

// boundPods lists the namespace's bound pods and their nodes.
func (h *h) boundPods() string {
	list, err := h.Client.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			out = append(out, p.Name+" on "+p.Spec.NodeName)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// scheduled waits until the pods are bound (upstream's testutils.PodScheduled).
func scheduled(names ...string) step { return scheduledWithin(upstreamForever, names...) }

// unschedulablePods waits until the pods are unbound and the scheduler said why: on the pod
// (PodScheduled False, Unschedulable: a scheduling attempt refused it) or, for members it
// holds before any attempt (upstream: PreEnqueue, the queue's unschedulable pool), on their
// PodGroup (PodGroupInitiallyScheduled False).
func unschedulablePods(names ...string) step {
	return func(h *h) {
		h.wait("unschedulable", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists {
				return false, "gone"
			}
			if ok, msg := unschedulable(p); ok || p.Spec.NodeName != "" {
				return ok, msg
			}
			if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
				if c := h.GroupCondition(h.t, "PodGroup", h.ns, *sg.PodGroupName); c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonUnschedulable {
					return true, c.Message
				}
			}
			return false, "unbound, nothing said"
		})
	}
}

// waitingForGroup: held because their PodGroup (or an ancestor) does not exist (upstream: the
// queue's incompletePodGroupPods): unbound, and each told so by an event.
func waitingForGroup(names ...string) step {
	return func(h *h) {
		h.wait("waiting for their PodGroup", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists || p.Spec.NodeName != "" {
				return false, "gone or bound"
			}
			return h.toldItWaitsForItsGroup(p)
		})
	}
}

// toldItWaitsForItsGroup reports whether lockstep told the pod, by an event, that it waits for
// its PodGroup (or an ancestor) to be created.
func (h *h) toldItWaitsForItsGroup(p *v1.Pod) (bool, string) {
	list, err := h.Client.CoreV1().Events(h.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == p.Name && strings.Contains(ev.Message, "to be created") {
			return true, ""
		}
	}
	return false, "no event saying it waits for its PodGroup"
}

func removed(names ...string) step {
	return func(h *h) {
		h.wait("removed", names, func(p *v1.Pod, exists bool) (bool, string) {
			if exists {
				return false, fmt.Sprintf("still there (node %q, deleting %v)", p.Spec.NodeName, p.DeletionTimestamp != nil)
			}
			return true, ""
		})
	}
}

// oneGangOf waits until the pods of one of the gangs are all scheduled and those of the
// other all unschedulable, whichever gang it is.
func oneGangOf(a, b []string) step {
	return func(h *h) {
		testenv.Eventually(h.t, upstreamForever+processMargin, fmt.Sprintf("one of the gangs %v and %v scheduled whole, the other refused", a, b), func() (bool, string) {
			ab, ar, _ := h.boundAndRefused(a)
			bb, br, _ := h.boundAndRefused(b)
			ok := (ab == len(a) && br == len(b)) || (bb == len(b) && ar == len(a))
			return ok, fmt.Sprintf("first: %d bound, %d refused; second: %d bound, %d refused", ab, ar, bb, br)
		})
	}
}

// boundAndRefused counts the pods bound and those unbound that a scheduling attempt refused;
// gone is the first of them that does not exist ("" if all do).
func (h *h) boundAndRefused(names []string) (bound, refused int, gone string) {
	for _, name := range names {
		p, exists := h.state(name)
		switch {
		case !exists:
			if gone == "" {
				gone = name
			}
		case p.Spec.NodeName != "":
			bound++
		default:
			if ok, _ := unschedulable(p); ok {
				refused++
			}
		}
	}
	return bound, refused, gone
}

// anyScheduled waits for exactly n of the pods scheduled and the rest unschedulable, at once.
func anyScheduled(n int, names ...string) step {
	return func(h *h) {
		testenv.Eventually(h.t, upstreamForever+processMargin, fmt.Sprintf("%d of %v scheduled, the rest unschedulable", n, names), func() (bool, string) {
			bound, refused, gone := h.boundAndRefused(names)
			if gone != "" {
				return false, gone + " gone"
			}
			return bound == n && refused == len(names)-n, fmt.Sprintf("%d bound, %d refused", bound, refused)
		})
	}
}

// onNodes checks that the pods are bound, all on the given nodes.
func onNodes(pods []string, allowed ...string) step {
	return func(h *h) {
		for _, name := range pods {
			p, exists := h.state(name)
			if !exists || !slices.Contains(allowed, p.Spec.NodeName) {
				node := "gone"
				if exists {
					node = p.Spec.NodeName
				}
				h.t.Errorf("%s on %q, want one of %v", name, node, allowed)
			}
		}
	}
}

// oneDomain checks that the pods are bound in one domain of level key.
func oneDomain(key string, pods ...string) step {
	return func(h *h) {
		domains := map[string][]string{}
		for _, name := range pods {
			p, exists := h.state(name)
			if !exists || p.Spec.NodeName == "" {
				h.t.Errorf("%s not bound", name)
				continue
			}
			d := h.NodeDomain(h.t, p.Spec.NodeName, key)
			domains[d] = append(domains[d], name)
		}
		if len(domains) != 1 {
			h.t.Errorf("%v in %d domains of %s: %v", pods, len(domains), key, domains)
		}
	}
}

// groupCondition waits, as long as upstream waits for a pod, for a native PodGroup's
// PodGroupInitiallyScheduled condition of status and reason, its message containing substr.
func (h *h) groupCondition(name string, status metav1.ConditionStatus, reason, substr string) {
	h.t.Helper()
	testenv.Eventually(h.t, upstreamForever+processMargin, fmt.Sprintf("PodGroup %s %s/%s %q", name, status, reason, substr), func() (bool, string) {
		c := h.GroupCondition(h.t, "PodGroup", h.ns, name)
		if c == nil {
			return false, "no condition"
		}
		return c.Status == status && c.Reason == reason && strings.Contains(c.Message, substr), fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
	})
}

// groupCondition waits for a native PodGroup's PodGroupInitiallyScheduled condition.
func groupCondition(name string, status metav1.ConditionStatus, reason string) step {
	return func(h *h) {
		h.groupCondition(name, status, reason, "")
	}
}

// names returns prefix1..prefixN.
func names(prefix string, n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// noAttempts checks that held members were not tried after their PodGroup's minCount rose to
// min (upstream reads the queue's attempt count, 0): once the group says it waits for the new
// minimum (its condition names it: the one from before the update does not), the members are
// held, never tried.
func noAttempts(group string, min int32, pods ...string) step {
	return func(h *h) {
		h.groupCondition(group, metav1.ConditionFalse, v1alpha1.ReasonUnschedulable, fmt.Sprintf("waiting for pods: minCount is %d", min))
		heldUntried(pods...)(h)
	}
}

// heldUntried checks, once the scheduler is idle, that the pods are unbound and were never
// tried (upstream: held in its queue's buffers, no attempt): none carries a scheduling
// cycle's PodScheduled message ("0/N nodes are available: ...").
func heldUntried(pods ...string) step {
	return func(h *h) {
		h.WaitIdle(h.t)
		for _, name := range pods {
			p, exists := h.state(name)
			if !exists {
				h.t.Errorf("%s gone", name)
				continue
			}
			if _, msg := unschedulable(p); p.Spec.NodeName != "" || strings.HasPrefix(msg, "0/") {
				h.t.Errorf("%s: node %q, %q; want it held, never tried", name, p.Spec.NodeName, msg)
			}
		}
	}
}

// preemptedEvent waits for a Preempted event, whose message starts with prefix, on any of the
// victims.
func preemptedEvent(prefix string, victims ...string) step {
	return func(h *h) {
		testenv.Eventually(h.t, upstreamWait+processMargin, "a Preempted event on one of "+strings.Join(victims, ", "), func() (bool, string) {
			list, err := h.Client.CoreV1().Events(h.ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, ev := range list.Items {
				if ev.Reason == "Preempted" && slices.Contains(victims, ev.InvolvedObject.Name) {
					if strings.HasPrefix(ev.Message, prefix) {
						return true, ""
					}
					seen = append(seen, ev.Message)
				}
			}
			return false, fmt.Sprint(seen)
		})
	}
}

// gatedPods waits until the pods are held by their scheduling gates (PodScheduled False,
// SchedulingGated, as the scheduler writes it).
func gatedPods(names ...string) step {
	return func(h *h) {
		h.wait("gated", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists || p.Spec.NodeName != "" {
				return false, "gone or bound"
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonSchedulingGated {
					return true, ""
				}
			}
			return false, "not SchedulingGated"
		})
	}
}

// removedOneOf waits until one of the pods is removed, and checks that the others are not.
func removedOneOf(names ...string) step {
	return func(h *h) {
		var gone []string
		testenv.Eventually(h.t, upstreamForever+processMargin, fmt.Sprintf("one of %v removed", names), func() (bool, string) {
			gone = nil
			for _, n := range names {
				if _, exists := h.state(n); !exists {
					gone = append(gone, n)
				}
			}
			return len(gone) > 0, "none removed"
		})
		if len(gone) != 1 {
			h.t.Errorf("removed %v, want one of %v", gone, names)
		}
	}
}

// invalidGroups waits until the native PodGroups' condition says they are Invalid, with msg.
func invalidGroups(msg string, groups ...string) step {
	return func(h *h) {
		for _, g := range groups {
			h.groupCondition(g, metav1.ConditionFalse, v1alpha1.ReasonInvalid, msg)
		}
	}
}
