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
		"capabilities:\n  - WebSearch: {native: false}\n":                    "agent.yaml:2:25: capabilities[0].WebSearch.native: false leaves WebSearch nothing to do: agentspec runs no local search",
		"capabilities:\n  - WebSearch: {native: false, local: duckduckgo}\n": "agent.yaml:2:25: capabilities[0].WebSearch.native: false asks for the local duckduckgo search alone, which agentspec does not run; remove native: false to use the provider's search",
		"capabilities:\n  - NativeTool: {kind: x_search}\n":                  `agent.yaml:2:24: capabilities[0].NativeTool.kind: expected web_search, web_fetch or code_execution (agentspec sends no other native tool kind to a provider yet), found "x_search"`,
		// The factory refuses what the schema cannot see.
		"capabilities:\n  - NativeTool: {tool: {kind: x_search}}\n": "agent.yaml:2:17: capabilities[0].NativeTool.kind: agentspec sends no native x_search tool to any provider yet; it sends web_search, web_fetch, code_execution",
		"capabilities:\n  - NativeTool: {}\n":                       "agent.yaml:2:17: capabilities[0].NativeTool.kind: NativeTool needs a kind: one of web_search, web_fetch, code_execution",
	} {
		_, err := build(t, yaml)
		require.Error(t, err, yaml)
		assert.Equal(t, want, err.Error(), yaml)
	}
}
