package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/cmd/agentspec/cli"
)

// TestMain registers Clock as main does.
func TestMain(m *testing.M) {
	capabilities.MustRegister(clockType())
	os.Exit(m.Run())
}

// run calls the CLI in-process, with Clock registered by TestMain.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = cli.Main(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestClockSpecValidates(t *testing.T) {
	code, _, stderr := run(t, "validate", "agent.yaml")
	assert.Equal(t, 0, code, stderr)
}

func TestSchemaKnowsClock(t *testing.T) {
	code, stdout, stderr := run(t, "schema")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"Clock"`)
	assert.Contains(t, stdout, "IANA time zone")
}

// The schema committed beside the example, which its agent.yaml names, is
// the one this binary prints: Clock included.
func TestCommittedSchemaIsCurrent(t *testing.T) {
	code, stdout, stderr := run(t, "schema")
	require.Equal(t, 0, code, stderr)
	committed, err := os.ReadFile("agentspec.schema.json")
	require.NoError(t, err)
	assert.Contains(t, string(committed), `"capability.Clock"`)
	assert.True(t, string(committed) == stdout,
		"examples/custom-capability/agentspec.schema.json is out of date: run `make schema` at the repository root and commit the result")
}

func TestToolsListsNow(t *testing.T) {
	code, stdout, stderr := run(t, "tools", "--format", "json", "agent.yaml")
	require.Equal(t, 0, code, stderr)
	var tools []struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &tools))
	require.Len(t, tools, 1)
	assert.Equal(t, "now", tools[0].Name)
}

func TestNowToolAnswersInTheConfiguredZone(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(file, []byte("capabilities:\n  - Clock: Asia/Tokyo\n"), 0o644))
	before := time.Now()
	code, stdout, stderr := run(t, "tool", "--spec", file, "now")
	require.Equal(t, 0, code, stderr)
	got, err := time.Parse(time.RFC3339, strings.TrimSpace(stdout))
	require.NoError(t, err, stdout)
	_, offset := got.Zone()
	assert.Equal(t, 9*3600, offset, "Tokyo is UTC+9")
	assert.WithinDuration(t, before, got, time.Minute)
}

func TestNowRejectsArgumentsAsARetry(t *testing.T) {
	code, _, stderr := run(t, "tool", "--spec", "agent.yaml", "now", `{"zone": "x"}`)
	assert.Equal(t, 3, code)
	assert.Equal(t, "now takes no arguments\n", stderr)
}

func TestBadOptionsPointAtTheirLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(file, []byte("capabilities:\n  - Clock:\n      timezone: Mars/Olympus\n      layot: x\n"), 0o644))

	code, _, stderr := run(t, "validate", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, file+":4:7: ", "a misspelt option is reported at its key")
	assert.Contains(t, stderr, "layout", "with a did-you-mean")

	require.NoError(t, os.WriteFile(file, []byte("capabilities:\n  - Clock:\n      timezone: Mars/Olympus\n"), 0o644))
	code, _, stderr = run(t, "tools", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, file+":3:17: ")
	assert.Contains(t, stderr, `unknown time zone "Mars/Olympus"`)
}

func TestRunsOfflineWithTheScriptedModel(t *testing.T) {
	code, stdout, stderr := run(t, "run", "agent.yaml")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "It is the time the now tool said, in Paris.\n", stdout)
	assert.Contains(t, stderr, "  now  ", "the Go-registered tool ran")
	assert.Contains(t, stderr, "1 tool call")
}
