package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentspec/agentspec/spec"
)

type toolChoiceNoneKey struct{}

// WithToolChoiceNone marks a request context so that the request keeps its
// tool definitions but forbids their use: the loop's last request after
// max_tool_rounds. It works for every dialect; langchaingo forwards no
// tool_choice to Anthropic, so the Doer adds it to the request body there.
func WithToolChoiceNone(ctx context.Context) context.Context {
	return context.WithValue(ctx, toolChoiceNoneKey{}, true)
}

func toolChoiceNone(ctx context.Context) bool {
	none, _ := ctx.Value(toolChoiceNoneKey{}).(bool)
	return none
}

// patch is what a request body needs beyond what langchaingo sends.
type patch struct {
	toolChoiceNone    bool
	parallelToolCalls *bool
	legacyMaxTokens   bool
	// defaults are members the spec sets that langchaingo leaves out of the
	// body (it has no field for them, or omits their zero value); each is
	// added unless the body already has it.
	defaults object
	// extra is model_settings.extra_body, set last: its members replace
	// whatever was generated under the same name.
	extra object
}

func rewriter(ep endpoint, s spec.ModelSettings) (func(context.Context, []byte) []byte, error) {
	defaults, extra, err := bodyMembers(ep.dialect, s)
	if err != nil {
		return nil, err
	}
	fix := patchOpenAI
	if ep.dialect == DialectAnthropic {
		fix = patchAnthropic
	}
	return func(ctx context.Context, body []byte) []byte {
		return fix(body, patch{
			toolChoiceNone:    toolChoiceNone(ctx),
			parallelToolCalls: s.ParallelToolCalls,
			legacyMaxTokens:   ep.legacyMaxTokens,
			defaults:          defaults,
			extra:             extra,
		})
	}, nil
}

// bodyMembers encodes, once per model, the settings the rewrite adds to
// every body. Settings a dialect has no field for never reach here: Validate
// refuses them.
func bodyMembers(d Dialect, s spec.ModelSettings) (defaults, extra object, err error) {
	defaults = object{}
	if s.TopP != nil {
		defaults["top_p"] = mustJSON(*s.TopP) // langchaingo's openai client drops it
	}
	if d == DialectOpenAI {
		// The client omits a zero seed or penalty, which the spec may mean.
		if s.Seed != nil {
			defaults["seed"] = mustJSON(*s.Seed)
		}
		if s.PresencePenalty != nil {
			defaults["presence_penalty"] = mustJSON(*s.PresencePenalty)
		}
		if s.FrequencyPenalty != nil {
			defaults["frequency_penalty"] = mustJSON(*s.FrequencyPenalty)
		}
		if len(s.LogitBias) > 0 {
			defaults["logit_bias"] = mustJSON(s.LogitBias)
		}
	}
	if len(s.ExtraBody) > 0 {
		extra = make(object, len(s.ExtraBody))
		for k, v := range s.ExtraBody {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, nil, fmt.Errorf("model_settings.extra_body.%s: %w", k, err)
			}
			extra[k] = b
		}
	}
	return defaults, extra, nil
}

// object is a JSON object whose members are kept undecoded, so a rewrite
// touches only the members it means to.
type object map[string]json.RawMessage

