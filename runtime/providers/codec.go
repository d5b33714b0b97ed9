package providers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"
)

// The codec: what langchaingo's types cannot say crosses them here, and only
// here, so that the loop keeps one []llms.MessageContent history and reads a
// response through Info rather than by string keys.
//
//   - A content block the loop does not interpret (an Anthropic thinking,
//     redacted_thinking or server tool block, an OpenAI-compatible
//     reasoning_content, a Gemini thought part or signature, a Bedrock
//     reasoning block) is an llms.BinaryContent of type BlockMIME whose Data
//     is the block as JSON. The models of this package return such parts in
//     the turn of a response (Info.Turn) and send them back unchanged, in
//     their place, when the turn is replayed.
//   - A tool result that reports a failure carries a second part, ToolError,
//     after its llms.ToolCallResponse; Anthropic then gets is_error: true.
//   - A ContentChoice carries Info (usage, refusal, the whole turn) in its
//     GenerationInfo, under the Info* keys, which langchaingo's own clients
//     partly share.

// BlockMIME is the MIME type of a part holding a provider's content block.
const BlockMIME = "application/vnd.agentspec.block+json"

// toolErrorMIME is the MIME type of the ToolError marker.
const toolErrorMIME = "application/vnd.agentspec.tool-error"

// ToolError marks the tool result message it ends as a failure.
var ToolError = llms.BinaryContent{MIMEType: toolErrorMIME}

// Keys of a ContentChoice's GenerationInfo set by this package's models.
// SetInfo writes them and ReadInfo reads them; nothing else should.
const (
	InfoInputTokens      = "InputTokens"
	InfoOutputTokens     = "OutputTokens"
	InfoCacheWriteTokens = "CacheCreationInputTokens"
	InfoCacheReadTokens  = "CacheReadInputTokens"
	InfoReasoningTokens  = "ReasoningTokens"
	// InfoRefusal is the model's refusal text (OpenAI's message.refusal, or
	// the text of an Anthropic turn that stopped with "refusal").
	InfoRefusal = "Refusal"
	// InfoTurn is the whole assistant turn as []llms.ContentPart, in the
	// order the model produced it: text, tool calls and block parts. Replay
	// it as one message.
	InfoTurn = "Turn"
)

// The keys langchaingo's openai client reports usage under, read as a
// fallback for models not of this package.
const (
	lcPromptTokens     = "PromptTokens"
	lcCompletionTokens = "CompletionTokens"
)

// Stop reasons the loop must not take as a finished answer.
const (
	StopRefusal   = "refusal"    // the model refused
	StopMaxTokens = "max_tokens" // Anthropic: cut at max_tokens
	StopLength    = "length"     // OpenAI-compatible: cut at max_tokens
	// StopContentFilter is OpenAI's and Azure's stop by their content
	// filter (a finish_reason, or a Response's incomplete reason): the
	// answer was cut or left out, so the response is taken as blocked.
	StopContentFilter = "content_filter"
	// StopContextWindow is Anthropic's and Bedrock's stop when the
	// conversation filled the model's context window: the answer was cut.
	StopContextWindow = "model_context_window_exceeded"
	// StopPauseTurn is Anthropic's pause of a long server tool turn: the turn
	// is sent back as it is for the model to continue.
	StopPauseTurn = "pause_turn"
)

// contentFiltered is the refusal of a response a content filter stopped.
const contentFiltered = "the response was blocked (" + StopContentFilter + ")"

// Truncated reports whether a stop reason says the response was cut at
// max_tokens.
func Truncated(reason string) bool { return reason == StopMaxTokens || reason == StopLength }

// ToolStop reports whether a stop reason says the model stopped to call
// tools.
func ToolStop(reason string) bool {
	switch reason {
	case "tool_calls", "tool_use", "function_call":
		return true
	}
	return false
}

// Usage is the token counts of one response, with one meaning whatever the
// provider, pydantic-ai's: Input is every input token, those read from and
// written to the prompt cache included (CacheRead and CacheWrite are parts
// of it), and Output every output token, reasoning included (Reasoning is
// a part of it). Where an API counts a part beside its total (Anthropic's
// and Converse's cache tokens, Gemini's thoughts, xAI's reasoning), its
// reader adds it in.
type Usage struct {
	Input, Output, CacheWrite, CacheRead, Reasoning int
}

// Info is what a response carries beyond llms.ContentChoice's own fields.
type Info struct {
	Usage Usage
	// NoUsage is set when the provider sent no usage, as a stream that
	// ended after its finish but before its usage does: SetInfo then writes
	// no counts (zeros would say the model read and wrote nothing), and
	// ReadInfo reports none.
	NoUsage bool
	// Refused is set when the model refused, with Refusal its reason.
	Refused bool
	Refusal string
	// Turn is the whole assistant turn, in order (see InfoTurn); nil when
	// the model does not return it.
	Turn []llms.ContentPart
}

