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
