package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

const pydanticAI = "../../../testdata/pydantic-ai"

// pydanticWorkspace is a workspace with the directories the ported specs'
// FileSystems use.
func pydanticWorkspace(t *testing.T) string {
	dir := t.TempDir()
	for _, d := range []string{"docs", "workspace"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	writeFile(t, filepath.Join(dir, "docs", "guide.md"), "# Guide\n")
	writeFile(t, filepath.Join(dir, "workspace", "main.py"), "print('hi')\n")
	return dir
}

// Every ported spec validates and runs offline with the test model.
func TestPydanticAISpecsValidateAndRun(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(pydanticAI, "valid", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	// What the test model answers, where the spec fixes it.
	answers := map[string]string{
		"minimal.yaml":          "success (no tool calls)",
		"from-file.json":        "success (no tool calls)",
		"top-level-keys.yaml":   "success (no tool calls)",
		"web-fetch.yaml":        "success (no tool calls)", // max_uses: no local tool
		"web-fetch-native.yaml": "success (no tool calls)",
		// Anthropic searches natively, so pydantic-ai never runs the
		// local DuckDuckGo fallback either.
		"web-search-duckduckgo.yaml": "success (no tool calls)",
		"output-schema.yaml":         `{"name":"a","age":0}`, // in the order of its properties
		"output-schema-defs.json":    `{"city":"a","country":"a"}`,
		// Their tools live on MCP servers at example.com, which
		// exampleServers stands in for: allowed_tools keeps drop_table
		// out, and PrefixTools keeps the two lookup tools apart.
		"mcp.yaml":              `{"search":"mcp.example.com search: a"}`,
		"prefix-tools-mcp.yaml": `{"api1_lookup":"api1.example.com lookup: a","api2_lookup":"api2.example.com lookup: a"}`,
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			ws := pydanticWorkspace(t)
			code, _, stderr := runCLI(t, "", "validate", "--workspace", ws, file)
			require.Equal(t, 0, code, stderr)

			s, err := spec.LoadFile(file)
			require.NoError(t, err)
			s.Model = "test"
			vars := map[string]string{}
			for _, v := range runtime.Placeholders(s.Instructions) {
				vars[v] = "Alice"
			}
			servers := exampleServers(t)
			res, err := runtime.Run(servers, s, runtime.WithWorkspace(ws), runtime.WithVars(vars), runtime.WithoutCache(),
				runtime.WithHTTPTransport(capabilityTransport(servers)))
			require.NoError(t, err)
			if want, ok := answers[name]; ok {
				assert.Equal(t, want, res.Output)
			}
			if strings.HasPrefix(name, "output-schema") {
				assert.NotNil(t, res.JSON, "the answer matched the output schema")
			}
		})
	}
}

// The test model calls every tool the capabilities offer, under the names
// PrefixTools gives them, and answers with what they returned.
func TestPydanticAIPrefixToolsRun(t *testing.T) {
	ws := pydanticWorkspace(t)
	code, stdout, stderr := runCLI(t, "", "run", "--workspace", ws, filepath.Join(pydanticAI, "valid", "prefix-tools.yaml"))
	require.Equal(t, 0, code, stderr)
	for _, tool := range []string{"custom_write_file", "docs_read_file", "outer_inner_list_directory"} {
		assert.Contains(t, stderr, "  "+tool+" ", "the progress shows the call")
	}
	assert.Contains(t, stdout, `"docs_list_directory":"guide.md`)
	assert.NotContains(t, stderr, "docs_write_file", "the docs FileSystem is read-only")
}

// The local web_fetch tool is called with the generated URL "a", which it
// refuses before any connection: the run stays offline.
func TestPydanticAIWebFetchRunsOffline(t *testing.T) {
	ws := pydanticWorkspace(t)
	code, stdout, stderr := runCLI(t, "", "run", "--workspace", ws, filepath.Join(pydanticAI, "valid", "web-fetch-local.yaml"))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, `web_fetch a`)
	assert.Contains(t, stderr, `only http and https URLs can be fetched`)
	assert.Equal(t, "success (no tool calls)\n", stdout)
}

func TestPydanticAISpecsRefused(t *testing.T) {
	want := map[string]string{
		"array.json":                          "an agent spec must be a mapping (model: ..., instructions: ...), found a list",
		"empty.yaml":                          "empty",
		"filesystem-twice.yaml":               `filesystem-twice.yaml:6:5: capabilities[1]: FileSystem offers tools named "read_file"`,
		"output-schema-string.yaml":           `output-schema-string.yaml:3:23: output_schema: expected an object schema`,
		"python-only.yaml":                    `capability type "ProcessHistory" cannot be used outside Python`,
		"unknown-capability.yaml":             `unknown capability type "Unknown"`,
		"web-search-duckduckgo-deepseek.yaml": "web-search-duckduckgo-deepseek.yaml:7:5: WebSearch: deepseek does not run the native tool web_search, and agentspec does not run the local fallback the spec names (duckduckgo); the providers that do: anthropic, ",
	}
	files, err := filepath.Glob(filepath.Join(pydanticAI, "invalid", "*"))
	require.NoError(t, err)
	require.Len(t, files, len(want))
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", "validate", "--workspace", pydanticWorkspace(t), file)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, want[name])
			_, err := specLoader("").LoadFile(file) // the commands' loader, with the runtime's model check
			var errs spec.Errors
			if name == "filesystem-twice.yaml" {
				assert.NoError(t, err, "the spec loads; the collision is found when its tools are listed")
			} else {
				assert.True(t, errors.As(err, &errs), "%v", err)
			}
		})
	}
}
