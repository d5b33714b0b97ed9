package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/providers/providertest"
)

// runOutcome is what `agentspec run` printed and returned.
type runOutcome struct {
	code           int
	stdout, stderr string
}

func invokeRun(t *testing.T, stdin string, args ...string) runOutcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"run"}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return runOutcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// runFixture is a spec directory and a separate workspace holding notes.md.
type runFixture struct {
	specDir, workspace string
}

func newRunFixture(t *testing.T) runFixture {
	t.Helper()
	f := runFixture{specDir: t.TempDir(), workspace: t.TempDir()}
	require.NoError(t, os.WriteFile(filepath.Join(f.workspace, "notes.md"), []byte("# Notes\nhello from the notes\n"), 0o644))
	return f
}

func (f runFixture) write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(f.specDir, name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// summarizeScript reads notes.md, writes summary.md and answers.
const summarizeScript = `
turns:
  - tool_calls:
      - name: read_file
        arguments: {path: notes.md}
    usage: {input_tokens: 100, output_tokens: 20}
  - expect:
      tool_result_contains: hello from the notes
    tool_calls:
      - name: write_file
        arguments: {path: summary.md, content: "A greeting.\n"}
    usage: {input_tokens: 150, output_tokens: 30}
  - text: Summary written to summary.md.
    usage: {input_tokens: 200, output_tokens: 8}
`

const summarizeSpec = `version: 1
model: script:script.yaml
instructions: Summarise notes.md into summary.md for {{audience}}.
capabilities:
  - FileSystem
`

func TestRunScriptEndToEnd(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", summarizeScript)
	specPath := f.write(t, "agent.yaml", summarizeSpec)
	events := filepath.Join(t.TempDir(), "events.jsonl")

	out := invokeRun(t, "", specPath, "--workspace", f.workspace, "--var", "audience=the team", "--events", events)
	require.Equal(t, 0, out.code, out.stderr)

	assert.Equal(t, "Summary written to summary.md.\n", out.stdout)
	written, err := os.ReadFile(filepath.Join(f.workspace, "summary.md"))
	require.NoError(t, err)
	assert.Equal(t, "A greeting.\n", string(written))

	lines := strings.Split(strings.TrimSuffix(out.stderr, "\n"), "\n")
	require.Len(t, lines, 3, out.stderr)
	assert.Regexp(t, `^  read_file notes\.md  \d+\.\dms$`, lines[0])
	assert.Regexp(t, `^  write_file summary\.md  \d+\.\dms$`, lines[1])
	assert.Regexp(t, `^3 model requests, 450 input \+ 58 output tokens, 2 tool calls, \d+\.\d+m?s$`, lines[2])

	var kinds []string
	file, err := os.Open(events)
	require.NoError(t, err)
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Kind string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), sc.Text())
		kinds = append(kinds, ev.Kind)
	}
	assert.Equal(t, []string{
		"run.model_request", "run.model_response",
		"run.tool_call", "file_system.file_read", "run.tool_result",
		"run.model_request", "run.model_response",
		"run.tool_call", "file_system.file_change_request", "file_system.file_written", "run.tool_result",
		"run.model_request", "run.model_response",
		"run.end",
	}, kinds)
}

