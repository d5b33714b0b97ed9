package runtime

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

func TestRenderInstructions(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"repo": "agentspec", "team.name": "core", "empty": ""}
	cases := []struct {
		name         string
		instructions []string
		want         string
		missing      []string
	}{
		{name: "none", want: ""},
		{name: "joined with blank lines", instructions: []string{"One.", "Two."}, want: "One.\n\nTwo."},
		{name: "placeholders", instructions: []string{"Review {{repo}} for {{ team.name }}.{{empty}}"}, want: "Review agentspec for core."},
		{name: "not a placeholder", instructions: []string{"Use {{ two words }} and {single} and {{}}."}, want: "Use {{ two words }} and {single} and {{}}."},
		{name: "a value is not expanded again", instructions: []string{"{{x}}"}, want: "{{repo}}"},
		{name: "missing, in order of use, once each", instructions: []string{"{{b}} {{a}}", "{{b}} {{repo}}"}, missing: []string{"b", "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := vars
			if tc.name == "a value is not expanded again" {
				v = map[string]string{"x": "{{repo}}"}
			}
			got, err := RenderInstructions(tc.instructions, v)
			if tc.missing != nil {
				assert.Equal(t, &MissingVarError{Names: tc.missing}, err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	assert.EqualError(t, &MissingVarError{Names: []string{"repo"}}, `instructions use variable "repo", but no value was given`)
}

func TestCheckVars(t *testing.T) {
	t.Parallel()
	s := &spec.Spec{Instructions: []string{"Review {{repo}}.", "Mind {{ team }}."}, Description: "About {{topic}}."}
	cases := []struct {
		name string
		vars map[string]string
		err  string
	}{
		{name: "every placeholder has a value", vars: map[string]string{"repo": "a", "team": "b"}},
		{name: "the description's placeholders may be given", vars: map[string]string{"repo": "a", "team": "b", "topic": "c"}},
		{name: "a value without a placeholder", vars: map[string]string{"repo": "a", "team": "b", "nope": "x"},
			err: "variable nope: the spec has no {{nope}} placeholder; it has {{repo}}, {{team}}, {{topic}}"},
		{name: "values without placeholders, sorted", vars: map[string]string{"zz": "", "aa": ""},
			err: "variables aa, zz: the spec has no {{aa}} or {{zz}} placeholders; it has {{repo}}, {{team}}, {{topic}}"},
		{name: "a placeholder without a value", vars: map[string]string{"repo": "a"},
			err: `instructions use variable "team", but no value was given`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckVars(s, tc.vars)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.err)
		})
	}
	var unknown *UnknownVarError
	require.ErrorAs(t, CheckVars(&spec.Spec{}, map[string]string{"x": ""}), &unknown)
	assert.Equal(t, &UnknownVarError{Names: []string{"x"}}, unknown)
	assert.Equal(t, "the spec has no {{x}} placeholder; it has none", unknown.Detail())

	// Check applies it to WithVars; Run refuses missing values only.
	err := Check(context.Background(), &spec.Spec{Model: "test", Instructions: []string{"{{a}}"}},
		WithVars(map[string]string{"a": "1", "b": "2"}), WithWorkspace(t.TempDir()))
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, []string{"b"}, unknown.Names)
}

// Capability arguments are templates, as in pydantic-ai: a job's variable
// narrows its FileSystem to the one file it is about.
func TestCapabilityArgumentsAreTemplates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agent.yaml": "model: script:turns.yaml\ninstructions: Read {{path}}.\n" +
			"capabilities:\n  - FileSystem: {allowed_patterns: ['{{path}}']}\n",
		"turns.yaml": `turns:
  - tool_calls:
      - {name: read_file, arguments: {path: a.txt}}
      - {name: read_file, arguments: {path: b.txt}}
  - text: done
`,
		"a.txt": "alpha\n", "b.txt": "beta\n",
	})
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	require.NoError(t, err)
	require.NoError(t, CheckVars(s, map[string]string{"path": "a.txt"}), "a value for the capability's placeholder is no unknown variable")
	res, err := Run(context.Background(), s, WithWorkspace(dir), WithVars(map[string]string{"path": "a.txt"}))
	require.NoError(t, err)
	results := toolResults(res.Transcript)
	require.Len(t, results, 2)
	assert.Contains(t, results[0], "alpha")
	assert.Equal(t, "Error: Path 'b.txt' does not match any allowed pattern.", results[1])

	_, err = Run(context.Background(), s, WithWorkspace(dir))
	assert.ErrorContains(t, err, "instructions use variable \"path\", but no value was given")
	plain, err := (&spec.Loader{}).Load(filepath.Join(dir, "agent.yaml"), []byte("model: script:turns.yaml\ncapabilities:\n  - FileSystem: {allowed_patterns: ['{{path}}']}\n"))
	require.NoError(t, err)
	_, err = Run(context.Background(), plain, WithWorkspace(dir))
	assert.EqualError(t, err, filepath.Join(dir, "agent.yaml")+":3:38: capabilities[0]: the options use {{path}}, but no value was given for it")
}

