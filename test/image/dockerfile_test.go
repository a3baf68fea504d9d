package image

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// xFlag finds the variables a build sets with -ldflags -X.
var xFlag = regexp.MustCompile(`-X\s+([\w./-]+)=`)

// TestDockerfileBuildsTheSameBinary: docs/install.md says the Dockerfile builds the binary
// make image builds; they set the same -X variables (lockstep's version, commit and build
// date, and component-base's, which the feature gates' emulation version follows), strip
// the same way and build with -trimpath.
func TestDockerfileBuildsTheSameBinary(t *testing.T) {
	root := filepath.Join("..", "..")
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	mk := string(makefile)
	start := strings.Index(mk, "\nLDFLAGS = ")
	if start < 0 {
		t.Fatal("no LDFLAGS in the Makefile")
	}
	end := strings.Index(mk[start+1:], "\n\n")
	ldflags := strings.ReplaceAll(mk[start:start+1+end], "$(MODULE)", "github.com/lockstep-sched/lockstep")
	vars := func(s string) []string {
		var out []string
		for _, m := range xFlag.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		slices.Sort(out)
		return out
	}
	want, got := vars(ldflags), vars(string(dockerfile))
	if len(want) < 6 || !slices.Equal(want, got) {
		t.Errorf("the Dockerfile sets -X %v; make image sets %v", got, want)
	}
	for _, flag := range []string{"-s -w", "-trimpath", "CGO_ENABLED=0"} {
		if !strings.Contains(string(dockerfile), flag) {
			t.Errorf("the Dockerfile's build lacks %s, which make image uses", flag)
		}
	}
	if !strings.Contains(mk, `-ldflags "-s -w $(LDFLAGS)"`) || !strings.Contains(mk, "IMAGE_BUILDFLAGS ?= -trimpath") {
		t.Error("make image no longer builds with -s -w $(LDFLAGS) and -trimpath: update the Dockerfile and this test")
	}
}
