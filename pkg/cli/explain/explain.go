// Package explain answers `kubectl lockstep explain`: why a gang is pending, and what would
// make it fit, from its groups' conditions, the events about them and its pods, and the room
// the cluster's nodes have for its pending pods, counted from the API objects (see Room).
package explain

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// maxEvents bounds the events shown per group, newest first.
const maxEvents = 8

// Inputs are the objects an explanation is built from.
type Inputs struct {
	tree.Inputs
	// Events are the events (events.k8s.io/v1) of the groups' namespaces.
	Events []eventsv1.Event
	// Running are the pods bound to nodes, in every namespace; nil when they could not be
	// read (no room is counted then).
	Running []v1.Pod
	Now     time.Time
}

// Explanation is what explain says of one group of a tree.
type Explanation struct {
	// Group is the group's line of the tree view.
	Group string `json:"group"`
	// In is the root of its tree, when it is not the root itself.
	In         string      `json:"in,omitempty"`
	Placed     bool        `json:"placed"`
	Conditions []Condition `json:"conditions,omitempty"`
	// PodSays is what a pending member's PodScheduled condition says (all members are told
	// the same words).
	PodSays string  `json:"podSays,omitempty"`
	Events  []Event `json:"events,omitempty"`
	Room    *Room   `json:"room,omitempty"`
	// Next says what would make the group fit, most direct first.
	Next []string `json:"next,omitempty"`
}

