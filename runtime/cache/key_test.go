package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func keyOf(t *testing.T, k KeyInput) string {
	t.Helper()
	key, _, err := Key(context.Background(), k)
	require.NoError(t, err)
	require.Len(t, key, 64)
	return key
}

func TestKeyIngredients(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "notes/b.md": "beta", "other.txt": "o"})
	otherWS := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "notes/b.md": "beta", "other.txt": "o"})
	base := keyOf(t, keyInput(ws))

	tests := []struct {
		name   string
		modify func(k *KeyInput)
		same   bool
	}{
		{"the model", func(k *KeyInput) { k.Model = "anthropic:claude-sonnet-4-5" }, false},
		{"the input", func(k *KeyInput) { k.Input = "Summarise, briefly." }, false},
		{"a variable's value", func(k *KeyInput) { k.Vars = map[string]string{"audience": "managers"} }, false},
		{"a new variable", func(k *KeyInput) { k.Vars = map[string]string{"audience": "engineers", "tone": "dry"} }, false},
		{"a variable's name", func(k *KeyInput) { k.Vars = map[string]string{"Audience": "engineers"} }, false},
		{"the spec's meaning", func(k *KeyInput) {
			k.Spec = []byte(`{"version": 1, "model": "openai:gpt-4o", "instructions": ["Summarise the notes into summary.txt."]}`)
		}, false},
		{"another workspace with the same files", func(k *KeyInput) { k.Workspace = otherWS }, false},
		{"no workspace", func(k *KeyInput) { k.Workspace, k.InputGlobs, k.ExpectedOutputFiles = "", nil, nil }, false},
		{"the input globs", func(k *KeyInput) { k.InputGlobs = []string{"**/*"} }, false},
		{"the spec's formatting and key order", func(k *KeyInput) {
			k.Spec = []byte(`{
  "workspace": {"expected_output_files": ["summary.md"], "input_globs": ["notes/*.md"]},
  "instructions": ["Summarise the notes into summary.md."],
  "model": "openai:gpt-4o",
  "version": 1.0
}`)
		}, true},
		{"the spelling of the workspace", func(k *KeyInput) { k.Workspace = filepath.Join(ws, "notes", "..") }, true},
		{"the order and repetition of the globs", func(k *KeyInput) { k.InputGlobs = []string{"./notes/*.md", "notes/*.md"} }, true},
		{"the expected output files", func(k *KeyInput) { k.ExpectedOutputFiles = []string{"other.md"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := keyInput(ws)
			tt.modify(&k)
			assert.Equal(t, tt.same, keyOf(t, k) == base)
		})
	}
}

func TestKeyNoVarsHoweverSpelled(t *testing.T) {
	t.Parallel()
	k := keyInput("")
	k.InputGlobs, k.ExpectedOutputFiles = nil, nil
	k.Vars = nil
	nilVars := keyOf(t, k)
	k.Vars = map[string]string{}
	assert.Equal(t, nilVars, keyOf(t, k))
}

func TestKeyFollowsFiles(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha"})
	before := keyOf(t, keyInput(ws))
	writeFiles(t, ws, map[string]string{"unrelated.txt": "x", "summary.md": "output"})
	assert.Equal(t, before, keyOf(t, keyInput(ws)), "files outside the globs")
	writeFiles(t, ws, map[string]string{"notes/a.md": "ALPHA"})
	assert.NotEqual(t, before, keyOf(t, keyInput(ws)), "a changed input")
}

func TestKeyWorkspaceThroughSymlink(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha"})
	alias := filepath.Join(t.TempDir(), "alias")
	symlink(t, ws, alias)
	assert.Equal(t, keyOf(t, keyInput(ws)), keyOf(t, keyInput(alias)))

	real, err := filepath.EvalSymlinks(ws)
	require.NoError(t, err)
	_, ing, err := Key(context.Background(), keyInput(alias))
	require.NoError(t, err)
	assert.Equal(t, real, ing.Workspace)
}