func TestRunOutputFormats(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "answer.yaml", "turns:\n  - text: \"Sure: {\\\"title\\\": \\\"Notes\\\"}\"\n    usage: {input_tokens: 9, output_tokens: 4}\n")
	plain := f.write(t, "plain.yaml", "version: 1\nmodel: script:answer.yaml\ninstructions: Answer.\n")
	schema := f.write(t, "schema.yaml", "version: 1\nmodel: script:answer.yaml\ninstructions: Answer.\n"+
		"output_schema:\n  type: object\n  properties: {title: {type: string}}\n  required: [title]\n")

	type envelope struct {
		Output json.RawMessage `json:"output"`
		Usage  map[string]any  `json:"usage"`
	}
	cases := []struct {
		name       string
		args       []string
		wantText   string
		wantOutput string // the envelope's output, when JSON is expected
	}{
		{name: "text", args: []string{plain}, wantText: "Sure: {\"title\": \"Notes\"}\n"},
		{name: "json", args: []string{plain, "--output", "json"}, wantOutput: `"Sure: {\"title\": \"Notes\"}"`},
		{name: "schema prints the answer's JSON", args: []string{schema}, wantText: "{\"title\":\"Notes\"}\n"},
		{name: "schema as text", args: []string{schema, "--output", "text"}, wantText: "{\"title\":\"Notes\"}\n"},
		{name: "schema envelope", args: []string{schema, "-o", "json"}, wantOutput: `{"title":"Notes"}`},
		{name: "old spelling", args: []string{schema, "--format", "json"}, wantOutput: `{"title":"Notes"}`},
		{name: "old boolean spelling", args: []string{plain, "--json"}, wantOutput: `"Sure: {\"title\": \"Notes\"}"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := invokeRun(t, "", append(tc.args, "-q")...)
			require.Equal(t, 0, out.code, out.stderr)
			assert.Empty(t, out.stderr, "-q prints nothing on stderr")
			if tc.wantText != "" {
				assert.Equal(t, tc.wantText, out.stdout)
				return
			}
			var env envelope
			require.NoError(t, json.Unmarshal([]byte(out.stdout), &env), out.stdout)
			assert.JSONEq(t, tc.wantOutput, string(env.Output))
			assert.Equal(t, float64(1), env.Usage["requests"])
			assert.Equal(t, float64(9), env.Usage["input_tokens"])
			assert.Contains(t, env.Usage, "elapsed_ms")
		})
	}
}

func TestRunInputSources(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "echo.yaml", "turns:\n  - expect: {message_contains: \"What do the notes say?\"}\n    text: ok\n")
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:echo.yaml\ninstructions: Answer.\n")
	inputFile := f.write(t, "input.txt", "What do the notes say?\n")
	cases := map[string]struct {
		stdin string
		args  []string
	}{
		"flag":       {args: []string{"--input", "What do the notes say?"}},
		"file":       {args: []string{"--input-file", inputFile}},
		"stdin dash": {stdin: "What do the notes say?", args: []string{"-"}},
		"stdin file": {stdin: "What do the notes say?", args: []string{"--input-file", "-"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := invokeRun(t, tc.stdin, append([]string{specPath, "-q"}, tc.args...)...)
			require.Equal(t, 0, out.code, out.stderr)
			assert.Equal(t, "ok\n", out.stdout)
		})
	}
}

func TestRunApprove(t *testing.T) {
	t.Parallel()
	declined := `
turns:
  - tool_calls:
      - name: write_file
        arguments: {path: summary.md, content: "A greeting.\n"}
  - expect:
      tool_result_contains: "the user declined the change"
    text: Not written.
`
	approved := `
turns:
  - tool_calls:
      - name: write_file
        arguments: {path: summary.md, content: "A greeting.\n"}
  - text: Written.
`
	cases := []struct {
		name, script, answer string
		written              bool
		want                 string
		progress             string // the end of the write_file progress line
	}{
		{name: "no", script: declined, answer: "n\n", want: "Not written.\n", progress: "  cancelled: the user declined the change\n"},
		{name: "end of input", script: declined, answer: "", want: "Not written.\n", progress: "  cancelled: the user declined the change\n"},
		{name: "yes", script: approved, answer: "yes\n", written: true, want: "Written.\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newRunFixture(t)
			f.write(t, "script.yaml", tc.script)
			specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ninstructions: Write.\ncapabilities: [FileSystem]\n")
			out := invokeRun(t, tc.answer, specPath, "--workspace", f.workspace, "--approve")
			require.Equal(t, 0, out.code, out.stderr)
			assert.Equal(t, tc.want, out.stdout)
			assert.Contains(t, out.stderr, "The agent wants to write summary.md:\n  --- a/summary.md\n  +++ b/summary.md\n")
			assert.Contains(t, out.stderr, "+A greeting.")
			assert.Contains(t, out.stderr, "Apply this change? [y/N] ")
			if tc.progress != "" {
				assert.Regexp(t, `(?m)^  write_file summary.md  [0-9.]+ms`+regexp.QuoteMeta(tc.progress), out.stderr)
			}
			_, err := os.Stat(filepath.Join(f.workspace, "summary.md"))
			assert.Equal(t, tc.written, err == nil, "summary.md written: %v", err)
		})
	}
}

// Changes that were refused do not fail a run the model finished, but the
// progress says what became of each.
func TestRunProgressSaysWhatBecameOfEachChange(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", `
turns:
  - tool_calls:
      - name: write_file
        arguments: {path: .env, content: "KEY=1\n"}
      - name: write_file
        arguments: {path: notes.md, content: "new\n", expected_hash: "sha256:0000"}
  - text: Nothing changed.
`)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ninstructions: Write.\ncapabilities: [FileSystem]\n")
	out := invokeRun(t, "", specPath, "--workspace", f.workspace)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "Nothing changed.\n", out.stdout)
	assert.Regexp(t, `(?m)^  write_file \.env  [0-9.]+ms  protected: Path '\.env' is protected`, out.stderr)
	assert.Regexp(t, `(?m)^  write_file notes\.md  [0-9.]+ms  conflict: file 'notes\.md' has changed`, out.stderr)
	notes, err := os.ReadFile(filepath.Join(f.workspace, "notes.md"))
	require.NoError(t, err)
	assert.Equal(t, "# Notes\nhello from the notes\n", string(notes))
}

func TestRunFailures(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "short.yaml", "turns:\n  - tool_calls: [{name: read_file, arguments: {path: notes.md}}]\n")
	f.write(t, "diverge.yaml", "turns:\n  - expect: {system_contains: poetry}\n    text: x\n")
	short := f.write(t, "short-agent.yaml", "version: 1\nmodel: script:short.yaml\ninstructions: Read.\ncapabilities: [FileSystem]\n")
	diverge := f.write(t, "diverge-agent.yaml", "version: 1\nmodel: script:diverge.yaml\ninstructions: Prose.\n")
	withVar := f.write(t, "var-agent.yaml", "version: 1\nmodel: script:diverge.yaml\ninstructions: Review {{repo}}.\n")
	withVars := f.write(t, "vars-agent.yaml", "version: 1\nmodel: script:diverge.yaml\ninstructions: Review {{repo}} for {{focus}}.\n")
	invalid := f.write(t, "invalid.yaml", "version: 1\nmodel: script:diverge.yaml\ninstructions: x\nmax_tool_rounds: 0\n")
	noScript := f.write(t, "no-script.yaml", "version: 1\nmodel: script:gone.yaml\n")
	f.write(t, "typo.yaml", "turns:\n  - text: x\n    tool_calls: {name: read_file}\n")
	badScript := f.write(t, "bad-script.yaml", "version: 1\nmodel: script:typo.yaml\n")
	logitBias := f.write(t, "logit-bias.yaml", "version: 1\nmodel: anthropic:claude-test\nmodel_settings:\n  logit_bias: {\"1\": 5}\n")

	cases := []struct {
		name string
		args []string
		code int
		want string // a line of stderr
	}{
		{name: "script runs out", args: []string{short, "--workspace", f.workspace}, code: exitFailure,
			want: "agentspec: model request 2: script short.yaml: request 2: the script has no turn left (it has 1)"},
		{name: "conversation diverges", args: []string{diverge}, code: exitFailure,
			want: `agentspec: model request 1: script diverge.yaml: turn 1: the conversation diverged from the script: the system message does not contain "poetry"`},
		{name: "missing var", args: []string{withVar}, code: exitUsage,
			want: withVar + `:3:22: instructions use variable "repo", but no value was given (set it with --var repo=VALUE)`},
		{name: "missing vars", args: []string{withVars}, code: exitUsage,
			want: withVars + `:3:22: instructions use variable "repo", but no value was given (set it with --var repo=VALUE)` + "\n" +
				withVars + `:3:35: instructions use variable "focus", but no value was given (set it with --var focus=VALUE)`},
		{name: "unknown var", args: []string{withVar, "--var", "repo=x", "--var", "nope=1"}, code: exitUsage,
			want: `agentspec: --var nope: the spec has no {{nope}} placeholder; it has {{repo}}`},
		{name: "unknown vars, no placeholders", args: []string{diverge, "--var", "b=1", "--var", "a=2"}, code: exitUsage,
			want: `agentspec: --var a, b: the spec has no {{a}} or {{b}} placeholders; it has none`},
		{name: "missing script", args: []string{noScript}, code: exitUsage,
			want: noScript + ":2:8: cannot read the script file " + filepath.Join(f.specDir, "gone.yaml") + ": no such file"},
		{name: "invalid script", args: []string{badScript}, code: exitUsage,
			want: badScript + ":2:8: invalid script file " + filepath.Join(f.specDir, "typo.yaml") + ":\n" +
				filepath.Join(f.specDir, "typo.yaml") + ":3:17: tool_calls must be a list of tool calls, not a mapping\n"},
		{name: "setting the provider lacks", args: []string{logitBias}, code: exitUsage,
			want: logitBias + ":4:15: anthropic does not support model_settings.logit_bias\n"},
		{name: "invalid spec", args: []string{invalid}, code: exitUsage, want: invalid + ":4:"},
		{name: "missing spec", args: []string{filepath.Join(f.specDir, "nope.yaml")}, code: exitUsage, want: "nope.yaml: no such file"},
		{name: "two inputs", args: []string{diverge, "--input", "a", "-"}, code: exitUsage,
			want: "agentspec: give the input one way: --input, --input-file or - (stdin)"},
		{name: "approve with stdin input", args: []string{diverge, "--approve", "-"}, code: exitUsage,
			want: "agentspec: --approve reads the answers from stdin, so the input cannot come from stdin too"},
		{name: "bad var", args: []string{diverge, "--var", "novalue"}, code: exitUsage, want: `agentspec: --var "novalue": want name=value`},
		{name: "bad output", args: []string{diverge, "--output", "yaml"}, code: exitUsage, want: `agentspec: --output must be text or json, not "yaml"`},
		{name: "record and replay", args: []string{diverge, "--record", "a", "--replay", "b"}, code: exitUsage,
			want: "agentspec: --record and --replay cannot be used together"},
		{name: "stray argument", args: []string{diverge, "extra"}, code: exitUsage, want: `agentspec: unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := invokeRun(t, "", tc.args...)
			assert.Equal(t, tc.code, out.code, out.stderr)
			assert.Empty(t, out.stdout)
			assert.Contains(t, out.stderr, tc.want)
			for _, line := range strings.Split(strings.TrimSpace(out.stderr), "\n") {
				if strings.HasPrefix(line, "agentspec:") {
					assert.NotContains(t, line, "\n")
				}
			}
		})
	}
}

