package providers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Reading generateContent answers, whole or streamed chunk by chunk.

// geminiResponse is a GenerateContentResponse, or one chunk of its stream.
type geminiResponse struct {
	Candidates []struct {
		Content       geminiContent `json:"content"`
		FinishReason  string        `json:"finishReason"`
		FinishMessage string        `json:"finishMessage"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount        int `json:"promptTokenCount"`
		CandidatesTokenCount    int `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
		ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
		CachedContentTokenCount int `json:"cachedContentTokenCount"`
	} `json:"usageMetadata"`
	Error json.RawMessage `json:"error"`
}

// geminiTurn is an answer being read: its parts, consecutive text (and
// thought text) merged as chunks arrive.
type geminiTurn struct {
	parts                            []geminiPart
	finish, finishMessage, blocked   string
	input, output, reasoning, cached int
	// usageRead is set when counts came with the chunk that ended the
	// answer (its finish, or the prompt's block) or after it: a stream's
	// earlier counts are totals so far, and an answer may come with none.
	usageRead bool
}

func (a *geminiTurn) add(r geminiResponse) {
	ends := false
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		for _, p := range c.Content.Parts {
			n := len(a.parts)
			if p.FunctionCall == nil && p.Text != "" && n > 0 && a.parts[n-1].FunctionCall == nil &&
				a.parts[n-1].Thought == p.Thought && a.parts[n-1].ThoughtSignature == "" && a.parts[n-1].Text != "" {
				a.parts[n-1].Text += p.Text
				a.parts[n-1].ThoughtSignature = p.ThoughtSignature
				continue
			}
			if p.Text == "" && p.FunctionCall == nil && p.ThoughtSignature != "" && n > 0 && a.parts[n-1].ThoughtSignature == "" {
				a.parts[n-1].ThoughtSignature = p.ThoughtSignature // a signature sent on its own closes the part before
				continue
			}
			a.parts = append(a.parts, p)
		}
		if c.FinishReason != "" {
			a.finish, a.finishMessage = c.FinishReason, c.FinishMessage
			ends = true
		}
	}
	if f := r.PromptFeedback; f != nil && f.BlockReason != "" {
		a.blocked = firstNonEmpty(f.BlockReasonMessage, "the prompt was blocked ("+f.BlockReason+")")
		ends = true
	}
	// promptTokenCount holds the cached content's tokens; the prompts of
	// server tool use (search, code execution) and the thoughts are counted
	// beside the prompt and the candidates. A chunk's counts are totals so
	// far: the last replaces the ones before.
	if u := r.UsageMetadata; u != nil {
		a.input, a.cached = u.PromptTokenCount+u.ToolUsePromptTokenCount, u.CachedContentTokenCount
		a.output, a.reasoning = u.CandidatesTokenCount+u.ThoughtsTokenCount, u.ThoughtsTokenCount
		a.usageRead = true
	} else if ends {
		a.usageRead = false
	}
}

// response normalises the turn into one choice. Gemini on Vertex gives
// calls no ids: each gets one made of the response's position.
func (a *geminiTurn) response() *llms.ContentResponse {
	choice := &llms.ContentChoice{}
	info := Info{NoUsage: !a.usageRead, Usage: Usage{Input: a.input, Output: a.output, Reasoning: a.reasoning, CacheRead: a.cached}}
	var text, thoughts strings.Builder
	var turn []llms.ContentPart
	signature := func(p geminiPart) {
		if p.ThoughtSignature != "" {
			turn = append(turn, encodeBlock(geminiBlock{Type: blockGeminiSignature, Signature: p.ThoughtSignature}))
		}
	}
	for i, p := range a.parts {
		switch {
		case p.Thought:
			thoughts.WriteString(p.Text)
			raw, _ := json.Marshal(p)
			turn = append(turn, encodeBlock(geminiBlock{Type: blockGeminiPart, Part: raw}))
		case p.FunctionCall != nil:
			args := objectArguments(p.FunctionCall.Args)
			id := p.FunctionCall.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%s", i, p.FunctionCall.Name)
			}
			call := llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: p.FunctionCall.Name, Arguments: args}}
			choice.ToolCalls = append(choice.ToolCalls, call)
			turn = append(turn, call)
			signature(p)
		case p.Text != "":
			text.WriteString(p.Text)
			turn = append(turn, llms.TextContent{Text: p.Text})
			signature(p)
		}
	}
	choice.Content = text.String()
	choice.ReasoningContent = thoughts.String()
	if len(choice.ToolCalls) > 0 {
		choice.FuncCall = choice.ToolCalls[0].FunctionCall
	}
	choice.StopReason = strings.ToLower(a.finish)
	switch a.finish {
	case "MAX_TOKENS":
		choice.StopReason = StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR":
		info.Refused, info.Refusal = true, firstNonEmpty(a.finishMessage, strings.TrimSpace(choice.Content),
			"the response was blocked ("+a.finish+")")
	}
	if a.blocked != "" {
		info.Refused, info.Refusal = true, a.blocked
	}
	info.Turn = turn
	SetInfo(choice, info)
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}

