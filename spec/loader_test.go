package spec

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/schema"
)

// TestLoadErrors covers each kind of mistake with its exact message and
// position. Longer files are in testdata/specs/invalid.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string // default agent.yaml
		src  string
		want []string
	}{
		{
			name: "unknown top-level key points at the key",
			src:  "model: openai:gpt-5\ninstructons: hi\n",
			want: []string{`agent.yaml:2:1: unknown key "instructons" (did you mean "instructions"?)`},
		},
		{
			name: "unknown nested key without a close match lists the valid ones",
			src:  "cache:\n  path: x\n",
			want: []string{`agent.yaml:2:3: cache: unknown key "path" (valid keys: dir)`},
		},
		{
			name: "unknown key in a flow mapping",
			src:  "model_settings: {max_tokens: 5, temprature: 1}\n",
			want: []string{`agent.yaml:1:33: model_settings: unknown key "temprature" (did you mean "temperature"?)`},
		},
		{
			name: "wrong type points at the value",
			src:  "model:\n  - openai:gpt-5\n",
			want: []string{`agent.yaml:2:3: model: expected "provider:name" (e.g. "anthropic:claude-sonnet-4-6") or test, found a list`},
		},
		{
			name: "positive integer",
			src:  "max_tool_rounds: ten\n",
			want: []string{`agent.yaml:1:18: max_tool_rounds: expected a positive integer, found "ten" (a string)`},
		},
		{
			name: "bound",
			src:  "max_tool_rounds: 0\nretries: -2\n",
			want: []string{
				`agent.yaml:1:18: max_tool_rounds: expected a positive integer, found 0`,
				`agent.yaml:2:10: retries: expected a non-negative integer, found -2`,
			},
		},
		{
			name: "a decimal is not an integer",
			src:  "max_tool_rounds: 2.5\n",
			want: []string{`agent.yaml:1:18: max_tool_rounds: expected a positive integer, found 2.5`},
		},
		{
			name: "empty value",
			src:  "capabilities:\nmodel: openai:gpt-5\n",
			want: []string{`agent.yaml:1:14: capabilities: expected a list of capabilities (- FileSystem), found an empty value`},
		},
		{
			name: "an empty value of a key pydantic-ai reads null for is the key's absence",
			src:  "name:\nmodel:\nretries: ~\nend_strategy:\n",
			want: []string{`agent.yaml:4:14: end_strategy: expected one of "early", "graceful", "exhaustive", found an empty value`},
		},
		{
			name: "model form",
			src:  "model: gpt-5\n",
			want: []string{`agent.yaml:1:8: model: expected "provider:name" (e.g. "anthropic:claude-sonnet-4-6") or test, found "gpt-5"`},
		},
		{
			name: "model ending with a space, which the provider would take as part of the name",
			src:  "model: \"anthropic:claude-sonnet-4-5 \"\n",
			want: []string{`agent.yaml:1:8: model: "anthropic:claude-sonnet-4-5 " ends with a space, which would be sent as part of the model's name, and the provider has no model of that name; write "anthropic:claude-sonnet-4-5"`},
		},
		{
			name: "model starting with a tab",
			src:  "model: \"\\ttest\"\nname: x\n",
			want: []string{`agent.yaml:1:8: model: "\ttest" starts with a tab, which would be sent as part of the model's name, and the provider has no model of that name; write "test"`},
		},
		{
			name: "model folded from two lines",
			src:  "model: 'openai:gpt-5\n  '\n",
			want: []string{`agent.yaml:1:8: model: "openai:gpt-5 " ends with a space, which would be sent as part of the model's name, and the provider has no model of that name; write "openai:gpt-5"`},
		},
		{
			name: "unsupported version",
			src:  "version: 2\n",
			want: []string{`agent.yaml:1:10: version: expected a supported version (1), found 2`},
		},
		{
			name: "enum with suggestion",
			src:  "end_strategy: Graceful\n",
			want: []string{`agent.yaml:1:15: end_strategy: expected one of "early", "graceful", "exhaustive", found "Graceful" (did you mean "graceful"?)`},
		},
		{
			name: "one of several forms, none of the right type",
			src:  "instructions: 5\n",
			want: []string{`agent.yaml:1:15: instructions: expected a string or a list of strings, found 5 (a number)`},
		},
		{
			name: "one of several forms, the list form with a bad item",
			src:  "instructions:\n  - Be brief.\n  - {say: hi}\n",
			want: []string{`agent.yaml:3:5: instructions[1]: expected a string, found a mapping`},
		},
		{
			name: "missing required key points at the mapping",
			src:  "workspace:\n  checks:\n    - contains: x\n",
			want: []string{`agent.yaml:3:7: workspace.checks[0]: missing required key "file"`},
		},
		{
			name: "conflicting keys",
			src:  "model_settings:\n  timeout: 5\n  timeout_seconds: 5\n",
			want: []string{`agent.yaml:2:3: model_settings: expected either timeout or timeout_seconds (they are the same setting), not both`},
		},
		{
			name: "a quoted yes is not a boolean",
			src:  "cache: 'yes'\n",
			want: []string{`agent.yaml:1:8: cache: expected true, false or a mapping (dir: .agentspec-cache), found "yes" (a string); quoted, yes is a string: write true or false, or leave it unquoted`},
		},
		{
			name: "an unquoted yes is a boolean, as in pydantic-ai's YAML 1.1",
			src:  "name: yes\n",
			want: []string{`agent.yaml:1:7: name: expected a string, found true (a boolean); unquoted, yes takes the type of its value: write "yes" to keep it a string`},
		},
		{
			name: "invalid regular expression",
			src:  "workspace:\n  checks:\n    - file: a\n      matches: '[a-'\n",
			want: []string{`agent.yaml:4:16: workspace.checks[0].matches: invalid regular expression "[a-": missing closing ]`},
		},
		{
			name: "output schema that does not compile",
			src:  "output_schema:\n  type: object\n  properties:\n    n: {type: integr}\n",
			want: []string{`agent.yaml:4:15: output_schema.properties.n.type: expected one of "array", "boolean", "integer", "null", "number", "object", "string", found "integr" (did you mean "integer"?)`},
		},
		{
			name: "duplicate key",
			src:  "name: a\nname: b\n",
			want: []string{`agent.yaml:2:1: duplicate key "name" (already set on line 1)`},
		},
		{
			name: "YAML syntax error on the first line",
			src:  "model: a: b\n",
			want: []string{`agent.yaml:1:9: invalid YAML: mapping values are not allowed in this context (a value containing ": " must be quoted, and nested keys must be indented under their parent)`},
		},
		{
			name: "YAML syntax error further down",
			src:  "model: openai:gpt-5\ninstructions: [a, b\n",
			want: []string{`agent.yaml:2:15: invalid YAML: did not find expected ',' or ']' (is the [ opened here closed?)`},
		},
		{
			name: "unclosed bracket on the first line",
			src:  "capabilities: [FileSystem\nmodel: openai:gpt-5\n",
			want: []string{`agent.yaml:1:15: invalid YAML: did not find expected ',' or ']' (is the [ opened here closed?)`},
		},
		{
			name: "unclosed bracket after a comma",
			src:  "model: openai:gpt-5\ncapabilities: [FileSystem,\n",
			want: []string{`agent.yaml:2:15: invalid YAML: did not find expected node content (is the [ opened here closed?)`},
		},
		{
			name: "unclosed brace after a comma",
			src:  "model: openai:gpt-5\nmodel_settings: {max_tokens: 5,\n",
			want: []string{`agent.yaml:2:17: invalid YAML: did not find expected node content (is the { opened here closed?)`},
		},
		{
			name: "unclosed bracket inside another, over several lines",
			src:  "model: openai:gpt-5\ninstructions: [a,\n  [b, c,\n  d\n",
			want: []string{`agent.yaml:3:3: invalid YAML: did not find expected ',' or ']' (is the [ opened here closed?)`},
		},
		{
			name: "unclosed double quote",
			src:  "model: openai:gpt-5\ninstructions: \"Say hi.\ncapabilities: [FileSystem]\n",
			want: []string{`agent.yaml:2:15: invalid YAML: found unexpected end of stream (is the " opened here closed?)`},
		},
		{
			name: "unclosed quote on the last line",
			src:  "model: \"openai:gpt-5\n",
			want: []string{`agent.yaml:1:8: invalid YAML: found unexpected end of stream (is the " opened here closed?)`},
		},
		{
			name: "unclosed quote after escaped and closed ones",
			src:  "model: openai:gpt-5 # \"a comment\nname: it's \"plain\ninstructions: [\"a \\\" b\", 'it''s\n",
			want: []string{`agent.yaml:3:26: invalid YAML: found unexpected end of stream (is the ' opened here closed?)`},
		},
		{
			name: "tab in a block scalar is reported on its line",
			src:  "model: openai:gpt-5\ninstructions: |\n  one\n  two\n\tthree\n",
			want: []string{`agent.yaml:5:1: invalid YAML: found a tab character where an indentation space is expected (indent with spaces: YAML does not allow tabs)`},
		},
		{
			name: "tab after spaces is reported at its column",
			src:  "model: openai:gpt-5\nmodel_settings:\n  seed: 1\n \tmax_tokens: 2\n",
			want: []string{`agent.yaml:4:2: invalid YAML: found a tab character that violates indentation (indent with spaces: YAML does not allow tabs)`},
		},
		{
			name: "reserved character",
			src:  "name: @bot\n",
			want: []string{"agent.yaml:1:7: invalid YAML: found character that cannot start any token (a value starting with @ must be quoted)"},
		},
		{
			name: "not a mapping",
			src:  "just text\n",
			want: []string{`agent.yaml:1:1: an agent spec must be a mapping (model: ..., instructions: ...), found "just text" (a string)`},
		},
		{
			name: "empty file",
			src:  "# nothing yet\n",
			want: []string{`agent.yaml:1:1: the file is empty: an agent spec is a mapping with keys such as model, instructions and capabilities`},
		},
		{
			name: "infinite number",
			src:  "tool_timeout: .inf\n",
			want: []string{`agent.yaml:1:15: tool_timeout: expected a finite number JSON can represent, found .inf`},
		},
		{
			name: "integer too large for Go",
			src:  "retries: 1e30\n",
			want: []string{`agent.yaml:1:10: retries: expected an integer of at most 9223372036854775807, found 1e30`},
		},
		{
			// A URL is echoed as a server's URL is shown everywhere: not
			// its password or query, where tokens are put.
			name: "a URL refused is echoed without its secrets",
			src:  "model: test\nmodel_settings: {base_url: \"ws://u:pw@h/v1?key=s3cret#x\"}\n",
			want: []string{`agent.yaml:2:28: model_settings.base_url: expected an http:// or https:// URL, found "ws://u:xxxxx@h/v1?…"`},
		},
		{
			name: "a URL refused is echoed without a path segment that may be a token",
			src:  "model: test\nmodel_settings: {base_url: \"ws://h/v1/sk-4f9a0c7d2b/chat\"}\n",
			want: []string{`agent.yaml:2:28: model_settings.base_url: expected an http:// or https:// URL, found "ws://h/v1/…/chat"`},
		},
		{
			// base_url is a URL even written without its scheme's //,
			// and is shown as one.
			name: "a base_url without its scheme is echoed without its secrets",
			src:  "model: test\nmodel_settings: {base_url: \"api.example.com:443/v1/sk-4f9a0c7d2b?api_key=sk-secret\"}\n",
			want: []string{`agent.yaml:2:28: model_settings.base_url: expected an http:// or https:// URL, found "api.example.com:443/v1/…?…"`},
		},
		{
			name: "a base_url that does not parse is not echoed",
			src:  "model: test\nmodel_settings: {base_url: \":sk-secret@h/v1\"}\n",
			want: []string{`agent.yaml:2:28: model_settings.base_url: expected an http:// or https:// URL, found an unparsable URL`},
		},
		{
			name: "custom tag",
			src:  "model: !secret openai\n",
			want: []string{`agent.yaml:1:8: model: unsupported YAML tag !secret; remove it, or quote the value`},
		},
		{
			name: "custom tag on a capability is one error, at the tag",
			src:  "capabilities:\n  - !custom FileSystem\n",
			want: []string{`agent.yaml:2:5: capabilities[0]: unsupported YAML tag !custom; remove it, or quote the value`},
		},
		{
			name: "number too large for a float",
			src:  "tool_timeout: 1e400\n",
			want: []string{`agent.yaml:1:15: tool_timeout: expected a finite number JSON can represent, found 1e400`},
		},
		{
			name: "numbers are shown as written",
			src:  "max_tool_rounds: 0x0\ncapabilities:\n  - Memory: 1_0\n  - FileSystem: 0o7\n",
			want: []string{
				`agent.yaml:1:18: max_tool_rounds: expected a positive integer, found 0x0`,
				`agent.yaml:3:13: capabilities[0].Memory: Memory takes no options, found 1_0 (a number); write just - Memory`,
				`agent.yaml:4:17: capabilities[1].FileSystem.root_dir: expected a string, found 0o7 (a number)`,
			},
		},
		{
			name: "a value of the wrong kind for a list of choices",
			src:  "end_strategy: 5\n",
			want: []string{`agent.yaml:1:15: end_strategy: expected one of "early", "graceful", "exhaustive", found 5 (a number)`},
		},
		{
			name: "a bound of a JSON Schema keyword",
			src:  "output_schema:\n  type: object\n  multipleOf: -0.5\n",
			want: []string{`agent.yaml:3:15: output_schema.multipleOf: expected more than 0, found -0.5`},
		},
		{
			name: "a number that is not a spec",
			src:  "42\n",
			want: []string{`agent.yaml:1:1: an agent spec must be a mapping (model: ..., instructions: ...), found 42 (a number)`},
		},
		{
			name: "unknown extension",
			file: "agent.txt",
			src:  "model: openai:gpt-5\n",
			want: []string{`agent.txt: could not infer the format of "agent.txt": an agent spec file must end in .yaml, .yml or .json`},
		},
		{
			name: "JSON schema error",
			file: "agent.json",
			src:  "{\n  \"model\": \"openai:gpt-5\",\n  \"max_tool_rounds\": \"ten\"\n}\n",
			want: []string{`agent.json:3:22: max_tool_rounds: expected a positive integer, found "ten" (a string)`},
		},
		{
			name: "JSON unknown key points at the key",
			file: "agent.json",
			src:  `{"model": "openai:gpt-5", "modle": "x"}`,
			want: []string{`agent.json:1:27: unknown key "modle" (did you mean "model"?)`},
		},
		{
			name: "JSON syntax error",
			file: "agent.json",
			src:  "{\n  \"model\": \"openai:gpt-5\"\n  \"name\": \"x\"\n}\n",
			want: []string{`agent.json:3:3: invalid JSON: invalid character '"' after object key:value pair`},
		},
		{
			name: "JSON truncated",
			file: "agent.json",
			src:  "{\"model\": \"openai:gpt-5\",",
			want: []string{`agent.json:1:26: invalid JSON: unexpected end of file (is a brace, a bracket or a quote left open?)`},
		},
		{
			name: "JSON not an object",
			file: "agent.json",
			src:  "  [1, 2]",
			want: []string{`agent.json:1:3: an agent spec must be a mapping (model: ..., instructions: ...), found a list`},
		},
		{
			name: "JSON numbers are shown as written",
			file: "agent.json",
			src:  `{"retries": -1e0, "max_tool_rounds": 1e400, "model_settings": {"seed": 99999999999999999999999}}`,
			want: []string{
				`agent.json:1:13: retries: expected a non-negative integer, found -1e0`,
				`agent.json:1:38: max_tool_rounds: expected a finite number JSON can represent, found 1e400`,
				`agent.json:1:72: model_settings.seed: expected an integer of at most 9223372036854775807, found 99999999999999999999999`,
			},
		},
		{
			name: "JSON number that is not a spec",
			file: "agent.json",
			src:  "1e2",
			want: []string{`agent.json:1:1: an agent spec must be a mapping (model: ..., instructions: ...), found 1e2 (a number)`},
		},
		{
			name: "JSON duplicate key",
			file: "agent.json",
			src:  "{\"name\": \"a\",\n \"name\": {\"x\": 1}}",
			want: []string{`agent.json:2:2: duplicate key "name" (already set on line 1)`},
		},
		{
			name: "JSON empty",
			file: "agent.json",
			src:  " \n",
			want: []string{`agent.json:1:1: the file is empty: an agent spec is a mapping with keys such as model, instructions and capabilities`},
		},
		{
			name: "errors are sorted by position",
			src:  "retries: x\nname: 1\nmodel: 2\n",
			want: []string{
				`agent.yaml:1:10: retries: expected a non-negative integer, or a mapping (tools: 3, output: 2), found "x" (a string)`,
				`agent.yaml:2:7: name: expected a string, found 1 (a number)`,
				`agent.yaml:3:8: model: expected "provider:name" (e.g. "anthropic:claude-sonnet-4-6") or test, found 2 (a number)`,
			},
		},
	}
	l := testLoader(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := tc.file
			if file == "" {
				file = "agent.yaml"
			}
			s, err := l.Load(file, []byte(tc.src))
			assert.Nil(t, s)
			var errs Errors
			require.ErrorAs(t, err, &errs)
			assert.Equal(t, strings.Join(tc.want, "\n"), err.Error())
		})
	}
}

func TestCapabilityErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		entry string // one capabilities entry, written at line 2 column 5
		want  string
	}{
		{"unknown type", "- FileSytem",
			`agent.yaml:2:5: capabilities[0]: unknown capability type "FileSytem" (did you mean "FileSystem"?); valid types: FileSystem, Memory, Thinking, WebSearch`},
		{"unknown type without a close match", "- Browser: {}",
			`agent.yaml:2:5: capabilities[0]: unknown capability type "Browser"; valid types: FileSystem, Memory, Thinking, WebSearch`},
		{"unknown type in the long form", "- {name: Memroy}",
			`agent.yaml:2:12: capabilities[0]: unknown capability type "Memroy" (did you mean "Memory"?); valid types: FileSystem, Memory, Thinking, WebSearch`},
		{"several keys", "- {FileSystem: ., Memory: }",
			`agent.yaml:2:5: capabilities[0]: expected a single key naming the capability type, found keys [FileSystem, Memory]; give each capability an entry of its own, starting with -`},
		{"options not indented", "- FileSystem:\n    read_only: true",
			`agent.yaml:2:5: capabilities[0]: expected a single key naming the capability type, found keys [FileSystem, read_only]; to give FileSystem options, indent them under "FileSystem:"`},
		{"unknown option", "- FileSystem: {root_dir: ., allowed_pattern: ['*.go']}",
			`agent.yaml:2:31: capabilities[0].FileSystem: unknown option "allowed_pattern" (did you mean "allowed_patterns"?)`},
		{"unknown option with no close match", "- Thinking: {depth: 3}",
			`agent.yaml:2:16: capabilities[0].Thinking: unknown option "depth" (valid options: budget, defer_loading, description, effort, id)`},
		{"option of the wrong type", "- FileSystem:\n      read_only: 1",
			`agent.yaml:3:18: capabilities[0].FileSystem.read_only: expected true or false, found 1 (a number)`},
		{"option out of range", "- Thinking: {budget: 10}",
			`agent.yaml:2:24: capabilities[0].Thinking.budget: expected an integer of at least 1024, found 10`},
		{"option enum", "- Thinking: {effort: hgih}",
			`agent.yaml:2:24: capabilities[0].Thinking.effort: expected one of "low", "medium", "high", found "hgih" (did you mean "high"?)`},
		{"duplicate list items", "- FileSystem: {tools: [grep, grep]}",
			`agent.yaml:2:25: capabilities[0].FileSystem.tools: items [0] and [1] are the same; each item must be different`},
		{"missing required option", "- WebSearch: {max_results: 5}",
			`agent.yaml:2:16: capabilities[0].WebSearch: missing required option "engine"`},
		{"positional value of the wrong type", "- FileSystem: [a, b]",
			`agent.yaml:2:17: capabilities[0].FileSystem.root_dir: expected a string, found a list`},
		{"no positional option", "- Thinking: high",
			`agent.yaml:2:15: capabilities[0].Thinking: Thinking takes its options as a mapping (- Thinking: {option: value}), with options budget, effort; found "high" (a string)`},
		{"no options at all", "- Memory: 3",
			`agent.yaml:2:13: capabilities[0].Memory: Memory takes no options, found 3 (a number); write just - Memory`},
		{"options to a type without any", "- Memory: {size: 3}",
			`agent.yaml:2:13: capabilities[0].Memory: Memory takes no options, found a mapping`},
		{"long form with an unknown key", "- {name: Memory, args: {}}",
			`agent.yaml:2:20: capabilities[0]: unknown key "args" in a capability's long form (valid keys: name, arguments)`},
		{"long form name not a string", "- {name: [Memory]}",
			`agent.yaml:2:12: capabilities[0].name: expected a capability type name, found a list`},
		{"long form with a list of two", "- {name: FileSystem, arguments: [a, b]}",
			`agent.yaml:2:35: capabilities[0].arguments: expected a mapping of options, a single value, or a list of one positional value, found a list of 2 items`},
		{"long form positional checked", "- {name: FileSystem, arguments: [5]}",
			`agent.yaml:2:36: capabilities[0].arguments.root_dir: expected a string, found 5 (a number)`},
		{"not an entry", "- [FileSystem]",
			`agent.yaml:2:5: capabilities[0]: expected a capability: a type name (- FileSystem) or a mapping from the type name to its options (- FileSystem: {root_dir: .}), found a list`},
	}
	l := testLoader(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := l.Load("agent.yaml", []byte("capabilities:\n  "+tc.entry+"\n"))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// TestLoadReferenceExample loads the FileSystem documentation's example and
// checks every field it fills.
func TestLoadReferenceExample(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).LoadFile(filepath.Join(specsDir, "valid", "reference.yaml"))
	require.NoError(t, err)
	assert.Equal(t, "anthropic:claude-sonnet-4-6", s.Model)
	assert.Equal(t, 1, s.Version)
	assert.Equal(t, DefaultRetries, s.Retries)
	assert.Equal(t, DefaultMaxToolRounds, s.MaxToolRounds)
	assert.Nil(t, s.Cache)
	require.Len(t, s.Capabilities, 1)
	c := s.Capabilities[0]
	assert.Equal(t, "FileSystem", c.Name)
	assert.JSONEq(t, `{"root_dir": "./workspace", "allowed_patterns": ["*.py", "*.toml"]}`, string(c.Options))
	assert.Equal(t, "/capabilities/0/FileSystem", c.Pointer)
	assert.Equal(t, Position{File: s.File, Line: 4, Col: 5}, c.Pos)
	assert.Equal(t, Position{File: s.File, Line: 6, Col: 25}, s.Position(c.Pointer+"/allowed_patterns"))
}

