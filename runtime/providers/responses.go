package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tmc/langchaingo/llms"
)

// responsesModel is OpenAI's Responses API on openai-go (openai-responses:).
// Output items the loop does not interpret (reasoning, web search calls,
// code interpreter calls) are kept as block parts and sent back as input
// items, unchanged and in order.
type responsesModel struct {
	common
	client openai.Client
}

func newResponses(c common) *responsesModel {
	return &responsesModel{common: c, client: openai.NewClient(openaiOptions(c, "")...)}
}

func (m *responsesModel) send(ctx context.Context, req responses.ResponseNewParams) (*llms.ContentResponse, error) {
	v, err := m.client.Responses.New(ctx, req, m.openaiExtra()...)
	if err != nil {
		return nil, err
	}
	// A background response (openai_background) is queued: it is fetched
	// until it is done.
	for v.Status == responses.ResponseStatusQueued || v.Status == responses.ResponseStatusInProgress {
		next, err := v, m.doer.retry.sleep(ctx, backgroundPoll)
		if err == nil {
			next, err = m.client.Responses.Get(ctx, v.ID, responses.ResponseGetParams{})
		}
		if err != nil {
			// Whether the run ended or the fetch failed for good, no one
			// will read the response: it is cancelled, not left to run on.
			m.cancelBackground(ctx, v.ID)
			return nil, err
		}
		v = next
	}
	if e := responseFailure(m.ep, v.RawJSON()); e != nil {
		return nil, e
	}
	return readResponse(v.RawJSON())
}

// backgroundPoll is the wait before each fetch of a background response.
const backgroundPoll = 2 * time.Second

// backgroundCancelTimeout bounds the request that cancels a background
// response once the run has ended.
const backgroundCancelTimeout = 5 * time.Second

// cancelBackground asks the API to cancel the background response id,
// which runs on, and is billed, when the run that waits for it ends or
// gives up on it. ctx
// has ended, so the request has a short context of its own, and one
// attempt: no retry is announced after an interruption. Its failure
// changes nothing the caller returns.
func (m *responsesModel) cancelBackground(ctx context.Context, id string) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), backgroundCancelTimeout)
	defer stop()
	once := *m.doer
	once.retry.max, once.onRetry = 0, nil
	_, _ = m.client.Responses.Cancel(ctx, id, option.WithHTTPClient(&once))
}

// responseFailure is the Error of a 200 whose Response failed (status
// "failed" with its error, or "cancelled"), or whose body is an error and
// no Response; nil for any other.
func responseFailure(ep endpoint, raw string) *Error {
	var r struct {
		Status string            `json:"status"`
		Error  json.RawMessage   `json:"error"`
		Output []json.RawMessage `json:"output"`
	}
	if json.Unmarshal([]byte(raw), &r) != nil {
		return nil
	}
	failed := r.Status == "failed" || r.Status == "cancelled"
	switch {
	case present(string(r.Error)) && (failed || r.Status == "" && len(r.Output) == 0):
		return statusError(ep, http.StatusOK, []byte(`{"error":`+string(r.Error)+`}`), 0)
	case failed:
		return statusError(ep, http.StatusOK, []byte(`{"error":{"message":"the response ended with status `+r.Status+`"}}`), 0)
	}
	return nil
}

// readResponse reads a whole Response object.
func readResponse(raw string) (*llms.ContentResponse, error) {
	resp, err := responsesResult(raw)
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	return resp, nil
}

