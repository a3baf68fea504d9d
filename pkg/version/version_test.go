package version

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		name string
		info Info
		want string
	}{
		{
			name: "stamped by make",
			info: Info{Version: "v0.2.0", GitCommit: "6f3a5631c2d4e5f60718293a4b5c6d7e8f901234", BuildDate: "2026-11-24T15:00:00Z",
				Kubernetes: "v1.37.1", GoVersion: "go1.26.0", Platform: "linux/amd64"},
			want: "v0.2.0 (commit 6f3a5631c2d4, built 2026-11-24T15:00:00Z), kube-scheduler framework v1.37.1, go1.26.0 linux/amd64",
		},
		{
			name: "go build: no stamp",
			info: Info{Version: devVersion, GoVersion: "go1.26.0", Platform: "linux/arm64"},
			want: "v0.0.0-dev, go1.26.0 linux/arm64",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.info.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGet: a binary make did not stamp says it is a development build. (Which Kubernetes
// framework it is built from comes from the binary's build info: test/image checks it on
// the scheduler binary, which links k8s.io/kubernetes; this test binary does not.)
func TestGet(t *testing.T) {
	info := Get()
	if info.Version != devVersion {
		t.Errorf("Version %q, want %q for a binary make did not stamp", info.Version, devVersion)
	}
	if info.GoVersion == "" || !strings.Contains(info.Platform, "/") {
		t.Errorf("Go version %q, platform %q", info.GoVersion, info.Platform)
	}
}
