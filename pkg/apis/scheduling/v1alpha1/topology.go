package v1alpha1

import v1 "k8s.io/api/core/v1"

// NodeTopologyPath returns a node's place in the topology: its label value at each of
// levels (node label keys, broadest first), "" where it has no value for a level, with the
// missing levels at the end left out. A node is in a domain of a level only where its value
// there is not "": a node labelled with a zone and a hostname but no block or rack is in its
// zone and on its host, in no block and no rack. Its domain at a level is named by its path
// down to that level, so two hosts of the same name in different zones are different hosts.
func NodeTopologyPath(n *v1.Node, levels []string) []string {
	path := make([]string, len(levels))
	last := -1
	for i, l := range levels {
		if v := n.Labels[l]; v != "" {
			path[i], last = v, i
		}
	}
	return path[:last+1]
}
