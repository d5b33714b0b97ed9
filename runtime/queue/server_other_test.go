//go:build !linux

package queue

import (
	"testing"
	"time"
)

// serverProcess is Linux-only: elsewhere the benchmark embeds its server.
func serverProcess(*testing.B) (string, func() time.Duration, bool) { return "", nil, false }
