// Package version says which lockstep a binary is: the version, commit and date that make
// stamps into every binary it builds (-ldflags -X, from hack/version.sh), and the Kubernetes
// scheduler framework the binary is compiled from. The image's labels and tag carry the same
// version, so that `lockstep-scheduler --version`, `kubectl lockstep version` and the image a
// cluster runs can be compared.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time by make (see LDFLAGS in the Makefile). A binary built otherwise (go build,
// go install) says it is a development build and takes its commit from Go's build info.
var (
	gitVersion = ""
	gitCommit  = ""
	buildDate  = ""
)

// devVersion is the version of a binary make did not stamp.
const devVersion = "v0.0.0-dev"

// Info is a binary's version.
type Info struct {
	// Version is lockstep's semantic version: a release tag (v0.2.0) or, between releases,
	// a pre-release of the next one (v0.2.1-dev.3.gabc1234: 3 commits after v0.2.0).
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit,omitempty"`
	BuildDate string `json:"buildDate,omitempty"`
	// Kubernetes is the k8s.io/kubernetes module the scheduler framework is built from.
	Kubernetes string `json:"kubernetes,omitempty"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Get returns this binary's version.
func Get() Info {
	info := Info{
		Version:   gitVersion,
		GitCommit: gitCommit,
		BuildDate: buildDate,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info.Version == "" {
		info.Version = devVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				info.Kubernetes = dep.Version
				if dep.Replace != nil {
					info.Kubernetes = dep.Replace.Version
				}
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.GitCommit == "" {
				info.GitCommit = s.Value
			}
		}
	}
	return info
}

// String is the one-line form `--version` prints.
func (i Info) String() string {
	s := i.Version
	if i.GitCommit != "" {
		s += " (commit " + short(i.GitCommit)
		if i.BuildDate != "" {
			s += ", built " + i.BuildDate
		}
		s += ")"
	}
	if i.Kubernetes != "" {
		s += fmt.Sprintf(", kube-scheduler framework %s", i.Kubernetes)
	}
	return s + fmt.Sprintf(", %s %s", i.GoVersion, i.Platform)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
