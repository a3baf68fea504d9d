package explain

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/lockstep-sched/lockstep/pkg/apis/scheduling/v1alpha1"
	"github.com/lockstep-sched/lockstep/pkg/cli/tree"
)

// next says what would make a group fit, from its state and the room counted for it.
func (x *explainer) next(g *tree.Group, e Explanation, pending []*v1.Pod) []string {
	reason := ""
	if g.Condition != nil {
		reason = g.Condition.Reason
	}
	switch {
	case g.Problem != "":
		return []string{"Fix the group: " + g.Problem + "."}
	case reason == v1alpha1.ReasonInvalid:
		return []string{"Fix the group as its condition says; it is never tried as written."}
	case g.Kind == "PodGroup" && g.Policy == "gang" && g.Pods != nil && g.Pods.Exist < int(g.Min):
		who := "the controller that creates its pods"
		if g.Owner != nil && g.Owner.Kind != g.Kind {
			who = fmt.Sprintf("%s %s (its events, quota, admission webhooks, suspension)", g.Owner.Kind, g.Owner.Name)
		}
		return []string{fmt.Sprintf("It waits for its pods: %d of minCount %d exist. Check %s, or lower minCount.", g.Pods.Exist, g.Min, who)}
	case reason == v1alpha1.ReasonPreempting:
		return []string{"Wait: lower-priority pods are being evicted for it; it binds once they are gone."}
	case reason == v1alpha1.ReasonReserving:
		return []string{"Wait: a domain is held for it (its condition says which and how much is free); it binds when enough of the pods there end, and no pod of its priority or lower lands there meanwhile."}
	case reason == v1alpha1.ReasonPartiallyBound:
		return []string{"The pods that failed to bind are retried alone; their events say why (an admission webhook, a node gone)."}
	case g.Kind == "CompositePodGroup":
		return []string{"See its child groups below: it is placed when enough of them are."}
	case len(pending) == 0:
		return nil
	case x.in.Running == nil:
		return []string{"Room was not counted: listing the pods of every namespace is not allowed to you."}
	}
	r := e.Room
	if r == nil {
		return nil
	}
	best := r.Roomiest()
	lvl := levelName(r.Level)
	where := "the cluster"
	if best != nil && r.Level != "" {
		where = fmt.Sprintf("%s %s", lvl, best.title())
	}
	switch {
	case best == nil && r.Level != "":
		return []string{fmt.Sprintf("No node carries the label %s: label the nodes with their %s, or change the group's topology constraint.", r.Level, lvl)}
	case best == nil:
		return []string{"The cluster has no nodes its pods may use."}
	case best.Fits >= r.Need:
		return []string{fmt.Sprintf("By requests, taints and node affinity the room is there (%s takes %d of the %d that must fit): another filter refuses it (pod affinity, topology spread, volumes, DRA; the pods' events say which), or it was freed since the last attempt and the gang is retried when the cluster changes.",
			where, best.Fits, r.Need)}
	}
	var out []string
	missing := r.Need - best.Fits
	fix := fmt.Sprintf("Room for %s more, %s each, in %s: end or move pods there", count(missing, "pod"), describe(r.Request, nil), where)
	if best.Lower > 0 {
		fix += fmt.Sprintf(" (%s of lower priority run there: a higher priority for the gang lets it preempt them)", count(best.Lower, "pod"))
	}
	if r.Level != "" {
		fix += fmt.Sprintf(", or add nodes labelled %s=%s", r.Level, best.Name)
	} else {
		fix += ", or add nodes"
	}
	out = append(out, fix+".")
	if bound := g.Pods.Bound; g.Policy == "gang" && best.Fits > 0 && bound+best.Fits < int(g.Min) {
		out = append(out, fmt.Sprintf("Or a minCount of %d: what the roomiest %s takes.", bound+best.Fits, lvl))
	}
	if r.Level != "" && !r.Pinned {
		anywhere := roomFor(pending, r.Need, x.in.Levels, "", nil, x.in.Nodes, x.in.Running)
		if b := anywhere.Roomiest(); b != nil && b.Fits >= r.Need {
			out = append(out, fmt.Sprintf("Or a Preferred (not Required) %s constraint: the cluster as a whole has room for all %d.", lvl, r.Need))
		}
	}
	if best.Fits == 0 {
		out = append(out, fmt.Sprintf("No node the pods may use can take even one of them: compare %s with the nodes' allocatable.", describe(r.Request, nil)))
	}
	return out
}

// count counts things in words: "1 pod", "3 pods".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// levelName is what a level is called: "rack" for topology.kubernetes.io/rack, "cluster" for
// no level.
func levelName(key string) string {
	if key == "" {
		return "cluster"
	}
	return tree.Short(key)
}