// TestLoadFull checks that every key of the schema reaches the Spec.
func TestLoadFull(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).LoadFile(filepath.Join(specsDir, "valid", "full.yaml"))
	require.NoError(t, err)
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	b := func(v bool) *bool { return &v }
	assert.Equal(t, "reviewer", s.Name)
	assert.Equal(t, "Reviews a pull request and writes its findings to review.md.", s.Description)
	assert.Equal(t, []string{"You are a careful code reviewer.", "Focus on {{focus}}, and be brief."}, s.Instructions)
	assert.Equal(t, ModelSettings{
		Temperature:       f(0.2),
		MaxTokens:         4096,
		TopP:              f(0.9),
		Seed:              i(7),
		PresencePenalty:   f(0),
		FrequencyPenalty:  f(0.5),
		StopSequences:     []string{"END"},
		ParallelToolCalls: b(false),
		Timeout:           120 * time.Second,
		BaseURL:           "https://proxy.example.com/v1",
		ExtraHeaders:      map[string]string{"X-Team": "platform"},
		LogitBias:         map[string]int{"50256": -100},
		ExtraBody:         map[string]any{"reasoning": map[string]any{"effort": "high"}},
	}, s.ModelSettings)
	assert.Equal(t, 2, s.Retries)
	assert.Equal(t, 30500*time.Millisecond, s.ToolTimeout)
	assert.Equal(t, map[string]any{"owner": "platform", "tags": []any{"review"}, "ticket": json.Number("1234")}, s.Metadata)
	assert.JSONEq(t, `{"type": "object", "required": ["verdict"], "properties": {
		"verdict": {"enum": ["approve", "request_changes"]},
		"notes": {"type": "array", "items": {"type": "string", "pattern": "^\\S"}}}}`, string(s.OutputSchema))
	assert.Equal(t, "exhaustive", s.EndStrategy)
	assert.JSONEq(t, `{"type": "object", "properties": {"focus": {"type": "string"}}}`, string(s.DepsSchema))
	assert.Equal(t, 25, s.MaxToolRounds)
	require.Len(t, s.Capabilities, 2)
	assert.Equal(t, "FileSystem", s.Capabilities[1].Name)
	assert.JSONEq(t, `{"root_dir": "./notes"}`, string(s.Capabilities[1].Options))
	assert.Equal(t, Workspace{
		InputGlobs:          []string{"src/**/*.go"},
		ExpectedOutputFiles: []string{"review.md"},
		Checks: []Check{
			{File: "review.md", MinChars: i(200), MaxChars: i(20000), Contains: "## Findings", Matches: "(?m)^- ",
				Pos: Position{File: s.File, Line: 52, Col: 7}},
			{File: "review.json", JSONSchema: json.RawMessage(`{"required":["verdict"],"type":"object"}`),
				Pos: Position{File: s.File, Line: 57, Col: 7}},
		},
	}, s.Workspace)
	assert.Equal(t, &Cache{Dir: ".agentspec-cache"}, s.Cache)
}

