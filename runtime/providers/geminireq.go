package providers

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/spec"
)

// Building generateContent requests from the conversation and the settings.

// geminiPart is a part of a Content, in the REST shape.
type geminiPart struct {
	Text             string               `json:"text,omitempty"`
	Thought          bool                 `json:"thought,omitempty"`
	ThoughtSignature string               `json:"thoughtSignature,omitempty"`
	FunctionCall     *geminiFunctionCall  `json:"functionCall,omitempty"`
	FunctionResponse *geminiFunctionReply `json:"functionResponse,omitempty"`
	InlineData       *geminiBlob          `json:"inlineData,omitempty"`
	FileData         *geminiFile          `json:"fileData,omitempty"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiFunctionReply struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type geminiBlob struct {
	MIMEType string `json:"mimeType"`
	Data     []byte `json:"data"` // base64 in JSON, as the API wants
}

type geminiFile struct {
	MIMEType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

// body builds the request body.
func (m *geminiModel) body(messages []llms.MessageContent, opts llms.CallOptions) ([]byte, error) {
	s := m.settings
	req := map[string]any{}
	system, contents, err := geminiContents(messages)
	if err != nil {
		return nil, err
	}
	req["contents"] = contents
	if len(system) > 0 {
		req["systemInstruction"] = geminiContent{Parts: system}
	}

	gen := geminiGeneration{Temperature: DefaultTemperature, TopP: s.TopP, TopK: s.TopK, Seed: s.Seed,
		PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty, StopSequences: s.StopSequences}
	if s.Temperature != nil {
		gen.Temperature = *s.Temperature
	}
	if opts.Temperature != 0 {
		gen.Temperature = opts.Temperature // the caller's wins
	}
	// Without a bound from the spec the server's own applies: thinking
	// models need room the default here would not give.
	if n := opts.MaxTokens; n > 0 {
		gen.MaxOutputTokens = n
	} else if s.MaxTokens > 0 {
		gen.MaxOutputTokens = s.MaxTokens
	}
	if tc := geminiThinking(m.provider, m.model, s); tc != nil {
		gen.ThinkingConfig = tc
	}
	if v, ok := s.Provider["google_logprobs"].(bool); ok {
		gen.ResponseLogprobs = &v
	}
	if v, ok := s.Provider["google_top_logprobs"]; ok {
		gen.Logprobs, _ = json.Marshal(plain(v))
	}
	req["generationConfig"] = gen
	if v, ok := s.Provider["google_safety_settings"]; ok {
		req["safetySettings"] = camelKeys(plain(v))
	}
	if v, ok := s.Provider["google_labels"]; ok {
		req["labels"] = plain(v)
	}
	if v, ok := s.Provider["google_cached_content"].(string); ok && v != "" {
		req["cachedContent"] = v
	}

	var decls []geminiFunction
	for _, t := range opts.Tools {
		if t.Function != nil {
			decls = append(decls, geminiFunction{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
		}
	}
	if len(decls) > 0 {
		req["tools"] = []geminiTool{{FunctionDeclarations: decls}}
		if fc := geminiToolChoice(s.ToolChoice, opts.ToolChoice); fc != nil {
			req["toolConfig"] = geminiToolConfig{FunctionCallingConfig: fc}
		}
	}
	for k, v := range s.ExtraBody {
		req[k] = plain(v)
	}
	return json.Marshal(req)
}

// geminiToolChoice is the call's tool choice (the loop's "none" after the
// round limit) or the spec's, as a functionCallingConfig.
func geminiToolChoice(tc *spec.ToolChoice, call any) *geminiCalling {
	mode, names, _ := toolChoiceOf(tc, call)
	switch {
	case mode == "none":
		return &geminiCalling{Mode: "NONE"}
	case len(names) > 0:
		return &geminiCalling{Mode: "ANY", AllowedFunctionNames: names}
	case mode == "required":
		return &geminiCalling{Mode: "ANY"}
	case mode == "auto":
		return &geminiCalling{Mode: "AUTO"}
	}
	return nil
}

// geminiGeneration is a generationConfig.
type geminiGeneration struct {
	Temperature      float64         `json:"temperature"`
	MaxOutputTokens  int             `json:"maxOutputTokens,omitempty"`
	TopP             *float64        `json:"topP,omitempty"`
	TopK             *int            `json:"topK,omitempty"`
	Seed             *int            `json:"seed,omitempty"`
	PresencePenalty  *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequencyPenalty,omitempty"`
	StopSequences    []string        `json:"stopSequences,omitempty"`
	ThinkingConfig   any             `json:"thinkingConfig,omitempty"` // geminiThinking's, or the spec's google_thinking_config
	ResponseLogprobs *bool           `json:"responseLogprobs,omitempty"`
	Logprobs         json.RawMessage `json:"logprobs,omitempty"` // google_top_logprobs as written
}

