package explain

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// maxDomains bounds the domains listed per group, roomiest first.
const maxDomains = 5

// Render writes explanations for people.
func Render(w io.Writer, es []Explanation, now time.Time) {
	for i, e := range es {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, e.Group)
		if e.In != "" {
			fmt.Fprintf(w, "  in %s\n", e.In)
		}
		if e.Placed && e.Room == nil && len(e.Next) == 0 {
			fmt.Fprintln(w, "  Placed: nothing of it is pending.")
		}
		for _, c := range e.Conditions {
			fmt.Fprintf(w, "  %s %s (%s, since %s): %s\n", c.Type, c.Status, c.Reason, ago(c.Since.Time, now), c.Message)
		}
		if e.PodSays != "" {
			fmt.Fprintf(w, "  Pending pod %s\n", e.PodSays)
		}
		if len(e.Events) > 0 {
			fmt.Fprintln(w, "  Events, newest first:")
			for _, ev := range e.Events {
				count := ""
				if ev.Count > 1 {
					count = fmt.Sprintf(" (×%d)", ev.Count)
				}
				fmt.Fprintf(w, "    %s  %s  %s  %s: %s%s\n", ago(ev.Time.Time, now), ev.Type, ev.Reason, ev.Regarding, ev.Note, count)
			}
		}
		if r := e.Room; r != nil {
			renderRoom(w, r)
		}
		if len(e.Next) > 0 {
			fmt.Fprintln(w, "  What would make it fit:")
			for _, n := range e.Next {
				fmt.Fprintf(w, "    - %s\n", n)
			}
		}
	}
}

func renderRoom(w io.Writer, r *Room) {
	lvl := levelName(r.Level)
	together := fmt.Sprintf("%d must fit in one %s", r.Need, lvl)
	if r.Level == "" {
		together = fmt.Sprintf("%d must fit", r.Need)
	}
	fmt.Fprintf(w, "  Room, from nodes' allocatable less their pods' requests on the nodes the pods may use (cordons, taints, node selectors and affinity applied):\n")
	fmt.Fprintf(w, "    %s pending, each asking for %s; %s\n", count(r.Pods, "pod"), describe(r.Request, nil), together)
	for i, d := range r.Domains {
		if i == maxDomains {
			fmt.Fprintf(w, "    ... and %d more %ss\n", len(r.Domains)-maxDomains, lvl)
			break
		}
		lower := ""
		if d.Lower > 0 {
			lower = fmt.Sprintf("; %s of lower priority there", count(d.Lower, "pod"))
		}
		where := lvl + " " + d.title()
		if r.Level == "" {
			where = "the cluster"
		}
		fmt.Fprintf(w, "    %s: %s, free %s: takes %d of %d%s\n", where, count(d.Nodes, "node"), describe(d.Free, r.Request), d.Fits, r.Need, lower)
	}
	if r.Pinned {
		fmt.Fprintf(w, "    (the group's bound pods hold this %s: the others are not counted)\n", lvl)
	}
	if r.Excluded != "" {
		fmt.Fprintf(w, "    (%s are not counted)\n", r.Excluded)
	}
	for _, f := range r.Refused {
		why := f.Why
		if len(f.Also) > 0 {
			why += "; and " + strings.Join(f.Also, "; and ")
		}
		fmt.Fprintf(w, "    (%s not counted: %s)\n", count(f.Nodes, "node"), why)
	}
	if len(r.Domains) == 0 {
		fmt.Fprintf(w, "    no node the pods may use\n")
	}
	if len(r.Unchecked) > 0 {
		fmt.Fprintf(w, "    (not checked here, the scheduler does: %s)\n", strings.Join(r.Unchecked, ", "))
	}
}

// ago says how long ago t was, as kubectl does ("3m12s ago").
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return strings.TrimSpace(duration.HumanDuration(now.Sub(t))) + " ago"
}
