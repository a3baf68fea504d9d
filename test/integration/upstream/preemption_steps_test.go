package upstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	lt "github.com/lockstep-sched/lockstep/pkg/testing"
	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// The steps of upstream's preemption tests (podgrouppreemption_test.go, preemption_test.go).

// waitUpTo waits, as long as upstream waits (d) and processMargin, until ok holds for every
// named pod.
func (h *h) waitUpTo(d time.Duration, what string, names []string, ok func(p *v1.Pod, exists bool) (bool, string)) {
	h.t.Helper()
	testenv.Eventually(h.t, d+processMargin, fmt.Sprintf("%v %s", names, what), func() (bool, string) {
		var bad []string
		for _, n := range names {
			p, exists := h.state(n)
			if good, why := ok(p, exists); !good {
				bad = append(bad, n+": "+why)
			}
		}
		if len(bad) > 0 {
			bad = append(bad, "bound in the namespace: "+h.boundPods())
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	})
}

// scheduledWithin is upstream's testutils.PodScheduled: the pods bound, within d.
func scheduledWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		h.waitUpTo(d, "scheduled", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists {
				return false, "gone"
			}
			if p.Spec.NodeName == "" {
				_, why := unschedulable(p)
				return false, "unbound (" + why + ")"
			}
			return true, ""
		})
	}
}

// refusedWithin is upstream's testutils.PodUnschedulable: unbound, with PodScheduled False,
// reason Unschedulable on the pod itself, within d. (The harness's unschedulablePods also
// takes a held member's PodGroup condition for it; upstream's preemption tests do not.)
func refusedWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		h.waitUpTo(d, "unschedulable", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists {
				return false, "gone"
			}
			return unschedulable(p)
		})
	}
}

// hasDisruptionTarget reports whether a pod carries the DisruptionTarget condition (any
// status), which upstream's preemption executor writes on a victim before deleting it.
func hasDisruptionTarget(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return true
		}
	}
	return false
}

// preemptedWithin is podgrouppreemption_test.go's check of a victim: gone, being deleted, or
// marked DisruptionTarget, within d.
func preemptedWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		h.waitUpTo(d, "preempted", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists || p.DeletionTimestamp != nil || hasDisruptionTarget(p) {
				return true, ""
			}
			return false, "still running on " + p.Spec.NodeName
		})
	}
}

// deletingWithin is upstream's testutils.PodIsGettingEvicted: the pod still there with a
// deletionTimestamp, within d. Its graceful deletion never ends: no kubelet runs, here as
// upstream (a pod gone fails, as upstream's Get does).
func deletingWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		h.waitUpTo(d, "being deleted", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists {
				return false, "gone (upstream's check reads the pod)"
			}
			return p.DeletionTimestamp != nil, "no deletionTimestamp"
		})
	}
}

// disruptionTargeted checks at once, as upstream does after deletingWithin, that the pods
// carry the DisruptionTarget condition.
func disruptionTargeted(names ...string) step {
	return func(h *h) {
		for _, n := range names {
			if p, exists := h.state(n); !exists || !hasDisruptionTarget(p) {
				h.t.Errorf("%s: no DisruptionTarget condition (exists %v)", n, exists)
			}
		}
	}
}

// notDeleting checks at once, as upstream does, that the pods are there and not being
// deleted.
func notDeleting(names ...string) step {
	return func(h *h) {
		for _, n := range names {
			p, exists := h.state(n)
			switch {
			case !exists:
				h.t.Errorf("%s was unexpectedly preempted: gone", n)
			case p.DeletionTimestamp != nil:
				h.t.Errorf("%s was unexpectedly preempted: being deleted", n)
			}
		}
	}
}

// goneWithin waits, up to d, until the pods no longer exist.
func goneWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		h.waitUpTo(d, "gone", names, func(p *v1.Pod, exists bool) (bool, string) {
			if exists {
				return false, "still there"
			}
			return true, ""
		})
	}
}

// heldWithin is upstream's isPodInUnschedulableQueue (the queue's unschedulable pool or its
// incompletePodGroupPods), read from the API: unbound, and either refused by an attempt
// (PodScheduled False, Unschedulable) or told by an event that its PodGroup does not exist.
func heldWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		h.waitUpTo(d, "held", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists || p.Spec.NodeName != "" {
				return false, "gone or bound"
			}
			if ok, _ := unschedulable(p); ok {
				return true, ""
			}
			if ok, _ := h.toldItWaitsForItsGroup(p); ok {
				return true, ""
			}
			return false, "neither refused nor waiting for its PodGroup"
		})
	}
}