func TestCapabilityForms(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).LoadFile(filepath.Join(specsDir, "valid", "capability-forms.yaml"))
	require.NoError(t, err)
	want := []struct{ options, pointer string }{
		{`{}`, "/capabilities/0"},
		{`{}`, "/capabilities/1/FileSystem"},
		{`{}`, "/capabilities/2/FileSystem"},
		{`{"root_dir": "./repo"}`, "/capabilities/3/FileSystem"},
		{`{"root_dir": "./docs", "read_only": true}`, "/capabilities/4/FileSystem"},
		{`{}`, "/capabilities/5"},
		{`{"root_dir": "./other"}`, "/capabilities/6/arguments"},
		{`{"root_dir": "./third"}`, "/capabilities/7/arguments"},
		{`{"root_dir": "./fourth", "tools": ["read_file", "grep"]}`, "/capabilities/8/arguments"},
	}
	require.Len(t, s.Capabilities, len(want))
	for i, w := range want {
		c := s.Capabilities[i]
		assert.Equal(t, "FileSystem", c.Name, i)
		assert.JSONEq(t, w.options, string(c.Options), i)
		assert.Equal(t, w.pointer, c.Pointer, i)
	}
	// A positional value's option sits where the value is written.
	assert.Equal(t, Position{File: s.File, Line: 8, Col: 17}, s.Position("/capabilities/3/FileSystem/root_dir"))
	assert.Equal(t, &Cache{}, s.Cache)
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).LoadFile(filepath.Join(specsDir, "valid", "anchors.yaml"))
	require.NoError(t, err)
	assert.Equal(t, []string{"Only touch files under src/.", "Never delete tests."}, s.Instructions)
	require.Len(t, s.Capabilities, 2)
	assert.JSONEq(t, `{"root_dir": "./service-a", "read_only": true, "denied_patterns": ["vendor/*"]}`, string(s.Capabilities[0].Options))
	assert.JSONEq(t, `{"root_dir": "./service-b", "read_only": false, "denied_patterns": ["vendor/*"]}`, string(s.Capabilities[1].Options))
	// A merged value keeps the position of the anchored text.
	assert.Equal(t, 6, s.Position("/capabilities/0/FileSystem/denied_patterns").Line)
}