// failedCallFinishes are Gemini's finish reasons for a call the model wrote
// and nothing ran, with what they mean: MALFORMED_FUNCTION_CALL, a call it
// could not parse; UNEXPECTED_TOOL_CALL, a call to a function the request
// did not declare, or while the tool choice allowed none.
var failedCallFinishes = map[string]string{
	"MALFORMED_FUNCTION_CALL": "Malformed function call",
	"UNEXPECTED_TOOL_CALL":    "Unexpected tool call",
}

// failedCall is the Error of an answer Gemini ended with one of
// failedCallFinishes: a mistake the model can correct, as ToolUseFailed
// tells, carrying what the model wrote (the call the finishMessage quotes,
// or the undeclared calls in the parts). It is nil for any other answer.
func (a *geminiTurn) failedCall(ep endpoint) *Error {
	what, ok := failedCallFinishes[a.finish]
	if !ok {
		return nil
	}
	msg, wrote := strings.TrimSpace(a.finishMessage), ""
	if rest, ok := strings.CutPrefix(msg, what+":"); ok && a.finish == "MALFORMED_FUNCTION_CALL" {
		msg, wrote = what, strings.TrimSpace(rest)
	}
	if wrote == "" {
		var calls []string
		for _, p := range a.parts {
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.Name+" "+objectArguments(p.FunctionCall.Args))
			}
		}
		wrote = strings.Join(calls, "; ")
	}
	return &Error{Provider: ep.provider, Type: a.finish, Message: oneLine(firstNonEmpty(msg, what)), FailedGeneration: wrote}
}

// stream posts to streamGenerateContent (SSE), passes text to fn and reads
// the chunks into one answer. An error chunk fails it with a Stream *Error.
func (m *geminiModel) stream(ctx context.Context, body []byte, fn func(context.Context, []byte) error, retries int) (*llms.ContentResponse, error) {
	r, err := m.post(ctx, "streamGenerateContent", body)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var a geminiTurn
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue
		}
		data := bytes.TrimSpace(line[len("data:"):])
		var chunk geminiResponse
		if err := json.Unmarshal(data, &chunk); err != nil {
			return nil, fmt.Errorf("reading the stream: %w", err)
		}
		if len(chunk.Error) > 0 && string(chunk.Error) != "null" {
			return nil, streamError(m.ep, geminiStreamError(data), retries)
		}
		if len(chunk.Candidates) > 0 {
			for _, p := range chunk.Candidates[0].Content.Parts {
				if p.Text != "" && !p.Thought {
					if err := fn(ctx, []byte(p.Text)); err != nil {
						return nil, err
					}
				}
			}
		}
		a.add(chunk)
	}
	if err := sc.Err(); err != nil && (a.finish == "" || !cutAfterFinish(ctx, err)) {
		return nil, fmt.Errorf("reading the stream: %w", err)
	}
	if a.finish == "" && a.blocked == "" {
		return nil, streamError(m.ep, []byte(`{"error":{"type":"incomplete_stream","message":"the stream ended before a finish reason"}}`), retries)
	}
	if e := a.failedCall(m.ep); e != nil {
		e.Stream, e.Retries = true, retries
		return nil, e
	}
	return a.response(), nil
}

// geminiStreamError gives a Google error ({code, message, status}) the type
// the retry decision reads: its status.
func geminiStreamError(data []byte) []byte {
	var v struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &v) != nil {
		return data
	}
	typ := v.Error.Status
	switch typ {
	case "RESOURCE_EXHAUSTED":
		typ = "rate_limit_error"
	case "UNAVAILABLE", "INTERNAL":
		typ = "service_unavailable"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": typ, "message": v.Error.Message}})
	return b
}
