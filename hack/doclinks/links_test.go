// Package doclinks checks the documentation's relative links: every link of README.md,
// CONTRIBUTING.md, CHANGELOG.md and docs/ names a file of the repository and, when it has
// one, a heading of that file (GitHub's anchors). It runs with the unit tests.
package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile("(?m)^#+ (.+)$")
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
)

func TestRelativeLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := filepath.Glob(filepath.Join(root, "docs", "reference", "*.md"))
	for _, d := range append(docs, refs...) {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text := fence.ReplaceAllString(string(data), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := filepath.Join(filepath.Dir(filepath.Join(root, f)), path)
			if path == "" {
				file = filepath.Join(root, f)
			}
			body, err := os.ReadFile(file)
			if err != nil {
				t.Errorf("%s links to %s: %v", f, target, err)
				continue
			}
			checked++
			if anchor != "" && !hasAnchor(string(body), anchor) {
				t.Errorf("%s links to %s: no heading with that anchor", f, target)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d links, want the documentation's", checked)
	}
}

// hasAnchor reports whether a markdown text has a heading whose GitHub anchor is anchor.
func hasAnchor(text, anchor string) bool {
	for _, h := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		if slug(h[1]) == anchor {
			return true
		}
	}
	return false
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}