// patchOpenAI adjusts a chat completions request. A body that is not a JSON
// object is returned unchanged.
func patchOpenAI(body []byte, p patch) []byte {
	var req object
	if json.Unmarshal(body, &req) != nil || req == nil {
		return body
	}
	changed := false
	set := func(key string, v any) {
		req[key] = mustJSON(v)
		changed = true
	}
	if v, ok := req["max_completion_tokens"]; ok && p.legacyMaxTokens {
		delete(req, "max_completion_tokens")
		req["max_tokens"] = v
		changed = true
	}
	for k, v := range p.defaults {
		if _, ok := req[k]; !ok {
			req[k], changed = v, true
		}
	}
	// OpenAI rejects both fields in a request without tools.
	if hasElements(req["tools"]) {
		if p.toolChoiceNone {
			set("tool_choice", "none")
		}
		if p.parallelToolCalls != nil {
			set("parallel_tool_calls", *p.parallelToolCalls)
		}
	}
	for k, v := range p.extra {
		req[k], changed = v, true
	}
	if !changed {
		return body
	}
	return mustJSON(req)
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// patchAnthropic adjusts a Messages request:
//   - consecutive same-role messages become one, since langchaingo sends one
//     message per assistant block and per tool result;
//   - in a user turn, tool results come before text, as the API requires;
//   - empty text blocks beside other blocks are dropped (the API rejects them);
//   - a tool_use whose input is null gets {};
//   - every tool gets an input_schema;
//   - tool_choice carries WithToolChoiceNone and parallel_tool_calls: false;
//   - the defaults are added where missing, then extra_body's members set.
//
// A body it cannot read is returned unchanged.
func patchAnthropic(body []byte, p patch) []byte {
	var req object
	if json.Unmarshal(body, &req) != nil || req == nil {
		return body
	}
	var messages []object
	if json.Unmarshal(req["messages"], &messages) == nil {
		merged, ok := mergeTurns(messages)
		if !ok {
			return body
		}
		req["messages"] = mustJSON(merged)
	}

	var tools []object
	if json.Unmarshal(req["tools"], &tools) == nil && len(tools) > 0 {
		for _, t := range tools {
			if isNull(t["input_schema"]) {
				t["input_schema"] = emptySchema
			}
		}
		req["tools"] = mustJSON(tools)
		switch {
		case p.toolChoiceNone:
			req["tool_choice"] = json.RawMessage(`{"type":"none"}`)
		case p.parallelToolCalls != nil && !*p.parallelToolCalls && isNull(req["tool_choice"]):
			req["tool_choice"] = json.RawMessage(`{"type":"auto","disable_parallel_tool_use":true}`)
		}
	}
	for k, v := range p.defaults {
		if _, ok := req[k]; !ok {
			req[k] = v
		}
	}
	for k, v := range p.extra {
		req[k] = v
	}
	return mustJSON(req)
}

// block is the part of a content block the rewrite looks at.
type block struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text"`
	Input json.RawMessage `json:"input"`
}

// mergeTurns merges consecutive same-role messages and tidies their blocks.
// It reports false when a message's content is neither a string nor a list.
func mergeTurns(messages []object) ([]object, bool) {
	var (
		out    = make([]object, 0, len(messages)) // [] stays [], not null
		roles  []string
		blocks [][]json.RawMessage // the content of out[i]
	)
	for _, m := range messages {
		var role string
		_ = json.Unmarshal(m["role"], &role)
		content, ok := contentBlocks(m["content"])
		if !ok {
			return nil, false
		}
		if n := len(out); n > 0 && roles[n-1] == role {
			blocks[n-1] = append(blocks[n-1], content...)
			continue
		}
		out, roles, blocks = append(out, m), append(roles, role), append(blocks, content)
	}
	for i, m := range out {
		m["content"] = mustJSON(tidy(blocks[i], roles[i] == "user"))
	}
	return out, true
}

func contentBlocks(content json.RawMessage) ([]json.RawMessage, bool) {
	var text string
	if json.Unmarshal(content, &text) == nil {
		return []json.RawMessage{mustJSON(map[string]string{"type": "text", "text": text})}, true
	}
	var blocks []json.RawMessage
	return blocks, json.Unmarshal(content, &blocks) == nil
}

// tidy drops empty text blocks beside others, gives a null tool_use input
// {}, and in a user turn moves tool results first (keeping their order).
func tidy(blocks []json.RawMessage, user bool) []json.RawMessage {
	var results, rest []json.RawMessage
	for _, raw := range blocks {
		var b block
		if json.Unmarshal(raw, &b) == nil {
			switch {
			case b.Type == "text" && b.Text != nil && *b.Text == "" && len(blocks) > 1:
				continue
			case b.Type == "tool_use" && isNull(b.Input):
				var full object
				if json.Unmarshal(raw, &full) == nil {
					full["input"] = json.RawMessage(`{}`)
					raw = mustJSON(full)
				}
			case b.Type == "tool_result" && user:
				results = append(results, raw)
				continue
			}
		}
		rest = append(rest, raw)
	}
	out := append(results, rest...)
	if len(out) == 0 {
		return blocks
	}
	return out
}

func hasElements(raw json.RawMessage) bool {
	var list []json.RawMessage
	return json.Unmarshal(raw, &list) == nil && len(list) > 0
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// mustJSON marshals values that always marshal: strings, numbers, booleans
// and trees of json.RawMessage that came from a decoder.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("providers: marshalling a decoded JSON value: " + err.Error())
	}
	return b
}