// geminiTool declares functions.
type geminiTool struct {
	FunctionDeclarations []geminiFunction `json:"functionDeclarations"`
}

type geminiFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parametersJsonSchema,omitempty"` // the tool's own JSON Schema
}

type geminiToolConfig struct {
	FunctionCallingConfig *geminiCalling `json:"functionCallingConfig"`
}

// geminiCalling is a functionCallingConfig.
type geminiCalling struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

// geminiVersion reads the major version of a Gemini model id.
var geminiVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`gemini-(\d+)`) })

// geminiBudgets are the thinking budgets of the efforts on Gemini 2.5.
var geminiBudgets = map[string]int{"minimal": 128, "low": 2048, "medium": 8192, "high": 24576, "xhigh": 24576}

// geminiThinking is the thinkingConfig: google_thinking_config as given,
// or the unified setting mapped as pydantic-ai maps it (levels on Gemini 3
// and later, budgets before).
func geminiThinking(p provider, model string, s spec.ModelSettings) map[string]any {
	if v, ok := s.Provider["google_thinking_config"].(map[string]any); ok {
		return camelKeys(plain(v)).(map[string]any)
	}
	t := s.Thinking
	if t == nil {
		return nil
	}
	major := 0
	if m := geminiVersion().FindStringSubmatch(model); m != nil {
		major, _ = strconv.Atoi(m[1])
	}
	tc := map[string]any{}
	if major >= 3 {
		switch {
		case !t.Enabled || t.Effort == "minimal" || t.Effort == "low":
			tc["thinkingLevel"] = "LOW"
		case t.Effort == "medium":
			tc["thinkingLevel"] = "MEDIUM"
		case t.Effort != "":
			tc["thinkingLevel"] = "HIGH"
		}
	} else {
		switch {
		case !t.Enabled && alwaysReasons(p, model):
			return nil // a budget of 0 is refused
		case !t.Enabled:
			tc["thinkingBudget"] = 0
		case t.Effort != "":
			tc["thinkingBudget"] = geminiBudgets[t.Effort]
		}
	}
	if t.Enabled {
		tc["includeThoughts"] = true
	}
	return tc
}

// camelKeys turns the snake_case keys of settings written as pydantic-ai
// documents them (include_thoughts) into the REST API's camelCase.
func camelKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			parts := strings.Split(k, "_")
			for i := 1; i < len(parts); i++ {
				if parts[i] != "" {
					parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
				}
			}
			out[strings.Join(parts, "")] = camelKeys(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = camelKeys(e)
		}
		return out
	}
	return v
}

