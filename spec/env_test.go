package spec

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

func TestExpandEnv(t *testing.T) {
	t.Parallel()
	assertExpansions(t, []envCase{
		{"", "", nil},
		{"no references", "no references", nil},
		{"${MODEL}", "openai:gpt-5", nil},
		{"use ${MODEL} now", "use openai:gpt-5 now", nil},
		{"${WORKDIR}/${ROUNDS}", "./work/12", nil},
		{"${NOPE:-fallback}", "fallback", nil},
		{"${EMPTY:-fallback}", "fallback", nil}, // as in the shell, :- covers empty values too
		{"${EMPTY}", "", nil},
		{"${NOPE:-}", "", nil},
		{"${NOPE:-a:-b}", "a:-b", nil},
		{"$${MODEL}", "${MODEL}", nil},
		{"cost: $5, $HOME", "cost: $5, $HOME", nil},
		{"$$${MODEL}", "$${MODEL}", nil},
		{"${NOPE}", "${NOPE}", []refProblem{{0, "${NOPE}"}}},
		{"a ${NOPE} b ${GONE}", "a ${NOPE} b ${GONE}", []refProblem{{2, "${NOPE}"}, {12, "${GONE}"}}},
		{"${MODEL", "${MODEL", []refProblem{{0, "${"}}},
		{"${}", "${}", []refProblem{{0, "${}"}}},
		{"${1ST}", "${1ST}", []refProblem{{0, "${1ST}"}}},
		{"${A B}", "${A B}", []refProblem{{0, "${A B}"}}},
		{"${NOPE-x}", "${NOPE-x}", []refProblem{{0, "${NOPE-x}"}}},
	})
}

// envCase is a string, what expandEnv makes of it in testEnv, and the
// problems it finds there.
type envCase struct {
	in, want string
	problems []refProblem
}

// refProblem is a problem expandEnv finds: where in the string, and what.
type refProblem struct {
	offset int
	ref    string
}

func assertExpansions(t *testing.T, tests []envCase) {
	t.Helper()
	for _, tc := range tests {
		got, problems := expandEnv(tc.in, testEnv)
		assert.Equal(t, tc.want, got, tc.in)
		var gotProblems []refProblem
		for _, p := range problems {
			gotProblems = append(gotProblems, refProblem{p.offset, p.ref})
		}
		assert.Equal(t, tc.problems, gotProblems, tc.in)
	}
}

