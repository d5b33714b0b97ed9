package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// An agent cannot rewrite the spec it runs under, nor the script file the
// spec names, when they lie inside its FileSystem root.
func TestAgentCannotRewriteItsSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := "version: 1\nmodel: script:turns.yaml\ncapabilities: [FileSystem]\n"
	turns := `
turns:
  - tool_calls:
      - {name: write_file, arguments: {path: agent.yaml, content: "model: openai:gpt-4o\n"}}
      - {name: edit_file, arguments: {path: turns.yaml, old_text: "turns:", new_text: "x:"}}
      - {name: write_file, arguments: {path: notes.txt, content: "fine\n"}}
  - expect: {tool_result_contains: "Wrote 5 chars"}
    text: done
`
	writeFiles(t, dir, map[string]string{"agent.yaml": agent, "turns.yaml": turns})
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	require.NoError(t, err)
	res, err := Run(context.Background(), s, WithWorkspace(dir))
	require.NoError(t, err)
	results := toolResults(res.Transcript)
	require.Len(t, results, 3)
	assert.Equal(t, "Error: Path 'agent.yaml' is protected (matches 'agent.yaml').", results[0])
	assert.Equal(t, "Error: Path 'turns.yaml' is protected (matches 'turns.yaml').", results[1])
	for name, want := range map[string]string{"agent.yaml": agent, "turns.yaml": turns, "notes.txt": "fine\n"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(got), name)
	}
}

// Nor can it rewrite the result cache's entries, when the spec keeps its
// cache inside the FileSystem root: the next run would replay whatever it
// wrote there.
func TestAgentCannotRewriteItsCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := "model: script:turns.yaml\ncapabilities: [FileSystem]\ncache: {dir: .agent-cache}\n"
	turns := `
turns:
  - tool_calls:
      - {name: create_directory, arguments: {path: .agent-cache/ab}}
      - {name: write_file, arguments: {path: .agent-cache/ab/forged.json, content: "{}"}}
      - {name: write_file, arguments: {path: notes.txt, content: "fine\n"}}
  - text: done
`
	writeFiles(t, dir, map[string]string{"agent.yaml": agent, "turns.yaml": turns})
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	require.NoError(t, err)
	res, err := Run(context.Background(), s, WithWorkspace(dir))
	require.NoError(t, err)
	results := toolResults(res.Transcript)
	require.Len(t, results, 3)
	assert.Equal(t, "Error: Path '.agent-cache/ab' is protected (matches '.agent-cache').", results[0])
	assert.Equal(t, "Error: Path '.agent-cache/ab/forged.json' is protected (matches '.agent-cache').", results[1])
	_, err = os.Stat(filepath.Join(dir, ".agent-cache", "ab"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A script file that is not a regular file, or is huge, is refused before
// it is read: script:/dev/zero would grow without end, and a named pipe
// would block the run for ever.
func TestScriptFileIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(maxScriptSize+1))
	require.NoError(t, f.Close())
	cases := map[string]string{
		"/dev/zero": "not a regular file",
		dir:         "not a regular file",
		big:         "larger than 16 MiB",
	}
	if fifo := filepath.Join(dir, "pipe.yaml"); mkfifo(fifo) == nil {
		cases[fifo] = "not a regular file"
	}
	for path, want := range cases {
		s, err := (&spec.Loader{}).Load("agent.yaml", []byte("model: script:"+path+"\n"))
		if err == nil {
			err = Check(context.Background(), s)
		}
		assert.ErrorContains(t, err, "cannot read the script file "+path+": "+want, path)
	}
}

