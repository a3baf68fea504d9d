package podgroup

import "sort"

// SelectorMismatch is upstream NodeAffinity's reason for a node the pod's node selector or
// required affinity leaves out.
const SelectorMismatch = "node(s) didn't match Pod's node affinity/selector"

// DecidingFirst returns the reasons nodes gave for refusing a gang's pods (reason → nodes),
// the deciding first: what refuses the nodes the pods select (a taint, a cordon, room, a
// filter) before the nodes their own selector or required affinity leaves out, which they
// never asked for; then the most given first. A gang's condition names every reason in this
// order: the one to act on leads.
func DecidingFirst(reasons map[string]int) []string {
	whys := make([]string, 0, len(reasons))
	for why := range reasons {
		if why != "" {
			whys = append(whys, why)
		}
	}
	sort.Slice(whys, func(i, j int) bool {
		a, b := whys[i], whys[j]
		if (a == SelectorMismatch) != (b == SelectorMismatch) {
			return b == SelectorMismatch
		}
		if reasons[a] != reasons[b] {
			return reasons[a] > reasons[b]
		}
		return a < b
	})
	return whys
}
