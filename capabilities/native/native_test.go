package native_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/native"
	"github.com/agentspec/agentspec/spec"
)

func build(t *testing.T, yaml string) ([]capabilities.Capability, error) {
	t.Helper()
	s, err := (&spec.Loader{}).Load("agent.yaml", []byte(yaml))
	if err != nil {
		return nil, err
	}
	return spec.Instantiate(context.Background(), s, capabilities.Default(), capabilities.Setup{Dir: t.TempDir()})
}

func TestWebSearch(t *testing.T) {
	t.Parallel()
	caps, err := build(t, "capabilities:\n  - WebSearch: {max_uses: 3, allowed_domains: [example.com], user_location: {country: DE}}\n")
	require.NoError(t, err)
	nt, ok := caps[0].(capabilities.NativeTooler)
	require.True(t, ok)
	tools := nt.NativeTools()
	require.Len(t, tools, 1)
	assert.Equal(t, "web_search", tools[0].Kind)
	assert.False(t, tools[0].LocalFallback, "agentspec has no local search")
	assert.Equal(t, json.Number("3"), tools[0].Options["max_uses"])
	assert.Equal(t, []any{"example.com"}, tools[0].Options["allowed_domains"])
	local, err := caps[0].Tools(context.Background())
	require.NoError(t, err)
	assert.Empty(t, local)
	assert.Empty(t, tools[0].Fallback)

	for yaml, want := range map[string]string{
		"capabilities:\n  - WebSearch: {local: duckduckgo}\n": "duckduckgo",
		"capabilities:\n  - WebSearch: {local: true}\n":       "duckduckgo",
		"capabilities:\n  - WebSearch: {local: false}\n":      "",
	} {
		caps, err := build(t, yaml)
		require.NoError(t, err, "pydantic-ai's local fallback is accepted: %s", yaml)
		tools := caps[0].(capabilities.NativeTooler).NativeTools()
		assert.Equal(t, want, tools[0].Fallback, "named for the refusal on a provider without native search: %s", yaml)
		assert.False(t, tools[0].LocalFallback, "agentspec runs no local search: %s", yaml)
	}
}

func TestNativeTool(t *testing.T) {
	t.Parallel()
	for _, yaml := range []string{
		"capabilities:\n  - NativeTool: {kind: web_fetch, max_uses: 2, optional: true}\n",
		"capabilities:\n  - NativeTool: {tool: {kind: web_fetch, max_uses: 2, optional: true}}\n",
		// tool is NativeTool's positional argument, which the long form
		// gives as a list of one, as pydantic-ai's to_file writes a mapping.
		"capabilities:\n  - name: NativeTool\n    arguments: [{kind: web_fetch, max_uses: 2, optional: true}]\n",
	} {
		caps, err := build(t, yaml)
		require.NoError(t, err, yaml)
		tools := caps[0].(capabilities.NativeTooler).NativeTools()
		require.Len(t, tools, 1)
		assert.Equal(t, capabilities.NativeTool{Kind: "web_fetch", Options: map[string]any{"max_uses": json.Number("2")}, LocalFallback: true}, tools[0],
			"optional: a provider without it drops it")
	}
}