// A placeholder written many times with a large value cannot make the
// instructions grow past spec.MaxFilled.
func TestRenderInstructionsIsBounded(t *testing.T) {
	t.Parallel()
	instructions := []string{strings.Repeat("{{x}} ", 20_000)}
	_, err := RenderInstructions(instructions, map[string]string{"x": strings.Repeat("a", 1_000)})
	assert.EqualError(t, err, "instructions: the placeholders' values would add more than 16 MB (16000000 bytes) to the text, the most they may add ({{x}} is filled with 1 KB, 1000 bytes, each time it is used)")
	out, err := RenderInstructions(instructions, map[string]string{"x": "ab"})
	require.NoError(t, err)
	assert.Len(t, out, 20_000*len("ab "))
}

// A backslash escapes a placeholder, as in Handlebars: the instructions can
// show the model a template. \{{name}} is sent as {{name}} and needs no
// value (one given for it is unknown); \\{{name}} is a backslash and the
// value.
func TestEscapedPlaceholdersAreText(t *testing.T) {
	t.Parallel()
	got, err := RenderInstructions([]string{`Reply with \{{name}} replaced, for {{who}}.`, `Path: C:\\{{who}}`}, map[string]string{"who": "me"})
	require.NoError(t, err)
	assert.Equal(t, "Reply with {{name}} replaced, for me.\n\nPath: C:\\me", got)

	s := &spec.Spec{Instructions: []string{`Reply with \{{name}} replaced, for {{who}}.`}}
	assert.Equal(t, []string{"who"}, Placeholders(s.Instructions))
	require.NoError(t, CheckVars(s, map[string]string{"who": "me"}))
	var unknown *UnknownVarError
	require.ErrorAs(t, CheckVars(s, map[string]string{"who": "me", "name": "x"}), &unknown)
	assert.Equal(t, []string{"name"}, unknown.Names)

	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"agent.yaml": "model: script:turns.yaml\ninstructions: 'Reply with \\{{name}} replaced, for {{who}}.'\n" +
			"capabilities:\n  - FileSystem: {allowed_patterns: ['\\{{x}}.txt', '{{who}}.txt']}\n",
		"turns.yaml": `turns:
  - expect: {system_contains: "Reply with {{name}} replaced, for me."}
    tool_calls:
      - {name: read_file, arguments: {path: "{{x}}.txt"}}
      - {name: read_file, arguments: {path: me.txt}}
  - text: done
`,
		"{{x}}.txt": "braces\n", "me.txt": "mine\n",
	})
	loaded, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	require.NoError(t, err)
	res, err := Run(context.Background(), loaded, WithWorkspace(dir), WithVars(map[string]string{"who": "me"}))
	require.NoError(t, err)
	results := toolResults(res.Transcript)
	require.Len(t, results, 2)
	assert.Contains(t, results[0], "braces", "the pattern is the text {{x}}.txt")
	assert.Contains(t, results[1], "mine")
}

// A loaded spec's missing instruction variables are a MissingVarError
// still, whose Problems place each name where the file writes it, for
// whoever prints spec problems (errors.As with a spec.Errors).
func TestMissingVarErrorOfALoadedSpec(t *testing.T) {
	t.Parallel()
	s, err := (&spec.Loader{}).Load("agent.yaml", []byte("model: test\ninstructions: Review {{repo}} for {{team}}.\n"))
	require.NoError(t, err)
	err = CheckVars(s, map[string]string{"team": "core"})
	var missing *MissingVarError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, []string{"repo"}, missing.Names)
	assert.EqualError(t, err, `instructions use variable "repo", but no value was given`)
	var problems spec.Errors
	require.ErrorAs(t, err, &problems)
	assert.Equal(t, spec.Errors{{Pos: spec.Position{File: "agent.yaml", Line: 2, Col: 22}, Var: "repo",
		Msg: `instructions use variable "repo", but no value was given`}}, problems)
}