// The provider tests set environment variables, so they do not run in
// parallel.

func TestRunOpenAIServer(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"notes.md"}`}),
		providertest.Text("The notes say hello."),
	)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: openai:gpt-test\ninstructions: Read notes.md.\ncapabilities: [FileSystem]\n")

	out := invokeRun(t, "", specPath, "--workspace", f.workspace)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "The notes say hello.\n", out.stdout)
	assert.Contains(t, out.stderr, "  read_file notes.md  ")
	assert.Contains(t, out.stderr, "2 model requests, 20 input + 10 output tokens, 1 tool call, ")
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Contains(t, string(reqs[1].Body), "hello from the notes", "the tool result went back to the model")
}

func TestRunAnthropicServer(t *testing.T) {
	srv := providertest.NewAnthropicServer(t,
		providertest.Reply{
			Text:         "Reading the notes.",
			ToolCalls:    []providertest.ToolCall{{Name: "read_file", Arguments: `{"path":"notes.md"}`}, {Name: "list_directory"}},
			InputTokens:  12,
			OutputTokens: 7,
		},
		providertest.Text("The notes say hello."),
	)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: anthropic:claude-test\ninstructions: Read notes.md.\ncapabilities: [FileSystem]\n")

	out := invokeRun(t, "", specPath, "--workspace", f.workspace, "--output", "json")
	require.Equal(t, 0, out.code, out.stderr)
	var env struct {
		Output string
		Usage  struct {
			Requests    int `json:"requests"`
			InputTokens int `json:"input_tokens"`
			ToolCalls   int `json:"tool_calls"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &env))
	assert.Equal(t, "The notes say hello.", env.Output)
	assert.Equal(t, 2, env.Usage.Requests)
	assert.Equal(t, 22, env.Usage.InputTokens)
	assert.Equal(t, 2, env.Usage.ToolCalls)
}