func TestThinking(t *testing.T) {
	t.Parallel()
	type setting struct {
		enabled bool
		effort  string
		set     bool
	}
	for yaml, want := range map[string]setting{
		"capabilities:\n  - Thinking\n":                 {true, "", true},
		"capabilities:\n  - Thinking: high\n":           {true, "high", true},
		"capabilities:\n  - Thinking: false\n":          {false, "", true},
		"capabilities:\n  - Thinking: {effort: low}\n":  {true, "low", true},
		"capabilities:\n  - Thinking: {effort: null}\n": {true, "", false},
		// pydantic-ai passes `- Thinking:` on as one positional null, which
		// leaves thinking unset and hides model_settings.thinking.
		"capabilities:\n  - Thinking:\n":                           {true, "", false},
		"capabilities:\n  - name: Thinking\n    arguments: null\n": {true, "", true},
	} {
		caps, err := build(t, yaml)
		require.NoError(t, err, yaml)
		th, ok := caps[0].(*native.Thinking)
		require.True(t, ok)
		var got setting
		got.enabled, got.effort, got.set = th.ThinkingSetting()
		assert.Equal(t, want, got, yaml)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		// The schema refuses these when the spec loads (agentspec validate).
		"capabilities:\n  - WebSearch: {local: tavily}\n": `agent.yaml:2:24: capabilities[0].WebSearch.local: expected duckduckgo, true (duckduckgo), false or null, found "tavily"`,
		// The factory refuses what the schema cannot see.
		"capabilities:\n  - WebSearch: {native: false}\n":                          "agent.yaml:2:25: capabilities[0].WebSearch.native: false leaves WebSearch nothing to do: agentspec runs no local search",
		"capabilities:\n  - WebSearch: {native: false, local: duckduckgo}\n":       "agent.yaml:2:25: capabilities[0].WebSearch.native: false asks for the local duckduckgo search alone, which agentspec does not run; remove native: false to use the provider's search",
		"capabilities:\n  - NativeTool: {kind: x_search}\n":                        `agent.yaml:2:24: capabilities[0].NativeTool.kind: expected web_search, web_fetch or code_execution (agentspec sends no other native tool kind to a provider yet), found "x_search"`,
		"capabilities:\n  - name: NativeTool\n    arguments: [{kind: x_search}]\n": `agent.yaml:3:24: capabilities[0].arguments.tool.kind: expected web_search, web_fetch or code_execution (agentspec sends no other native tool kind to a provider yet), found "x_search"`,
		"capabilities:\n  - NativeTool: {tool: {kind: x_search}}\n":                `agent.yaml:2:31: capabilities[0].NativeTool.tool.kind: expected web_search, web_fetch or code_execution (agentspec sends no other native tool kind to a provider yet), found "x_search"`,
		// The factory refuses what the schema cannot see.
		// A kind not written is missing from the options, or the tool, where
		// they are written, or from the entry.
		"capabilities:\n  - NativeTool: {}\n":         "agent.yaml:2:17: capabilities[0].NativeTool: NativeTool needs a kind: one of web_search, web_fetch, code_execution",
		"capabilities:\n  - NativeTool\n":             "agent.yaml:2:5: capabilities[0]: NativeTool needs a kind: one of web_search, web_fetch, code_execution",
		"capabilities:\n  - NativeTool: web_search\n": `agent.yaml:2:17: capabilities[0].NativeTool.tool: expected a native tool: {kind: web_search, ...}, found "web_search" (a string)`,
		"capabilities:\n  - NativeTool: {tool: {}}\n": "agent.yaml:2:24: capabilities[0].NativeTool.tool: NativeTool needs a kind: one of web_search, web_fetch, code_execution",
	} {
		_, err := build(t, yaml)
		require.Error(t, err, yaml)
		assert.Equal(t, want, err.Error(), yaml)
	}
}

