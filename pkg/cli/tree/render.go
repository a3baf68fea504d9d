package tree

import (
	"fmt"
	"io"
	"strings"
)

// Render writes trees as text:
//
//	CompositePodGroup demo/llm  gang minGroupCount=2  topology=zone  Scheduled: 2 child groups placed together
//	├─ PodGroup demo/shard-0  gang minCount=4  topology=rack  pods 4/4 bound  Scheduled: 4 pods placed together
//	│  ├─ shard-0-0  z0 / z0-b1 / z0-b1-r2 / node-7
func Render(w io.Writer, roots []*Group) {
	for _, g := range roots {
		render(w, g, "", "", false)
	}
}

// RenderWide writes trees as Render does, with each group's Workload and each pod's phase
// and how it joined its group (label, job, jobset, scheduler-plugins); pending pods are
// listed one by one.
func RenderWide(w io.Writer, roots []*Group) {
	for _, g := range roots {
		render(w, g, "", "", true)
	}
}

func render(w io.Writer, g *Group, first, rest string, wide bool) {
	h := Header(g)
	if wide && g.Workload != "" {
		h += "  workload " + g.Workload
	}
	fmt.Fprintf(w, "%s%s\n", first, h)
	n := len(g.Children) + len(g.Members)
	i := 0
	next := func() (string, string) {
		i++
		if i == n {
			return rest + "└─ ", rest + "   "
		}
		return rest + "├─ ", rest + "│  "
	}
	var pending []string
	for _, m := range g.Members {
		if m.Node == "" {
			pending = append(pending, m.Name)
		}
	}
	// Many pending pods read better as one line.
	collapse := len(pending) > 3 && !wide
	if collapse {
		n = len(g.Children) + len(g.Members) - len(pending) + 1
	}
	for _, c := range g.Children {
		f, r := next()
		render(w, c, f, r, wide)
	}
	for _, m := range g.Members {
		if collapse && m.Node == "" {
			continue
		}
		f, _ := next()
		if wide {
			fmt.Fprintf(w, "%s%s  %s  %s, via %s\n", f, m.Name, place(m), m.Phase, m.Via)
			continue
		}
		fmt.Fprintf(w, "%s%s  %s\n", f, m.Name, place(m))
	}
	if collapse {
		f, _ := next()
		fmt.Fprintf(w, "%s%d pods pending: %s, ...\n", f, len(pending), strings.Join(pending[:3], ", "))
	}
}

// Header is a group's line in the view: kind, namespace and name (and what it was made for),
// policy and minimum, topology, pod counts and condition.
func Header(g *Group) string {
	kind := g.Kind
	if g.API != "" {
		kind += "." + g.API // a native group: PodGroup.scheduling.k8s.io
	}
	name := fmt.Sprintf("%s %s/%s", kind, g.Namespace, g.Name)
	if g.Owner != nil && !(g.Owner.Kind == g.Kind && g.Owner.Name == g.Name) {
		name += fmt.Sprintf(" (%s %s)", g.Owner.Kind, g.Owner.Name)
	}
	parts := []string{name}
	minName := "minCount"
	if g.Kind == "CompositePodGroup" {
		minName = "minGroupCount"
	}
	switch {
	case g.Missing:
	case g.Policy == "gang":
		parts = append(parts, fmt.Sprintf("gang %s=%d", minName, g.Min))
	default:
		parts = append(parts, "basic")
	}
	if len(g.Topology) > 0 {
		var t []string
		for _, k := range g.Topology {
			if key, size, ok := strings.Cut(k, "#"); ok {
				t = append(t, fmt.Sprintf("slices of %s per %s", size, Short(key)))
			} else if strings.HasPrefix(k, "~") {
				t = append(t, "preferred "+Short(k[1:]))
			} else {
				t = append(t, "required "+Short(k))
			}
		}
		parts = append(parts, "topology: "+strings.Join(t, ", "))
	}
	if g.Pods != nil {
		parts = append(parts, fmt.Sprintf("pods %d/%d bound", g.Pods.Bound, g.Pods.Exist))
	}
	switch {
	case g.Missing:
		parts = append(parts, "NotFound: "+g.Problem)
	case g.Problem != "":
		parts = append(parts, "Invalid: "+g.Problem)
	case g.Condition == nil:
		parts = append(parts, "(no condition yet)")
	case g.Condition.Status == "True":
		parts = append(parts, "Scheduled: "+g.Condition.Message)
	default:
		parts = append(parts, g.Condition.Reason+": "+g.Condition.Message)
	}
	return strings.Join(parts, "  ")
}

func place(m Member) string {
	if m.Node == "" {
		return "pending"
	}
	if len(m.Path) == 0 {
		return m.Node
	}
	p := strings.Join(m.Path, " / ")
	if m.Path[len(m.Path)-1] != m.Node {
		p += " / " + m.Node
	}
	return p
}

// Short is the name part of a label key: "topology.kubernetes.io/rack" → "rack".
func Short(key string) string {
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return key[i+1:]
	}
	return key
}