func TestAnchorErrors(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	tests := []struct{ name, src, want string }{
		{
			name: "an error inside an alias is reported where the anchor is written",
			src:  "metadata:\n  fs: &fs {read_only: maybe}\ncapabilities:\n  - FileSystem: *fs\n",
			want: `agent.yaml:2:23: capabilities[0].FileSystem.read_only: expected true or false, found "maybe" (a string)`,
		},
		{
			name: "an alias used in the wrong place is reported at the alias",
			src:  "metadata:\n  list: &l [a]\nname: *l\n",
			want: `agent.yaml:3:7: name: expected a string, found a list`,
		},
		{
			name: "merging a list of mappings: the first one wins",
			src:  "a: &a {read_only: true}\nb: &b {read_only: 1}\n",
			want: "agent.yaml:1:1: unknown key \"a\" (valid keys: $schema, cache, capabilities, deps_schema, description, end_strategy, instructions, instrument, max_tool_rounds, metadata, model, model_settings, name, output_schema, retries, tool_timeout, version, workspace)\n" +
				"agent.yaml:2:1: unknown key \"b\" (valid keys: $schema, cache, capabilities, deps_schema, description, end_strategy, instructions, instrument, max_tool_rounds, metadata, model, model_settings, name, output_schema, retries, tool_timeout, version, workspace)",
		},
		{
			name: "merging a list that holds something else",
			src:  "metadata:\n  l: &l [{max_tokens: 1}, b]\nmodel_settings:\n  <<: *l\n",
			want: `agent.yaml:2:27: model_settings: <<: expected a mapping or a list of mappings to merge, found "b" (a string)`,
		},
		{
			name: "merging something that is not a mapping",
			src:  "metadata:\n  l: &l a\nmodel_settings:\n  <<: *l\n",
			want: `agent.yaml:4:7: model_settings: <<: expected a mapping or a list of mappings to merge, found "a" (a string)`,
		},
		{
			name: "an alias inside its own anchor",
			src:  "metadata: &m\n  self: *m\n",
			want: `agent.yaml:2:9: metadata.self: alias *m refers to a value that contains it`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := l.Load("agent.yaml", []byte(tc.src))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}

	t.Run("merge order", func(t *testing.T) {
		t.Parallel()
		src := "metadata:\n  a: &a {read_only: true, cwd: a}\n  b: &b {read_only: false, root_dir: b, cwd: b}\n" +
			"capabilities:\n  - FileSystem:\n      <<: [*a, *b]\n      cwd: mine\n"
		s, err := l.Load("agent.yaml", []byte(src))
		require.NoError(t, err)
		assert.JSONEq(t, `{"read_only": true, "root_dir": "b", "cwd": "mine"}`, string(s.Capabilities[0].Options))
	})

	t.Run("exponential aliases are cut off", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		b.WriteString("metadata:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n")
		for i := 1; i < 8; i++ {
			b.WriteString("  l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
			for j := 0; j < 10; j++ {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString("*l" + string(rune('0'+i-1)))
			}
			b.WriteString("]\n")
		}
		_, err := l.Load("agent.yaml", []byte(b.String()))
		require.Error(t, err)
		// The values are short: it is their size that is too much.
		assert.Regexp(t, `^agent.yaml:\d+:\d+: metadata.l\d(\[\d\])?: alias \*l\d expands to too much: the spec holds more than 2 MB`, err.Error())
	})
}

func TestLoadJSON(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).LoadFile(filepath.Join(specsDir, "valid", "agent.json"))
	require.NoError(t, err)
	assert.Equal(t, "anthropic:claude-sonnet-4-6", s.Model)
	assert.Equal(t, 10, s.MaxToolRounds, "10.0 is an integer")
	require.Len(t, s.Capabilities, 3)
	assert.Equal(t, Position{File: s.File, Line: 6, Col: 5}, s.Capabilities[0].Pos)
	assert.Equal(t, Position{File: s.File, Line: 6, Col: 33}, s.Position("/capabilities/0/FileSystem/root_dir"))
	assert.Equal(t, Position{File: s.File, Line: 7, Col: 5}, s.Capabilities[1].Pos)

	t.Run("byte order mark and non-ASCII columns", func(t *testing.T) {
		t.Parallel()
		_, err := testLoader(t).Load("a.json", []byte("\ufeff{\"name\": \"été\", \"modle\": 1}"))
		require.Error(t, err)
		assert.Equal(t, `a.json:1:17: unknown key "modle" (did you mean "model"?)`, err.Error())
	})
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := LoadFile(filepath.Join(dir, "agent.yaml"))
	require.Error(t, err)
	assert.Equal(t, filepath.Join(dir, "agent.yaml")+": no such file", err.Error())
	assert.ErrorIs(t, err, fs.ErrNotExist)
	var errs Errors
	assert.False(t, errors.As(err, &errs), "an I/O failure is not a spec problem")

	require.NoError(t, os.Mkdir(filepath.Join(dir, "d.yaml"), 0o755))
	_, err = LoadFile(filepath.Join(dir, "d.yaml"))
	assert.Equal(t, filepath.Join(dir, "d.yaml")+": is a directory, not a spec file", err.Error())

	path := filepath.Join(dir, "ok.yml")
	require.NoError(t, os.WriteFile(path, []byte("model: openai:gpt-5\n"), 0o644))
	s, err := LoadFile(path)
	require.NoError(t, err)
	assert.Equal(t, path, s.File)
}