func TestEnvInSpecs(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).LoadFile(specsDir + "/valid/env.yaml")
	require.NoError(t, err)
	assert.Equal(t, "openai:gpt-5", s.Model)
	assert.Equal(t, []string{"Reports go to reports; write ${name} for a shell variable."}, s.Instructions)
	assert.Equal(t, 12, s.MaxToolRounds, "an unquoted reference to a number is a number")
	assert.Equal(t, "https://proxy.example.com/v1", s.ModelSettings.BaseURL)
	assert.JSONEq(t, `{"root_dir": "./work"}`, string(s.Capabilities[0].Options))

	t.Run("defaults in an empty environment", func(t *testing.T) {
		t.Parallel()
		reg, _ := testRegistry(t)
		l := &Loader{Registry: reg, LookupEnv: func(string) (string, bool) { return "", false }}
		s, err := l.LoadFile(specsDir + "/valid/env.yaml")
		require.NoError(t, err)
		assert.Equal(t, "anthropic:claude-sonnet-4-6", s.Model)
		assert.Equal(t, 20, s.MaxToolRounds)
		assert.JSONEq(t, `{"root_dir": "."}`, string(s.Capabilities[0].Options))
	})

	t.Run("a quoted reference stays a string", func(t *testing.T) {
		t.Parallel()
		s, err := testLoader(t).Load("a.yaml", []byte("name: \"${ROUNDS}\"\ncache: ${FLAG}\n"))
		require.NoError(t, err)
		assert.Equal(t, "12", s.Name)
		assert.Equal(t, &Cache{}, s.Cache, "an unquoted true is a boolean")
	})

	t.Run("an unquoted number where a string is wanted", func(t *testing.T) {
		t.Parallel()
		_, err := testLoader(t).Load("a.yaml", []byte("name: ${ROUNDS}\n"))
		assert.EqualError(t, err, `a.yaml:1:7: name: expected a string, found 12 (a number); unquoted, ${ROUNDS} takes the type of its value: write "${ROUNDS}" to keep it a string`)
	})

	t.Run("keys are not expanded", func(t *testing.T) {
		t.Parallel()
		s, err := testLoader(t).Load("a.yaml", []byte("metadata:\n  ${MODEL}: ${MODEL}\n"))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"${MODEL}": "openai:gpt-5"}, s.Metadata)
	})

	t.Run("errors point at the reference", func(t *testing.T) {
		t.Parallel()
		tests := []struct{ file, src, want string }{
			{"a.yaml", "model: ${NOPE}\n",
				"a.yaml:1:8: model: environment variable NOPE is not set (set it, or give a default: ${NOPE:-value})"},
			{"a.yaml", "instructions: \"Write to ${OUT}/x\"\n",
				"a.yaml:1:25: instructions: environment variable OUT is not set (set it, or give a default: ${OUT:-value})"},
			{"a.yaml", "instructions: 'a ''quoted'' ${OUT}'\n",
				"a.yaml:1:15: instructions: environment variable OUT is not set (set it, or give a default: ${OUT:-value})"},
			{"a.yaml", "instructions: |\n  Write to ${OUT}\n",
				"a.yaml:2:12: instructions: environment variable OUT is not set (set it, or give a default: ${OUT:-value})"},
			{"a.yaml", "instructions: |\n  First line.\n\n    Write to ${OUT}\n  and then $${OUT} ${OUT}\nname: ${OUT}\n",
				"a.yaml:4:14: instructions: environment variable OUT is not set (set it, or give a default: ${OUT:-value})\n" +
					"a.yaml:5:20: instructions: environment variable OUT is not set (set it, or give a default: ${OUT:-value})\n" +
					"a.yaml:6:7: name: environment variable OUT is not set (set it, or give a default: ${OUT:-value})"},
			{"a.yaml", "instructions: >-\r\n  Be brief,\r\n  é ${OUT}\r\n",
				"a.yaml:3:5: instructions: environment variable OUT is not set (set it, or give a default: ${OUT:-value})"},
			{"a.yaml", "capabilities:\n  - FileSystem:\n      root_dir: |-\n        ${ROOT}\n",
				"a.yaml:4:9: capabilities[0].FileSystem.root_dir: environment variable ROOT is not set (set it, or give a default: ${ROOT:-value})"},
			{"a.json", `{"description": "é ${OUT}"}`,
				"a.json:1:20: description: environment variable OUT is not set (set it, or give a default: ${OUT:-value})"},
			{"a.yaml", "capabilities:\n  - FileSystem:\n      root_dir: $${x} ${ROOT}\n",
				"a.yaml:3:23: capabilities[0].FileSystem.root_dir: environment variable ROOT is not set (set it, or give a default: ${ROOT:-value})"},
			{"a.yaml", "capabilities: [{FileSystem: ${ROOT}}]\n",
				"a.yaml:1:16: invalid YAML: did not find expected ',' or '}' (is the { opened here closed? Inside {...} and [...], quote values holding ${VAR})"},
		}
		for _, tc := range tests {
			_, err := testLoader(t).Load(tc.file, []byte(tc.src))
			assert.EqualError(t, err, tc.want, tc.src)
		}
	})
}

// A default may itself hold a reference, filled only when the default is
// used: the reference's end is the brace that closes it, not the first one.
func TestExpandEnvNestedDefault(t *testing.T) {
	t.Parallel()
	assertExpansions(t, []envCase{
		{"${NOPE:-${MODEL}}", "openai:gpt-5", nil},
		{"${EMPTY:-${MODEL}}/x", "openai:gpt-5/x", nil},
		{"${MODEL:-${NOPE}}", "openai:gpt-5", nil}, // the default is not used: NOPE need not be set
		{"${NOPE:-${GONE:-${ROUNDS}}}", "12", nil},
		{"${NOPE:-${WORKDIR}/${ROUNDS}}", "./work/12", nil},
		{"${NOPE:-$${MODEL}}", "${MODEL}", nil},
		{"${NOPE:-{x}}", "{x}", nil},
		{"${NOPE:-${GONE}}", "${NOPE:-${GONE}}", []refProblem{{8, "${GONE}"}}},
		{"a ${NOPE:-${MODEL}", "a ${NOPE:-${MODEL}", []refProblem{{2, "${"}}},
	})

	t.Run("in a spec", func(t *testing.T) {
		t.Parallel()
		s, err := testLoader(t).Load("a.yaml", []byte("model: ${NOPE:-${MODEL}}\nmax_tool_rounds: ${NOPE:-${ROUNDS}}\n"))
		require.NoError(t, err)
		assert.Equal(t, "openai:gpt-5", s.Model)
		assert.Equal(t, 12, s.MaxToolRounds, "an unquoted reference to a number is a number, through a default too")
		_, err = testLoader(t).Load("a.yaml", []byte("model: \"${NOPE:-${GONE}}\"\n"))
		assert.EqualError(t, err, "a.yaml:1:17: model: environment variable GONE is not set (set it, or give a default: ${GONE:-value})")
	})
}

