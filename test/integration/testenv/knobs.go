package testenv

import (
	"os"
	"strconv"
	"testing"
)

// EnvInt is the integer in environment variable name, def if it is unset: the knobs that
// scale a test beyond what `make test` runs (docs/benchmarks.md records the larger runs).
func EnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}