func TestPositions(t *testing.T) {
	t.Parallel()
	src := "model: openai:gpt-5\nworkspace:\n  checks:\n    - file: a.md\n      contains: x\n"
	s, err := testLoader(t).Load("a.yaml", []byte(src))
	require.NoError(t, err)
	tests := []struct {
		ptr  string
		want Position
	}{
		{"", Position{File: "a.yaml", Line: 1, Col: 1}},
		{"/model", Position{File: "a.yaml", Line: 1, Col: 8}},
		{"/workspace/checks/0", Position{File: "a.yaml", Line: 4, Col: 7}},
		{"/workspace/checks/0/contains", Position{File: "a.yaml", Line: 5, Col: 17}},
		{"/workspace/checks/0/nothing/here", Position{File: "a.yaml", Line: 4, Col: 7}},
		{"/nothing", Position{File: "a.yaml", Line: 1, Col: 1}},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, s.Position(tc.ptr), tc.ptr)
	}
	assert.Equal(t, Position{File: "x.yaml"}, (&Spec{File: "x.yaml"}).Position("/model"), "a Spec built by hand")
}

func TestErrorsJSON(t *testing.T) {
	t.Parallel()
	_, err := testLoader(t).Load("a.yaml", []byte("name: 1\n"))
	var errs Errors
	require.ErrorAs(t, err, &errs)
	b, err := json.Marshal(errs)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"file": "a.yaml", "line": 1, "column": 7, "message": "name: expected a string, found 1 (a number)"}]`, string(b))

	b, err = json.Marshal(&Error{Pos: Position{File: "b.toml"}, Msg: "m"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"file": "b.toml", "message": "m"}`, string(b))

	var one *Error
	require.ErrorAs(t, errs, &one, "an Errors unwraps to its *Error values")
	assert.Equal(t, 7, one.Pos.Col)
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).Load("a.yaml", []byte("{}\n"))
	require.NoError(t, err)
	assert.Equal(t, &Spec{
		File:          "a.yaml",
		Version:       1,
		Retries:       DefaultRetries,
		MaxToolRounds: DefaultMaxToolRounds,
		Document:      map[string]any{},
		positions:     s.positions,
		keys:          s.keys,
		src:           s.src,
	}, s)

	s, err = testLoader(t).Load("a.yaml", []byte("cache: false\ninstructions: one\nretries: 0\n"))
	require.NoError(t, err)
	assert.Nil(t, s.Cache)
	assert.Equal(t, []string{"one"}, s.Instructions)
	assert.Equal(t, 0, s.Retries, "0 retries is a choice, not a missing value")
}

