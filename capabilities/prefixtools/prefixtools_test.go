package prefixtools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/prefixtools"
	"github.com/agentspec/agentspec/spec"
)

func load(t *testing.T, src string) (*spec.Spec, error) {
	t.Helper()
	var l spec.Loader
	return l.Load("agent.yaml", []byte(src))
}

func toolNames(t *testing.T, caps []capabilities.Capability) []string {
	t.Helper()
	var names []string
	for _, c := range caps {
		tools, err := c.Tools(context.Background())
		require.NoError(t, err)
		for _, tl := range tools {
			names = append(names, tl.Name())
		}
	}
	return names
}

func TestEveryEntryFormNests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "a.md"), []byte("hello\n"), 0o644))
	s, err := load(t, `
capabilities:
  - PrefixTools: {prefix: bare, capability: FileSystem}
  - PrefixTools:
      prefix: docs
      capability: {FileSystem: {root_dir: ./docs, read_only: true}}
  - PrefixTools:
      prefix: pos
      capability: {FileSystem: ./docs}
  - PrefixTools:
      prefix: long
      capability: {name: FileSystem, arguments: {root_dir: docs, read_only: true, id: inner}}
  - name: PrefixTools
    arguments:
      prefix: outer
      capability: {PrefixTools: {prefix: inner, capability: {FileSystem: {read_only: true}}}}
`)
	require.NoError(t, err)
	caps, err := spec.Instantiate(context.Background(), s, nil, capabilities.Setup{Dir: dir})
	require.NoError(t, err)
	names := toolNames(t, caps)
	for _, want := range []string{"bare_write_file", "docs_read_file", "pos_edit_file", "long_list_directory", "outer_inner_read_file"} {
		assert.Contains(t, names, want)
	}
	assert.NotContains(t, names, "docs_write_file", "read_only reached the nested FileSystem")
	assert.NotContains(t, names, "read_file", "no tool keeps its own name")

	// The renamed tool runs the wrapped one, over the nested root.
	tools, err := caps[1].Tools(context.Background())
	require.NoError(t, err)
	i := slices.IndexFunc(tools, func(tl capabilities.Tool) bool { return tl.Name() == "docs_read_file" })
	require.GreaterOrEqual(t, i, 0)
	out, err := tools[i].Call(context.Background(), []byte(`{"path": "a.md"}`))
	require.NoError(t, err)
	assert.Contains(t, out, "hello")
}

func TestNestedErrorsAreAtTheirPositions(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, src, want string }{
		{"nested unknown option", `
capabilities:
  - PrefixTools:
      prefix: p
      capability: {FileSystem: {root_dri: .}}
`, `agent.yaml:5:33: capabilities[0].PrefixTools.capability.FileSystem: unknown option "root_dri" (did you mean "root_dir"?)`},
		{"nested unknown type", `
capabilities:
  - PrefixTools: {prefix: p, capability: FileSystm}
`, `agent.yaml:3:42: capabilities[0].PrefixTools.capability: unknown capability type "FileSystm" (did you mean "FileSystem"?)`},
		{"missing capability", `
capabilities:
  - PrefixTools: {prefix: p}
`, `agent.yaml:3:18: capabilities[0].PrefixTools: missing required option "capability"`},
		{"no base options", `
capabilities:
  - PrefixTools: {prefix: p, capability: FileSystem, id: x}
`, `agent.yaml:3:54: capabilities[0].PrefixTools: unknown option "id" (valid options: capability, prefix)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, c.src)
			var errs spec.Errors
			require.True(t, errors.As(err, &errs), "got %v", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

type instructed struct{}

func (instructed) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }
func (instructed) Instructions() string                               { return "be brief" }

func TestOptionalInterfacesPassThrough(t *testing.T) {
	t.Parallel()
	c := prefixtools.New("p", prefixtools.New("q", instructed{}))
	in, ok := capabilities.As[capabilities.Instructable](c)
	require.True(t, ok, "found through two wrappers")
	assert.Equal(t, "be brief", in.Instructions())
	_, ok = capabilities.As[capabilities.NativeTooler](c)
	assert.False(t, ok, "a capability without native tools has none when wrapped")
	_, ok = capabilities.As[capabilities.Remote](c)
	assert.False(t, ok)
	_, ok = capabilities.As[io.Closer](c)
	assert.False(t, ok, "nothing to close")
}

type namedTool struct{ name string }

func (n namedTool) Name() string                                        { return n.name }
func (namedTool) Description() string                                   { return "" }
func (namedTool) Parameters() map[string]any                            { return nil }
func (namedTool) Call(context.Context, json.RawMessage) (string, error) { return "", nil }

type toolsOf []string

func (t toolsOf) Tools(context.Context) ([]capabilities.Tool, error) {
	var out []capabilities.Tool
	for _, n := range t {
		out = append(out, namedTool{n})
	}
	return out, nil
}

// A prefix that makes a tool's name longer than the 64 characters OpenAI,
// Anthropic, Gemini and Bedrock take is refused when the tools are listed
// (agentspec validate too), naming the tool, not by the provider at the
// first request.
func TestPrefixKeepsNamesWithinProviderLimits(t *testing.T) {
	t.Parallel()
	prefix := strings.Repeat("p", 50)
	tools, err := prefixtools.New(prefix, toolsOf{"read_file", "a_tool_named_thirteen"}).Tools(context.Background())
	require.Error(t, err)
	assert.Nil(t, tools)
	assert.Equal(t, `prefix `+prefix+` makes the tool a_tool_named_thirteen `+prefix+`_a_tool_named_thirteen, `+
		`72 characters long; providers take tool names of at most 64`, err.Error())

	tools, err = prefixtools.New(strings.Repeat("p", 54), toolsOf{"read_file"}).Tools(context.Background())
	require.NoError(t, err, "64 characters are taken")
	assert.Len(t, tools[0].Name(), 64)
}
