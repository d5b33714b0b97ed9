package providers

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/tmc/langchaingo/llms"
)

// Reading Chat Completions responses, whole or streamed chunk by chunk, into
// one llms.ContentResponse.

// assembled is a response being read: from a completion, or chunk by chunk.
type assembled struct {
	text, refusal, reasoning strings.Builder
	reasoningField           string
	calls                    []*llms.ToolCall        // by index
	args                     []*joiner               // streamed arguments of the calls, by index, until flushArgs
	extras                   map[int]json.RawMessage // extra_content of the calls, by index
	slots                    map[int]int             // the index of calls each streamed index fills now (slotOf)
	finish                   string
	// finishAlone is set while the finish came in a chunk that carried
	// nothing else, after the answer, and nothing came after it, as OpenAI
	// ends a stream: only then is a stream cut there whole, since some
	// compatible servers mark every chunk with a finish_reason.
	finishAlone bool
	usage       openai.CompletionUsage
	usageExtra  map[string]int
	usageRead   bool // a usage came; a stream may end without one
}

// wrote is how much of the answer has come: text, refusal, reasoning and
// calls.
func (a *assembled) wrote() [4]int {
	return [4]int{a.text.Len(), a.refusal.Len(), a.reasoning.Len(), len(a.calls)}
}

// extra keeps the extra_content member of the tool call at index, in raw.
func (a *assembled) extra(index int, raw string) {
	var v struct {
		Extra json.RawMessage `json:"extra_content"`
	}
	if json.Unmarshal([]byte(raw), &v) != nil || len(v.Extra) == 0 || string(v.Extra) == "null" {
		return
	}
	if a.extras == nil {
		a.extras = map[int]json.RawMessage{}
	}
	a.extras[index] = v.Extra
}

// slotOf is the index in calls of the call a streamed delta at index with
// id belongs to: index itself, unless the delta names another call than
// the one there, which then gets a slot of its own at the end. Gemini's
// OpenAI-compatible endpoint streams parallel calls whole, each with its
// own id, all at index 0.
func (a *assembled) slotOf(index int, id string) int {
	if a.slots == nil {
		a.slots = map[int]int{}
	}
	s, seen := a.slots[index]
	switch {
	case !seen:
		s = index
		if s < len(a.calls) && a.calls[s] != nil {
			s = len(a.calls) // taken by a call that was given a slot of its own
		}
	case id != "" && s < len(a.calls) && a.calls[s] != nil && a.calls[s].ID != "" && a.calls[s].ID != id:
		s = len(a.calls)
	}
	a.slots[index] = s
	return s
}

func (a *assembled) call(index int) *llms.ToolCall {
	for len(a.calls) <= index {
		a.calls = append(a.calls, nil)
	}
	if a.calls[index] == nil {
		a.calls[index] = &llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{}}
	}
	return a.calls[index]
}

// appendArgs adds a streamed piece of the arguments of the call at index.
// The pieces are joined once, by flushArgs: appended to the string each
// time, a 1 MB argument in 4-byte pieces would be copied a quarter of a
// million times (BenchmarkStreamedArguments).
func (a *assembled) appendArgs(index int, piece string) {
	if index >= 0 && index < len(a.args) && a.args[index] != nil {
		a.args[index].WriteString(piece) // the call exists: it came with its joiner
		return
	}
	a.call(index)
	for len(a.args) <= index {
		a.args = append(a.args, nil)
	}
	if a.args[index] == nil {
		a.args[index] = &joiner{}
	}
	a.args[index].WriteString(piece)
}

// flushArgs gives each call the arguments streamed for it.
func (a *assembled) flushArgs() {
	for i, b := range a.args {
		if b != nil && a.calls[i] != nil {
			a.calls[i].FunctionCall.Arguments += b.String()
		}
	}
	a.args = nil
}

