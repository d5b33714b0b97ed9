package filesystem

import (
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGlobRejects(t *testing.T) {
	t.Parallel()
	for pattern, msg := range map[string]string{
		"/etc/*":                                 "Pattern '/etc/*' must be relative to the search path, not absolute.",
		"/":                                      "Pattern '/' must be relative to the search path, not absolute.",
		"":                                       "Pattern '' is not a valid glob pattern.",
		".":                                      "Pattern '.' is not a valid glob pattern.",
		"./":                                     "Pattern './' is not a valid glob pattern.",
		"..":                                     "Pattern '..' is not a valid glob pattern.",
		"../*.go":                                "Pattern '../*.go' is not a valid glob pattern.",
		"a/../b":                                 "Pattern 'a/../b' is not a valid glob pattern.",
		"it's/..":                                `Pattern "it's/.." is not a valid glob pattern.`,
		"nul\x00.go":                             `Pattern 'nul\x00.go' is not a valid glob pattern.`,
		strings.Repeat("a/", maxGlobParts) + "x": "Pattern '" + strings.Repeat("a/", maxGlobParts) + "x' is not a valid glob pattern.",
	} {
		_, err := compileGlob(pattern)
		got, ok := capabilities.AsRetry(err)
		require.True(t, ok, "%q: %v", pattern, err)
		assert.Equal(t, msg, got, "%q", pattern)
	}
}