// JSON has no unquoted value, and YAML's {...} and [...] take a reference
// only quoted: a string that is one whole reference takes the type of its
// value where the schema wants a number or a boolean and no string, as the
// editor schema, which takes such a string there, says.
func TestQuotedReferenceWhereANumberIsWanted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, src string }{
		{"a.json", `{"max_tool_rounds": "${ROUNDS}", "tool_timeout": "${NOPE:-2.5}", "capabilities": [{"FileSystem": {"read_only": "${FLAG}", "max_read_lines": "${ROUNDS}"}}]}`},
		{"a.yaml", "max_tool_rounds: \"${ROUNDS}\"\ntool_timeout: '${NOPE:-2.5}'\ncapabilities: [{FileSystem: {read_only: \"${FLAG}\", max_read_lines: \"${ROUNDS}\"}}]\n"},
	} {
		s, err := testLoader(t).Load(tc.file, []byte(tc.src))
		require.NoError(t, err, tc.file)
		assert.Equal(t, 12, s.MaxToolRounds, tc.file)
		assert.Equal(t, 2500*time.Millisecond, s.ToolTimeout, tc.file)
		assert.JSONEq(t, `{"read_only": true, "max_read_lines": 12}`, string(s.Capabilities[0].Options), tc.file)
	}

	t.Run("as the positional option", func(t *testing.T) {
		t.Parallel()
		reg := capabilities.NewRegistry()
		require.NoError(t, reg.Register(capabilities.Type{
			Name: "Switch", Positional: "on",
			Schema: json.RawMessage(`{"type": "object", "properties": {"on": {"type": "boolean"}}, "additionalProperties": false}`),
			New: func(context.Context, capabilities.Args) (capabilities.Capability, error) {
				return &stub{name: "Switch"}, nil
			},
		}))
		l := &Loader{Registry: reg, LookupEnv: testEnv}
		s, err := l.Load("a.json", []byte(`{"capabilities": [{"Switch": "${FLAG}"}]}`))
		require.NoError(t, err)
		assert.JSONEq(t, `{"on": true}`, string(s.Capabilities[0].Options))
	})

	t.Run("where a string is wanted it stays one", func(t *testing.T) {
		t.Parallel()
		s, err := testLoader(t).Load("a.json", []byte(`{"name": "${ROUNDS}", "metadata": {"n": "${ROUNDS}"}}`))
		require.NoError(t, err)
		assert.Equal(t, "12", s.Name)
		assert.Equal(t, map[string]any{"n": "12"}, s.Metadata)
	})

	t.Run("what is not wholly a reference, or not a number, is refused", func(t *testing.T) {
		t.Parallel()
		_, err := testLoader(t).Load("a.json", []byte(`{"max_tool_rounds": "${ROUNDS}0", "retries": "${MODEL}"}`))
		assert.EqualError(t, err, `a.json:1:21: max_tool_rounds: expected a positive integer, found "120" (a string)`+"\n"+
			`a.json:1:46: retries: expected a non-negative integer, or a mapping (tools: 3, output: 2), found "openai:gpt-5" (a string)`)
	})
}

// A reference takes the type its value has written in its place, YAML 1.1's
// booleans and base-60 integers included, as the loader reads them there.
func TestReferenceToAYAML11Value(t *testing.T) {
	t.Parallel()
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"RO": "yes", "OFF": "Off", "T": "1:30"}[name]
		return v, ok
	}
	reg, _ := testRegistry(t)
	l := &Loader{Registry: reg, LookupEnv: env}
	for _, tc := range []struct{ file, src string }{
		{"a.yaml", "tool_timeout: ${T}\ncapabilities:\n  - FileSystem:\n      read_only: ${RO}\n      content_hashes: ${OFF}\n"},
		{"a.json", `{"tool_timeout": "${T}", "capabilities": [{"FileSystem": {"read_only": "${RO}", "content_hashes": "${OFF}"}}]}`},
	} {
		s, err := l.Load(tc.file, []byte(tc.src))
		require.NoError(t, err, tc.file)
		assert.Equal(t, 90*time.Second, s.ToolTimeout, tc.file)
		assert.JSONEq(t, `{"read_only": true, "content_hashes": false}`, string(s.Capabilities[0].Options), tc.file)
	}
	s, err := l.Load("a.yaml", []byte("name: ${RO}\ndescription: ${T}\n"))
	require.NoError(t, err, "where text is wanted, they stay text")
	assert.Equal(t, "yes", s.Name)
	assert.Equal(t, "1:30", s.Description)
}

// A $${ in a default writes a literal ${ whose } is its own, so that the
// reference ends at the brace after it, whether the default is used or not.
func TestExpandEnvEscapeInADefault(t *testing.T) {
	t.Parallel()
	assertExpansions(t, []envCase{
		{"${ROUNDS:-$${MODEL}}", "12", nil},
		{"${NOPE:-$${MODEL}}", "${MODEL}", nil},
		{"${ROUNDS:-$${MODEL}${WORKDIR}}/x", "12/x", nil},
		{"${NOPE:-$${MODEL}${WORKDIR}}/x", "${MODEL}./work/x", nil},
		{"${NOPE:-a$${B}c}", "a${B}c", nil},
	})
	s, err := testLoader(t).Load("a.yaml", []byte("name: \"${MODEL:-$${MODEL}}\"\n"))
	require.NoError(t, err)
	assert.Equal(t, "openai:gpt-5", s.Name)
}