// TestNativeToolOptionTypes: a NativeTool option of the wrong type is
// refused when the spec loads, at the value, in either form, as WebSearch's
// are, since agentspec validate is what a CI runs and the provider would
// refuse the value (or be sent it as the wrong type) only at the first
// request. A string is taken only where it holds a positive integer
// (TestNativeToolLaxIntegers) or, for a boolean option, a word pydantic
// reads as a bool (TestNativeToolLaxBooleans), as is the number 0 or 1.
func TestNativeToolOptionTypes(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		"capabilities:\n  - NativeTool: {kind: web_search, search_context_size: huge}\n":           `agent.yaml:2:57: capabilities[0].NativeTool.search_context_size: expected one of "low", "medium", "high", found "huge"`,
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: '3.5'}\n":                     `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found "3.5"`,
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: 0}\n":                         `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found 0`,
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: 2.5}\n":                       `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found 2.5`,
		"capabilities:\n  - NativeTool: {kind: web_search, allowed_domains: example.com}\n":        `agent.yaml:2:53: capabilities[0].NativeTool.allowed_domains: expected a list of strings, found "example.com" (a string)`,
		"capabilities:\n  - NativeTool: {kind: web_search, blocked_domains: [example.com, 3]}\n":   `agent.yaml:2:67: capabilities[0].NativeTool.blocked_domains[1]: expected a string, found 3 (a number)`,
		"capabilities:\n  - NativeTool: {kind: web_search, user_location: DE}\n":                   `agent.yaml:2:51: capabilities[0].NativeTool.user_location: expected a mapping, found "DE" (a string)`,
		"capabilities:\n  - NativeTool: {kind: web_search, user_location: {country: 49}}\n":        `agent.yaml:2:61: capabilities[0].NativeTool.user_location.country: expected a string, found 49 (a number)`,
		"capabilities:\n  - NativeTool: {kind: web_search, external_web_access: 'nope'}\n":         `agent.yaml:2:57: capabilities[0].NativeTool.external_web_access: expected true or false, found "nope"`,
		"capabilities:\n  - NativeTool: {kind: web_fetch, max_content_tokens: many}\n":             `agent.yaml:2:55: capabilities[0].NativeTool.max_content_tokens: expected a positive integer, found "many"`,
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: 3}\n":                  `agent.yaml:2:53: capabilities[0].NativeTool.enable_citations: expected true or false, found 3`,
		"capabilities:\n  - NativeTool: {kind: web_fetch, allowed_domains: example.com}\n":         `agent.yaml:2:52: capabilities[0].NativeTool.allowed_domains: expected a list of strings, found "example.com" (a string)`,
		"capabilities:\n  - NativeTool: {tool: {kind: web_search, max_uses: 'three'}}\n":           `agent.yaml:2:53: capabilities[0].NativeTool.tool.max_uses: expected a positive integer, found "three"`,
		"capabilities:\n  - NativeTool: {tool: {kind: web_fetch, allowed_domains: example.com}}\n": `agent.yaml:2:59: capabilities[0].NativeTool.tool.allowed_domains: expected a list of strings, found "example.com" (a string)`,
		"capabilities:\n  - NativeTool: {tool: {kind: web_search, optional: 'yess'}}\n":            `agent.yaml:2:53: capabilities[0].NativeTool.tool.optional: expected true or false, found "yess"`,
		// WebSearch's options, the same tool's, are checked the same way.
		"capabilities:\n  - WebSearch: {search_context_size: huge}\n":                                                     `agent.yaml:2:38: capabilities[0].WebSearch.search_context_size: expected one of "low", "medium", "high", found "huge"`,
		"capabilities:\n  - WebSearch: {allowed_domains: example.com}\n":                                                  `agent.yaml:2:34: capabilities[0].WebSearch.allowed_domains: expected a list of strings, found "example.com" (a string)`,
		"capabilities:\n  - name: NativeTool\n    arguments:\n      kind: web_search\n      search_context_size: [low]\n": `agent.yaml:5:28: capabilities[0].arguments.search_context_size: expected one of "low", "medium", "high", found a list`,
	} {
		_, err := build(t, yaml)
		if assert.Error(t, err, "loaded: %s", yaml) {
			assert.Equal(t, want, err.Error(), yaml)
		}
	}
}

// TestNativeToolOptionsLoad: the values each kind's options take load as
// they are written, null being an option left out, and an option a kind
// does not take is left for the provider to refuse, as before.
func TestNativeToolOptionsLoad(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]map[string]any{
		"capabilities:\n  - NativeTool: {kind: web_search, search_context_size: low, max_uses: 3, allowed_domains: [example.com], blocked_domains: [], user_location: {city: Berlin, country: DE, region: BE, timezone: Europe/Berlin}, external_web_access: false}\n": {
			"search_context_size": "low", "max_uses": json.Number("3"), "allowed_domains": []any{"example.com"}, "blocked_domains": []any{},
			"user_location": map[string]any{"city": "Berlin", "country": "DE", "region": "BE", "timezone": "Europe/Berlin"}, "external_web_access": false,
		},
		"capabilities:\n  - NativeTool: {kind: web_fetch, max_uses: 1, allowed_domains: [example.com], enable_citations: yes, max_content_tokens: 1000}\n": {
			"max_uses": json.Number("1"), "allowed_domains": []any{"example.com"}, "enable_citations": true, "max_content_tokens": json.Number("1000"),
		},
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: null, search_context_size: ~}\n":     {},
		"capabilities:\n  - NativeTool: {tool: {kind: web_fetch, max_uses: null, enable_citations: ~}}\n": {},
		"capabilities:\n  - NativeTool: {kind: code_execution, files: [a.csv]}\n":                         {"files": []any{"a.csv"}},
		"capabilities:\n  - NativeTool: {kind: web_fetch, search_context_size: huge}\n":                   {"search_context_size": "huge"},
	} {
		caps, err := build(t, yaml)
		require.NoError(t, err, yaml)
		tools := caps[0].(capabilities.NativeTooler).NativeTools()
		require.Len(t, tools, 1)
		assert.Equal(t, want, tools[0].Options, yaml)
	}
}

