package topology

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/lockstep-sched/lockstep/pkg/capacity"
	"github.com/lockstep-sched/lockstep/pkg/podgroup"
)

// explain says, in numbers, why a tree could not be placed: the group that found no domain,
// the size of what it needed and how much the roomiest candidate could take, e.g.
// "PodGroup train: no rack has room for 16 pods × 8 cpu; the roomiest rack could take 12".
// When the root had room but its children did not fit inside it, the last child failure is
// added.
func (c *cluster) explain(root *podgroup.GroupView, failures []failure) string {
	if len(failures) == 0 {
		return "no placement found"
	}
	last := failures[len(failures)-1]
	msg := c.describeFailure(last)
	if last.group.Key == root.Key && last.best >= len(last.pods) && len(failures) > 1 {
		// The root's domains had room in sum; a child did not fit inside them.
		msg += "; inside them, " + c.describeFailure(failures[len(failures)-2])
	}
	return msg
}

// describeFailure renders one failure.
func (c *cluster) describeFailure(f failure) string {
	who := fmt.Sprintf("%s %s", f.group.Key.Kind, f.group.Key.Name)
	what := describePods(f.pods)
	sliced := ""
	if f.slice.size > 0 {
		// Room in sum is not the question: the slices are, so the message names their level.
		sliced = fmt.Sprintf(" in slices of %d pods, each within one %s", f.slice.size, levelName(c.levels[f.slice.level]))
		what += sliced
		sliced = " in such slices"
	}
	if f.best == 0 {
		// Nothing fits anywhere: a resource no node has is the answer, not the room.
		if absent := c.absentFor(f.pods); len(absent) > 0 {
			return fmt.Sprintf("%s: %s", who, absentMessage(absent))
		}
	}
	if f.level < 0 {
		if sliced != "" {
			return fmt.Sprintf("%s: not enough room for %s; the nodes it may use could take %d%s", who, what, f.best, sliced)
		}
		return fmt.Sprintf("%s: not enough free capacity for %s; the nodes it may use could take %d", who, what, f.best)
	}
	lvl := levelName(c.levels[f.level])
	switch {
	case f.pin != "" && f.cands == 0:
		return fmt.Sprintf("%s: %s", who, f.pin)
	case f.pin != "":
		return fmt.Sprintf("%s: %s, which has no room for %s; it could take %d%s", who, f.pin, what, f.best, sliced)
	case f.cands == 0:
		return fmt.Sprintf("%s: no node carries the %s label %s", who, lvl, c.levels[f.level])
	case f.ineligible == f.cands:
		return fmt.Sprintf("%s: no %s has a node the pods may use (%s)", who, lvl, f.why)
	}
	if f.refusing > 0 && f.roomy == 0 {
		// Every node with room refuses the pods: the room is not what is missing.
		where := fmt.Sprintf("the %d %ss", f.cands-f.ineligible, lvl)
		if f.cands-f.ineligible == 1 {
			where = "the one " + lvl
		}
		msg := fmt.Sprintf("%s: no %s can take %s: every node with room in %s refuses them: %s", who, lvl, what, where, refusalOf(f.refusal))
		if f.ineligible > 0 {
			msg += fmt.Sprintf("; %d other %ss have no node the pods may use (%s)", f.ineligible, lvl, f.why)
		}
		return msg
	}
	msg := fmt.Sprintf("%s: no %s has room for %s; the roomiest %s could take %d%s", who, lvl, what, lvl, f.best, sliced)
	if f.refusing > 0 {
		msg += fmt.Sprintf("; %d nodes with room refuse them (%s)", f.refusing, refusalOf(f.refusal))
	}
	if f.ineligible > 0 {
		msg += fmt.Sprintf("; %d other %ss have no node the pods may use (%s)", f.ineligible, lvl, f.why)
	}
	return msg
}

// absentFor names the extended resources the pods ask for that no node has at all.
func (t *topology) absentFor(pods []*pending) []string {
	var need capacity.Resources
	for _, p := range pods {
		need.Add(p.need)
	}
	return t.absent(need)
}

// absentMessage says that no node has any of the resources named, and what that likely is:
// it is not a lack of room, and must not read like one.
func absentMessage(absent []string) string {
	return fmt.Sprintf("no node of the cluster has any %s (a typo in the resource's name, or a device plugin that does not run?)", strings.Join(absent, " or "))
}

// refusalOf names what a Filter refusal means for a gang: "running pods' anti-affinity" for
// InterPodAffinity's refusal by existing pods, the plugin's own words otherwise.
func refusalOf(why string) string {
	switch {
	case why == "":
		return "the scheduler's filters refuse them"
	case strings.Contains(why, "existing pods anti-affinity"):
		return "running pods' anti-affinity (" + why + ")"
	}
	return why
}

// describePods renders a set of pods: "16 pods × 8 cpu" when they are alike,
// "16 pods (96 cpu in all)" when they are not.
func describePods(pods []*pending) string {
	if len(pods) == 0 {
		return "0 pods"
	}
	same := true
	var sum capacity.Resources
	for _, p := range pods {
		sum.Add(p.need)
		if !equal(p.need, pods[0].need) {
			same = false
		}
	}
	noun := "pods"
	if len(pods) == 1 {
		noun = "pod"
	}
	if same {
		return fmt.Sprintf("%d %s × %s", len(pods), noun, describe(pods[0].need))
	}
	return fmt.Sprintf("%d %s (%s in all)", len(pods), noun, describe(sum))
}

// describe renders a request: "8 cpu", "500m cpu, 1 nvidia.com/gpu", "4Gi memory".
func describe(r capacity.Resources) string {
	var parts []string
	if r.MilliCPU > 0 {
		if r.MilliCPU%1000 == 0 {
			parts = append(parts, fmt.Sprintf("%d cpu", r.MilliCPU/1000))
		} else {
			parts = append(parts, fmt.Sprintf("%dm cpu", r.MilliCPU))
		}
	}
	if r.Memory > 0 && r.MilliCPU == 0 {
		parts = append(parts, resource.NewQuantity(r.Memory, resource.BinarySI).String()+" memory")
	}
	names := make([]string, 0, len(r.Scalar))
	for n, v := range r.Scalar {
		if v > 0 {
			names = append(names, string(n))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		for rn, v := range r.Scalar {
			if string(rn) == n {
				parts = append(parts, fmt.Sprintf("%d %s", v, n))
			}
		}
	}
	if len(parts) == 0 {
		return "no resources"
	}
	return strings.Join(parts, ", ")
}

func equal(a, b capacity.Resources) bool {
	if a.MilliCPU != b.MilliCPU || a.Memory != b.Memory || a.Pods != b.Pods || len(a.Scalar) != len(b.Scalar) {
		return false
	}
	for k, v := range a.Scalar {
		if b.Scalar[k] != v {
			return false
		}
	}
	return true
}

func joinSorted(s sets.Set[string]) string {
	out := make([]string, 0, s.Len())
	for _, k := range sets.List(s) {
		out = append(out, lastSegment(k))
	}
	return strings.Join(out, ", ")
}

func lastSegment(key string) string {
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return key[i+1:]
	}
	return key
}