func (m *responsesModel) stream(ctx context.Context, req responses.ResponseNewParams, fn func(context.Context, []byte) error, retries int) (*llms.ContentResponse, error) {
	s := m.client.Responses.NewStreaming(ctx, req, m.openaiExtra()...)
	defer s.Close()
	// A background response runs on when its stream is cut: one left
	// before it ended (the run ended, the stream broke, the caller gave up
	// on it) is cancelled, since no one will read it.
	var running string
	defer func() {
		if running != "" {
			m.cancelBackground(ctx, running)
		}
	}()
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.created", "response.queued", "response.in_progress":
			if ev.Response.Background {
				running = ev.Response.ID
			}
		case "response.output_text.delta":
			if ev.Delta != "" {
				if err := fn(ctx, []byte(ev.Delta)); err != nil {
					return nil, err
				}
			}
		case "response.completed", "response.incomplete":
			running = ""
			return readResponse(ev.Response.RawJSON())
		case "response.failed":
			running = ""
			body, _ := json.Marshal(map[string]any{"error": json.RawMessage(orNull(ev.Response.Error.RawJSON()))})
			return nil, streamError(m.ep, body, retries)
		case "error":
			body, _ := json.Marshal(map[string]any{"error": map[string]any{"type": ev.Code, "message": ev.Message}})
			return nil, streamError(m.ep, body, retries)
		}
	}
	if err := s.Err(); err != nil {
		if se, ok := err.(*ssestream.StreamError); ok {
			return nil, streamError(m.ep, se.Event.Data, retries)
		}
		return nil, err
	}
	return nil, streamError(m.ep, []byte(`{"error":{"type":"incomplete_stream","message":"the stream ended before response.completed"}}`), retries)
}

func orNull(s string) string {
	if strings.TrimSpace(s) == "" {
		return "null"
	}
	return s
}

func (m *responsesModel) request(messages []llms.MessageContent, opts llms.CallOptions) (responses.ResponseNewParams, error) {
	s := m.settings
	p := responses.ResponseNewParams{Model: m.model}
	// Reasoning models refuse a temperature: only a spec's own is sent.
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if n := callMaxTokens(s, opts, 0); s.MaxTokens > 0 || opts.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(n))
	}
	extra := map[string]any{}
	// A setting that is not a string goes as the spec wrote it.
	asWritten := map[string]any{}
	effort := ""
	if t := s.Thinking; t != nil && (t.Enabled || !alwaysReasons(m.provider, m.model)) {
		effort = reasoningEffort(t)
	}
	if v, ok := s.Provider["openai_reasoning_effort"]; ok {
		effort, _ = v.(string)
		if _, isString := v.(string); !isString {
			asWritten["effort"] = v
		}
	}
	p.Reasoning.Effort = shared.ReasoningEffort(effort)
	if v, ok := s.Provider["openai_reasoning_summary"]; ok {
		if summary, isString := v.(string); isString {
			p.Reasoning.Summary = shared.ReasoningSummary(summary)
		} else {
			asWritten["summary"] = v
		}
	}
	if len(asWritten) > 0 {
		p.Reasoning.SetExtraFields(asWritten)
	}
	if v, ok := s.Provider["openai_text_verbosity"]; ok {
		if verbosity, isString := v.(string); isString {
			p.Text.Verbosity = responses.ResponseTextConfigVerbosity(verbosity)
		} else {
			p.Text.SetExtraFields(map[string]any{"verbosity": v})
		}
	}
	for _, k := range []string{"truncation", "previous_response_id", "background"} {
		if v, ok := s.Provider["openai_"+k]; ok {
			extra[k] = plain(v)
		}
	}
	if extra["previous_response_id"] == "auto" {
		// The latest response of the conversation, and only what came
		// after it; none before the first.
		delete(extra, "previous_response_id")
		if id, after := latestResponse(messages); id != "" {
			extra["previous_response_id"] = id
			messages = after
		}
	}
	for _, k := range bodyKeys["openai_"] {
		if v, ok := s.Provider["openai_"+k]; ok && k != "reasoning_effort" {
			extra[k] = plain(v)
		}
	}
	if s.ServiceTier != "" {
		extra["service_tier"] = s.ServiceTier
	}

	instructions, input, err := responsesInput(messages, stored(extra, m.settings.ExtraBody))
	if err != nil {
		return p, err
	}
	if instructions != "" {
		p.Instructions = param.NewOpt(instructions)
	}
	p.Input.OfInputItemList = input

	for _, t := range opts.Tools {
		if t.Function == nil {
			continue
		}
		description, schema, err := functionParts(t.Function)
		if err != nil {
			return p, err
		}
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		def := responses.FunctionToolParam{Name: t.Function.Name, Strict: param.NewOpt(t.Function.Strict),
			Description: description, Parameters: schema}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &def})
	}
	for _, nt := range m.native {
		def, err := responsesNative(nt)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, param.Override[responses.ToolUnionParam](def))
	}
	if len(p.Tools) > 0 {
		mode, names, ok := toolChoiceOf(s.ToolChoice, opts.ToolChoice)
		switch {
		case !ok:
		case len(names) == 1:
			p.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: names[0]}
		case len(names) > 1:
			// The Responses API names a function by name alone, at the top
			// of the tool reference, where Chat Completions nests it.
			refs := make([]map[string]any, len(names))
			for i, name := range names {
				refs[i] = map[string]any{"type": "function", "name": name}
			}
			p.ToolChoice.OfAllowedTools = &responses.ToolChoiceAllowedParam{Mode: responses.ToolChoiceAllowedModeRequired, Tools: refs}
		default:
			p.ToolChoice.OfToolChoiceMode = param.NewOpt(responses.ToolChoiceOptions(mode))
		}
		if s.ParallelToolCalls != nil {
			p.ParallelToolCalls = param.NewOpt(*s.ParallelToolCalls)
		}
	}
	p.SetExtraFields(extra)
	return p, nil
}