// SetInfo writes info into the choice's GenerationInfo.
func SetInfo(c *llms.ContentChoice, info Info) {
	if c.GenerationInfo == nil {
		c.GenerationInfo = map[string]any{}
	}
	g := c.GenerationInfo
	if !info.NoUsage {
		g[InfoInputTokens] = info.Usage.Input
		g[InfoOutputTokens] = info.Usage.Output
		g[InfoCacheWriteTokens] = info.Usage.CacheWrite
		g[InfoCacheReadTokens] = info.Usage.CacheRead
		g[InfoReasoningTokens] = info.Usage.Reasoning
	}
	if info.Refused {
		g[InfoRefusal] = info.Refusal
	}
	g[InfoTurn] = info.Turn
}

// ReadInfo reads what SetInfo wrote, and the usage of langchaingo's own
// clients (PromptTokens/CompletionTokens). usage is false when the choice
// carries no input or output count; turn is false when it carries no turn.
func ReadInfo(c *llms.ContentChoice) (info Info, usage, turn bool) {
	g := c.GenerationInfo
	info.Usage, usage = readUsage(g)
	info.Turn, turn = g[InfoTurn].([]llms.ContentPart)
	info.Refusal, info.Refused = g[InfoRefusal].(string)
	return info, usage, turn
}

func readUsage(g map[string]any) (u Usage, ok bool) {
	var okIn, okOut bool
	u.Input, okIn = firstInt(g, InfoInputTokens, lcPromptTokens)
	u.Output, okOut = firstInt(g, InfoOutputTokens, lcCompletionTokens)
	u.CacheWrite, _ = firstInt(g, InfoCacheWriteTokens)
	u.CacheRead, _ = firstInt(g, InfoCacheReadTokens)
	u.Reasoning, _ = firstInt(g, InfoReasoningTokens)
	return u, okIn || okOut
}

// firstInt is the first of keys holding a number, as the clients give them.
func firstInt(g map[string]any, keys ...string) (int, bool) {
	for _, k := range keys {
		switch v := g[k].(type) {
		case int:
			return v, true
		case int32:
			return int(v), true
		case int64:
			return int(v), true
		case float64:
			return int(v), true
		case json.Number:
			n, err := v.Int64()
			return int(n), err == nil
		}
	}
	return 0, false
}

// IsBlock reports whether p is a block part, and returns its JSON.
func IsBlock(p llms.ContentPart) (json.RawMessage, bool) {
	b, ok := p.(llms.BinaryContent)
	if !ok || b.MIMEType != BlockMIME {
		return nil, false
	}
	return b.Data, true
}

// isBlock reports whether a binary part is a block part.
func isBlock(p llms.BinaryContent) bool { return p.MIMEType == BlockMIME }

// blockPart is the part holding a block given as its JSON.
func blockPart(raw []byte) llms.BinaryContent {
	return llms.BinaryContent{MIMEType: BlockMIME, Data: raw}
}

// encodeBlock is the part holding one of the block types below.
func encodeBlock(b any) llms.BinaryContent {
	raw, _ := json.Marshal(b)
	return blockPart(raw)
}

// decodeBlock reads a block part into one of the block types below; false
// when it is not one.
func decodeBlock(p llms.ContentPart, into any) bool {
	raw, ok := IsBlock(p)
	return ok && json.Unmarshal(raw, into) == nil
}

func isToolError(p llms.ContentPart) bool {
	b, ok := p.(llms.BinaryContent)
	return ok && b.MIMEType == toolErrorMIME
}

// objectArguments is raw, a call's input as a provider sent it, as the
// call's JSON arguments: the object compacted with its numbers as written
// (decoded into float64, an integer past 2^53 would be rounded), or "{}"
// when raw is not one JSON object.
func objectArguments(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	var compact bytes.Buffer
	if len(raw) == 0 || raw[0] != '{' || json.Compact(&compact, raw) != nil {
		return "{}"
	}
	return compact.String()
}

// The blocks this package writes for the wire families whose own blocks
// are not JSON the API takes back as it is. (Anthropic's blocks and the
// Responses API's output items are kept as the API's own JSON.)

// The types of the blocks below.
const (
	blockReasoning        = "reasoning"             // chatBlock
	blockCallExtra        = "call_extra"            // chatBlock
	blockGeminiPart       = "gemini_part"           // geminiBlock
	blockGeminiSignature  = "gemini_signature"      // geminiBlock
	blockBedrockReasoning = "bedrock_reasoning"     // bedrockBlock
	blockResponseID       = "agentspec_response_id" // responseIDBlock
	blockItemID           = "agentspec_item_id"     // itemIDBlock
)