// content reads a message or delta content, which some servers (Mistral's
// reasoning models) send as a list of text and thinking parts.
func (a *assembled) content(raw string, plain string) {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "[") {
		a.text.WriteString(plain)
		return
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal([]byte(raw), &parts) != nil {
		return
	}
	for _, p := range parts {
		switch p.Type {
		case "text":
			a.text.WriteString(p.Text)
		case "thinking":
			var s string
			if json.Unmarshal(p.Thinking, &s) == nil {
				a.reasoning.WriteString(s)
			} else {
				var inner []struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(p.Thinking, &inner)
				for _, t := range inner {
					a.reasoning.WriteString(t.Text)
				}
			}
			a.reasoningField = "content"
		}
	}
}

// reasoningFrom reads the reasoning members servers use.
func (a *assembled) reasoningFrom(extra map[string]string) {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		var s string
		if raw, ok := extra[k]; ok && json.Unmarshal([]byte(raw), &s) == nil && s != "" {
			a.reasoning.WriteString(s)
			if a.reasoningField == "" {
				a.reasoningField = k
			}
			return
		}
	}
}

func (a *assembled) readUsage(u openai.CompletionUsage, extra map[string]string) {
	a.usage, a.usageRead = u, true
	for _, k := range []string{"prompt_cache_hit_tokens", "cached_tokens"} { // DeepSeek's, Moonshot's
		var n int
		if raw, ok := extra[k]; ok && json.Unmarshal([]byte(raw), &n) == nil {
			if a.usageExtra == nil {
				a.usageExtra = map[string]int{}
			}
			a.usageExtra[k] = n
		}
	}
}

// present tells whether a member's raw JSON holds a value, not null.
func present(raw string) bool {
	return raw != "" && raw != "null"
}

// noChoice is the failure of a whole answer with no choice and no error.
const noChoice = `{"error":{"message":"the answer held no choice"}}`

// finishedInError is the failure of an answer that ended with
// finish_reason "error" and said nothing more.
const finishedInError = `{"error":{"message":"the answer ended with finish_reason \"error\""}}`

func (m *chatModel) response(c *openai.ChatCompletion) (*llms.ContentResponse, error) {
	if e := c.JSON.ExtraFields["error"].Raw(); present(e) && (len(c.Choices) == 0 || c.Choices[0].FinishReason == "error") {
		// OpenRouter answers 200 with {"error": {...}} and no choices when
		// the upstream model fails after the request was accepted.
		return nil, statusError(m.ep, http.StatusOK, []byte(c.RawJSON()), 0)
	}
	if len(c.Choices) == 0 {
		// As a stream with no finish_reason is: nothing says the answer is
		// whole, and an empty one would be taken as the model's.
		return nil, statusError(m.ep, http.StatusOK, []byte(noChoice), 0)
	}
	var a assembled
	ch := c.Choices[0]
	if e := ch.JSON.ExtraFields["error"].Raw(); present(e) {
		// Or puts the error in the choice, which finishes with "error".
		return nil, statusError(m.ep, http.StatusOK, []byte(`{"error":`+e+`}`), 0)
	}
	if ch.FinishReason == "error" {
		return nil, statusError(m.ep, http.StatusOK, []byte(finishedInError), 0)
	}
	if e := failedCallFinish(m.ep, ch.FinishReason, ch.Message.Content); e != nil {
		e.StatusCode = http.StatusOK
		return nil, e
	}
	a.content(ch.Message.JSON.Content.Raw(), ch.Message.Content)
	a.refusal.WriteString(ch.Message.Refusal)
	a.reasoningFrom(rawExtras(ch.Message.JSON.ExtraFields))
	for i, tc := range ch.Message.ToolCalls {
		call := a.call(i)
		call.ID, call.FunctionCall.Name, call.FunctionCall.Arguments = tc.ID, tc.Function.Name, tc.Function.Arguments
		a.extra(i, tc.RawJSON())
	}
	a.finish = ch.FinishReason
	if c.JSON.Usage.Valid() {
		a.readUsage(c.Usage, rawExtras(c.Usage.JSON.ExtraFields))
	}
	return a.result(), nil
}

