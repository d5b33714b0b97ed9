package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropic speaks POST {base}/messages.
type anthropic struct{}

func (anthropic) endpoint() string { return "/messages" }

func (anthropic) authorized(h http.Header) bool {
	return h.Get("X-Api-Key") != ""
}

func (anthropic) errorBody(status int, message string) any {
	typ := "api_error"
	switch status {
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case 529:
		typ = "overloaded_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}}
}

// turn is a message after the API's own merging of consecutive same-role
// messages, with string content turned into a text block.
type turn struct {
	role   string
	blocks []map[string]any
}

func turns(messages []any) []turn {
	var out []turn
	for _, m := range messages {
		msg := object(m)
		role := str(msg["role"])
		var blocks []map[string]any
		if s, ok := msg["content"].(string); ok {
			blocks = []map[string]any{{"type": "text", "text": s}}
		}
		for _, b := range list(msg["content"]) {
			blocks = append(blocks, object(b))
		}
		if n := len(out); n > 0 && out[n-1].role == role {
			out[n-1].blocks = append(out[n-1].blocks, blocks...)
			continue
		}
		out = append(out, turn{role: role, blocks: blocks})
	}
	return out
}

// validate applies the rules the real API enforces on tool conversations,
// after merging consecutive turns as the API does.
func (anthropic) validate(req map[string]any) string {
	for i, t := range list(req["tools"]) {
		if object(t)["input_schema"] == nil {
			return fmt.Sprintf("tools.%d.input_schema: Field required", i)
		}
	}
	msgs := turns(list(req["messages"]))
	if len(msgs) == 0 {
		return "messages: at least one message is required"
	}
	if msgs[0].role != "user" {
		return `messages: first message must use the "user" role`
	}
	var pending []string // tool_use ids of the previous assistant turn
	for i, m := range msgs {
		var uses []string
		for j, b := range m.blocks {
			switch str(b["type"]) {
			case "text":
				if str(b["text"]) == "" {
					return "messages: text content blocks must be non-empty"
				}
			case "tool_use":
				if object(b["input"]) == nil {
					return fmt.Sprintf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
				}
				uses = append(uses, str(b["id"]))
			case "tool_result":
				id := str(b["tool_use_id"])
				at := indexOf(pending, id)
				if at < 0 {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
						"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				}
				pending = append(pending[:at], pending[at+1:]...)
			}
		}
		if len(pending) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(pending, ", "))
		}
		pending = uses
	}
	return ""
}

func (anthropic) writeTurn(w http.ResponseWriter, req map[string]any, r Reply, seq int) {
	stop := r.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(r.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	id := fmt.Sprintf("msg_%d", seq)
	model := str(req["model"])

	var content []any
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, c := range r.ToolCalls {
		content = append(content, map[string]any{
			"type": "tool_use", "id": callID(c, "toolu_", seq, i), "name": c.Name,
			"input": json.RawMessage(arguments(c)),
		})
	}

	if stream, _ := req["stream"].(bool); !stream {
		if content == nil {
			content = []any{}
		}
		message := map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens},
		}
		if r.NoUsage {
			delete(message, "usage")
		}
		writeJSON(w, http.StatusOK, message)
		return
	}

	out := startSSE(w)
	start := map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": r.InputTokens, "output_tokens": 1},
	}
	if r.NoUsage {
		delete(start, "usage")
	}
	out.event("message_start", map[string]any{"type": "message_start", "message": start})
	out.event("ping", map[string]any{"type": "ping"})
	for i, b := range content {
		block := b.(map[string]any)
		start := map[string]any{"type": block["type"]}
		var deltas []map[string]any
		switch block["type"] {
		case "text":
			start["text"] = ""
			for _, part := range halves(r.Text) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": part})
			}
		case "tool_use":
			start["id"], start["name"], start["input"] = block["id"], block["name"], map[string]any{}
			for _, part := range halves(string(block["input"].(json.RawMessage))) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": part})
			}
		}
		out.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
		for _, d := range deltas {
			out.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		out.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	delta := map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": r.OutputTokens},
	}
	if r.NoUsage {
		delete(delta, "usage")
	}
	out.event("message_delta", delta)
	out.event("message_stop", map[string]any{"type": "message_stop"})
}
