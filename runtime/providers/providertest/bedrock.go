package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// bedrock speaks Bedrock's Converse API: POST /model/{modelId}/converse,
// and /converse-stream answered in AWS's event-stream framing. It checks a
// SigV4 signature (recomputed from the request) or a bearer token.
type bedrock struct {
	creds  *AWSCredentials
	bearer string
}

// NewBedrockSigV4Server starts a Converse stand-in that accepts requests
// signed with SigV4 for creds (service "bedrock"). Point the client's
// endpoint at URL.
func NewBedrockSigV4Server(t testing.TB, creds AWSCredentials, replies ...Reply) *Server {
	return newServer(t, bedrock{creds: &creds}, replies)
}

// NewBedrockBearerServer starts a Converse stand-in that accepts the bearer
// token (a Bedrock API key, or a gateway's key) only.
func NewBedrockBearerServer(t testing.TB, token string, replies ...Reply) *Server {
	return newServer(t, bedrock{bearer: token}, replies)
}

func (bedrock) endpoint() string { return "" }

func (bedrock) authorized(http.Header) bool { return false } // authorize decides

func (bedrock) route(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	_, op, ok := bedrockPath(r)
	return ok && (op == "converse" || op == "converse-stream")
}

// bedrockPath splits .../model/{modelId}/{operation}, the id unescaped.
func bedrockPath(r *http.Request) (model, op string, ok bool) {
	p := r.URL.EscapedPath()
	i := strings.LastIndex(p, "/model/")
	if i < 0 {
		return "", "", false
	}
	id, op, ok := strings.Cut(p[i+len("/model/"):], "/")
	if !ok || strings.Contains(op, "/") {
		return "", "", false
	}
	model, err := url.PathUnescape(id)
	return model, op, err == nil
}

func (b bedrock) streams(r *http.Request) bool {
	_, op, _ := bedrockPath(r)
	return op == "converse-stream"
}

func (b bedrock) authorize(r *http.Request, body []byte) (int, string) {
	// An answer sent the instant the body is read races the SDK's closing
	// of the request (a "use of closed network connection", then a silent
	// retry): the real service never answers that fast.
	time.Sleep(5 * time.Millisecond)
	if b.bearer != "" {
		if r.Header.Get("Authorization") != "Bearer "+b.bearer {
			return http.StatusForbidden, "Authentication failed: the bearer token is missing or invalid"
		}
		return 0, ""
	}
	if msg := VerifySigV4(r, body, *b.creds, "bedrock"); msg != "" {
		return http.StatusForbidden, msg
	}
	return 0, ""
}

func (bedrock) errorBody(status int, message string) any {
	return map[string]any{"message": message}
}