func (m *chatModel) stream(ctx context.Context, req openai.ChatCompletionNewParams, fn func(context.Context, []byte) error, retries int) (*llms.ContentResponse, error) {
	// In events mode an error chunk is read here rather than by the SDK,
	// which takes any "error" member for one, even the "error": null some
	// compatible servers send on every chunk.
	s := m.client.Chat.Completions.NewStreaming(ctx, req, m.openaiExtra()...).WithEventsMode()
	defer s.Close()
	var a assembled
	for s.Next() {
		chunk := s.Current()
		if e := chunk.JSON.ExtraFields["error"].Raw(); present(e) {
			return nil, streamError(m.ep, []byte(chunk.RawJSON()), retries)
		}
		if chunk.JSON.Usage.Valid() {
			a.readUsage(chunk.Usage, rawExtras(chunk.Usage.JSON.ExtraFields))
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if e := ch.JSON.ExtraFields["error"].Raw(); present(e) {
				return nil, streamError(m.ep, []byte(`{"error":`+e+`}`), retries)
			}
			if raw := ch.JSON.ExtraFields["usage"].Raw(); present(raw) && !chunk.JSON.Usage.Valid() {
				// Moonshot's stream gives its usage in the choice of its
				// finishing chunk, and no usage chunk after it.
				var u openai.CompletionUsage
				if json.Unmarshal([]byte(raw), &u) == nil {
					a.readUsage(u, rawExtras(u.JSON.ExtraFields))
				}
			}
			d := ch.Delta
			wrote := a.wrote()
			before := a.text.Len()
			a.content(d.JSON.Content.Raw(), d.Content)
			if a.text.Len() > before {
				if err := fn(ctx, []byte(a.text.String()[before:])); err != nil {
					return nil, err
				}
			}
			a.refusal.WriteString(d.Refusal)
			a.reasoningFrom(rawExtras(d.JSON.ExtraFields))
			for _, tc := range d.ToolCalls {
				slot := a.slotOf(int(tc.Index), tc.ID)
				call := a.call(slot)
				if tc.ID != "" && call.ID == "" {
					call.ID = tc.ID
				}
				if tc.Function.Name != "" && call.FunctionCall.Name == "" {
					call.FunctionCall.Name = tc.Function.Name
				}
				a.appendArgs(slot, tc.Function.Arguments)
				a.extra(slot, tc.RawJSON())
			}
			carried := len(d.ToolCalls) > 0 || a.wrote() != wrote
			switch {
			case ch.FinishReason != "" && a.finish == "":
				a.finishAlone = !carried && wrote != [4]int{}
				a.finish = ch.FinishReason
			case ch.FinishReason != "":
				a.finishAlone = a.finishAlone && !carried
				a.finish = ch.FinishReason
			case carried:
				a.finishAlone = false
			}
		}
	}
	if err := s.Err(); err != nil && (!a.finishAlone || !cutAfterFinish(ctx, err)) {
		return nil, err
	}
	a.flushArgs()
	if a.finish == "error" {
		return nil, streamError(m.ep, []byte(finishedInError), retries)
	}
	if e := failedCallFinish(m.ep, a.finish, a.text.String()); e != nil {
		e.Stream, e.Retries = true, retries
		return nil, e
	}
	if a.finish == "" && slices.Contains(endsWithoutFinish, m.provider.name) {
		a.finish = a.cleanEnd()
	}
	if a.finish == "" {
		return nil, streamError(m.ep, []byte(`{"error":{"type":"incomplete_stream","message":"the stream ended without a finish_reason"}}`), retries)
	}
	return a.result(), nil
}

// failedCallFinish is the Error of an answer that Gemini's
// OpenAI-compatible endpoint ended with one of Gemini's failedCallFinishes,
// which it passes on as they are; wrote is the answer's text, if any. It is
// nil for any other finish.
func failedCallFinish(ep endpoint, finish, wrote string) *Error {
	finish = strings.ToUpper(finish)
	what, ok := failedCallFinishes[finish]
	if !ok {
		return nil
	}
	return &Error{Provider: ep.provider, Type: finish, Message: what, FailedGeneration: strings.TrimSpace(wrote)}
}