// TestNativeToolLaxIntegers: pydantic-ai validates a NativeTool in
// pydantic's lax mode, so an integer option given as a string holding an
// integer is that integer, read as spec reads retries: "3", and is sent as
// the number; a string pydantic refuses is refused at the value.
func TestNativeToolLaxIntegers(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]map[string]any{
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: '3'}\n":                               {"max_uses": json.Number("3")},
		"capabilities:\n  - NativeTool: {tool: {kind: web_search, max_uses: '3'}}\n":                       {"max_uses": json.Number("3")},
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: ' +3 '}\n":                            {"max_uses": json.Number("3")},
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: '3.0'}\n":                             {"max_uses": json.Number("3")},
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: '007'}\n":                             {"max_uses": json.Number("7")},
		"capabilities:\n  - NativeTool: {kind: web_fetch, max_uses: \"2\", max_content_tokens: '1_000'}\n": {"max_uses": json.Number("2"), "max_content_tokens": json.Number("1000")},
		"capabilities:\n  - NativeTool: {kind: web_fetch, max_content_tokens: '10_000.00'}\n":              {"max_content_tokens": json.Number("10000")},
	} {
		caps, err := build(t, yaml)
		require.NoError(t, err, yaml)
		tools := caps[0].(capabilities.NativeTooler).NativeTools()
		require.Len(t, tools, 1)
		assert.Equal(t, want, tools[0].Options, yaml)
		body, err := json.Marshal(tools[0].Options)
		require.NoError(t, err)
		assert.NotContains(t, string(body), `:"`, "sent as a number: %s", yaml)
	}
	for yaml, want := range map[string]string{
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: three}\n":               `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found "three"`,
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: '2.5'}\n":               `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found "2.5"`,
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: '0'}\n":                 `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found "0"`,
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: '-2'}\n":                `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found "-2"`,
		"capabilities:\n  - NativeTool: {kind: web_search, max_uses: ''}\n":                  `agent.yaml:2:46: capabilities[0].NativeTool.max_uses: expected a positive integer, found an empty string`,
		"capabilities:\n  - NativeTool: {tool: {kind: web_fetch, max_content_tokens: 1e}}\n": `agent.yaml:2:62: capabilities[0].NativeTool.tool.max_content_tokens: expected a positive integer, found "1e"`,
		// WebSearch's options reach pydantic-ai's capability unconverted,
		// so max_uses: '3' would go to the provider as a string.
		"capabilities:\n  - WebSearch: {max_uses: '3'}\n": `agent.yaml:2:27: capabilities[0].WebSearch.max_uses: expected a positive integer, found "3" (a string)`,
	} {
		_, err := build(t, yaml)
		if assert.Error(t, err, "loaded: %s", yaml) {
			assert.Equal(t, want, err.Error(), yaml)
		}
	}
}