// responseIDBlock keeps the id of a Responses API response in its turn, for
// openai_previous_response_id: auto to continue from; it is not sent back
// as an input item.
type responseIDBlock struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// itemIDBlock keeps, in a Responses API turn, the id of the output item
// (a message or a function_call, the one with CallID) whose llms part comes
// right after it. The API pairs a reasoning item with the items after it by
// these ids, so they go back with the item when its reasoning item does;
// the block itself is not sent. A message's Phase (commentary,
// final_answer), which newer models ask to be sent back, goes back with
// it, whether or not its id does.
type itemIDBlock struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Item   string `json:"item"` // "message" or "function_call"
	CallID string `json:"call_id,omitempty"`
	Phase  string `json:"phase,omitempty"`
}

// chatBlock is how a turn keeps what Chat Completions has no llms part for:
// reasoning ("reasoning": the text and the member it came in), and the
// extra_content of a tool call ("call_extra": Gemini's thought signatures,
// which must go back with the call).
type chatBlock struct {
	Type  string          `json:"type"`
	Field string          `json:"field,omitempty"` // reasoning_content, reasoning, or content (a thinking part)
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`    // the call's id
	Extra json.RawMessage `json:"extra,omitempty"` // the call's extra_content
}

// geminiBlock is how a turn keeps what llms parts cannot say: a thought part
// ("gemini_part", the part as the API sent it), and the thought signature
// of the part before it ("gemini_signature"), which must go back with it.
type geminiBlock struct {
	Type      string          `json:"type"`
	Part      json.RawMessage `json:"part,omitempty"`
	Signature string          `json:"signature,omitempty"`
}

// bedrockBlock is how a turn keeps a reasoning block, to send it back with
// its signature: Claude refuses a tool result after a thinking turn whose
// thinking is missing.
type bedrockBlock struct {
	Type      string `json:"type"` // "bedrock_reasoning"
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  []byte `json:"redacted,omitempty"`
}

// A turn is the side of the conversation a message belongs to, for the APIs
// (Messages, Converse) that take system text apart and want user and
// assistant turns alternating.
type turn int

const (
	turnSystem turn = iota
	turnUser
	turnAssistant
)

// sideOf sorts message i, of the given role, for api: tool results and
// generic messages are the user's.
func sideOf(i int, role llms.ChatMessageType, api string) (turn, error) {
	switch role {
	case llms.ChatMessageTypeSystem:
		return turnSystem, nil
	case llms.ChatMessageTypeAI:
		return turnAssistant, nil
	case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric, llms.ChatMessageTypeTool:
		return turnUser, nil
	}
	return 0, fmt.Errorf("message %d: role %q has no place in the %s API", i, role, api)
}

// systemTexts returns the text parts of a system message that are not
// empty.
func systemTexts(msg llms.MessageContent) []string {
	var out []string
	for _, part := range msg.Parts {
		if t, ok := part.(llms.TextContent); ok && t.Text != "" {
			out = append(out, t.Text)
		}
	}
	return out
}

// turnBuilder gathers blocks into turns: a turn ends where the side
// changes, and in a turn the tool results come first, in their order.
type turnBuilder[B any] struct {
	side   turn
	blocks []B
	first  int // where the next tool result goes
	emit   func(turn, []B)
}

// start begins a turn of side, unless the current turn is of that side.
func (t *turnBuilder[B]) start(side turn) {
	if side != t.side {
		t.flush()
		t.side = side
	}
}

func (t *turnBuilder[B]) add(b B) { t.blocks = append(t.blocks, b) }

// addResult adds a tool result after the turn's earlier results.
func (t *turnBuilder[B]) addResult(b B) {
	t.blocks = slices.Insert(t.blocks, t.first, b)
	t.first++
}

// flush emits the current turn, if it holds a block.
func (t *turnBuilder[B]) flush() {
	if len(t.blocks) > 0 {
		t.emit(t.side, t.blocks)
	}
	t.blocks, t.first = nil, 0
}

// eachPart walks the conversation for api: system text goes to sys; each
// other message starts its side's turn and gives part its parts, with
// failed set when the message is a failed tool result.
func eachPart(messages []llms.MessageContent, api string, sys func(string), start func(turn),
	part func(i int, p llms.ContentPart, failed bool) error) error {
	for i, msg := range messages {
		side, err := sideOf(i, msg.Role, api)
		if err != nil {
			return err
		}
		if side == turnSystem {
			for _, t := range systemTexts(msg) {
				sys(t)
			}
			continue
		}
		start(side)
		failed := slices.ContainsFunc(msg.Parts, isToolError)
		for _, p := range msg.Parts {
			if err := part(i, p, failed); err != nil {
				return err
			}
		}
	}
	return nil
}
