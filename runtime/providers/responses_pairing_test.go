package providers

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// A reasoning model's turns go back to the Responses API as it pairs them:
// the message and function_call that followed a reasoning item keep their
// ids (msg_..., fc_...) beside it, through a tool round and a second user
// turn; the fake server refuses, as the API does, a reasoning item sent
// without its following item and an item sent without its reasoning item.
func TestResponsesReasoningToolRoundKeepsItemIDs(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewResponsesServer(t,
				providertest.Reply{Reasoning: "Read the file first.", ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
				providertest.Reply{Reasoning: "It says alpha.", Text: "alpha"},
				providertest.Reply{Reasoning: "Count the letters.", Text: "5"})
			m := responsesOver(t, spec.ModelSettings{BaseURL: srv.BaseURL(), Thinking: &spec.Thinking{Enabled: true, Effort: "high"}})
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if stream {
				opts = append(opts, streamOn)
			}
			history := []llms.MessageContent{human("What is in a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices[0].ToolCalls, 1)
			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("call_1", "read_file", "alpha"))
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err, "the tool round")
			assert.Equal(t, "alpha", resp.Choices[0].Content)
			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, human("How long is it?"))
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err, "the next user turn")
			assert.Equal(t, "5", resp.Choices[0].Content)

			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			assert.JSONEq(t, `[
 {"role":"user","content":"What is in a.txt?"},
 {"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Read the file first."}]},
 {"id":"fc_1_0","type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.txt\"}"},
 {"type":"function_call_output","call_id":"call_1","output":"alpha"},
 {"id":"rs_2","type":"reasoning","summary":[{"type":"summary_text","text":"It says alpha."}]},
 {"id":"msg_2","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"alpha","annotations":[]}]},
 {"role":"user","content":"How long is it?"}]`, jsonOf(t, reqs[2].JSON()["input"]))
		})
	}
}

// An item's id goes back only beside the reasoning item it followed: a
// turn without reasoning goes back without ids, and a reasoning item whose
// following call the loop left out of the turn is not sent, nor the ids of
// the items after it, which the API would refuse either way.
func TestResponsesItemIDsOnlyWithTheirReasoning(t *testing.T) {
	t.Parallel()
	const (
		plain = `{"id":"resp_1","status":"completed","output":[
 {"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Reading.","annotations":[]}]},
 {"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"read_file","arguments":"{}"}]}`
		callFirst = `{"id":"resp_2","status":"completed","output":[
 {"id":"rs_2","type":"reasoning","summary":[]},
 {"id":"fc_2","type":"function_call","status":"completed","call_id":"call_2","name":"read_file","arguments":"{}"},
 {"id":"msg_2","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Done.","annotations":[]}]}]}`
	)
	turn := func(raw string) []llms.ContentPart {
		resp, err := responsesResult(raw)
		require.NoError(t, err)
		return turnOf(t, resp)
	}
	input := func(parts []llms.ContentPart) string {
		_, items, err := responsesInput([]llms.MessageContent{{Role: llms.ChatMessageTypeAI, Parts: parts}}, true)
		require.NoError(t, err)
		return jsonOf(t, items)
	}
	assert.JSONEq(t, `[{"role":"assistant","content":"Reading."},
 {"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{}"}]`, input(turn(plain)))

	withoutCall := slices.DeleteFunc(turn(callFirst), func(p llms.ContentPart) bool {
		_, call := p.(llms.ToolCall)
		return call
	})
	assert.JSONEq(t, `[{"role":"assistant","content":"Done."}]`, input(withoutCall))
}