// endsWithoutFinish are the providers whose streams end with no
// finish_reason, and sometimes no [DONE] (Snowflake Cortex): for them a
// stream that ended cleanly is the end of the turn.
var endsWithoutFinish = []string{"snowflake"}

// cleanEnd is the finish reason of a stream that ended cleanly but named
// none: "tool_calls" when every call streamed is whole (a name, and
// arguments that are complete JSON), "stop" after text alone, and "" when
// nothing came or a call was cut, which stays a broken stream.
func (a *assembled) cleanEnd() string {
	calls := 0
	for _, c := range a.calls {
		if c == nil {
			continue
		}
		if c.FunctionCall.Name == "" || !json.Valid([]byte(c.FunctionCall.Arguments)) {
			return ""
		}
		calls++
	}
	switch {
	case calls > 0:
		return "tool_calls"
	case a.text.Len() > 0 || a.refusal.Len() > 0:
		return "stop"
	}
	return ""
}

// result is the one choice of the response, with the turn in order:
// reasoning, text, tool calls.
func (a *assembled) result() *llms.ContentResponse {
	choice := &llms.ContentChoice{
		Content:          a.text.String(),
		StopReason:       a.finish,
		ReasoningContent: a.reasoning.String(),
	}
	var turn []llms.ContentPart
	if a.reasoning.Len() > 0 {
		turn = append(turn, encodeBlock(chatBlock{Type: blockReasoning, Field: a.reasoningField, Text: a.reasoning.String()}))
	}
	if choice.Content != "" {
		turn = append(turn, llms.TextContent{Text: choice.Content})
	}
	for i, c := range a.calls {
		if c == nil {
			continue
		}
		choice.ToolCalls = append(choice.ToolCalls, *c)
		turn = append(turn, *c)
		if extra, ok := a.extras[i]; ok {
			turn = append(turn, encodeBlock(chatBlock{Type: blockCallExtra, ID: c.ID, Extra: extra}))
		}
	}
	if len(choice.ToolCalls) > 0 {
		choice.FuncCall = choice.ToolCalls[0].FunctionCall
	}
	u := a.usage
	refused, refusal := a.refusal.Len() > 0, a.refusal.String()
	if a.finish == StopContentFilter && !refused {
		refused, refusal = true, contentFiltered
	}
	SetInfo(choice, Info{
		Turn:    turn,
		Refused: refused, Refusal: refusal,
		NoUsage: !a.usageRead,
		Usage: Usage{
			Input:      int(u.PromptTokens),
			Output:     chatOutput(u),
			CacheRead:  int(max(u.PromptTokensDetails.CachedTokens, int64(a.usageExtra["prompt_cache_hit_tokens"]), int64(a.usageExtra["cached_tokens"]))),
			CacheWrite: int(u.PromptTokensDetails.CacheWriteTokens),
			Reasoning:  int(u.CompletionTokensDetails.ReasoningTokens),
		},
	})
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}

// chatOutput is every output token of a Chat Completions answer.
// completion_tokens holds the reasoning_tokens on OpenAI, but some servers
// count them beside it (xAI, whose total_tokens adds them, and any whose
// reasoning outnumbers its completion): those are added in.
func chatOutput(u openai.CompletionUsage) int {
	out, reasoning := u.CompletionTokens, u.CompletionTokensDetails.ReasoningTokens
	if reasoning > 0 && (reasoning > out || u.TotalTokens == u.PromptTokens+out+reasoning) {
		out += reasoning
	}
	return int(out)
}

// rawExtras are the raw JSON of a response object's members the SDK has
// no field for.
func rawExtras[F interface{ Raw() string }](fields map[string]F) map[string]string {
	out := make(map[string]string, len(fields))
	for k, f := range fields {
		out[k] = f.Raw()
	}
	return out
}
