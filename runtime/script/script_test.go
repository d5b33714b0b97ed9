package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

const notesScript = `
turns:
  - tool_calls:
      - name: read_file
        arguments: {path: notes.md}
      - id: second
        name: list_directory
    usage: {input_tokens: 120, output_tokens: 14}
  - expect:
      tool_result_contains: "# Notes"
      tools: [read_file]
    text: The notes are about testing.
`

func TestLoadAndAnswer(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.yaml")
	require.NoError(t, os.WriteFile(path, []byte(notesScript), 0o600))
	m, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, OpenAI, m.Dialect())

	ctx := context.Background()
	tools := llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "read_file"}}})
	first, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "go")}, tools, llms.WithTemperature(0.5))
	require.NoError(t, err)
	require.Len(t, first.Choices, 1)
	c := first.Choices[0]
	assert.Equal(t, "tool_calls", c.StopReason)
	assert.Equal(t, []llms.ToolCall{
		{ID: "call_1_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "read_file", Arguments: `{"path":"notes.md"}`}},
		{ID: "second", Type: "function", FunctionCall: &llms.FunctionCall{Name: "list_directory", Arguments: ""}},
	}, c.ToolCalls)
	assert.Equal(t, map[string]any{"PromptTokens": 120, "CompletionTokens": 14, "TotalTokens": 134}, c.GenerationInfo)

	history := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "go"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{c.ToolCalls[0]}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_1_1", Content: "1: # Notes"}}},
	}
	second, err := m.GenerateContent(ctx, history, tools)
	require.NoError(t, err)
	assert.Equal(t, "The notes are about testing.", second.Choices[0].Content)
	assert.Equal(t, "stop", second.Choices[0].StopReason)

	reqs := m.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, 0.5, reqs[0].Options.Temperature)
	assert.Equal(t, history, reqs[1].Messages)
	assert.Equal(t, 0, m.Remaining())

	_, err = m.GenerateContent(ctx, history)
	require.ErrorIs(t, err, ErrExhausted)
	assert.EqualError(t, err, "script notes.yaml: request 3: the script has no turn left (it has 2)")
}

func TestAnthropicShape(t *testing.T) {
	t.Parallel()
	m := New(Turn{
		Text:      "Reading.",
		ToolCalls: []ToolCall{Call("a", map[string]any{"x": 1}), Call("b", `{"y":2}`)},
		Usage:     &Usage{InputTokens: 3, OutputTokens: 4},
	}).WithDialect(Anthropic)
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 3, "one choice per block")
	assert.Equal(t, "Reading.", resp.Choices[0].Content)
	for i, name := range []string{"a", "b"} {
		choice := resp.Choices[i+1]
		require.Len(t, choice.ToolCalls, 1)
		assert.Equal(t, name, choice.ToolCalls[0].FunctionCall.Name)
		assert.Empty(t, choice.ToolCalls[0].Type, "anthropic leaves the type empty")
	}
	for _, choice := range resp.Choices {
		assert.Equal(t, "tool_use", choice.StopReason)
		assert.Equal(t, map[string]any{"InputTokens": 3, "OutputTokens": 4}, choice.GenerationInfo, "usage repeats on every block")
	}
}