// geminiContents converts the conversation. Consecutive messages of one
// role become one content (Gemini wants as many function responses in the
// turn after the calls as there were calls); a response names its function,
// found by the call's id when the result does not say it.
func geminiContents(messages []llms.MessageContent) ([]geminiPart, []geminiContent, error) {
	var (
		system   []geminiPart
		contents []geminiContent
		names    = map[string]string{} // call id -> function name
	)
	add := func(role string, parts ...geminiPart) {
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
			return
		}
		contents = append(contents, geminiContent{Role: role, Parts: parts})
	}
	for i, msg := range messages {
		role := "user"
		switch msg.Role {
		case llms.ChatMessageTypeSystem:
			for _, part := range msg.Parts {
				if t, ok := part.(llms.TextContent); ok && t.Text != "" {
					system = append(system, geminiPart{Text: t.Text})
				}
			}
			continue
		case llms.ChatMessageTypeAI:
			role = "model"
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric, llms.ChatMessageTypeTool:
		default:
			return nil, nil, fmt.Errorf("message %d: role %q has no place in generateContent", i, msg.Role)
		}
		failed := slices.ContainsFunc(msg.Parts, isToolError)
		var parts []geminiPart
		for _, part := range msg.Parts {
			switch p := part.(type) {
			case llms.TextContent:
				if p.Text != "" {
					parts = append(parts, geminiPart{Text: p.Text})
				}
			case llms.ToolCall:
				if p.FunctionCall == nil {
					continue
				}
				args := json.RawMessage(p.FunctionCall.Arguments)
				var obj map[string]any
				if json.Unmarshal(args, &obj) != nil || obj == nil {
					args = json.RawMessage(`{}`)
				}
				names[p.ID] = p.FunctionCall.Name
				parts = append(parts, geminiPart{FunctionCall: &geminiFunctionCall{Name: p.FunctionCall.Name, Args: args}})
			case llms.ToolCallResponse:
				name := p.Name
				if name == "" {
					name = names[p.ToolCallID]
				}
				key := "output"
				if failed {
					key = "error"
				}
				parts = append(parts, geminiPart{FunctionResponse: &geminiFunctionReply{Name: name, Response: map[string]any{key: p.Content}}})
			case llms.ImageURLContent:
				parts = append(parts, geminiPart{FileData: &geminiFile{FileURI: p.URL, MIMEType: mimeOfURL(p.URL)}})
			case llms.BinaryContent:
				switch {
				case isToolError(p):
				case isBlock(p):
					var b geminiBlock
					if !decodeBlock(p, &b) {
						continue
					}
					switch b.Type {
					case blockGeminiPart:
						var gp geminiPart
						if json.Unmarshal(b.Part, &gp) == nil {
							parts = append(parts, gp)
						}
					case blockGeminiSignature:
						if n := len(parts); n > 0 {
							parts[n-1].ThoughtSignature = b.Signature
						}
					}
				default:
					parts = append(parts, geminiPart{InlineData: &geminiBlob{MIMEType: p.MIMEType, Data: p.Data}})
				}
			default:
				return nil, nil, fmt.Errorf("message %d: generateContent takes no %T part", i, part)
			}
		}
		if len(parts) > 0 {
			add(role, parts...)
		}
	}
	return system, contents, nil
}

// mimeOfURL guesses an image URL's type from its extension; the API needs one.
func mimeOfURL(u string) string {
	u = strings.ToLower(u)
	for ext, mime := range map[string]string{".png": "image/png", ".gif": "image/gif", ".webp": "image/webp"} {
		if strings.HasSuffix(u, ext) {
			return mime
		}
	}
	return "image/jpeg"
}

// geminiKeys are the google_ settings the Vertex AI model sends.
var geminiKeys = []string{"google_thinking_config", "google_safety_settings", "google_labels", "google_cached_content",
	"google_logprobs", "google_top_logprobs"}

// checkGemini refuses what generateContent cannot carry.
func checkGemini(p provider, model string, s spec.ModelSettings) []error {
	var errs []error
	add := func(key, reason string) { errs = append(errs, unsupported(p, key, reason)) }
	refuseFields(s, add, "generateContent has no such field", "logit_bias", "parallel_tool_calls")
	if s.ServiceTier == "flex" || s.ServiceTier == "priority" {
		add("service_tier", "agentspec does not send Vertex AI's request-type headers yet")
	}
	if s.Thinking != nil && s.Thinking.Budget > 0 {
		add("thinking", "a token budget is given through google_thinking_config.thinking_budget")
	}
	for _, k := range []string{"google_thinking_config"} {
		if v, ok := s.Provider[k]; ok {
			if _, ok := v.(map[string]any); !ok {
				add(k, "expected a mapping (include_thoughts, thinking_budget, thinking_level)")
			}
		}
	}
	if v, ok := s.Provider["google_safety_settings"]; ok {
		if _, ok := v.([]any); !ok {
			add("google_safety_settings", "expected a list of {category, threshold}")
		}
	}
	if v, ok := s.Provider["google_labels"]; ok {
		if _, ok := v.(map[string]any); !ok {
			add("google_labels", "expected a mapping of label names to values")
		}
	}
	return errs
}