// Prefixes of a victim's Preempted event. Upstream's say "Preempted by podgroup" (or
// "compositepodgroup") for a group's preemption and "Preempted by pod" for a pod's;
// lockstep's executor names its gang preemptor "gang <Kind>.scheduling.k8s.io ns/name" and
// a pod "pod" (as TestWorkloadAwarePreemptionInvocation reads them).
var (
	byGroup      = []string{"Preempted by gang "}
	byPod        = []string{"Preempted by pod "}
	byGroupOrPod = []string{"Preempted by gang ", "Preempted by pod "}
)

// Why cases whose victims' events name a pod, not its group, differ.
const (
	basicByPod = "a basic group's members preempt one by one, as plain pods do (a basic group is no gang: each member is placed, and " +
		"preempts, on its own): the victims are upstream's, each one's Preempted event names the pod that took its room (upstream: the group)"
	joinerByPod = "a member joining a gang that runs whole preempts alone, as a plain pod does (its gang needs no other member placed with " +
		"it): the victim is upstream's, its Preempted event names the pod (upstream: the group); the joiners are tried in the queue's order, " +
		"so one's preemption may come before the other's bind (upstream tries the group in one cycle: it binds what fits, then preempts): " +
		"the same pods bound, the same victim, in either order"
)

// eachPreemptedBy is upstream's count of "WorkloadAwarePreemption" calls: each of the
// victims has a Preempted event whose message starts with one of prefixes, within d
// (upstream counts the listed victims that have one and wants all of them).
func eachPreemptedBy(d time.Duration, prefixes []string, victims ...string) step {
	return func(h *h) {
		testenv.Eventually(h.t, d+processMargin, fmt.Sprintf("a Preempted event %q on each of %v", prefixes, victims), func() (bool, string) {
			list, err := h.Client.CoreV1().Events(h.ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			var missing, seen []string
			for _, v := range victims {
				found := false
				for _, ev := range list.Items {
					if ev.Reason != "Preempted" || ev.InvolvedObject.Name != v {
						continue
					}
					for _, p := range prefixes {
						found = found || strings.HasPrefix(ev.Message, p)
					}
					seen = append(seen, v+": "+ev.Message)
				}
				if !found {
					missing = append(missing, v)
				}
			}
			return len(missing) == 0, fmt.Sprintf("missing on %v; Preempted events seen: %v", missing, seen)
		})
	}
}

// podWatch is what watchPods records of a case's pods, in the apiserver's order of writes.
type podWatch struct {
	mu                              sync.Mutex
	seen, bound, preempted, nominee map[string]bool
	// journal is upstream's eventRecorder, read from the API: "Bind:<pod>" when a pod the
	// watch saw unbound is bound, "Preempted:<pod>" when a bound pod is first marked
	// DisruptionTarget, being deleted, or gone.
	journal []string
}

var podWatches sync.Map // namespace -> *podWatch

// watchPods follows every write to the case's pods until it ends (testenv.FollowPods): the
// binds and preemptions in order (upstream's mock Bind and PodGroupPostFilter plugins record
// them in the scheduler) and the pods nominated before being bound (upstream's mock Bind
// plugin reads the pod's nominatedNodeName). It must be a case's first step: the namespace
// has no pods yet.
func watchPods() step {
	return func(h *h) {
		w := &podWatch{seen: map[string]bool{}, bound: map[string]bool{}, preempted: map[string]bool{}, nominee: map[string]bool{}}
		podWatches.Store(h.ns, w)
		h.FollowPods(h.t, h.ns, w.see)
	}
}

func (w *podWatch) see(p *v1.Pod, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := p.Name
	if !w.preempted[name] && w.bound[name] && (deleted || p.DeletionTimestamp != nil || hasDisruptionTarget(p)) {
		w.preempted[name] = true
		w.journal = append(w.journal, "Preempted:"+name)
	}
	if !deleted && p.Spec.NodeName != "" && !w.bound[name] {
		if w.seen[name] { // a pod created bound is no bind of the scheduler's
			w.journal = append(w.journal, "Bind:"+name)
		}
		w.bound[name] = true
	}
	if !deleted && p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" {
		w.nominee[name] = true
	}
	w.seen[name] = true
}