// TestNativeToolLaxBooleans: pydantic-ai validates a NativeTool in
// pydantic's lax mode, so a boolean option (optional, external_web_access,
// enable_citations) given as a word or a number pydantic reads as a bool
// ('yes', 'Off', 'T', 1, 0.0) is that bool, and is sent as one; anything
// else is refused at the value.
func TestNativeToolLaxBooleans(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]capabilities.NativeTool{
		"capabilities:\n  - NativeTool: {kind: web_search, external_web_access: 'no'}\n":                 {Kind: "web_search", Options: map[string]any{"external_web_access": false}},
		"capabilities:\n  - NativeTool: {kind: web_search, external_web_access: 'On'}\n":                 {Kind: "web_search", Options: map[string]any{"external_web_access": true}},
		"capabilities:\n  - NativeTool: {kind: web_search, external_web_access: 0}\n":                    {Kind: "web_search", Options: map[string]any{"external_web_access": false}},
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: 1}\n":                        {Kind: "web_fetch", Options: map[string]any{"enable_citations": true}},
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: 1.0}\n":                      {Kind: "web_fetch", Options: map[string]any{"enable_citations": true}},
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: 'TRUE'}\n":                   {Kind: "web_fetch", Options: map[string]any{"enable_citations": true}},
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: 'f'}\n":                      {Kind: "web_fetch", Options: map[string]any{"enable_citations": false}},
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: '0'}\n":                      {Kind: "web_fetch", Options: map[string]any{"enable_citations": false}},
		"capabilities:\n  - NativeTool: {kind: web_fetch, optional: 'yes'}\n":                            {Kind: "web_fetch", Options: map[string]any{}, LocalFallback: true},
		"capabilities:\n  - NativeTool: {kind: web_fetch, optional: 'Y'}\n":                              {Kind: "web_fetch", Options: map[string]any{}, LocalFallback: true},
		"capabilities:\n  - NativeTool: {kind: web_fetch, optional: 1}\n":                                {Kind: "web_fetch", Options: map[string]any{}, LocalFallback: true},
		"capabilities:\n  - NativeTool: {kind: web_fetch, optional: 'off'}\n":                            {Kind: "web_fetch", Options: map[string]any{}},
		"capabilities:\n  - NativeTool: {tool: {kind: web_search, optional: 'yes'}}\n":                   {Kind: "web_search", Options: map[string]any{}, LocalFallback: true},
		"capabilities:\n  - NativeTool: {tool: {kind: web_fetch, enable_citations: 't'}}\n":              {Kind: "web_fetch", Options: map[string]any{"enable_citations": true}},
		"capabilities:\n  - NativeTool: {tool: {kind: web_search, external_web_access: 'n'}}\n":          {Kind: "web_search", Options: map[string]any{"external_web_access": false}},
		"capabilities:\n  - name: NativeTool\n    arguments: {kind: code_execution, optional: 'true'}\n": {Kind: "code_execution", Options: map[string]any{}, LocalFallback: true},
	} {
		caps, err := build(t, yaml)
		require.NoError(t, err, yaml)
		tools := caps[0].(capabilities.NativeTooler).NativeTools()
		require.Len(t, tools, 1)
		assert.Equal(t, want, tools[0], yaml)
	}
	for yaml, want := range map[string]string{
		"capabilities:\n  - NativeTool: {kind: web_search, external_web_access: maybe}\n":  `agent.yaml:2:57: capabilities[0].NativeTool.external_web_access: expected true or false, found "maybe"`,
		"capabilities:\n  - NativeTool: {kind: web_search, external_web_access: ' yes'}\n": `agent.yaml:2:57: capabilities[0].NativeTool.external_web_access: expected true or false, found " yes"`,
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: 2}\n":          `agent.yaml:2:53: capabilities[0].NativeTool.enable_citations: expected true or false, found 2`,
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: 0.5}\n":        `agent.yaml:2:53: capabilities[0].NativeTool.enable_citations: expected true or false, found 0.5`,
		"capabilities:\n  - NativeTool: {kind: web_fetch, enable_citations: [true]}\n":     `agent.yaml:2:53: capabilities[0].NativeTool.enable_citations: expected true or false, found a list`,
		"capabilities:\n  - NativeTool: {tool: {kind: web_fetch, optional: '1.0'}}\n":      `agent.yaml:2:52: capabilities[0].NativeTool.tool.optional: expected true or false, found "1.0"`,
		"capabilities:\n  - NativeTool: {kind: web_fetch, optional: ''}\n":                 `agent.yaml:2:45: capabilities[0].NativeTool.optional: expected true or false, found an empty string`,
		// WebSearch's options reach pydantic-ai's capability unconverted,
		// so external_web_access: 'no' would go to the provider as a string.
		"capabilities:\n  - WebSearch: {external_web_access: 'no'}\n": `agent.yaml:2:38: capabilities[0].WebSearch.external_web_access: expected true or false, found "no" (a string); quoted, no is a string: write true or false, or leave it unquoted`,
	} {
		_, err := build(t, yaml)
		if assert.Error(t, err, "loaded: %s", yaml) {
			assert.Equal(t, want, err.Error(), yaml)
		}
	}
}
