package cli

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
)

// capabilityWarnings prints what the spec's capabilities warn of, as the
// loader's warnings are printed, each once however many runs build them (a
// batch builds them for every workspace).
func capabilityWarnings(w io.Writer) capabilities.Listener {
	var (
		mu   sync.Mutex
		seen = map[runtime.CapabilityWarning]bool{}
	)
	return func(_ context.Context, ev capabilities.Event) error {
		cw, ok := ev.(runtime.CapabilityWarning)
		if !ok {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if !seen[cw] {
			seen[cw] = true
			fmt.Fprintln(w, text.Visible(cw.String()))
		}
		return nil
	}
}

// warningsTo is where a command's warnings go: stderr, or nowhere with -q.
func warningsTo(stderr io.Writer, quiet bool) io.Writer {
	if quiet {
		return io.Discard
	}
	return stderr
}
