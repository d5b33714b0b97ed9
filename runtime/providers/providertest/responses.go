package providertest

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
)

// NewResponsesServer starts a server speaking OpenAI's Responses API (POST
// {base}/responses), answering with replies in order. A reply with
// Reasoning set opens its output with a reasoning item. Point an OpenAI
// client at BaseURL(). The server is closed when the test ends.
//
// Like the real API it remembers the items of every response it made and
// holds a replayed conversation to them: a reasoning item sent by id must
// be followed by the item that followed it; a message or function_call
// sent with its id needs the reasoning item it followed sent too; the
// items of a response made with store: false were not kept, so a reasoning
// item of one can only come back with its encrypted_content (which the
// server sends when include names reasoning.encrypted_content).
func NewResponsesServer(t testing.TB, replies ...Reply) *Server {
	return newServer(t, &responsesAPI{items: map[string]outputItem{}}, replies)
}

// responsesAPI speaks POST {base}/responses.
type responsesAPI struct {
	mu sync.Mutex
	// items are the output items of the responses made, by id.
	items map[string]outputItem
}

// outputItem is what the server remembers of an item it returned.
type outputItem struct {
	typ string
	// stored is false for an item of a response made with store: false.
	stored bool
	// reasoning is the reasoning item this item followed in its response,
	// if any; following is the item that followed this reasoning item.
	reasoning, following string
}

func (*responsesAPI) endpoint() string { return "/responses" }

func (*responsesAPI) authorized(h http.Header) bool { return openAI{}.authorized(h) }

func (*responsesAPI) errorBody(status int, message string) any {
	body := openAI{}.errorBody(status, message)
	object(object(body)["error"])["param"] = "input"
	return body
}

// validate applies the rules the real API enforces on an input list.
func (p *responsesAPI) validate(req map[string]any) string {
	for i, t := range list(req["tools"]) {
		tool := object(t)
		if str(tool["type"]) == "function" && str(tool["name"]) == "" {
			return fmt.Sprintf("Missing required parameter: 'tools[%d].name'.", i)
		}
	}
	input := list(req["input"])
	if _, text := req["input"].(string); text {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, len(input)) // each item's id, "" for none
	for i, v := range input {
		ids[i] = str(object(v)["id"])
	}
	calls := map[string]bool{}
	for i, v := range input {
		item := object(v)
		id, typ := ids[i], str(item["type"])
		if typ == "" && item["role"] != nil {
			typ = "message"
		}
		known, ok := p.items[id]
		switch {
		case typ == "reasoning":
			if ok && !known.stored && str(item["encrypted_content"]) == "" {
				return fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. "+
					"Try again with `store` set to true, or remove this item from your input.", id)
			}
			if ok && known.stored && known.following != "" && (i+1 == len(input) || ids[i+1] != known.following) {
				return fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
		case typ == "function_call_output":
			if !calls[str(item["call_id"])] && req["previous_response_id"] == nil {
				return fmt.Sprintf("No tool call found for function call output with call_id %s.", str(item["call_id"]))
			}
		default:
			if typ == "function_call" {
				calls[str(item["call_id"])] = true
			}
			if ok && known.stored && known.reasoning != "" && !slices.Contains(ids[:i], known.reasoning) {
				return fmt.Sprintf("Item '%s' of type '%s' was provided without its required 'reasoning' item: '%s'.", id, known.typ, known.reasoning)
			}
		}
	}
	return ""
}

func (p *responsesAPI) writeTurn(w http.ResponseWriter, req map[string]any, r Reply, seq int) {
	stored := req["store"] != false
	encrypted := false
	for _, v := range list(req["include"]) {
		encrypted = encrypted || str(v) == "reasoning.encrypted_content"
	}
	var output []map[string]any
	if r.Reasoning != "" {
		item := map[string]any{"id": fmt.Sprintf("rs_%d", seq), "type": "reasoning",
			"summary": []any{map[string]any{"type": "summary_text", "text": r.Reasoning}}}
		if encrypted {
			item["encrypted_content"] = fmt.Sprintf("gAAAA-%d", seq)
		}
		output = append(output, item)
	}
	message := func(id, text, phase string) {
		msg := map[string]any{"id": id, "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
		if phase != "" {
			msg["phase"] = phase
		}
		output = append(output, msg)
	}
	if r.Commentary != "" {
		message(fmt.Sprintf("msg_%d_commentary", seq), r.Commentary, "commentary")
	}
	if r.Text != "" {
		message(fmt.Sprintf("msg_%d", seq), r.Text, r.Phase)
	}
	for i, c := range r.ToolCalls {
		output = append(output, map[string]any{"id": fmt.Sprintf("fc_%d_%d", seq, i), "type": "function_call", "status": "completed",
			"call_id": callID(c, "call_", seq, i), "name": c.Name, "arguments": arguments(c)})
	}
	p.mu.Lock()
	reasoning := ""
	for i, item := range output {
		id, typ := str(item["id"]), str(item["type"])
		p.items[id] = outputItem{typ: typ, stored: stored, reasoning: reasoning}
		if typ == "reasoning" {
			reasoning = id
			if i+1 < len(output) {
				known := p.items[id]
				known.following = str(output[i+1]["id"])
				p.items[id] = known
			}
		}
	}
	p.mu.Unlock()

	status, incomplete := "completed", any(nil)
	if r.StopReason != "" && r.StopReason != "stop" && r.StopReason != "tool_calls" {
		status, incomplete = "incomplete", map[string]any{"reason": r.StopReason}
	}
	response := map[string]any{
		"id": fmt.Sprintf("resp_%d", seq), "object": "response", "created_at": 1700000000, "model": str(req["model"]),
		"status": status, "incomplete_details": incomplete, "output": output, "store": stored,
		"usage": map[string]any{"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens,
			"total_tokens": r.InputTokens + r.OutputTokens},
	}
	if r.NoUsage {
		response["usage"] = nil
	}
	if stream, _ := req["stream"].(bool); !stream {
		writeJSON(w, http.StatusOK, response)
		return
	}
	out := startSSE(w)
	n := 0
	event := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, n
		n++
		out.event(typ, fields)
	}
	event("response.created", map[string]any{"response": map[string]any{"id": response["id"], "object": "response",
		"status": "in_progress", "model": response["model"], "output": []any{}}})
	for i, item := range output {
		event("response.output_item.added", map[string]any{"output_index": i, "item": item})
		if str(item["type"]) == "message" {
			text := str(object(list(item["content"])[0])["text"])
			for _, part := range halves(text) {
				event("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "delta": part})
			}
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	event("response."+status, map[string]any{"response": response})
}