func (h *h) podWatch() *podWatch {
	w, ok := podWatches.Load(h.ns)
	if !ok {
		h.t.Fatal("no pod watch: watchPods must be the case's first step")
	}
	return w.(*podWatch)
}

// clearJournal is upstream's recorder.Clear() once the initial pods are scheduled: it waits
// until the watch has seen every pod bound now bound (it lags the API a little), then forgets
// what it recorded.
func clearJournal() step {
	return func(h *h) {
		w := h.podWatch()
		testenv.Eventually(h.t, processMargin, "the pod watch seeing the binds so far", func() (bool, string) {
			list, err := h.Client.CoreV1().Pods(h.ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, p := range list.Items {
				if p.Spec.NodeName != "" && !w.bound[p.Name] {
					return false, p.Name + " not seen bound yet"
				}
			}
			return true, ""
		})
		w.mu.Lock()
		w.journal = nil
		w.mu.Unlock()
	}
}

// journalHolds is upstream's expectedEventOrder where lockstep's order differs (the case says
// why): the binds and preemptions since clearJournal are want, in any order (upstream compares
// once, at the end; the margin is the watch's lag).
func journalHolds(want ...string) step {
	return func(h *h) {
		w := h.podWatch()
		testenv.Eventually(h.t, processMargin, fmt.Sprintf("binds and preemptions %v, in any order", want), func() (bool, string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			got := slices.Sorted(slices.Values(w.journal))
			return slices.Equal(got, slices.Sorted(slices.Values(want))), fmt.Sprint(w.journal)
		})
	}
}

// nominatedBeforeBind is upstream's expectedToHaveNNNInfo (its mock Bind plugin records a
// pod's nominatedNodeName when binding it): the watch saw each pod unbound with a
// nominatedNodeName. Upstream checks at once; the margin is the watch's lag.
func nominatedBeforeBind(names ...string) step {
	return func(h *h) {
		w := h.podWatch()
		testenv.Eventually(h.t, processMargin, fmt.Sprintf("%v nominated before being bound", names), func() (bool, string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			var not []string
			for _, n := range names {
				if !w.nominee[n] {
					not = append(not, n)
				}
			}
			return len(not) == 0, fmt.Sprintf("never seen nominated: %v", not)
		})
	}
}

// nominatesScoutOnly is why the cases that read several preemptors' nominations differ.
const nominatesScoutOnly = "lockstep writes the nominated node on the member whose preemption it was (the gang's scout) only: " +
	"the other members' nominations are held in the scheduler's memory, where its queue and Filter read them, and the preemption's plan " +
	"holds their room; one write per preemption instead of one per member (upstream nominates every member in the API). The case checks " +
	"that one of them was nominated before being bound, and everything else as upstream"

// scoutNominatedBeforeBind is nominatedBeforeBind for lockstep's nominations (nominatesScoutOnly):
// the watch saw one of the pods unbound with a nominatedNodeName.
func scoutNominatedBeforeBind(names ...string) step {
	return func(h *h) {
		w := h.podWatch()
		testenv.Eventually(h.t, processMargin, fmt.Sprintf("one of %v nominated before being bound", names), func() (bool, string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, n := range names {
				if w.nominee[n] {
					return true, ""
				}
			}
			return false, "none seen nominated"
		})
	}
}

// nominations are the nominatedNodeNames nominatedWithin read, by namespace/pod: upstream's
// initialNNNs.
var nominations sync.Map

// nominatedWithin is upstream's wait for status.nominatedNodeName (WaitForNominatedNodeName,
// or TestPodGroupPreemption_NominatedNodeNameRespected's poll): set on each pod, within d.
// The values read are kept for notNominatedTo and nominationsKept.
func nominatedWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		h.waitUpTo(d, "nominated", names, func(p *v1.Pod, exists bool) (bool, string) {
			if !exists || p.Status.NominatedNodeName == "" {
				return false, "no nominatedNodeName"
			}
			nominations.Store(h.ns+"/"+p.Name, p.Status.NominatedNodeName)
			return true, ""
		})
	}
}