func TestRunRecordReplay(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"notes.md"}`}),
		providertest.Text("The notes say hello."),
	)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: openai:gpt-test\ninstructions: Read notes.md.\ncapabilities: [FileSystem]\n")
	recording := filepath.Join(t.TempDir(), "cassette.json")

	out := invokeRun(t, "", specPath, "--workspace", f.workspace, "--record", recording, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	require.FileExists(t, recording)

	// The server has no reply left: the replay must not reach it. Neither
	// the key nor the base URL is needed: the recording has the endpoint.
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	out = invokeRun(t, "", specPath, "--workspace", f.workspace, "--replay", recording, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "The notes say hello.\n", out.stdout)
	assert.Len(t, srv.Requests(), 2)

	out = invokeRun(t, "", specPath, "--workspace", f.workspace, "-q")
	assert.Equal(t, exitFailure, out.code, "without the recording, the key is needed")
	assert.Contains(t, out.stderr, "OPENAI_API_KEY")
}

// --record asks for the provider's conversation: a result the cache holds
// does not stand in for it, nor leave an empty recording behind.
func TestRunRecordWithACache(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Text("Hello."), providertest.Text("Hello again."))
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: openai:gpt-test\ninstructions: Say hello.\ncache: {dir: cache}\n")

	out := invokeRun(t, "", specPath, "--workspace", f.workspace, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	recording := filepath.Join(t.TempDir(), "cassette.json")
	out = invokeRun(t, "", specPath, "--workspace", f.workspace, "--record", recording, "-o", "json", "-q")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stdout, `"cached": false`)
	assert.Len(t, srv.Requests(), 2, "the recorded run reached the model")
	data, err := os.ReadFile(recording)
	require.NoError(t, err)
	assert.Contains(t, string(data), "Hello again.")
}

// --replay plays the recording back: a result the cache holds does not
// stand in for it, so requests that no longer match still fail.
func TestRunReplayWithACache(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Text("Recorded."), providertest.Text("Live."))
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: openai:gpt-test\ninstructions: Say hello.\ncache: {dir: cache}\n")
	recording := filepath.Join(t.TempDir(), "cassette.json")
	out := invokeRun(t, "", specPath, "--workspace", f.workspace, "--input", "first", "--record", recording, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	out = invokeRun(t, "", specPath, "--workspace", f.workspace, "--input", "second", "-q")
	require.Equal(t, 0, out.code, out.stderr)
	require.Equal(t, "Live.\n", out.stdout)

	out = invokeRun(t, "", specPath, "--workspace", f.workspace, "--input", "second", "--replay", recording, "-q")
	assert.Equal(t, exitFailure, out.code, "the recording is of another conversation: %s", out.stdout)
	assert.Contains(t, out.stderr, "differs from the recording")
	out = invokeRun(t, "", specPath, "--workspace", f.workspace, "--input", "first", "--replay", recording, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "Recorded.\n", out.stdout)
}

// The event log says how a failed run ended: the rejection that ended it,
// then run.end.
func TestRunEventsOnFailure(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", "turns:\n  - text: done\n  - text: done\n  - text: done\n")
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ninstructions: Write review.md.\n"+
		"capabilities: [FileSystem]\nworkspace:\n  expected_output_files: [review.md]\n")
	events := filepath.Join(t.TempDir(), "events.jsonl")
	out := invokeRun(t, "", specPath, "--workspace", f.workspace, "--events", events, "-q")
	require.Equal(t, exitFailure, out.code)

	data, err := os.ReadFile(events)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	var rejected struct {
		Kind    string `json:"kind"`
		Type    string `json:"type"`
		Attempt int    `json:"attempt"`
		Limit   int    `json:"limit"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-2]), &rejected))
	assert.Equal(t, "run.rejected", rejected.Kind)
	assert.Equal(t, "check", rejected.Type)
	assert.Equal(t, 3, rejected.Attempt)
	assert.Equal(t, 3, rejected.Limit)

	var end struct {
		Kind   string  `json:"kind"`
		OK     bool    `json:"ok"`
		Error  *string `json:"error"`
		Cached bool    `json:"cached"`
		Usage  struct {
			Requests int `json:"requests"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &end))
	assert.Equal(t, "run.end", end.Kind)
	assert.False(t, end.OK)
	require.NotNil(t, end.Error)
	assert.Contains(t, *end.Error, "no valid final answer after 3 attempts")
	assert.Equal(t, 3, end.Usage.Requests)
	assert.False(t, end.Cached)
}

func TestRunProviderFailure(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, providertest.Fail(401, "Incorrect API key provided"))
	t.Setenv("OPENAI_API_KEY", "sk-wrong")
	t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: openai:gpt-test\ninstructions: Hi.\n")
	out := invokeRun(t, "", specPath)
	assert.Equal(t, exitFailure, out.code)
	assert.Contains(t, out.stderr, "agentspec: openai: authentication failed (401): Incorrect API key provided")
	assert.NotContains(t, out.stderr, "sk-wrong")
	assert.Contains(t, out.stderr, "1 model request, 0 input + 0 output tokens, 0 tool calls")
}

func TestSummarizeArgs(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"path":"notes.md"}`:                      "notes.md",
		`{"pattern":"TODO","path":"src"}`:          "src TODO",
		`{"content":"x","b":"second","a":"first"}`: "first",
		`{"n":1}`:  "",
		`not json`: "",
		`{"path":"` + strings.Repeat("a", 80) + `"}`: strings.Repeat("a", 59) + "…",
		`{"path":"two\nlines"}`:                      "two lines",
	}
	for args, want := range cases {
		assert.Equal(t, want, summarizeArgs(json.RawMessage(args)), args)
	}
}

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", "turns:\n  - text: never\n")
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ninstructions: Hi.\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"run", specPath, "-q"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, "agentspec: interrupted\n", stderr.String())
	assert.Empty(t, stdout.String())
}

func TestProgressStatusLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := &progress{w: &buf, live: true}
	ctx := context.Background()
	for _, ev := range []capabilities.Event{
		runtime.ModelRequest{Request: 1},
		runtime.ModelResponse{Request: 1},
		runtime.ToolCall{Name: "grep", Args: json.RawMessage(`{"pattern":"TODO"}`)},
		runtime.ToolResult{Name: "grep", Status: runtime.ToolRetry, Duration: 2500 * time.Microsecond, Message: "Invalid regex pattern:\nmissing )"},
		runtime.Retry{Type: runtime.RetryOutput, Attempt: 1, Limit: 3, Message: "the response is empty"},
		runtime.LimitReached{Limit: "max_tool_rounds", Value: 40},
		runtime.ModelRequest{Request: 2},
	} {
		require.NoError(t, p.listen(ctx, ev))
	}
	p.summary(&runtime.Result{Usage: runtime.Usage{Requests: 2, InputTokens: 5, OutputTokens: 1, ToolCalls: 1, Elapsed: 1500 * time.Millisecond}})
	const clear = "\r\033[K"
	assert.Equal(t, "  waiting for the model (request 1)…"+clear+
		"  grep TODO…"+clear+"  grep TODO  2.5ms  error: Invalid regex pattern: missing )\n"+
		"  answer rejected (attempt 1 of 3): the response is empty\n"+
		"  max_tool_rounds (40) reached: asking for the final answer\n"+
		"  waiting for the model (request 2)…"+clear+
		"2 model requests, 5 input + 1 output tokens, 1 tool call, 1.5s\n", buf.String())
}

