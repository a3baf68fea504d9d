package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstep-sched/lockstep/test/integration/testenv"
)

// Every build the first make demo runs says what it still builds every 30 s: each go build
// or go install of the targets make demo runs (make demo-core, make demo-controllers and what
// they depend on) goes through hack/progress.sh, and the demo adds no progress line of its
// own (each line said once).
func TestDemoBuildsSayWhatTheyStillBuild(t *testing.T) {
	root := testenv.RepoRoot()
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	recipes := map[string][]string{} // target → recipe lines
	var target string
	for _, line := range strings.Split(string(makefile), "\n") {
		switch {
		case strings.HasPrefix(line, "\t"):
			if target != "" {
				recipes[target] = append(recipes[target], line)
			}
		case regexp.MustCompile(`^[$()A-Za-z_./-]+:`).MatchString(line) && !strings.Contains(line, ":="):
			target = strings.TrimSpace(line[:strings.Index(line, ":")])
		default:
			target = ""
		}
	}
	for _, t0 := range []string{"demo", "build", "$(BIN)/etcd", "helm", "demo-core", "demo-controllers"} {
		lines := recipes[t0]
		if len(lines) == 0 {
			t.Errorf("Makefile target %s not found", t0)
		}
		for _, l := range lines {
			if regexp.MustCompile(`\$\(GO\) (build|install|run)`).MatchString(l) && !strings.Contains(l, "progress.sh") {
				t.Errorf("make %s builds without saying so every 30 s:\n%s", t0, l)
			}
		}
	}
	demo, err := os.ReadFile(filepath.Join(root, "hack", "demo", "cluster", "cluster.go"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(demo), "still building") {
		t.Error("hack/demo prints progress lines of its own: each would be said twice")
	}
}

// progress.sh says what it still builds at each interval, and passes the command's exit code.
func TestProgressSaysWhatItStillBuilds(t *testing.T) {
	script := filepath.Join(testenv.RepoRoot(), "hack", "progress.sh")
	cmd := exec.Command(script, "thing", "sleep", "3.5")
	cmd.Env = append(os.Environ(), "PROGRESS_INTERVAL=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("progress.sh: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "... still building thing ("); n < 2 || n > 4 {
		t.Errorf("%d progress lines in 3.5 s at 1 s intervals:\n%s", n, out)
	}
	cmd = exec.Command(script, "thing", "false")
	if err := cmd.Run(); err == nil {
		t.Error("progress.sh succeeded with a command that failed")
	}
}
