package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// kubectlLockstep finds the kubectl lockstep commands a document names: in code spans, and
// on the lines of code blocks.
var kubectlLockstep = regexp.MustCompile("(?m)(?:`|^\\s*(?:\\$ )?)kubectl lockstep([^`\\n]*)")

// TestDocumentedCommandsExist: every `kubectl lockstep ...` the README and docs name is a
// command the plugin has, with flags and arguments it takes (the documents' placeholders — NAME,
// TYPE/NAME, [...] and a|b — read as examples). A renamed flag or command fails here, not in
// a user's terminal.
func TestDocumentedCommandsExist(t *testing.T) {
	root := filepath.Join("..", "..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range kubectlLockstep.FindAllStringSubmatch(string(data), -1) {
			args := exampleArgs(m[1])
			cmd := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
			sub, rest, err := cmd.Find(args)
			if err != nil || (len(args) > 0 && sub == cmd) {
				t.Errorf("%s names `kubectl lockstep%s`: no such command (%v)", f, m[1], err)
				continue
			}
			if err := sub.ParseFlags(rest); err != nil {
				t.Errorf("%s names `kubectl lockstep%s`: %v", f, m[1], err)
				continue
			}
			if sub.Args != nil && len(rest) > 0 { // a bare command named in prose is a mention
				if err := sub.Args(sub, sub.Flags().Args()); err != nil {
					t.Errorf("%s names `kubectl lockstep%s`: %v", f, m[1], err)
				}
			}
			checked++
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d documented commands; the pattern finds none?", checked)
	}
}

// exampleArgs turns a documented command line into arguments: optional parts ([...]) and
// alternatives (a|b, the first taken) read as one example, placeholders as names.
func exampleArgs(line string) []string {
	line = regexp.MustCompile(`\[([^\]]*)\]`).ReplaceAllString(line, "$1")
	line = strings.NewReplacer("...", "", "|", " | ").Replace(line)
	var out []string
	skip := false
	for _, f := range strings.Fields(line) {
		switch {
		case f == "|":
			skip = true // the alternative after the first
			continue
		case skip:
			skip = false
			continue
		case strings.HasPrefix(f, "#"), f == "\\":
			return out
		}
		out = append(out, f)
	}
	return out
}