// responsesNative is the tool definition of a native tool on the Responses API.
func responsesNative(t NativeTool) (map[string]any, error) {
	switch t.Kind {
	case "web_search":
		def := map[string]any{"type": "web_search"}
		for k, v := range t.Options {
			switch k {
			case "allowed_domains":
				def["filters"] = map[string]any{"allowed_domains": plain(v)}
			case "user_location":
				def[k] = approximate(v)
			case "search_context_size", "external_web_access":
				def[k] = plain(v)
			default:
				return nil, &NativeOptionError{Option: k, Msg: "the Responses API's web_search takes no " + k}
			}
		}
		return def, nil
	case "code_execution":
		return map[string]any{"type": "code_interpreter", "container": map[string]any{"type": "auto"}}, nil
	}
	return nil, fmt.Errorf("the native tool %s is not run by the Responses API", t.Kind)
}

// latestResponse is the id of the latest response a turn of messages kept,
// and the messages after that turn, with the system messages before it
// (the instructions are not carried over from a previous response).
func latestResponse(messages []llms.MessageContent) (string, []llms.MessageContent) {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role != llms.ChatMessageTypeAI {
			continue
		}
		for _, part := range messages[i].Parts {
			var b responseIDBlock
			if decodeBlock(part, &b) && b.Type == blockResponseID && b.ID != "" {
				var after []llms.MessageContent
				for _, msg := range messages[:i] {
					if msg.Role == llms.ChatMessageTypeSystem {
						after = append(after, msg)
					}
				}
				return b.ID, append(after, messages[i+1:]...)
			}
		}
	}
	return "", messages
}

