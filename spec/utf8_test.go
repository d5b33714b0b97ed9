package spec

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A spec in Latin-1 (or any other encoding that is not UTF-8) is refused at
// its first bad byte, YAML and JSON alike.
func TestNotUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		data string
		want string
	}{
		{"agent.yaml", "model: test\ninstructions: R\xe9sum\xe9 the notes.\n", "agent.yaml:2:16: the file is not UTF-8; save it as UTF-8 (byte 0xE9 here is not valid UTF-8)"},
		{"agent.json", "{\"model\": \"test\",\n \"instructions\": \"caf\xe9\"}", "agent.json:2:22: the file is not UTF-8; save it as UTF-8 (byte 0xE9 here is not valid UTF-8)"},
		{"agent.yaml", "# ça va\nmodel: test\ninstructions: \xff\n", "agent.yaml:3:15: the file is not UTF-8; save it as UTF-8 (byte 0xFF here is not valid UTF-8)"},
	} {
		_, err := new(Loader).Load(tc.file, []byte(tc.data))
		require.Error(t, err, tc.file)
		var list Errors
		require.ErrorAs(t, err, &list)
		require.Len(t, list, 1)
		assert.Equal(t, tc.want, list[0].Error())
	}
	_, err := new(Loader).Load("ok.yaml", []byte("model: test\ninstructions: Résumé, ça va.\n"))
	assert.NoError(t, err, "UTF-8 with accents loads")
}

// A byte order mark, which some editors write, is no column of the first
// line: YAML's own positions leave it out, and so do those found in the
// source (syntax errors, a byte that is not UTF-8).
func TestByteOrderMarkIsNoColumn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		data string
		want string
	}{
		{"agent.yaml", "\ufeffmodel: a: b\n", "agent.yaml:1:9: invalid YAML: mapping values are not allowed in this context"},
		{"agent.yaml", "\ufeffmodel: @test\n", "agent.yaml:1:8: invalid YAML: found character that cannot start any token"},
		{"agent.yaml", "\ufeffmodel: [test\n", "agent.yaml:1:8: invalid YAML: did not find expected ',' or ']'"},
		{"agent.yaml", "\ufeffmodel: *nope\n", "agent.yaml:1:8: invalid YAML: unknown anchor 'nope' referenced"},
		{"agent.yaml", "\ufeffmodel: \xff\n", "agent.yaml:1:8: the file is not UTF-8"},
		{"agent.json", "\ufeff{\"model\": \"\xff\"}", "agent.json:1:12: the file is not UTF-8"},
		{"agent.yaml", "\ufeffnmae: x\n", `agent.yaml:1:1: unknown key "nmae"`},
	} {
		_, err := new(Loader).Load(tc.file, []byte(tc.data))
		var list Errors
		require.ErrorAs(t, err, &list, tc.data)
		require.NotEmpty(t, list, tc.data)
		assert.Contains(t, list[0].Error(), tc.want, tc.data)
	}
}
