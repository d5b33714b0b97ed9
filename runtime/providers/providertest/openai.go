package providertest

import (
	"fmt"
	"net/http"
	"strings"
)

// openAI speaks POST {base}/chat/completions.
type openAI struct{}

func (openAI) endpoint() string { return "/chat/completions" }

func (openAI) authorized(h http.Header) bool {
	return strings.TrimSpace(strings.TrimPrefix(h.Get("Authorization"), "Bearer ")) != ""
}

func (openAI) errorBody(status int, message string) any {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": nil}}
}

// validate applies the rules the real API enforces on tool conversations.
func (openAI) validate(req map[string]any) string {
	for i, t := range list(req["tools"]) {
		tool := object(t)
		if str(tool["type"]) != "function" {
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'. (tools[%d].type)", str(tool["type"]), i)
		}
		if str(object(tool["function"])["name"]) == "" {
			return fmt.Sprintf("Missing required parameter: 'tools[%d].function.name'.", i)
		}
	}
	msgs := list(req["messages"])
	if len(msgs) == 0 {
		return "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."
	}
	var pending []string // calls of the last assistant turn not yet answered
	for i, m := range msgs {
		msg := object(m)
		role := str(msg["role"])
		if role == "tool" {
			id := str(msg["tool_call_id"])
			at := indexOf(pending, id)
			if at < 0 {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
			}
			pending = append(pending[:at], pending[at+1:]...)
			continue
		}
		if len(pending) > 0 {
			return unanswered(pending)
		}
		if role != "assistant" {
			continue
		}
		for j, c := range list(msg["tool_calls"]) {
			call := object(c)
			if typ := str(call["type"]); typ != "function" {
				return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function'. (messages[%d].tool_calls[%d].type)", typ, i, j)
			}
			if _, ok := object(call["function"])["arguments"].(string); !ok {
				return fmt.Sprintf("Invalid type for 'messages[%d].tool_calls[%d].function.arguments': expected a string.", i, j)
			}
			pending = append(pending, str(call["id"]))
		}
	}
	if len(pending) > 0 {
		return unanswered(pending)
	}
	return ""
}

func unanswered(ids []string) string {
	return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
		"The following tool_call_ids did not have response messages: " + strings.Join(ids, ", ")
}

func indexOf(ids []string, id string) int {
	for i, s := range ids {
		if s == id {
			return i
		}
	}
	return -1
}

func (openAI) writeTurn(w http.ResponseWriter, req map[string]any, r Reply, seq int) {
	finish := r.StopReason
	if finish == "" {
		finish = "stop"
		if len(r.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	id := fmt.Sprintf("chatcmpl-%d", seq)
	model := str(req["model"])
	usage := map[string]any{
		"prompt_tokens":     r.InputTokens,
		"completion_tokens": r.OutputTokens,
		"total_tokens":      r.InputTokens + r.OutputTokens,
	}

	if stream, _ := req["stream"].(bool); !stream {
		message := map[string]any{"role": "assistant", "content": nil}
		if r.Text != "" {
			message["content"] = r.Text
		}
		var calls []any
		for i, c := range r.ToolCalls {
			calls = append(calls, map[string]any{
				"id":       callID(c, "call_", seq, i),
				"type":     "function",
				"function": map[string]any{"name": c.Name, "arguments": arguments(c)},
			})
		}
		if calls != nil {
			message["tool_calls"] = calls
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}

	// The stream has the real API's shape: a role chunk, content deltas, each
	// tool call opened by a chunk carrying its id, type and name and continued
	// by argument fragments, a finish chunk, and a usage chunk when asked for.
	out := startSSE(w)
	chunk := func(delta map[string]any, finishReason any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason}},
		}
	}
	out.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if r.Text != "" {
		for _, part := range halves(r.Text) {
			out.event("", chunk(map[string]any{"content": part}, nil))
		}
	}
	for i, c := range r.ToolCalls {
		out.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": callID(c, "call_", seq, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil))
		for _, part := range halves(arguments(c)) {
			out.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": part},
			}}}, nil))
		}
	}
	out.event("", chunk(map[string]any{}, finish))
	if include, _ := object(req["stream_options"])["include_usage"].(bool); include {
		out.event("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
			"choices": []any{}, "usage": usage,
		})
	}
	out.event("", "[DONE]")
}
