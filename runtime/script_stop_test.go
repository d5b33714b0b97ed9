package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/script"
)

// A script's stop_reason is read as a provider's stop reason is, as
// docs/scripted-models.md says: a script can stand in for a refusal, a
// response cut at max_tokens or a paused turn.
func TestScriptStopReasons(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		script string
		want   error  // nil: the run succeeds
		output string // the answer when it succeeds
		msg    string
	}{
		"refusal": {script: "turns:\n  - {text: I cannot help with that., stop_reason: refusal}\n",
			want: ErrRefused, msg: "the model refused: I cannot help with that."},
		"max_tokens": {script: "turns:\n  - {text: The answer is, stop_reason: max_tokens}\n",
			want: ErrTruncated},
		"length": {script: "turns:\n  - {text: The answer is, stop_reason: length}\n",
			want: ErrTruncated},
		"model_context_window_exceeded": {script: "turns:\n  - {text: The answer is, stop_reason: model_context_window_exceeded}\n",
			want: ErrContextFull, msg: "the response was cut: the conversation filled the model's context window, in the middle of an answer; " +
				"fewer or smaller tool results, or a model with a larger window, would leave it room"},
		"pause_turn": {script: "turns:\n  - {text: Searching., stop_reason: pause_turn}\n  - {text: done}\n",
			output: "done"},
		"tool stop without calls": {script: "turns:\n  - {stop_reason: tool_calls}\n", want: ErrLostToolCalls},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := script.Parse("s.yaml", []byte(tc.script))
			require.NoError(t, err)
			res, err := runScript(t, newSpec(), m, []capabilities.Tool{&echoTool{name: "read_file"}})
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, tc.output, res.Output)
				assert.Equal(t, 0, m.Remaining())
				return
			}
			require.ErrorIs(t, err, tc.want)
			if tc.msg != "" {
				assert.EqualError(t, err, tc.msg)
			}
		})
	}
}