// scoutNominatedWithin is nominatedWithin for lockstep's nominations (nominatesScoutOnly): one
// of the pods nominated within d; the nominations of all of them are read as they are then
// ("" for a member nominated in the scheduler's memory only).
func scoutNominatedWithin(d time.Duration, names ...string) step {
	return func(h *h) {
		testenv.Eventually(h.t, d+processMargin, fmt.Sprintf("one of %v nominated", names), func() (bool, string) {
			seen := false
			for _, n := range names {
				p, exists := h.state(n)
				if !exists {
					return false, n + " gone"
				}
				seen = seen || p.Status.NominatedNodeName != ""
				nominations.Store(h.ns+"/"+n, p.Status.NominatedNodeName)
			}
			return seen, "none nominated"
		})
	}
}

func (h *h) nomination(name string) string {
	v, _ := nominations.Load(h.ns + "/" + name)
	s, _ := v.(string)
	return s
}

// notNominatedTo checks that the nominations nominatedWithin read are not node.
func notNominatedTo(node string, names ...string) step {
	return func(h *h) {
		for _, n := range names {
			if got := h.nomination(n); got == node {
				h.t.Errorf("%s nominated to %s, want another node", n, got)
			}
		}
	}
}

// check is one fact onceIdle reads: "" while it holds, else what broke it.
type check func(h *h) string

// onceIdle reads the checks once the scheduler is idle (upstream polls them for a few seconds
// and wants none to break): what would break them has had its turn.
func onceIdle(checks ...check) step {
	return func(h *h) {
		h.WaitIdle(h.t)
		for _, c := range checks {
			if broke := c(h); broke != "" {
				h.t.Fatal(broke)
			}
		}
	}
}

// present: the pods exist (a terminating pod does).
func present(names ...string) check {
	return func(h *h) string {
		for _, n := range names {
			if _, exists := h.state(n); !exists {
				return n + " got removed"
			}
		}
		return ""
	}
}

// notBoundTo: none of the pods is bound to node.
func notBoundTo(node string, names ...string) check {
	return func(h *h) string {
		for _, n := range names {
			if p, exists := h.state(n); exists && p.Spec.NodeName == node {
				return n + " was incorrectly scheduled to " + node
			}
		}
		return ""
	}
}

// nominationsKept: each pod's nominatedNodeName is still the one nominatedWithin read.
func nominationsKept(names ...string) check {
	return func(h *h) string {
		for _, n := range names {
			p, exists := h.state(n)
			if !exists {
				return n + " gone"
			}
			if want := h.nomination(n); p.Status.NominatedNodeName != want {
				return fmt.Sprintf("%s nominatedNodeName changed from %q to %q (node %q)", n, want, p.Status.NominatedNodeName, p.Spec.NodeName)
			}
		}
		return ""
	}
}

// groupSaysWithin waits, up to d, for a native PodGroup's PodGroupInitiallyScheduled
// condition of status and reason whose message contains every one of parts (upstream's
// TestPodGroupPreemptionStatus reads it so; the harness's groupCondition takes one part and
// a minute).
func groupSaysWithin(d time.Duration, name string, status metav1.ConditionStatus, reason string, parts ...string) step {
	return func(h *h) {
		testenv.Eventually(h.t, d+processMargin, fmt.Sprintf("PodGroup %s condition %s/%s saying %q", name, status, reason, parts), func() (bool, string) {
			c := h.GroupCondition(h.t, "PodGroup", h.ns, name)
			if c == nil {
				return false, "no condition"
			}
			ok := c.Status == status && c.Reason == reason
			for _, p := range parts {
				ok = ok && strings.Contains(c.Message, p)
			}
			return ok, fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message)
		})
	}
}

// pdb creates upstream's PodDisruptionBudget: minAvailable of the pods labeled app. No
// disruption controller runs (nor upstream), so its status allows no disruption and every
// pod it selects is a violation to avoid.
func pdb(name string, minAvailable int32, app string) step {
	return func(h *h) {
		b := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
		if _, err := h.Client.PolicyV1().PodDisruptionBudgets(h.ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
}

// neverClassName is the PriorityClass of value p with preemptionPolicy Never.
func neverClassName(p int32) string { return fmt.Sprintf("prio-%d-never", p) }

// neverClass creates neverClassName(p) once: a pod that says preemptionPolicy Never names it
// (the Priority admission refuses a pod whose policy differs from its class's; upstream's
// apiserver runs without it and its pods set the field).
func neverClass(p int32) step {
	return func(h *h) {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: neverClassName(p)}, Value: p, PreemptionPolicy: ptr.To(v1.PreemptNever)}
		if _, err := h.Client.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			h.t.Fatal(err)
		}
	}
}