func TestExpectations(t *testing.T) {
	t.Parallel()
	system := llms.TextParts(llms.ChatMessageTypeSystem, "You review code.")
	user := llms.TextParts(llms.ChatMessageTypeHuman, "Review main.go")
	call := llms.ToolCall{ID: "1", FunctionCall: &llms.FunctionCall{Name: "read_file"}}
	oldResult := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "0", Content: "old result"}}}
	newResult := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "1", Content: "package main"}}}
	history := []llms.MessageContent{
		system, user,
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}}, oldResult,
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}}, newResult,
	}
	cases := []struct {
		name   string
		expect Expect
		opts   []llms.CallOption
		want   string // part of the error; "" when the expectation holds
	}{
		{"tool result", Expect{ToolResultContains: "package main"}, nil, ""},
		{"only new tool results count", Expect{ToolResultContains: "old result"}, nil, `no new tool result contains "old result"`},
		{"tool results only", Expect{ToolResultContains: "Review"}, nil, `no new tool result contains "Review"`},
		{"message", Expect{MessageContains: "package"}, nil, ""},
		{"system", Expect{SystemContains: "review code"}, nil, ""},
		{"system missing", Expect{SystemContains: "poetry"}, nil, `the system message does not contain "poetry"`},
		{"tools offered", Expect{Tools: []string{"read_file"}}, []llms.CallOption{llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "read_file"}}})}, ""},
		{"tool not offered", Expect{Tools: []string{"write_file"}}, nil, `tool "write_file" is not offered`},
		{"tool choice", Expect{ToolChoice: "none"}, []llms.CallOption{llms.WithToolChoice("none")}, ""},
		{"tool choice missing", Expect{ToolChoice: "none"}, nil, `tool choice is <nil>, want "none"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := tc.expect
			m := New(Turn{Text: "ok", Expect: &e})
			_, err := m.GenerateContent(context.Background(), history, tc.opts...)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrDiverged)
			assert.ErrorContains(t, err, "script: turn 1: the conversation diverged from the script: "+tc.want)
		})
	}
}

// A long message is cut in the divergence report at a character boundary:
// a cut inside a multi-byte character left half of it, which %q showed as
// escaped bytes.
func TestDivergenceCutsLongMessagesWhole(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, text, shown string }{
		{"straddling the cut", strings.Repeat("a", 199) + "€ and more", strings.Repeat("a", 199) + "…"},
		{"ending at the cut", strings.Repeat("a", 197) + "€€", strings.Repeat("a", 197) + "€…"},
		{"short", "déjà vu", "déjà vu"},
		{"not UTF-8", strings.Repeat("\x80", 300), strings.Repeat("\x80", 200) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := New(Turn{Text: "ok", Expect: &Expect{ToolResultContains: "done"}})
			result := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "1", Content: tc.text}}}
			_, err := m.GenerateContent(context.Background(), []llms.MessageContent{result})
			require.ErrorIs(t, err, ErrDiverged)
			assert.EqualError(t, err, `script: turn 1: the conversation diverged from the script: no new tool result contains "done" (new messages: tool: `+fmt.Sprintf("%q", tc.shown)+`)`)
			assert.True(t, utf8.ValidString(err.Error()))
		})
	}
}

func TestErrorTurn(t *testing.T) {
	t.Parallel()
	m := New(Turn{Error: "503 overloaded"}, Say("after"))
	_, err := m.GenerateContent(context.Background(), nil)
	assert.EqualError(t, err, "503 overloaded")
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "after", resp.Choices[0].Content)
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := New(Say("x"))
	_, err := m.GenerateContent(ctx, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, m.Remaining(), "a cancelled request uses no turn")
}

func TestDelay(t *testing.T) {
	t.Parallel()
	m, err := Parse("s.yaml", []byte("turns:\n  - {text: late, delay: 30ms}\n  - {text: never, delay: 1h}\n"))
	require.NoError(t, err)
	start := time.Now()
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "late", resp.Choices[0].Content)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "the answer waits for its delay")

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	_, err = m.GenerateContent(ctx, nil)
	require.ErrorIs(t, err, context.Canceled, "an ending context cuts the delay short")
	assert.Equal(t, 0, m.Remaining(), "a request cut short during its delay has used its turn")
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ src, want string }{
		"unknown key": {"turns:\n  - txt: hi\n",
			`s.yaml:2:5: unknown key in turn 1 (did you mean "text"?); the keys are delay, error, expect, stop_reason, text, tool_calls, usage`},
		"unknown top-level key": {"turnz:\n  - text: hi\n",
			`s.yaml:1:1: unknown key in the script (did you mean "turns"?); the keys are dialect, turns`},
		"unknown key far from any": {"turns:\n  - text: hi\n    arguments: {}\n",
			`s.yaml:3:5: unknown key in turn 1; the keys are delay, error, expect, stop_reason, text, tool_calls, usage`},
		"a mapping for a list": {"turns:\n  - tool_calls: {name: read_file}\n",
			"s.yaml:2:17: tool_calls must be a list of tool calls, not a mapping"},
		"a scalar for a mapping": {"turns:\n  - tool_calls: [read_file]\n",
			"s.yaml:2:18: tool call 1 must be a mapping with name and arguments, not a string"},
		"not a number": {"turns:\n  - text: hi\n    usage: {input_tokens: many}\n",
			"s.yaml:3:27: input_tokens must be a whole number, not a string"},
		"not a whole number": {"turns:\n  - text: hi\n    usage: {input_tokens: 1.5}\n",
			"s.yaml:3:27: input_tokens must be a whole number, not a number with a fraction, an exponent, another base or too many digits"},
		"too large a number": {"turns:\n  - text: hi\n    usage: {input_tokens: 99999999999999999999}\n",
			"s.yaml:3:27: input_tokens must be a whole number, not a number with a fraction, an exponent, another base or too many digits"},
		"a number in hexadecimal": {"turns:\n  - text: hi\n    usage: {input_tokens: 0x1F}\n",
			"s.yaml:3:27: input_tokens must be a whole number, not a number with a fraction, an exponent, another base or too many digits"},
		"not a duration": {"turns:\n  - text: hi\n    delay: soon\n",
			`s.yaml:3:12: delay must be a duration such as "250ms" or "2s", not other text`},
		"a duration without a unit": {"turns:\n  - text: hi\n    delay: 2\n",
			`s.yaml:3:12: delay must be a duration such as "250ms" or "2s", not a number: write its unit, as in 2s`},
		"zero without a unit": {"turns:\n  - text: hi\n    delay: 0\n",
			`s.yaml:3:12: delay must be a duration such as "250ms" or "2s", not a number: write its unit, as in 2s`},
		"a negative duration": {"turns:\n  - text: hi\n    delay: -1s\n",
			`s.yaml:3:12: delay must be a duration such as "250ms" or "2s", not a negative one`},
		"a list for text":  {"turns:\n  - text: [a, b]\n", "s.yaml:2:11: text must be a string, not a list"},
		"turns not a list": {"turns: hello\n", "s.yaml:1:8: turns must be a list of turns, not a string"},
		"no turns":         {"dialect: openai\n", "s.yaml:1:1: the script has no turns"},
		"empty turns":      {"turns: []\n", "s.yaml:1:8: the script has no turns"},
		"empty turn":       {"turns:\n  - usage: {input_tokens: 1}\n", "s.yaml:2:5: turn 1 has no text, tool_calls, error or stop_reason"},
		"nameless call": {"turns:\n  - text: x\n  - tool_calls: [{arguments: {}}]\n",
			"s.yaml:3:18: tool call 1 of turn 2 has no name"},
		"bad dialect": {"dialect: gemini\nturns: [{text: x}]\n",
			`s.yaml:1:10: unknown dialect; the dialects are openai and anthropic`},
		"misspelt dialect": {"dialect: openia\nturns: [{text: x}]\n",
			`s.yaml:1:10: unknown dialect (did you mean "openai"?); the dialects are openai and anthropic`},
		"every problem": {"turns:\n  - txt: a\n  - tool_calls: {}\n",
			"s.yaml:2:5: unknown key in turn 1 (did you mean \"text\"?); the keys are delay, error, expect, stop_reason, text, tool_calls, usage\n" +
				"s.yaml:3:17: tool_calls must be a list of tool calls, not a mapping"},
		"not yaml":      {"turns: [", "s.yaml:1: invalid YAML: did not find expected node content"},
		"empty":         {"", "s.yaml: the script is empty: it needs turns"},
		"not a mapping": {"- text: hi\n", "s.yaml:1:1: the script must be a mapping with dialect and turns, not a list"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("s.yaml", []byte(tc.src))
			assert.EqualError(t, err, tc.want)
			var errs Errors
			require.ErrorAs(t, err, &errs)
			var first *Error
			require.ErrorAs(t, err, &first)
			assert.Equal(t, "s.yaml", first.File)
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Scalars of any kind are text where text is wanted, as YAML writes them.
func TestParseScalarsAsText(t *testing.T) {
	t.Parallel()
	m, err := Parse("s.yaml", []byte("turns:\n  - text: 42\n  - tool_calls: [{name: true, arguments: 7}]\n"))
	require.NoError(t, err)
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "42", resp.Choices[0].Content)
	resp, err = m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "true", resp.Choices[0].ToolCalls[0].FunctionCall.Name)
	assert.Equal(t, "7", resp.Choices[0].ToolCalls[0].FunctionCall.Arguments)
}

func TestJSONScript(t *testing.T) {
	t.Parallel()
	m, err := Parse("s.json", []byte(`{"dialect": "anthropic", "turns": [{"text": "hi", "usage": {"input_tokens": 1, "output_tokens": 2}}]}`))
	require.NoError(t, err)
	assert.Equal(t, Anthropic, m.Dialect())
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, "end_turn", resp.Choices[0].StopReason)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const n = 50
	turns := make([]Turn, n)
	for i := range turns {
		turns[i] = Say(fmt.Sprint(i))
	}
	m := New(turns...)
	var wg sync.WaitGroup
	seen := make(chan string, n+5)
	errs := make(chan error, n+5)
	for range n + 5 {
		wg.Go(func() {
			resp, err := m.GenerateContent(context.Background(), nil)
			if err != nil {
				errs <- err
				return
			}
			seen <- resp.Choices[0].Content
		})
	}
	wg.Wait()
	close(seen)
	close(errs)
	got := map[string]bool{}
	for s := range seen {
		got[s] = true
	}
	assert.Len(t, got, n, "every turn is handed out exactly once")
	for err := range errs {
		assert.True(t, errors.Is(err, ErrExhausted), err)
	}
	assert.Len(t, m.Requests(), n+5)
}

func TestCall(t *testing.T) {
	t.Parallel()
	out, err := New(Say("pong")).Call(context.Background(), "ping")
	require.NoError(t, err)
	assert.Equal(t, "pong", out)
}

// Arguments are sent as JSON as YAML writes them: a key is its text, a date
// stays the date written.
func TestArgumentsAsWritten(t *testing.T) {
	t.Parallel()
	m, err := Parse("s.yaml", []byte("turns:\n  - tool_calls:\n      - {name: a, arguments: {1: x, on: [2024-01-01, {true: 1.5}]}}\n"+
		"      - {name: b, arguments: {<<: {path: a.md}, n: 2}}\n      - {name: c, arguments: 2024-01-01}\n"))
	require.NoError(t, err)
	resp, err := m.GenerateContent(context.Background(), nil)
	require.NoError(t, err)
	calls := resp.Choices[0].ToolCalls
	require.Len(t, calls, 3)
	assert.Equal(t, `{"1":"x","on":["2024-01-01",{"true":1.5}]}`, calls[0].FunctionCall.Arguments)
	assert.Equal(t, `{"n":2,"path":"a.md"}`, calls[1].FunctionCall.Arguments)
	assert.Equal(t, `2024-01-01`, calls[2].FunctionCall.Arguments)
}