func TestRunCache(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", summarizeScript)
	specPath := f.write(t, "agent.yaml", summarizeSpec+"cache: {dir: cache}\nworkspace:\n  input_globs: [notes.md]\n  expected_output_files: [summary.md]\n")
	args := []string{specPath, "--workspace", f.workspace, "--var", "audience=the team"}

	out := invokeRun(t, "", args...)
	require.Equal(t, 0, out.code, out.stderr)
	assert.FileExists(t, filepath.Join(f.specDir, "cache", "CACHEDIR.TAG"), "a relative cache dir is the spec's neighbour")

	out = invokeRun(t, "", args...)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "Summary written to summary.md.\n", out.stdout)
	lines := strings.Split(strings.TrimSuffix(out.stderr, "\n"), "\n")
	require.Len(t, lines, 2, out.stderr)
	assert.Regexp(t, `^  cached result [0-9a-f]{12}, stored \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, lines[0])
	assert.Regexp(t, `^cached, no model request, \d+\.\dms$`, lines[1])

	out = invokeRun(t, "", append(args, "--output", "json", "-q")...)
	require.Equal(t, 0, out.code, out.stderr)
	var env struct {
		Cached bool `json:"cached"`
		Usage  struct {
			Requests int `json:"requests"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &env))
	assert.True(t, env.Cached)
	assert.Zero(t, env.Usage.Requests)

	out = invokeRun(t, "", append(args, "--no-cache")...)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stderr, "3 model requests", "--no-cache runs the model")

	// The notes change: the cache does not answer.
	require.NoError(t, os.WriteFile(filepath.Join(f.workspace, "notes.md"), []byte("# Notes\nhello from the notes, again\n"), 0o644))
	out = invokeRun(t, "", args...)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stderr, "3 model requests")
}

