package explain

import (
	"fmt"
	"sort"
	"strings"

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
	case g.Missing:
		return []string{fmt.Sprintf("Create PodGroup %s in namespace %s (its pods wait for it and are never scheduled alone), or take the label %s off the pods' template.",
			g.Name, g.Namespace, v1alpha1.PodGroupLabel)}
	case g.Problem != "" && g.Parent != "":
		return parentFix(g)
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
		return []string{"The pods that failed to bind are retried alone; their events say why (an admission webhook, a node gone). Still short when its Short condition says, the gang is released whole and placed again."}
	case reason == v1alpha1.ReasonMemberLost:
		return []string{"Its lost members' replacements are placed in the gang's domain if they fit there (they may preempt lower-priority pods there); still short when its Short condition says, the gang is released whole and placed again elsewhere. Make room in its domain, or delete its pods to have it placed whole again now."}
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
	if len(r.Absent) > 0 {
		return []string{fmt.Sprintf("No node of the cluster has any %s (none of its %s lists it in its allocatable): check the resource's name for a typo, and that the device plugin that advertises it runs on the nodes that have the devices.",
			strings.Join(r.Absent, " or "), count(len(x.in.Nodes), "node"))}
	}
	if r.Usable() == 0 && len(r.Refused) > 0 {
		return refusedEverywhere(r, pending)
	}
	best := r.Roomiest()
	lvl := levelName(r.Level)
	where := "the cluster"
	if best != nil && r.Level != "" {
		where = fmt.Sprintf("%s %s", lvl, best.title())
	}
	switch {
	case best == nil && r.Level != "":
		return []string{fmt.Sprintf("No node the pods may use carries the label %s: label the nodes with their %s, or change the group's topology constraint.", r.Level, lvl)}
	case best == nil:
		return []string{"The cluster has no nodes its pods may use."}
	case r.Short != "":
		// Neither ending pods nor adding nodes like these would help.
		return []string{fmt.Sprintf("No node the pods may use can take even one of them with nothing else on it: they ask for %s. Ask for less per pod, or add nodes with more%s.",
			r.Short, matching(pending))}
	case best.Fits >= r.Need:
		other := "another filter refuses it (pod affinity, topology spread, volumes, DRA; the pods' events say which)"
		if len(r.Unchecked) > 0 {
			other = fmt.Sprintf("a filter not run here refuses it (the pods use %s; their events say which)", strings.Join(r.Unchecked, ", "))
		}
		return []string{fmt.Sprintf("By requests, taints and node affinity the room is there (%s takes %d of the %d that must fit): %s, or it was freed since the last attempt and the gang is retried when the cluster changes.",
			where, best.Fits, r.Need, other)}
	}
	var out []string
	missing := r.Need - best.Fits
	fix := fmt.Sprintf("Room for %s more, %s each, in %s: ", count(missing, "pod"), describe(r.Request, nil), where)
	if best.Running > 0 {
		verb := "run"
		if best.Running == 1 {
			verb = "runs"
		}
		fix += fmt.Sprintf("end or move pods there (%s %s there", count(best.Running, "pod"), verb)
		if best.Lower > 0 && best.FitsWithoutLower >= r.Need {
			fix += fmt.Sprintf(", %d of lower priority: a higher priority for the gang lets it preempt them", best.Lower)
		}
		fix += "), or "
	} else {
		// Nothing runs there to end: its nodes are too few or too small.
		fix += "nothing runs there, so its nodes are too few or too small: "
	}
	if r.Level != "" {
		fix += fmt.Sprintf("add nodes labelled %s=%s%s", r.Level, best.Name, matching(pending))
	} else {
		fix += "add nodes" + matching(pending)
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
	return out
}

// parentFix says how to mend a group whose parent is missing, is itself, or closes a cycle:
// parentCompositePodGroupName cannot be changed once set, so the group is deleted and made
// again (a missing parent may be created instead).
func parentFix(g *tree.Group) []string {
	out := []string{"Fix the group: " + g.Problem + "."}
	switch {
	case strings.HasPrefix(g.Problem, "its parents form a cycle"):
		return append(out, fmt.Sprintf("A group's parentCompositePodGroupName cannot be changed: delete one group of the cycle (%s, say) and create it again with another parent, or none.", g.Name))
	case strings.HasPrefix(g.Problem, "parent CompositePodGroup "):
		return append(out, fmt.Sprintf("Create CompositePodGroup %s in namespace %s; or, as parentCompositePodGroupName cannot be changed, delete %s %s and create it again with another parent, or none.",
			g.Parent, g.Namespace, g.Kind, g.Name))
	}
	return append(out, fmt.Sprintf("parentCompositePodGroupName cannot be changed: delete %s %s and create it again with another parent, or none.", g.Kind, g.Name))
}

// refusedEverywhere says what to change when every node refuses the pods before their
// requests are looked at. Each suggestion names every reason that holds on its nodes, and
// all the changes it takes for the pods to use them (a cordoned node the selector excludes
// is not made usable by uncordoning it): the nodes the pods select first, then the others,
// most nodes first.
func refusedEverywhere(r *Room, pending []*v1.Pod) []string {
	var out []string
	selects := matching(pending) != ""
	for _, f := range r.Refused {
		// Verbs and pronouns for one node or several.
		one := f.Nodes == 1
		verb := func(several, single string) string {
			if one {
				return single
			}
			return several
		}
		them := verb("them", "it")
		whys := append([]string{f.Why}, f.Also...)
		if len(whys) == 1 && f.Why == whyAffinity {
			out = append(out, fmt.Sprintf("%s %s the pods' %s: label the nodes they should run on, or change the pods' selector.",
				count(f.Nodes, "node"), verb("do not match", "does not match"), selectorOf(pending[0])))
			continue
		}
		var says, fixes []string
		for _, why := range whys {
			switch {
			case why == whyAffinity:
				says = append(says, verb("do not match", "does not match")+" the pods' "+selectorOf(pending[0]))
				fixes = append(fixes, "label "+them)
			case strings.HasPrefix(why, whyTaint):
				_, taint, _ := strings.Cut(why, ": ")
				says = append(says, fmt.Sprintf("%s a taint the pods do not tolerate (%s)", verb("carry", "carries"), taint))
				fixes = append(fixes, fmt.Sprintf("add a toleration for %s to the pods or remove the taint", taint))
			case why == whyCordoned:
				says = append(says, verb("are", "is")+" cordoned")
				fixes = append(fixes, "uncordon "+them+" (kubectl uncordon)")
			default:
				says = append(says, verb("refuse", "refuses")+" the pods: "+why)
				fixes = append(fixes, "change that")
			}
		}
		who := count(f.Nodes, "node")
		if selects && f.Why != whyAffinity {
			who += " that " + verb("match", "matches") + " the pods' " + selectorOf(pending[0])
		}
		fix := strings.Join(fixes, ", and ")
		if len(fixes) > 1 {
			fix = "for the pods to use " + them + ", " + fix
		}
		out = append(out, fmt.Sprintf("%s %s: %s.", who, strings.Join(says, " and "), fix))
	}
	return out
}

// selectorOf describes how a pod selects nodes: "node selector disktype=ssd", "required node
// affinity", or both.
func selectorOf(p *v1.Pod) string {
	var parts []string
	if len(p.Spec.NodeSelector) > 0 {
		var kv []string
		for k, v := range p.Spec.NodeSelector {
			kv = append(kv, k+"="+v)
		}
		sort.Strings(kv)
		parts = append(parts, "node selector "+strings.Join(kv, ","))
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		parts = append(parts, "required node affinity")
	}
	if len(parts) == 0 {
		return "node selection"
	}
	return strings.Join(parts, " and ")
}

// matching is what nodes added must also be for the pods to use them: " that match the pods'
// node selector disktype=ssd", or "" for pods that select no nodes.
func matching(pending []*v1.Pod) string {
	if len(pending) == 0 {
		return ""
	}
	p := pending[0]
	if len(p.Spec.NodeSelector) == 0 && (p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil) {
		return ""
	}
	return " that match the pods' " + selectorOf(p)
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