// The loader given the runtime's model check asks a capability what native
// tools it needs, whatever its type: WebFetch without a local tool on a
// provider without native fetching is refused when the spec loads, as the
// run would refuse it.
func TestNativeToolsAskedOfTheCapability(t *testing.T) {
	t.Parallel()
	_, err := (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml", []byte("model: openai:gpt-4o\ncapabilities: [WebFetch]\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "agent.yaml:2:16: WebFetch: openai does not run the native tool web_fetch")
	_, err = (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml", []byte("model: openai:gpt-4o\ncapabilities: [{WebFetch: {local: true}}]\n"))
	assert.NoError(t, err, "the local tool stands in")
}

// The options of a native tool the provider runs are checked when the spec
// loads, as the run checks them before its first request, each refusal at
// the option's key: validate does not pass a spec the run refuses.
func TestNativeToolOptionsCheckedOnLoad(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"model: anthropic:claude-sonnet-4-5\ncapabilities:\n  - WebSearch: {search_context_size: high}\n": "agent.yaml:3:17: WebSearch: anthropic: the native tool web_search takes no search_context_size (OpenAI's)",
		"model: anthropic:claude-sonnet-4-5\ncapabilities:\n  - NativeTool: {kind: web_fetch, foo: 1}\n":  `agent.yaml:3:35: NativeTool: anthropic: the native tool web_fetch takes no option "foo"`,
		"model: openai-responses:gpt-5\ncapabilities:\n  - NativeTool: {kind: web_search, max_uses: 3}\n": "agent.yaml:3:36: NativeTool: openai-responses: the Responses API's web_search takes no max_uses",
	} {
		_, err := (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want)
		var errs spec.Errors
		assert.ErrorAs(t, err, &errs, "reported at a position")
	}
	_, err := (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml",
		[]byte("model: anthropic:claude-sonnet-4-5\ncapabilities:\n  - WebSearch: {max_uses: 3, allowed_domains: [example.com]}\n"))
	assert.NoError(t, err)
}

// A capability nested in PrefixTools asks the model for what it would ask
// unwrapped (the run finds it through capabilities.As): its native tools
// and its thinking setting are checked when the spec loads too.
func TestNestedCapabilityCheckedOnLoad(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"model: openai:gpt-4o\ncapabilities:\n  - PrefixTools: {prefix: p, capability: WebSearch}\n":                                        "agent.yaml:3:5: WebSearch: openai does not run the native tool web_search",
		"model: openai:gpt-4o\ncapabilities:\n  - PrefixTools: {prefix: p, capability: {PrefixTools: {prefix: q, capability: WebFetch}}}\n": "agent.yaml:3:5: WebFetch: openai does not run the native tool web_fetch",
	} {
		_, err := (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want)
	}
	_, err := (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml",
		[]byte("model: openai:gpt-4o\ncapabilities:\n  - PrefixTools: {prefix: p, capability: {WebFetch: {local: true}}}\n"))
	assert.NoError(t, err, "the local tool stands in")
}

// A native tool's provider check is placed at the node at fault: a kind
// the provider does not run at the kind's value, in whichever form the
// entry gives it, nested in PrefixTools or not; an option the provider's
// tool does not take at the option's key.
func TestNativeToolErrorsAtTheNodeAtFault(t *testing.T) {
	t.Parallel()
	noFetch := "NativeTool: openai does not run the native tool web_fetch; the providers that do: " + strings.Join(providers.NativeProviders("web_fetch"), ", ")
	for src, want := range map[string]string{
		"model: openai:gpt-4o\ncapabilities:\n  - NativeTool: {kind: web_fetch}\n":                                                                "agent.yaml:3:24: " + noFetch,
		"model: openai:gpt-4o\ncapabilities:\n  - NativeTool:\n      tool: {kind: web_fetch}\n":                                                   "agent.yaml:4:20: " + noFetch,
		"model: openai:gpt-4o\ncapabilities:\n  - {name: NativeTool, arguments: [{kind: web_fetch}]}\n":                                           "agent.yaml:3:43: " + noFetch,
		"model: openai:gpt-4o\ncapabilities:\n  - PrefixTools: {prefix: p, capability: {NativeTool: {kind: web_fetch}}}\n":                        "agent.yaml:3:62: " + noFetch,
		"model: anthropic:claude-sonnet-4-5\ncapabilities:\n  - NativeTool: {kind: web_fetch, foo: 1}\n":                                          `agent.yaml:3:35: NativeTool: anthropic: the native tool web_fetch takes no option "foo"`,
		"model: anthropic:claude-sonnet-4-5\ncapabilities:\n  - NativeTool: {tool: {kind: web_fetch, foo: 1}}\n":                                  `agent.yaml:3:42: NativeTool: anthropic: the native tool web_fetch takes no option "foo"`,
		"model: anthropic:claude-sonnet-4-5\ncapabilities:\n  - WebSearch:\n      max_uses: 2\n      search_context_size: high\n":                 "agent.yaml:5:7: WebSearch: anthropic: the native tool web_search takes no search_context_size (OpenAI's)",
		"model: openai-responses:gpt-5\ncapabilities:\n  - PrefixTools: {prefix: p, capability: {NativeTool: {kind: web_search, max_uses: 3}}}\n": "agent.yaml:3:74: NativeTool: openai-responses: the Responses API's web_search takes no max_uses",
	} {
		_, err := (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Equal(t, want, err.Error(), src)
	}
}