// An --events file inside the workspace is agentspec's, not the run's: the
// cache key leaves it out, so the run it logged replays though every run
// adds to it, and the model may not rewrite it.
func TestRunEventsFileInTheWorkspace(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", summarizeScript)
	specPath := f.write(t, "agent.yaml", summarizeSpec+"cache: {dir: cache}\nworkspace:\n  input_globs: ['**']\n  expected_output_files: [summary.md]\n")
	events := filepath.Join(f.workspace, "events.jsonl")
	args := []string{specPath, "--workspace", f.workspace, "--var", "audience=the team", "--events", events, "-o", "json", "-q"}
	var env struct {
		Cached bool `json:"cached"`
	}
	out := invokeRun(t, "", args...)
	require.Equal(t, 0, out.code, out.stderr)
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &env))
	assert.False(t, env.Cached)
	out = invokeRun(t, "", args...)
	require.Equal(t, 0, out.code, out.stderr)
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &env))
	assert.True(t, env.Cached, "the events of the first run are not an input of the second")

	f.write(t, "tamper.yaml", "turns:\n  - tool_calls: [{name: write_file, arguments: {path: events.jsonl, content: \"nothing happened\\n\"}}]\n  - text: done\n")
	tamper := f.write(t, "tamper-agent.yaml", "model: script:tamper.yaml\ninstructions: Tidy up.\ncapabilities: [FileSystem]\n")
	out = invokeRun(t, "", tamper, "--workspace", f.workspace, "--events", events, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	data, err := os.ReadFile(events)
	require.NoError(t, err)
	for line := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
		assert.True(t, json.Valid([]byte(line)), "the log is the run's events, whole: %q", line)
	}
	assert.Contains(t, string(data), `"refusal":"protected"`, "the write was refused as protected")
	assert.Contains(t, string(data), `"run.end"`)
}

func TestRunCheckFailure(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", "turns:\n  - text: done\n  - text: done\n  - text: done\n")
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ninstructions: Write review.md.\n"+
		"capabilities: [FileSystem]\nworkspace:\n  checks:\n    - {file: review.md, min_chars: 10}\n")
	out := invokeRun(t, "", specPath, "--workspace", f.workspace)
	assert.Equal(t, exitFailure, out.code)
	assert.Contains(t, out.stderr, "  answer rejected (attempt 1 of 3): review.md does not exist. Write it with write_file.\n")
	assert.Contains(t, out.stderr, "agentspec: no valid final answer after 3 attempts: check exists of review.md failed ("+specPath+":7:7): review.md does not exist. Write it with write_file.\n")
}