// responsesInput converts the conversation to input items.
//
// The message and function_call items of an assistant turn go back with
// their ids when, and only when, the reasoning item they followed goes
// back too: the API pairs a reasoning item with the item after it by id,
// and refuses either one sent without the other ("Item 'rs_...' of type
// 'reasoning' was provided without its required following item", "Item
// 'fc_...' of type 'function_call' was provided without its required
// 'reasoning' item"). A reasoning item whose following item is not in the
// turn any more (a call the loop left out) is not sent. call_id alone
// pairs a function_call_output with its call.
//
// When the requests are not stored (store: false) the API kept no item to
// find by id: a reasoning item goes back only with its encrypted_content
// (include: ["reasoning.encrypted_content"]), else it is not sent, nor the
// ids of the items after it.
func responsesInput(messages []llms.MessageContent, stored bool) (string, responses.ResponseInputParam, error) {
	var system []string
	var items responses.ResponseInputParam
	for i, msg := range messages {
		var text []string
		var textPhase string // the phase of the messages text holds
		flushText := func(role string) {
			if len(text) > 0 {
				items = append(items, responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
					Role:    responses.EasyInputMessageRole(role),
					Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(strings.Join(text, ""))},
					Phase:   responses.EasyInputMessagePhase(textPhase),
				}})
				text = nil
			}
		}
		role := "user"
		if msg.Role == llms.ChatMessageTypeAI {
			role = "assistant"
		}
		// paired: the latest reasoning item of the turn went back, so the
		// items after it go with their ids; id is the id of the next part.
		var paired bool
		var id itemIDBlock
		for j, part := range msg.Parts {
			next := id
			id = itemIDBlock{}
			switch p := part.(type) {
			case llms.TextContent:
				switch {
				case msg.Role == llms.ChatMessageTypeSystem:
					system = append(system, p.Text)
				case paired && next.Item == "message":
					flushText(role)
					items = append(items, responses.ResponseInputItemUnionParam{OfOutputMessage: &responses.ResponseOutputMessageParam{
						ID: next.ID, Status: responses.ResponseOutputMessageStatusCompleted,
						Content: []responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{
							Text: p.Text, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{},
						}}},
						Phase: responses.ResponseOutputMessagePhase(next.Phase),
					}})
				default:
					// Messages of one phase are joined; commentary and a
					// final answer stay apart, each labelled.
					phase := ""
					if next.Item == "message" {
						phase = next.Phase
					}
					if phase != textPhase {
						flushText(role)
						textPhase = phase
					}
					text = append(text, p.Text)
				}
			case llms.ToolCall:
				flushText(role)
				if p.FunctionCall != nil {
					call := responses.ResponseFunctionToolCallParam{Arguments: p.FunctionCall.Arguments, CallID: p.ID, Name: p.FunctionCall.Name}
					if paired && next.Item == "function_call" && next.CallID == p.ID {
						call.ID = param.NewOpt(next.ID)
					}
					items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &call})
				}
			case llms.ToolCallResponse:
				items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: param.NewOpt(p.ToolCallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(p.Content)},
				}})
			case llms.BinaryContent:
				switch {
				case isToolError(p):
				case isBlock(p):
					var b responseIDBlock
					if decodeBlock(p, &b) && b.Type == blockResponseID {
						continue
					}
					if decodeBlock(p, &id) && id.Type == blockItemID {
						continue
					}
					id = itemIDBlock{}
					if reasoning, encrypted := reasoningItem(p); reasoning {
						if paired = (stored || encrypted) && followed(msg.Parts[j+1:]); !paired {
							continue
						}
					}
					flushText(role)
					items = append(items, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(p.Data)))
				default:
					return "", nil, fmt.Errorf("message %d: the Responses API takes no %s part here", i, p.MIMEType)
				}
			default:
				return "", nil, fmt.Errorf("message %d: the Responses API takes no %T part", i, part)
			}
		}
		flushText(role)
	}
	return strings.Join(system, "\n\n"), items, nil
}

// reasoningItem reports whether a block part is a reasoning output item,
// and whether it carries its encrypted_content.
func reasoningItem(p llms.BinaryContent) (reasoning, encrypted bool) {
	var item struct {
		Type             string `json:"type"`
		EncryptedContent string `json:"encrypted_content"`
	}
	if !decodeBlock(p, &item) || item.Type != "reasoning" {
		return false, false
	}
	return true, item.EncryptedContent != ""
}

// stored reports whether the request is stored: unless openai_store, or
// extra_body's store, which is sent over it, is false.
func stored(extra, extraBody map[string]any) bool {
	store, ok := extraBody["store"]
	if !ok {
		store = extra["store"]
	}
	return store != false
}

// followed reports whether the item that followed a reasoning item in its
// response is still in the turn, first of the parts after it: an output
// item kept as it came, or the part an item id names.
func followed(after []llms.ContentPart) bool {
	if len(after) == 0 {
		return false
	}
	var id itemIDBlock
	if !decodeBlock(after[0], &id) || id.Type != blockItemID {
		var b responseIDBlock
		_, block := IsBlock(after[0])
		return block && !(decodeBlock(after[0], &b) && b.Type == blockResponseID)
	}
	if len(after) < 2 {
		return false
	}
	switch p := after[1].(type) {
	case llms.TextContent:
		return id.Item == "message"
	case llms.ToolCall:
		return id.Item == "function_call" && id.CallID == p.ID
	}
	return false
}

