package cli

import (
	"io"
	"strings"

	"k8s.io/client-go/rest"
)

// NewWarningHandler returns how the plugin shows the API server's warnings: as kubectl does,
// "Warning: ..." on out, each once — not as log lines — but for the deprecation of the
// scheduling.k8s.io version the native groups are read at, which the API server sends on
// every request for a beta version: lockstep reads the version the cluster serves, and the
// person running it can do nothing about it.
func NewWarningHandler(out io.Writer) rest.WarningHandler {
	return nativeVersionQuiet{rest.NewWarningWriter(out, rest.WarningWriterOptions{Deduplicate: true})}
}

type nativeVersionQuiet struct{ rest.WarningHandler }

func (w nativeVersionQuiet) HandleWarningHeader(code int, agent, text string) {
	if strings.HasPrefix(text, "scheduling.k8s.io/") && strings.Contains(text, " is deprecated") {
		return
	}
	w.WarningHandler.HandleWarningHeader(code, agent, text)
}