// Condition is one of a group's conditions, with when it last changed.
type Condition struct {
	Type    string      `json:"type"`
	Status  string      `json:"status"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Since   metav1.Time `json:"since"`
}

// Event is an event about a group or one of its pods.
type Event struct {
	Time      metav1.Time `json:"time"`
	Type      string      `json:"type"`
	Reason    string      `json:"reason"`
	Regarding string      `json:"regarding"`
	Note      string      `json:"note"`
	Count     int32       `json:"count,omitempty"`
}

// Explain explains the trees that hold what refs name: every group of them that is not
// placed, or the root alone when all are.
func Explain(in Inputs, refs []tree.Ref) []Explanation {
	x := newExplainer(in, refs)
	var out []Explanation
	for _, root := range tree.Filter(tree.Build(in.Inputs), refs) {
		before := len(out)
		var walk func(g *tree.Group, ancestors []*tree.Group)
		walk = func(g *tree.Group, ancestors []*tree.Group) {
			if !placed(g) {
				out = append(out, x.explain(g, root, ancestors))
			}
			for _, c := range g.Children {
				walk(c, append(ancestors, g))
			}
		}
		walk(root, nil)
		if len(out) == before {
			out = append(out, x.explain(root, root, nil))
		}
	}
	return out
}

// placed: the group's requirement is met and not undone by a preemption since.
func placed(g *tree.Group) bool {
	return g.Problem == "" && g.Condition != nil && g.Condition.Status == string(metav1.ConditionTrue)
}

type explainer struct {
	in         Inputs
	conditions map[podgroup.Key][]metav1.Condition
	pods       map[string]*v1.Pod // namespace/name
	nodes      map[string]*v1.Node
	asked      map[string]bool // pods named in refs
}

func newExplainer(in Inputs, refs []tree.Ref) *explainer {
	x := &explainer{in: in, conditions: map[podgroup.Key][]metav1.Condition{}, pods: map[string]*v1.Pod{},
		nodes: map[string]*v1.Node{}, asked: map[string]bool{}}
	for i := range in.PodGroups {
		pg := &in.PodGroups[i]
		k, _ := podgroup.KeyOfObject(pg)
		x.conditions[k] = pg.Status.Conditions
	}
	for i := range in.Composites {
		c := &in.Composites[i]
		k, _ := podgroup.KeyOfObject(c)
		x.conditions[k] = c.Status.Conditions
	}
	for i := range in.Pods {
		x.pods[in.Pods[i].Namespace+"/"+in.Pods[i].Name] = &in.Pods[i]
	}
	for i := range in.Nodes {
		x.nodes[in.Nodes[i].Name] = &in.Nodes[i]
	}
	for _, r := range refs {
		if r.Kind == "Pod" {
			x.asked[r.Name] = true
		}
	}
	return x
}

func (x *explainer) explain(g, root *tree.Group, ancestors []*tree.Group) Explanation {
	e := Explanation{Group: tree.Header(g), Placed: placed(g)}
	if g != root {
		e.In = fmt.Sprintf("%s %s/%s", root.Kind, root.Namespace, root.Name)
	}
	key := keyOf(g)
	for _, c := range x.conditions[key] {
		if c.Type == v1alpha1.PodGroupInitiallyScheduled || c.Type == v1alpha1.DisruptionTarget || c.Type == v1alpha1.Short {
			e.Conditions = append(e.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime})
		}
	}
	var pending []*v1.Pod
	names := map[string]bool{g.Name: true}
	for _, m := range g.Members {
		p := x.pods[g.Namespace+"/"+m.Name]
		if p == nil || p.DeletionTimestamp != nil || p.Spec.NodeName != "" || p.Status.Phase != v1.PodPending {
			continue
		}
		pending = append(pending, p)
		if x.asked[p.Name] {
			names[p.Name] = true
		}
		if says := podScheduledMessage(p); says != "" && (e.PodSays == "" || x.asked[p.Name]) {
			e.PodSays = p.Name + ": " + says
		}
	}
	e.Events = x.events(g.Namespace, names)
	if e.Placed && len(pending) == 0 {
		return e
	}
	level, pinned := x.level(g, ancestors)
	need := 0
	if g.Pods != nil {
		need = min(len(pending), max(0, int(g.Min)-g.Pods.Bound))
		if g.Policy != "gang" || e.Placed {
			need = min(len(pending), 1) // its pods are placed one by one
		}
	}
	if len(pending) > 0 && x.in.Running != nil && need > 0 && triable(g) {
		e.Room = roomFor(pending, need, x.in.Levels, level, pinned, x.in.Nodes, x.in.Running)
	}
	e.Next = x.next(g, e, pending)
	return e
}

// triable: the group is tried when its pods come (it is valid and has its minimum of pods),
// so room is what may hold it.
func triable(g *tree.Group) bool {
	if g.Problem != "" || g.Condition != nil && g.Condition.Reason == v1alpha1.ReasonInvalid {
		return false
	}
	return g.Policy != "gang" || g.Pods == nil || g.Pods.Exist >= int(g.Min)
}

func keyOf(g *tree.Group) podgroup.Key {
	return podgroup.Key{Kind: podgroup.Kind(g.Kind), Namespace: g.Namespace, Name: g.Name, API: podgroup.API(g.API)}
}

// level is the node label key of the domain the group's pods must share (the group's own
// Required constraint, else its nearest ancestor's; "" for none), and the domain its bound
// pods already occupy at that level, if any.
func (x *explainer) level(g *tree.Group, ancestors []*tree.Group) (string, []string) {
	level := required(g)
	for i := len(ancestors) - 1; level == "" && i >= 0; i-- {
		level = required(ancestors[i])
	}
	if level == "" {
		return "", nil
	}
	for _, m := range g.Members {
		if n := x.nodes[m.Node]; n != nil {
			if path := domainPath(n, x.in.Levels, level); path != nil {
				return level, path
			}
		}
	}
	return level, nil
}

// required is the key of a group's Required topology constraint ("" for none).
func required(g *tree.Group) string {
	for _, t := range g.Topology {
		if strings.HasPrefix(t, "~") {
			continue
		}
		key, _, _ := strings.Cut(t, "#")
		return key
	}
	return ""
}

func podScheduledMessage(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return c.Message
		}
	}
	return ""
}

// events are the newest events of the namespace about the named objects.
func (x *explainer) events(ns string, names map[string]bool) []Event {
	var out []Event
	for i := range x.in.Events {
		ev := &x.in.Events[i]
		if ev.Regarding.Namespace != ns || !names[ev.Regarding.Name] {
			continue
		}
		e := Event{Time: eventTime(ev), Type: ev.Type, Reason: ev.Reason, Regarding: ev.Regarding.Kind + " " + ev.Regarding.Name, Note: ev.Note}
		if ev.Series != nil {
			e.Count = ev.Series.Count
		} else if ev.DeprecatedCount > 1 {
			e.Count = ev.DeprecatedCount
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time.Time) })
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out
}

// eventTime is when an event was last seen.
func eventTime(ev *eventsv1.Event) metav1.Time {
	switch {
	case ev.Series != nil:
		return metav1.NewTime(ev.Series.LastObservedTime.Time)
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp
	case !ev.EventTime.IsZero():
		return metav1.NewTime(ev.EventTime.Time)
	}
	return ev.CreationTimestamp
}