// responsesResult reads a Response object into one choice.
func responsesResult(raw string) (*llms.ContentResponse, error) {
	var r struct {
		ID                string `json:"id"`
		Status            string `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Output []json.RawMessage `json:"output"`
		// Usage is nil when the Response counts none (null, or absent).
		Usage *struct {
			InputTokens        int `json:"input_tokens"`
			OutputTokens       int `json:"output_tokens"`
			InputTokensDetails struct {
				CachedTokens     int `json:"cached_tokens"`
				CacheWriteTokens int `json:"cache_write_tokens"`
			} `json:"input_tokens_details"`
			OutputTokensDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, err
	}
	choice := &llms.ContentChoice{}
	// final is the text of the messages labelled final_answer: newer models
	// write commentary, a preamble shown while they work, before their
	// final answer, and the answer is the final answer alone. Without such
	// a label every message's text is the answer.
	var text, final, refusal, reasoning strings.Builder
	var hasFinal bool
	var turn []llms.ContentPart
	for _, rawItem := range r.Output {
		var item struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Phase     string `json:"phase"` // a message's: commentary, final_answer
			Content   []struct {
				Type    string `json:"type"`
				Text    string `json:"text"`
				Refusal string `json:"refusal"`
			} `json:"content"`
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(rawItem, &item); err != nil {
			return nil, err
		}
		switch item.Type {
		case "message":
			var t strings.Builder
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					t.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
			if t.Len() > 0 {
				text.WriteString(t.String())
				if item.Phase == "final_answer" {
					final.WriteString(t.String())
					hasFinal = true
				}
				if item.ID != "" {
					turn = append(turn, encodeBlock(itemIDBlock{Type: blockItemID, ID: item.ID, Item: "message", Phase: item.Phase}))
				}
				turn = append(turn, llms.TextContent{Text: t.String()})
			}
		case "function_call":
			args := item.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			call := llms.ToolCall{ID: item.CallID, Type: "function", FunctionCall: &llms.FunctionCall{Name: item.Name, Arguments: args}}
			choice.ToolCalls = append(choice.ToolCalls, call)
			if item.ID != "" {
				turn = append(turn, encodeBlock(itemIDBlock{Type: blockItemID, ID: item.ID, Item: "function_call", CallID: item.CallID}))
			}
			turn = append(turn, call)
		default:
			if item.Type == "reasoning" {
				for _, s := range item.Summary {
					reasoning.WriteString(s.Text)
				}
			}
			turn = append(turn, blockPart(rawItem))
		}
	}
	if r.ID != "" {
		turn = append(turn, encodeBlock(responseIDBlock{Type: blockResponseID, ID: r.ID}))
	}
	choice.Content = text.String()
	if hasFinal {
		choice.Content = final.String()
	}
	choice.ReasoningContent = reasoning.String()
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		choice.StopReason = StopMaxTokens
	case r.Status == "incomplete" && r.IncompleteDetails != nil:
		choice.StopReason = r.IncompleteDetails.Reason
	case len(choice.ToolCalls) > 0:
		choice.StopReason = "tool_calls"
	default:
		choice.StopReason = "stop"
	}
	if len(choice.ToolCalls) > 0 {
		choice.FuncCall = choice.ToolCalls[0].FunctionCall
	}
	refused := refusal.Len() > 0
	if choice.StopReason == StopContentFilter && !refused {
		refused = true
		refusal.WriteString(contentFiltered)
	}
	info := Info{Turn: turn, Refused: refused, Refusal: refusal.String(), NoUsage: r.Usage == nil}
	if u := r.Usage; u != nil {
		info.Usage = Usage{Input: u.InputTokens, Output: u.OutputTokens,
			CacheRead: u.InputTokensDetails.CachedTokens, CacheWrite: u.InputTokensDetails.CacheWriteTokens,
			Reasoning: u.OutputTokensDetails.ReasoningTokens}
	}
	SetInfo(choice, info)
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}
