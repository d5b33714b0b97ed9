package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtractJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, answer, want, err string
	}{
		{name: "whole answer", answer: ` {"a": 1} `, want: `{"a": 1}`},
		{name: "array", answer: `[1, 2]`, want: `[1, 2]`},
		{name: "scalar", answer: `"text"`, want: `"text"`},
		{name: "json fence", answer: "Here:\n```json\n{\"a\": 1}\n```\nDone.", want: `{"a": 1}`},
		{name: "json fence wins over bare fence", answer: "```\nnot it\n```\n```JSON\n[3]\n```", want: `[3]`},
		{name: "bare fence", answer: "```\n{\"a\": 2}\n```", want: `{"a": 2}`},
		{name: "invalid fence", answer: "```json\n{\"a\": }\n```", err: "the fenced block is not valid JSON: invalid character '}' looking for beginning of value"},
		{name: "embedded object", answer: `The answer is {"a": [1, {"b": 2}]} as requested.`, want: `{"a": [1, {"b": 2}]}`},
		{name: "brackets in prose first", answer: `See [the notes] and {oops. Result: {"ok": true}`, want: `{"ok": true}`},
		{name: "no json", answer: "I could not do it.", err: errNoJSON.Error()},
		// JSON begun but broken is not "no JSON": the model is told what
		// is wrong with it, as it is of a broken fenced block.
		{name: "object cut short", answer: `{"name": "Ada", "age": 36`, err: "the response is not valid JSON: unexpected end of JSON input"},
		{name: "trailing comma", answer: "{\"name\": \"Ada\",\n \"age\": 36,\n}", err: "the response is not valid JSON: invalid character '}' looking for beginning of object key string"},
		{name: "broken object after prose", answer: `Here it is: {"name": "Ada" "age": 36}`, err: "the response is not valid JSON: invalid character '\"' after object key:value pair"},
		{name: "prose braces are not broken JSON", answer: `I could not {do} it.`, err: errNoJSON.Error()},
		{name: "a bracketed note is not broken JSON", answer: `[Note] I could not do it.`, err: errNoJSON.Error()},
		{name: "empty", answer: "  \n", err: "the response is empty; reply with JSON that conforms to the schema"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := extractJSON(tc.answer, nil)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func TestOutputSchemaParse(t *testing.T) {
	t.Parallel()
	o, err := compileOutputSchema(json.RawMessage(personSchema))
	require.NoError(t, err)
	cases := []struct {
		name, answer, want, err string
	}{
		{name: "valid", answer: "{ \"name\": \"Ada\",\n \"age\": 36 }", want: `{"name":"Ada","age":36}`},
		{name: "missing and extra", answer: `{"age": "old", "x": 1}`,
			err: "the response does not match the schema: at '': missing property 'name'; at '/age': got string, want integer; at '': additional properties 'x' not allowed"},
		{name: "wrong type", answer: `[]`, err: "the response does not match the schema: at '': got array, want object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := o.parse(tc.answer)
			if tc.err != "" {
				require.Error(t, err)
				assert.Equal(t, tc.err, err.Error())
				assert.NotContains(t, err.Error(), "agentspec://", "the schema's URL is noise for the model")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	assert.Contains(t, o.instructions(), personSchema)

	none, err := compileOutputSchema(nil)
	require.NoError(t, err)
	assert.Nil(t, none)
	_, err = compileOutputSchema(json.RawMessage(`{"type":`))
	assert.ErrorContains(t, err, "output_schema is not JSON")
}