func TestKeyIngredientsSummary(t *testing.T) {
	t.Parallel()
	ws := realTempDir(t)
	writeFiles(t, ws, map[string]string{"notes/a.md": "alpha", "notes/b.md": "beta"})
	k := keyInput(ws)
	k.Vars = map[string]string{"b": "secret", "a": "1"}
	_, ing, err := Key(context.Background(), k)
	require.NoError(t, err)

	canon, err := CanonicalJSON(json.RawMessage(k.Spec))
	require.NoError(t, err)
	digest, _, err := HashFiles(context.Background(), ws, k.InputGlobs)
	require.NoError(t, err)
	assert.Equal(t, Ingredients{
		Protocol:    ProtocolVersion,
		SpecSHA256:  sha256Hex(canon),
		Model:       "openai:gpt-4o",
		InputSHA256: sha256Hex([]byte(k.Input)),
		Vars:        []string{"a", "b"},
		Workspace:   ws,
		InputGlobs:  []string{"notes/*.md"},
		Files:       2,
		FilesSHA256: digest,
	}, ing)
	b, err := json.Marshal(ing)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "secret", "variable values stay out of the summary")
}

func TestKeyErrors(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tests := map[string]func(k *KeyInput){
		"no spec":                              func(k *KeyInput) { k.Spec = nil },
		"spec not JSON":                        func(k *KeyInput) { k.Spec = []byte("model: x") },
		"bad glob":                             func(k *KeyInput) { k.InputGlobs = []string{"../*.md"} },
		"globs without a workspace":            func(k *KeyInput) { k.Workspace, k.ExpectedOutputFiles = "", nil },
		"expected outputs without a workspace": func(k *KeyInput) { k.Workspace, k.InputGlobs = "", nil },
	}
	for name, modify := range tests {
		k := keyInput(ws)
		modify(&k)
		_, _, err := Key(context.Background(), k)
		assert.Error(t, err, name)
	}
}

// The key's material is written by hand, and must stay byte for byte what
// encoding/json made of it before, or every stored entry would be missed.
func TestKeyMaterialAsEncodingJSON(t *testing.T) {
	t.Parallel()
	specs := []string{
		testSpec,
		`{"instructions": ["Compare <a> & <b>, then\u2028stop\u2029."], "n": 1.50, "deep": {"z": [1, {"y": null}], "a": true}}`,
		`{"bad utf8": "` + "\xff\xfe" + `"}`,
	}
	inputs := []struct {
		model, input, workspace, files string
		vars                           map[string]string
		globs                          []string
	}{
		{"openai:gpt-4o", "Summarise, please.", "/work/ws", "abc", map[string]string{"b": "2", "a": "1"}, []string{"notes/*.md"}},
		{"script:turns.yaml sha256:00", "<tags> & \"quotes\"\n\u2028", "", "", nil, nil},
		{"", "", "C:\\ws", "", map[string]string{"<k>": "&v"}, []string{}},
		{"m", "bad \xff utf8", "/ws/\xfe", "d", nil, []string{"**/*", "a&b"}},
	}
	for _, raw := range specs {
		form, err := canonicalSpec([]byte(raw))
		require.NoError(t, err)
		for _, in := range inputs {
			want, err := json.Marshal(struct {
				Protocol  int               `json:"protocol"`
				Spec      json.RawMessage   `json:"spec"`
				Model     string            `json:"model"`
				Input     string            `json:"input"`
				Vars      map[string]string `json:"vars"`
				Workspace string            `json:"workspace"`
				Globs     []string          `json:"input_globs"`
				Files     string            `json:"files"`
			}{ProtocolVersion, form.canonical, in.model, in.input, in.vars, in.workspace, in.globs, in.files})
			require.NoError(t, err)
			got, err := keyMaterial(form.material, in.model, in.input, in.vars, in.workspace, in.globs, in.files)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		}
	}
}

// The spec's canonical form is remembered between keys; a different spec,
// or the same one given again after it, is never answered with another's.
func TestKeyRemembersOnlyTheSameSpec(t *testing.T) {
	t.Parallel()
	a, b := []byte(`{"model": "a", "n": 1.000}`), []byte(`{"model": "b", "n": 10e-1}`)
	for range 2 {
		for _, raw := range [][]byte{a, b, a, a, b} {
			form, err := canonicalSpec(raw)
			require.NoError(t, err)
			want, err := CanonicalJSON(json.RawMessage(raw))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(form.canonical))
			assert.Equal(t, sha256Hex(want), form.sha256)
		}
	}
	// A caller reusing its buffer does not change what is remembered.
	buf := bytes.Clone(a)
	_, err := canonicalSpec(buf)
	require.NoError(t, err)
	copy(buf, b)
	form, err := canonicalSpec(buf)
	require.NoError(t, err)
	assert.Contains(t, string(form.canonical), `"model":"b"`)
}