// TestSchemaMatchesTypes keeps the embedded schema and the types the loader
// decodes into in step: every key of one is a field of the other.
func TestSchemaMatchesTypes(t *testing.T) {
	t.Parallel()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(schema.Agent(), &doc))
	props := func(ptr string) []string {
		return propertyNames(valueAt(doc, ptr).(map[string]any))
	}
	tags := func(v any) []string {
		var names []string
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			names = append(names, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		}
		slices.Sort(names)
		return names
	}
	assert.Equal(t, props(""), tags(rawSpec{}))
	settings := append(tags(rawSettings{}), ProviderSettingKeys...)
	slices.Sort(settings)
	assert.Equal(t, props("/properties/model_settings"), settings)
	assert.Equal(t, props("/properties/workspace"), tags(rawWorkspace{}))
	assert.Equal(t, props("/properties/workspace/properties/checks/items"), tags(rawCheck{}))
	assert.Equal(t, props("/properties/cache/anyOf/1"), tags(rawCache{}))
}

func TestDocumentIsTheMeaningNotTheText(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	a, err := l.Load("a.yaml", []byte("# a comment\nmodel: openai:gpt-4.1\nmax_tool_rounds: 5\n"))
	require.NoError(t, err)
	b, err := l.Load("b.json", []byte(`{"max_tool_rounds": 5, "model": "openai:gpt-4.1"}`))
	require.NoError(t, err)
	assert.Equal(t, a.Document, b.Document)
	assert.Equal(t, "openai:gpt-4.1", a.Document["model"])
}