// validate applies Converse's rules on a conversation: turns alternate from
// the user's, no blank text, each toolResult answers a toolUse of the turn
// before, every toolUse is answered, and tools are declared whenever the
// conversation holds tool blocks.
func (bedrock) validate(req map[string]any) string {
	msgs := list(req["messages"])
	if len(msgs) == 0 {
		return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
	}
	hasTools := object(req["toolConfig"]) != nil && len(list(object(req["toolConfig"])["tools"])) > 0
	var pending []string
	prev := ""
	for i, m := range msgs {
		msg := object(m)
		role := str(msg["role"])
		if i == 0 && role != "user" {
			return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
		}
		if role == prev {
			return "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
		}
		prev = role
		var uses []string
		for j, c := range list(msg["content"]) {
			block := object(c)
			switch {
			case block["text"] != nil:
				if strings.TrimSpace(str(block["text"])) == "" {
					return fmt.Sprintf("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, j)
				}
			case block["toolUse"] != nil:
				if !hasTools {
					return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
				}
				uses = append(uses, str(object(block["toolUse"])["toolUseId"]))
			case block["toolResult"] != nil:
				if !hasTools {
					return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
				}
				id := str(object(block["toolResult"])["toolUseId"])
				at := indexOf(pending, id)
				if at < 0 {
					return fmt.Sprintf("messages.%d.content.%d: the toolResult blocks at messages.%d.content contain a toolUseId %s with no toolUse block in the previous turn.", i, j, i, id)
				}
				pending = append(pending[:at], pending[at+1:]...)
			}
		}
		if len(pending) > 0 {
			return fmt.Sprintf("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, strings.Join(pending, ", "))
		}
		pending = uses
	}
	return ""
}

// validateModel applies the rules of Converse that depend on the model:
// a toolResult's status and a named tool in toolChoice are taken by
// Claude and Nova models only, toolChoice any by those and Mistral Large,
// and another model refuses the request that carries one.
func (bedrock) validateModel(r *http.Request, req map[string]any) string {
	model, _, _ := bedrockPath(r)
	if strings.Contains(model, "anthropic.claude") || strings.Contains(model, "amazon.nova") {
		return ""
	}
	if _, ok := object(object(req["toolConfig"])["toolChoice"])["any"]; ok && !strings.Contains(model, "mistral.mistral-large") {
		return "This model doesn't support the toolConfig.toolChoice.any field. Remove toolConfig.toolChoice.any and try again."
	}
	if _, ok := object(object(req["toolConfig"])["toolChoice"])["tool"]; ok {
		return "This model doesn't support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again."
	}
	for _, m := range list(req["messages"]) {
		for _, c := range list(object(m)["content"]) {
			if res := object(object(c)["toolResult"]); res != nil {
				if _, ok := res["status"]; ok {
					return "This model doesn't support the toolResult.status field. Remove toolResult.status and try again."
				}
			}
		}
	}
	return ""
}

func (bedrock) writeTurn(w http.ResponseWriter, req map[string]any, r Reply, seq int) {
	stop := r.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(r.ToolCalls) > 0 {
			stop = "tool_use"
		}
	}
	usage := map[string]any{"inputTokens": r.InputTokens, "outputTokens": r.OutputTokens, "totalTokens": r.InputTokens + r.OutputTokens}
	var content []any
	if r.Text != "" {
		content = append(content, map[string]any{"text": r.Text})
	}
	for i, c := range r.ToolCalls {
		content = append(content, map[string]any{"toolUse": map[string]any{
			"toolUseId": callID(c, "tooluse_", seq, i), "name": c.Name, "input": json.RawMessage(arguments(c)),
		}})
	}
	if stream, _ := req["stream"].(bool); !stream {
		if content == nil {
			content = []any{}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
			"stopReason": stop, "usage": usage, "metrics": map[string]any{"latencyMs": 1},
		})
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	enc := eventstream.NewEncoder()
	event := func(typ string, payload any) {
		body, _ := json.Marshal(payload)
		var buf bytes.Buffer
		_ = enc.Encode(&buf, eventstream.Message{
			Headers: eventstream.Headers{
				{Name: ":event-type", Value: eventstream.StringValue(typ)},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
				{Name: ":message-type", Value: eventstream.StringValue("event")},
			},
			Payload: body,
		})
		_, _ = w.Write(buf.Bytes())
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	event("messageStart", map[string]any{"role": "assistant"})
	for i, b := range content {
		block := b.(map[string]any)
		if tu, ok := block["toolUse"].(map[string]any); ok {
			event("contentBlockStart", map[string]any{"contentBlockIndex": i,
				"start": map[string]any{"toolUse": map[string]any{"toolUseId": tu["toolUseId"], "name": tu["name"]}}})
			for _, part := range halves(string(tu["input"].(json.RawMessage))) {
				event("contentBlockDelta", map[string]any{"contentBlockIndex": i, "delta": map[string]any{"toolUse": map[string]any{"input": part}}})
			}
		} else {
			for _, part := range halves(r.Text) {
				event("contentBlockDelta", map[string]any{"contentBlockIndex": i, "delta": map[string]any{"text": part}})
			}
		}
		event("contentBlockStop", map[string]any{"contentBlockIndex": i})
	}
	event("messageStop", map[string]any{"stopReason": stop})
	event("metadata", map[string]any{"usage": usage, "metrics": map[string]any{"latencyMs": 1}})
}