// With store: false the API keeps no item: a reasoning item goes back by
// its encrypted_content (asked for through include), with the ids of the
// items after it, as a stored one does; one without encrypted_content
// cannot be found by its id, so it is not sent, nor the ids after it.
func TestResponsesNotStoredReasoning(t *testing.T) {
	t.Parallel()
	call := []providertest.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}
	tests := []struct {
		name      string
		settings  spec.ModelSettings
		wantInput string
	}{
		{"encrypted", spec.ModelSettings{Provider: map[string]any{"openai_store": false},
			ExtraBody: map[string]any{"include": []any{"reasoning.encrypted_content"}}}, `[
 {"role":"user","content":"What is in a.txt?"},
 {"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Read the file first."}],"encrypted_content":"gAAAA-1"},
 {"id":"fc_1_0","type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.txt\"}"},
 {"type":"function_call_output","call_id":"call_1","output":"alpha"}]`},
		{"not encrypted", spec.ModelSettings{Provider: map[string]any{"openai_store": false}}, `[
 {"role":"user","content":"What is in a.txt?"},
 {"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.txt\"}"},
 {"type":"function_call_output","call_id":"call_1","output":"alpha"}]`},
		{"store false in extra_body", spec.ModelSettings{ExtraBody: map[string]any{"store": false}}, `[
 {"role":"user","content":"What is in a.txt?"},
 {"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.txt\"}"},
 {"type":"function_call_output","call_id":"call_1","output":"alpha"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewResponsesServer(t,
				providertest.Reply{Reasoning: "Read the file first.", ToolCalls: call},
				providertest.Reply{Reasoning: "It says alpha.", Text: "alpha"})
			policy, _ := instant()
			settings := tt.settings
			settings.BaseURL = srv.BaseURL()
			m, err := New("openai-responses:gpt-5", settings, Options{Getenv: env("OPENAI_API_KEY", "k"), retry: policy})
			require.NoError(t, err)
			opts := llms.WithTools([]llms.Tool{readFileTool})
			history := []llms.MessageContent{human("What is in a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, opts)
			require.NoError(t, err)
			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("call_1", "read_file", "alpha"))
			resp, err = m.GenerateContent(t.Context(), history, opts)
			require.NoError(t, err, "the tool round")
			assert.Equal(t, "alpha", resp.Choices[0].Content)
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, false, reqs[1].JSON()["store"])
			assert.JSONEq(t, tt.wantInput, jsonOf(t, reqs[1].JSON()["input"]))
		})
	}
}

// A message's phase (newer models label an assistant message commentary or
// final_answer, and ask that it be sent back) goes back with the message:
// on the output message that goes back with its id beside its reasoning
// item, and on the assistant message that goes back as text; a message
// without one goes back without one.
func TestResponsesMessagePhaseGoesBack(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewResponsesServer(t,
				providertest.Reply{Reasoning: "Read the file first.", Text: "Reading a.txt.", Phase: "commentary",
					ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{}`}}},
				providertest.Reply{Text: "alpha", Phase: "final_answer"},
				providertest.Reply{Text: "5"},
				providertest.Text("ok"))
			m := responsesOver(t, spec.ModelSettings{BaseURL: srv.BaseURL()})
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if stream {
				opts = append(opts, streamOn)
			}
			history := []llms.MessageContent{human("What is in a.txt?")}
			for _, next := range []llms.MessageContent{result("call_1", "read_file", "alpha"), human("How long is it?"), human("Thanks.")} {
				resp, err := m.GenerateContent(t.Context(), history, opts...)
				require.NoError(t, err)
				history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, next)
			}
			_, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)

			reqs := srv.Requests()
			require.Len(t, reqs, 4)
			assert.JSONEq(t, `[
 {"role":"user","content":"What is in a.txt?"},
 {"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Read the file first."}]},
 {"id":"msg_1","type":"message","role":"assistant","status":"completed","phase":"commentary","content":[{"type":"output_text","text":"Reading a.txt.","annotations":[]}]},
 {"id":"fc_1_0","type":"function_call","call_id":"call_1","name":"read_file","arguments":"{}"},
 {"type":"function_call_output","call_id":"call_1","output":"alpha"},
 {"role":"assistant","content":"alpha","phase":"final_answer"},
 {"role":"user","content":"How long is it?"},
 {"role":"assistant","content":"5"},
 {"role":"user","content":"Thanks."}]`, jsonOf(t, reqs[3].JSON()["input"]))
		})
	}
}

// Texts of one turn go back as one assistant message only when they share
// a phase: commentary and the final answer stay two messages.
func TestResponsesPhasesStayApart(t *testing.T) {
	t.Parallel()
	resp, err := responsesResult(`{"id":"resp_1","status":"completed","output":[
 {"id":"msg_1","type":"message","role":"assistant","status":"completed","phase":"commentary","content":[{"type":"output_text","text":"Checking. ","annotations":[]}]},
 {"id":"msg_2","type":"message","role":"assistant","status":"completed","phase":"commentary","content":[{"type":"output_text","text":"Still checking. ","annotations":[]}]},
 {"id":"msg_3","type":"message","role":"assistant","status":"completed","phase":"final_answer","content":[{"type":"output_text","text":"Done.","annotations":[]}]}]}`)
	require.NoError(t, err)
	_, items, err := responsesInput([]llms.MessageContent{{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}}, true)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"role":"assistant","content":"Checking. Still checking. ","phase":"commentary"},
 {"role":"assistant","content":"Done.","phase":"final_answer"}]`, jsonOf(t, items))
}

// A turn that ends with commentary (the preamble newer models write while
// they work) and then its final answer answers with the final answer alone,
// as OpenAI labels the two; the commentary is streamed as it comes and goes
// back in the conversation with its phase.
func TestResponsesAnswerIsTheFinalAnswer(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewResponsesServer(t,
				providertest.Reply{Commentary: "Checking the file now. ", Text: `{"lines":5}`, Phase: "final_answer"},
				providertest.Text("ok"))
			m := responsesOver(t, spec.ModelSettings{BaseURL: srv.BaseURL()})
			var streamed strings.Builder
			var opts []llms.CallOption
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
					streamed.Write(b)
					return nil
				}))
			}
			history := []llms.MessageContent{human("How long is a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, `{"lines":5}`, resp.Choices[0].Content, "the answer is the final answer's text")
			if stream {
				assert.Equal(t, `Checking the file now. {"lines":5}`, streamed.String(), "the commentary is shown as it comes")
			}

			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, human("Thanks."))
			_, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.JSONEq(t, `[
 {"role":"user","content":"How long is a.txt?"},
 {"role":"assistant","content":"Checking the file now. ","phase":"commentary"},
 {"role":"assistant","content":"{\"lines\":5}","phase":"final_answer"},
 {"role":"user","content":"Thanks."}]`, jsonOf(t, reqs[1].JSON()["input"]))
		})
	}
}

// responsesOver is openai-responses:gpt-5 with settings (the fake server's
// base URL among them), retrying at once.
func responsesOver(t *testing.T, settings spec.ModelSettings) llms.Model {
	t.Helper()
	policy, _ := instant()
	m, err := New("openai-responses:gpt-5", settings, Options{Getenv: env("OPENAI_API_KEY", "k"), retry: policy})
	require.NoError(t, err)
	return m
}