// deleteCompositePodGroup is upstream's deleteCompositePodGroups for one: its finalizers
// cleared, deleted, and gone within upstream's 10 s.
func deleteCompositePodGroup(name string) step {
	return func(h *h) {
		ctx := context.Background()
		cpgs := h.Client.SchedulingV1alpha3().CompositePodGroups(h.ns)
		if _, err := cpgs.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			h.t.Fatal(err)
		}
		if err := cpgs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			h.t.Fatal(err)
		}
		testenv.Eventually(h.t, upstreamWait+processMargin, "CompositePodGroup "+name+" gone", func() (bool, string) {
			_, err := cpgs.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}

// seq is the steps as one, in order: the setup several cases of a table share.
func seq(steps ...step) step {
	return func(h *h) {
		for _, s := range steps {
			s(h)
		}
	}
}

// mutated adds f to what the pod's mutate does.
func mutated(p pod, f func(*v1.Pod)) pod {
	prev := p.mutate
	p.mutate = func(o *v1.Pod) {
		if prev != nil {
			prev(o)
		}
		f(o)
	}
	return p
}

// labeled adds the label k=v.
func labeled(p pod, k, v string) pod {
	return mutated(p, func(o *v1.Pod) {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		o.Labels[k] = v
	})
}

// selecting adds the node selector k=v.
func selecting(p pod, k, v string) pod {
	return mutated(p, func(o *v1.Pod) {
		if o.Spec.NodeSelector == nil {
			o.Spec.NodeSelector = map[string]string{}
		}
		o.Spec.NodeSelector[k] = v
	})
}

// never makes the pod's preemptionPolicy Never, through its PriorityClass (neverClass of its
// priority must exist).
func never(p pod) pod {
	return mutated(p, func(o *v1.Pod) { o.Spec.PriorityClassName = neverClassName(p.priority) })
}

// hostPort gives the pod's container the host port port (upstream's ContainerPort with
// HostPort: a container of its own there; one container holds both here).
func hostPort(p pod, port int32) pod {
	return mutated(p, func(o *v1.Pod) {
		o.Spec.Containers[0].Ports = append(o.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port})
	})
}

// antiAffinityToApp is upstream's PodAntiAffinityExists("app", hostname, required): no pod
// with an app label on the pod's node.
func antiAffinityToApp(p pod) pod {
	return mutated(p, func(o *v1.Pod) {
		o.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			TopologyKey:   lt.HostKey,
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}}}}
	})
}

// spreadFooOnHosts is upstream's topology spread constraint: app=foo pods spread over hosts,
// maxSkew 2, DoNotSchedule, minDomains 10 (more than there are nodes: the global minimum is
// 0, so no host may hold more than 2).
func spreadFooOnHosts(p pod) pod {
	return mutated(p, func(o *v1.Pod) {
		o.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
			MaxSkew: 2, TopologyKey: lt.HostKey, WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "foo"}},
			MinDomains:    ptr.To[int32](10)}}
	})
}

// podLevel moves the pod's request to the pod level (upstream's PodLevelResourceRequests,
// its containers requesting nothing).
func podLevel(p pod) pod {
	return mutated(p, func(o *v1.Pod) {
		o.Spec.Resources = &v1.ResourceRequirements{Requests: o.Spec.Containers[0].Resources.Requests}
		o.Spec.Containers[0].Resources = v1.ResourceRequirements{}
	})
}

// withMemory adds a memory request (preemption_test.go's pods ask bytes of it).
func withMemory(p pod, memory string) pod {
	return mutated(p, func(o *v1.Pod) {
		if o.Spec.Containers[0].Resources.Requests == nil {
			o.Spec.Containers[0].Resources.Requests = v1.ResourceList{}
		}
		o.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse(memory)
	})
}

// sizedNode is preemption_test.go's node: cpu, memory (bytes), 32 pods, labeled node=<name>.
func sizedNode(name, cpu, memory string) *v1.Node {
	return lt.MakeNode(name, cpu).Capacity(map[v1.ResourceName]string{v1.ResourceCPU: cpu, v1.ResourceMemory: memory}).Label("node", name).Obj()
}
