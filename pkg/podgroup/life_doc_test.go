package podgroup

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// docs/semantics.md draws a group's life with the same table as the code (Lifecycle): the
// same states, and the same rows — from, event, guard, to, what is written — so that the two
// cannot drift apart.
func TestLifecycleTableIsTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/semantics.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	const header = "| from | event | guard | to | written on the object |"
	i := strings.Index(text, header)
	if i < 0 {
		t.Fatalf("docs/semantics.md has no table headed %q", header)
	}
	states := map[string]State{}
	for s := State(0); s < numStates; s++ {
		states[s.String()] = s
		if !strings.Contains(text[:i], "- **"+s.String()+"**") {
			t.Errorf("docs/semantics.md does not describe state %s (a line \"- **%s**\" above the table)", s, s)
		}
	}
	events := map[string]Event{}
	for e := Event(0); e < numEvents; e++ {
		events[e.String()] = e
	}
	var fromDocs []string
	for _, line := range strings.Split(text[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			t.Fatalf("row %q has %d cells, want 5", line, len(cells))
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		ev, ok := events[cells[1]]
		if !ok {
			t.Errorf("row %q: event %q is not one of the code's", line, cells[1])
		}
		to, ok := states[cells[3]]
		if !ok {
			t.Errorf("row %q: state %q is not one of the code's", line, cells[3])
		}
		for _, from := range docStates(t, cells[0], states) {
			fromDocs = append(fromDocs, rowKey(from, ev, cells[2], to, cells[4]))
		}
	}
	var fromCode []string
	for _, r := range Lifecycle {
		fromCode = append(fromCode, rowKey(r.From, r.Event, r.Guard, r.To, r.Writes))
	}
	for _, r := range fromCode {
		if !slices.Contains(fromDocs, r) {
			t.Errorf("the code's row %s is not in docs/semantics.md", r)
		}
	}
	for _, r := range fromDocs {
		if !slices.Contains(fromCode, r) {
			t.Errorf("the docs' row %s is not in the code (pkg/podgroup/life.go)", r)
		}
	}
}

// docStates reads a "from" cell: states separated by commas, "any" (every state but Gone), or
// "any but X, Y".
func docStates(t *testing.T, cell string, states map[string]State) []State {
	t.Helper()
	var except []string
	switch {
	case cell == "any":
	case strings.HasPrefix(cell, "any but "):
		except = strings.Split(strings.TrimPrefix(cell, "any but "), ", ")
	default:
		var out []State
		for _, name := range strings.Split(cell, ", ") {
			s, ok := states[name]
			if !ok {
				t.Errorf("from %q: state %q is not one of the code's", cell, name)
			}
			out = append(out, s)
		}
		return out
	}
	var out []State
	for s := State(0); s < Gone; s++ {
		if !slices.Contains(except, s.String()) {
			out = append(out, s)
		}
	}
	return out
}

func rowKey(from State, ev Event, guard string, to State, writes string) string {
	return fmt.Sprintf("%s --%s [%s]--> %s (writes %q)", from, ev, guard, to, writes)
}
