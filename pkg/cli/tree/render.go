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
		render(w, g, "", "")
	}
}

func render(w io.Writer, g *Group, first, rest string) {
	fmt.Fprintf(w, "%s%s\n", first, header(g))
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
	collapse := len(pending) > 3
	if collapse {
		n = len(g.Children) + len(g.Members) - len(pending) + 1
	}
	for _, c := range g.Children {
		f, r := next()
		render(w, c, f, r)
	}
	for _, m := range g.Members {
		if collapse && m.Node == "" {
			continue
		}
		f, _ := next()
		fmt.Fprintf(w, "%s%s  %s\n", f, m.Name, place(m))
	}
	if collapse {
		f, _ := next()
		fmt.Fprintf(w, "%s%d pods pending: %s, ...\n", f, len(pending), strings.Join(pending[:3], ", "))
	}
}

func header(g *Group) string {
	parts := []string{fmt.Sprintf("%s %s/%s", g.Kind, g.Namespace, g.Name)}
	minName := "minCount"
	if g.Kind == "CompositePodGroup" {
		minName = "minGroupCount"
	}
	if g.Policy == "gang" {
		parts = append(parts, fmt.Sprintf("gang %s=%d", minName, g.Min))
	} else {
		parts = append(parts, "basic")
	}
	if len(g.Topology) > 0 {
		var t []string
		for _, k := range g.Topology {
			if key, size, ok := strings.Cut(k, "#"); ok {
				t = append(t, fmt.Sprintf("slices of %s per %s", size, short(key)))
			} else if strings.HasPrefix(k, "~") {
				t = append(t, "preferred "+short(k[1:]))
			} else {
				t = append(t, "required "+short(k))
			}
		}
		parts = append(parts, "topology: "+strings.Join(t, ", "))
	}
	if g.Pods != nil {
		parts = append(parts, fmt.Sprintf("pods %d/%d bound", g.Pods.Bound, g.Pods.Exist))
	}
	switch {
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

// short is the name part of a label key: "topology.kubernetes.io/rack" → "rack".
func short(key string) string {
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return key[i+1:]
	}
	return key
}