// A positive number of seconds too small for a Duration's nanosecond is
// still a bound, not the zero that means none.
func TestTinyTimeoutsStayBounds(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).Load("agent.yaml", []byte("model: test\ntool_timeout: 1e-10\nmodel_settings: {timeout: 0.0000000001}\n"))
	require.NoError(t, err)
	assert.Equal(t, time.Nanosecond, s.ToolTimeout)
	assert.Equal(t, time.Nanosecond, s.ModelSettings.Timeout)
}

// The output schema keeps the order its keys are written in: the model is
// shown it so (a reasoning property before the answer asks for the
// reasoning first), and the test model writes its answer in that order,
// as pydantic-ai does.
func TestOutputSchemaKeepsItsOrder(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	for _, c := range []struct{ file, src string }{
		{"a.yaml", `model: test
output_schema:
  type: object
  properties:
    reasoning: {type: string, description: Think first}
    answer:
      type: object
      properties: {value: {type: number}, unit: {enum: [m, km]}}
      required: [value, unit]
  required: [reasoning, answer]
`},
		{"a.yaml", `model: test
x-base: &base {value: {type: number}, unit: {enum: [m, km]}}
output_schema:
  type: object
  properties:
    reasoning: {type: string, description: Think first}
    answer:
      type: object
      properties: *base
      required: [value, unit]
  required: [reasoning, answer]
`},
		{"a.json", `{"model": "test", "output_schema": {"type": "object", "properties": {"reasoning": {"type": "string", "description": "Think first"},
  "answer": {"type": "object", "properties": {"value": {"type": "number"}, "unit": {"enum": ["m", "km"]}}, "required": ["value", "unit"]}},
  "required": ["reasoning", "answer"]}}`},
	} {
		s, err := l.Load(c.file, []byte(c.src))
		require.NoError(t, err)
		assert.Equal(t, `{"type":"object","properties":{"reasoning":{"type":"string","description":"Think first"},`+
			`"answer":{"type":"object","properties":{"value":{"type":"number"},"unit":{"enum":["m","km"]}},"required":["value","unit"]}},`+
			`"required":["reasoning","answer"]}`, string(s.OutputSchema), c.src)
	}
}
