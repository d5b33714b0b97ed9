package script

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/expansion"
)

// A spec may name any file as its script (model: script:/etc/shadow), and
// whoever reads the messages may not be allowed to read the file: what is
// wrong with it is said by position and kind, never by its text.
func TestErrorsShowNoTextOfTheFile(t *testing.T) {
	t.Parallel()
	const secret = "AKIAEXAMPLESECRET"
	files := map[string]string{
		"a scalar":                       secret + "\n",
		"lines of a password file":       "root:$6$" + secret + ":19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n",
		"a quoted scalar":                `"` + secret + `"`,
		"a mapping with other keys":      secret + ": 1\naws_secret_access_key: " + secret + "\n",
		"a key near a known one":         "turns" + secret + ": 1\n",
		"JSON with other keys":           `{"` + secret + `": {"key": "` + secret + `"}}`,
		"a list":                         "- " + secret + "\n- " + secret + "\n",
		"a string for a list":            "turns: " + secret + "\n",
		"a string for a turn":            "turns: [" + secret + "]\n",
		"a string for a tool call":       "turns:\n  - tool_calls: [" + secret + "]\n",
		"a string for a mapping":         "turns:\n  - text: hi\n    usage: " + secret + "\n",
		"a string for a number":          "turns:\n  - text: hi\n    usage: {input_tokens: " + secret + "}\n",
		"a string for a duration":        "turns:\n  - text: hi\n    delay: " + secret + "\n",
		"a mapping for a string":         "turns:\n  - text: {" + secret + ": 1}\n",
		"an unknown dialect":             "dialect: " + secret + "\nturns: [{text: hi}]\n",
		"a tag":                          "!" + secret + " x\n",
		"binary data for a list":         "turns: !!binary QUtJQUVYQU1QTEVTRUNSRVQ=\n",
		"an unknown anchor":              "turns: *" + secret + "\n",
		"an anchor that contains itself": "turns: [{text: hi, tool_calls: [{name: x, arguments: &" + secret + " [*" + secret + "]}]}]\n",
		"a key that is a mapping":        "{" + secret + ": 1}: 2\n",
		"an unclosed flow":               "turns: [" + secret + ", {text: " + secret + "\n",
		"an unclosed quote":              "turns: \"" + secret + "\n",
		"a colon in a value":             "turns: " + secret + ": " + secret + "\n",
		"a tab":                          "turns:\n\t- " + secret + "\n",
		"a bad escape":                   `turns: ["\q` + secret + `"]`,
		"a directive":                    "%" + secret + " x\n--- a\n",
		"two documents":                  "a: " + secret + "\n--- \n" + secret + "\n",
		"binary":                         "\x7fELF\x02\x01\x01\x00\x00\x00" + secret + "\x00\xff\xfe\n",
		"invalid UTF-8":                  secret + "\xc3\x28\n",
		"control characters":             secret + "\x01\x02\n",
	}
	for name, src := range files {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("secret.txt", []byte(src))
			require.Error(t, err)
			for _, part := range []string{secret, "AKIA", "EXAMPLE", "SECRET"} {
				assert.NotContains(t, err.Error(), part)
			}
			var errs Errors
			require.ErrorAs(t, err, &errs)
			for _, e := range errs {
				assert.Equal(t, "secret.txt", e.File)
				assert.NotEmpty(t, e.Msg)
			}
		})
	}
}

// A script whose aliases expand to far more than the file is refused before
// it is checked or decoded, and before any tool call's arguments are built
// from it. Not parallel: it measures what the process allocates.
func TestAliasExpansionIsBounded(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	src := "turns:\n" +
		"  - tool_calls:\n" +
		"      - name: define\n" +
		"        arguments: {s: &s " + long + ", l: &l [" + strings.Repeat("*s, ", 99) + "*s]}\n" +
		"      - name: use\n" +
		"        arguments: [" + strings.Repeat("*l, ", 9) + "*l]\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, err := Parse("s.yaml", []byte(src))
	if err == nil {
		_, _ = m.GenerateContent(context.Background(), nil) // marshals each call's arguments
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "bytes allocated")
	require.Error(t, err)
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 1)
	e := errs[0]
	assert.Equal(t, "an alias expands to too much: the script holds more than 2 MB of text, the most a script file of "+
		expansion.ByteSize(len(src))+" may grow to (10 times its size, at least 2 MB, at most 16 MB); are YAML aliases nested in each other?", e.Msg)
	line := strings.Split(src, "\n")[e.Line-1]
	assert.True(t, strings.HasPrefix(line[e.Col-1:], "*"), "reported at an alias: %d:%d", e.Line, e.Col)
}

func TestAliasCycleIsReported(t *testing.T) {
	t.Parallel()
	src := "turns: [{text: hi, tool_calls: [{name: x, arguments: &a {b: *a}}]}]\n"
	_, err := Parse("s.yaml", []byte(src))
	assert.EqualError(t, err, fmt.Sprintf("s.yaml:1:%d: an alias refers to a value that contains it", 1+strings.Index(src, "*a")))
}

// A few aliases, as a script would share arguments between calls, are fine.
func TestAliasesWithinBound(t *testing.T) {
	t.Parallel()
	m, err := Parse("s.yaml", []byte("turns:\n  - tool_calls: [{name: a, arguments: &args {path: notes.md}}, {name: b, arguments: *args}]\n"))
	require.NoError(t, err)
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, `{"path":"notes.md"}`, resp.Choices[0].ToolCalls[1].FunctionCall.Arguments)
}

// Short values cost memory too: a million empty strings are no small script.
func TestManyShortValuesAreBounded(t *testing.T) {
	t.Parallel()
	src := "turns:\n  - tool_calls:\n      - name: a\n        arguments: {l: &l [" + strings.Repeat("'', ", 999) + "'']}\n" +
		"      - name: b\n        arguments: [" + strings.Repeat("*l, ", 199) + "*l]\n"
	_, err := Parse("s.yaml", []byte(src))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an alias expands to too much")
}

// A merge key (<<) takes the keys of an anchored turn, as YAML's decoder
// does; what it brings is checked as if written in place.
func TestMergeKeys(t *testing.T) {
	t.Parallel()
	src := "turns:\n  - &ask {tool_calls: [{name: read_file, arguments: {path: a.md}}], usage: {input_tokens: 3, output_tokens: 1}}\n" +
		"  - <<: *ask\n    expect: {tool_result_contains: x}\n  - {<<: [{text: done}], stop_reason: end_turn}\n"
	m, err := Parse("s.yaml", []byte(src))
	require.NoError(t, err)
	require.Equal(t, 3, m.Remaining())
	assert.Equal(t, "read_file", m.turns[1].ToolCalls[0].Name)
	assert.Equal(t, "x", m.turns[1].Expect.ToolResultContains)
	assert.Equal(t, "done", m.turns[2].Text)

	for src, want := range map[string]string{
		"turns:\n  - &t {txt: hi}\n  - <<: *t\n":                 `s.yaml:2:9: unknown key in turn 1 (did you mean "text"?)`,
		"turns:\n  - text: a\n  - <<: {tool_calls: [{id: x}]}\n": "s.yaml:3:23: tool call 1 of turn 2 has no name",
		"turns:\n  - <<: hi\n    text: a\n":                      "s.yaml:2:9: << must be a mapping or a list of mappings to merge, not a string",
	} {
		_, err := Parse("s.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want, src)
	}
}
