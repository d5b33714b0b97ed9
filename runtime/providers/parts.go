package providers

import (
	"encoding/json"

	"github.com/tmc/langchaingo/llms"
)

// What langchaingo's message types cannot say is carried in them by
// convention, so that the loop can keep one []llms.MessageContent history:
//
//   - A content block the loop does not interpret (an Anthropic thinking,
//     redacted_thinking or server tool block, an OpenAI-compatible
//     reasoning_content) is an llms.BinaryContent of type BlockMIME whose
//     Data is the block as JSON. The models of this package return such parts
//     in the turn of a response (InfoTurn) and send them back unchanged, in
//     their place, when the turn is replayed.
//   - A tool result that reports a failure carries a second part, ToolError,
//     after its llms.ToolCallResponse; Anthropic then gets is_error: true.
//
// The ContentChoice of a response also carries, in its GenerationInfo, the
// keys below.

// BlockMIME is the MIME type of a part holding a provider's content block.
const BlockMIME = "application/vnd.agentspec.block+json"

// toolErrorMIME is the MIME type of the ToolError marker.
const toolErrorMIME = "application/vnd.agentspec.tool-error"

// ToolError marks the tool result message it ends as a failure.
var ToolError = llms.BinaryContent{MIMEType: toolErrorMIME}

// Keys of a ContentChoice's GenerationInfo set by this package's models.
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

// Stop reasons the loop must not take as a finished answer.
const (
	StopRefusal   = "refusal"    // the model refused
	StopMaxTokens = "max_tokens" // Anthropic: cut at max_tokens
	StopLength    = "length"     // OpenAI-compatible: cut at max_tokens
	// StopPauseTurn is Anthropic's pause of a long server tool turn: the turn
	// is sent back as it is for the model to continue.
	StopPauseTurn = "pause_turn"
)

// IsBlock reports whether p is a block part, and returns its JSON.
func IsBlock(p llms.ContentPart) (json.RawMessage, bool) {
	b, ok := p.(llms.BinaryContent)
	if !ok || b.MIMEType != BlockMIME {
		return nil, false
	}
	return b.Data, true
}

func blockPart(raw []byte) llms.BinaryContent {
	return llms.BinaryContent{MIMEType: BlockMIME, Data: raw}
}

func isToolError(p llms.ContentPart) bool {
	b, ok := p.(llms.BinaryContent)
	return ok && b.MIMEType == toolErrorMIME
}
