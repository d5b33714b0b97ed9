package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnknownModelProvider(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	l.Providers = []string{"anthropic", "openai", "script"}

	_, err := l.Load("a.yaml", []byte("name: x\nmodel: opnai:gpt-4.1\n"))
	require.Error(t, err)
	assert.Equal(t, `a.yaml:2:8: model: unknown model provider "opnai" (did you mean "openai"?); known providers: anthropic, openai, script`, err.Error())

	_, err = l.Load("a.yaml", []byte("model: bogus:x\n"))
	assert.EqualError(t, err, `a.yaml:1:8: model: unknown model provider "bogus"; known providers: anthropic, openai, script`)

	for _, model := range []string{"openai:gpt-4.1", "script:turns.yaml", "anthropic:claude-sonnet-4-6"} {
		_, err := l.Load("a.yaml", []byte("model: "+model+"\n"))
		assert.NoError(t, err, model)
	}

	l.Providers = []string{}
	_, err = l.Load("a.yaml", []byte("model: anything:x\n"))
	assert.NoError(t, err, "an empty list of providers accepts any")
}

func TestProviderSet(t *testing.T) {
	t.Parallel()
	var p providerSet
	assert.Empty(t, p.list())
	p.add("openai")
	p.add("anthropic")
	p.add("openai")
	assert.Equal(t, []string{"anthropic", "openai"}, p.list(), "sorted, each name once")
	p.list()[0] = "changed"
	assert.Equal(t, []string{"anthropic", "openai"}, p.list(), "callers get a copy")
}

func TestWorkspacePaths(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want, err string }{
		{in: "review.md", want: "review.md"},
		{in: "./out//a.md", want: "out/a.md"},
		{in: "a/../b.md", want: "b.md"},
		{in: "..foo", want: "..foo"},
		{in: "", err: "the path is empty"},
		{in: "  ", err: "the path is empty"},
		{in: "/etc/passwd", err: `"/etc/passwd" must be relative to the workspace`},
		{in: "../x", err: `"../x" leaves the workspace`},
		{in: "a/../../x", err: `"a/../../x" leaves the workspace`},
	}
	for _, c := range cases {
		got, err := WorkspacePath(c.in)
		if c.err != "" {
			assert.EqualError(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got)
	}

	_, err := testLoader(t).Load("a.yaml", []byte(
		"workspace:\n  input_globs: ['src/**/*.go', '../secrets/*']\n  expected_output_files: [/etc/passwd]\n  checks:\n    - {file: ../../x, contains: y}\n"))
	require.Error(t, err)
	assert.Equal(t, `a.yaml:2:32: workspace.input_globs[1]: "../secrets/*" leaves the workspace
a.yaml:3:27: workspace.expected_output_files[0]: "/etc/passwd" must be relative to the workspace
a.yaml:5:14: workspace.checks[0].file: "../../x" leaves the workspace`, err.Error())
}

// A workspace path is matched as written: a {{placeholder}} in it, which no
// --var fills there, is refused rather than taken for a file of that name,
// so that a cache key never misses the file meant. An escaped one is text.
func TestWorkspacePathsHaveNoPlaceholders(t *testing.T) {
	t.Parallel()
	_, err := testLoader(t).Load("a.yaml", []byte("instructions: Fix {{path}}.\n"+
		"workspace:\n  input_globs: ['src/*.go', '{{path}}', 'docs/{{ dir }}/*.md', '\\{{path}}']\n"+
		"  expected_output_files: ['{{path}}.out']\n  checks:\n    - {file: '{{path}}', contains: y}\n"))
	require.Error(t, err)
	const why = "placeholders are filled in instructions, description and the string values of capability arguments only, " +
		"and a workspace path is matched as written: write one that needs no value"
	assert.Equal(t, `a.yaml:3:29: workspace.input_globs[1]: {{path}} is not filled here; `+why+`
a.yaml:3:41: workspace.input_globs[2]: {{ dir }} is not filled here; `+why+`
a.yaml:4:27: workspace.expected_output_files[0]: {{path}} is not filled here; `+why+`
a.yaml:6:14: workspace.checks[0].file: {{path}} is not filled here; `+why, err.Error())
}

// The spec package's tests link no provider: what a loader accepts is the
// spec package's own list, whatever a program links.
func TestDefaultProvidersNeedNoRuntime(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	_, err := l.Load("a.yaml", []byte("model: opnai:gpt-4o\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `a.yaml:1:8: model: unknown model provider "opnai" (did you mean "openai"?); known providers: alibaba, anthropic,`)
	for _, model := range []string{"openai:gpt-4o", "gateway/anthropic:claude-sonnet-4-5", "script:turns.yaml", "test"} {
		_, err := l.Load("a.yaml", []byte("model: "+model+"\n"))
		assert.NoError(t, err, model)
	}
	assert.Equal(t, KnownProviders(), Providers())
}
