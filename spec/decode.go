package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
)

// The types below mirror the agent schema key for key (a test keeps them in
// step). A validated document is decoded into them through encoding/json, then
// copied into a Spec with defaults applied.

type rawSpec struct {
	Schema        string          `json:"$schema"`
	Version       int             `json:"version"`
	Model         string          `json:"model"`
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	Instructions  stringList      `json:"instructions"`
	ModelSettings rawSettings     `json:"model_settings"`
	Retries       *rawRetries     `json:"retries"`
	Instrument    json.RawMessage `json:"instrument"`
	ToolTimeout   float64         `json:"tool_timeout"`
	Metadata      map[string]any  `json:"metadata"`
	OutputSchema  json.RawMessage `json:"output_schema"`
	EndStrategy   string          `json:"end_strategy"`
	DepsSchema    json.RawMessage `json:"deps_schema"`
	Capabilities  json.RawMessage `json:"capabilities"` // read entry by entry, see readCapabilities
	MaxToolRounds *int            `json:"max_tool_rounds"`
	Workspace     rawWorkspace    `json:"workspace"`
	Cache         json.RawMessage `json:"cache"`
}

type rawSettings struct {
	MaxTokens         int               `json:"max_tokens"`
	Temperature       *float64          `json:"temperature"`
	TopP              *float64          `json:"top_p"`
	Timeout           float64           `json:"timeout"`
	TimeoutSeconds    float64           `json:"timeout_seconds"`
	Seed              *int              `json:"seed"`
	PresencePenalty   *float64          `json:"presence_penalty"`
	FrequencyPenalty  *float64          `json:"frequency_penalty"`
	LogitBias         map[string]int    `json:"logit_bias"`
	StopSequences     []string          `json:"stop_sequences"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
	ExtraHeaders      map[string]string `json:"extra_headers"`
	ExtraBody         map[string]any    `json:"extra_body"`
	BaseURL           string            `json:"base_url"`
	TopK              *int              `json:"top_k"`
	Thinking          any               `json:"thinking"`
	ToolChoice        any               `json:"tool_choice"`
	ServiceTier       string            `json:"service_tier"`
}

// rawRetries is an integer (both budgets) or a mapping {tools, output}.
type rawRetries struct {
	Tools  *int `json:"tools"`
	Output *int `json:"output"`
}

func (r *rawRetries) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		r.Tools, r.Output = &n, &n
		return nil
	}
	type plain rawRetries
	return json.Unmarshal(b, (*plain)(r))
}

type rawWorkspace struct {
	InputGlobs          []string   `json:"input_globs"`
	ExpectedOutputFiles []string   `json:"expected_output_files"`
	Checks              []rawCheck `json:"checks"`
}

type rawCheck struct {
	File       string          `json:"file"`
	MinChars   *int            `json:"min_chars"`
	MaxChars   *int            `json:"max_chars"`
	Contains   string          `json:"contains"`
	Matches    string          `json:"matches"`
	JSONSchema json.RawMessage `json:"json_schema"`
}

type rawCache struct {
	Dir string `json:"dir"`
}

// stringList is a string or a list of strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*l = []string{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// decode turns a validated document into a Spec.
func decode(d *document, root map[string]any) (*Spec, error) {
	var raw rawSpec
	var err error
	if err = decodeValue(root, &raw); err != nil { // checkIntegers has caught what the schema lets through
		return nil, fmt.Errorf("%s: decoding spec: %w", d.file, err)
	}
	s := &Spec{
		File:          d.file,
		Version:       raw.Version,
		Model:         raw.Model,
		Name:          raw.Name,
		Description:   raw.Description,
		Instructions:  raw.Instructions,
		Retries:       DefaultRetries,
		ToolTimeout:   capabilities.Seconds(raw.ToolTimeout),
		Metadata:      raw.Metadata,
		OutputSchema:  d.orderedJSON("/output_schema", root["output_schema"], raw.OutputSchema),
		EndStrategy:   raw.EndStrategy,
		DepsSchema:    raw.DepsSchema,
		MaxToolRounds: DefaultMaxToolRounds,
		Workspace: Workspace{
			InputGlobs:          raw.Workspace.InputGlobs,
			ExpectedOutputFiles: raw.Workspace.ExpectedOutputFiles,
		},
		Document:  root,
		positions: d.values,
		keys:      d.keys,
		src:       d.src,
		nested:    d.nested,
	}
	if s.Version == 0 {
		s.Version = 1
	}
	if raw.Retries != nil {
		if raw.Retries.Tools != nil {
			s.Retries = *raw.Retries.Tools
		}
		if raw.Retries.Output != nil {
			s.OutputRetries = raw.Retries.Output
		}
	}
	if raw.MaxToolRounds != nil {
		s.MaxToolRounds = *raw.MaxToolRounds
	}
	ms := raw.ModelSettings
	s.ModelSettings = ModelSettings{
		Temperature:       ms.Temperature,
		MaxTokens:         ms.MaxTokens,
		TopP:              ms.TopP,
		Seed:              ms.Seed,
		PresencePenalty:   ms.PresencePenalty,
		FrequencyPenalty:  ms.FrequencyPenalty,
		StopSequences:     ms.StopSequences,
		ParallelToolCalls: ms.ParallelToolCalls,
		Timeout:           capabilities.Seconds(max(ms.Timeout, ms.TimeoutSeconds)), // the schema allows one of them
		BaseURL:           ms.BaseURL,
		ExtraHeaders:      ms.ExtraHeaders,
		LogitBias:         ms.LogitBias,
		ExtraBody:         ms.ExtraBody,
		TopK:              ms.TopK,
		ToolChoice:        toolChoiceValue(ms.ToolChoice),
		ServiceTier:       ms.ServiceTier,
	}
	if s.ModelSettings.Thinking, err = thinkingValue(ms.Thinking); err != nil {
		return nil, fmt.Errorf("%s: decoding model_settings: %w", d.file, err)
	}
	if raw, ok := root["model_settings"].(map[string]any); ok {
		for k, v := range raw {
			if IsProviderSetting(k) {
				if s.ModelSettings.Provider == nil {
					s.ModelSettings.Provider = map[string]any{}
				}
				s.ModelSettings.Provider[k] = v
			}
		}
	}
	for i, c := range raw.Workspace.Checks {
		s.Workspace.Checks = append(s.Workspace.Checks, Check{
			File:       c.File,
			MinChars:   c.MinChars,
			MaxChars:   c.MaxChars,
			Contains:   c.Contains,
			Matches:    c.Matches,
			JSONSchema: c.JSONSchema,
			Pos:        d.pos(index("/workspace/checks", i)),
		})
	}
	switch string(raw.Cache) {
	case "", "false":
	case "true":
		s.Cache = &Cache{}
	default:
		var c rawCache
		if err := json.Unmarshal(raw.Cache, &c); err != nil {
			return nil, fmt.Errorf("%s: decoding cache: %w", d.file, err)
		}
		s.Cache = &Cache{Dir: c.Dir}
	}
	return s, nil
}

// checkIntegers reports the integers, by the schema sch, that are too large
// for the int they decode into: a JSON Schema integer has no bounds.
func checkIntegers(d *document, sch, v any, ptr string) {
	m, _ := sch.(map[string]any)
	if alts, ok := m["anyOf"].([]any); ok {
		for _, alt := range alts { // the alternative of the value's kind
			am, _ := alt.(map[string]any)
			if _, isMap := v.(map[string]any); isMap == slices.Contains(typeNames(am["type"]), "object") {
				m = am
				break
			}
		}
	}
	switch v := v.(type) {
	case json.Number:
		if !slices.Contains(typeNames(m["type"]), "integer") || d.reported(ptr) {
			return
		}
		if _, err := strconv.Atoi(v.String()); err == nil {
			return
		}
		bound := fmt.Sprint("at most ", math.MaxInt)
		if strings.HasPrefix(v.String(), "-") {
			bound = fmt.Sprint("at least ", math.MinInt)
		}
		d.add(ptr, d.pos(ptr), prefixed(ptr, "expected an integer of "+bound+", found "+d.describe(ptr, v, false)))
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		for k, e := range v {
			s, ok := props[k]
			if !ok {
				s = m["additionalProperties"]
			}
			checkIntegers(d, s, e, child(ptr, k))
		}
	case []any:
		for i, e := range v {
			checkIntegers(d, m["items"], e, index(ptr, i))
		}
	}
}

// orderedJSON is the value v at ptr as compact JSON, the members of each
// mapping in the order the file writes their keys, where encoding/json
// sorts them: an output schema is shown to the model, and its properties'
// order is the order the model is asked to write them in. unordered is v
// as encoding/json writes it: nil for nil, and what is given back should
// the document not say where every key is.
func (d *document) orderedJSON(ptr string, v any, unordered json.RawMessage) json.RawMessage {
	if v == nil {
		return unordered
	}
	var b bytes.Buffer
	if !d.writeOrdered(&b, ptr, v) {
		return unordered
	}
	return b.Bytes()
}

func (d *document) writeOrdered(b *bytes.Buffer, ptr string, v any) bool {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			if _, ok := d.keys[child(ptr, k)]; !ok {
				return false
			}
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y string) int {
			px, py := d.keys[child(ptr, x)], d.keys[child(ptr, y)]
			if px.Line != py.Line {
				return px.Line - py.Line
			}
			if px.Col != py.Col {
				return px.Col - py.Col
			}
			return strings.Compare(x, y)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			if !d.writeOrdered(b, child(ptr, k), v[k]) {
				return false
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if !d.writeOrdered(b, index(ptr, i), e) {
				return false
			}
		}
		b.WriteByte(']')
	default:
		vb, err := json.Marshal(v)
		if err != nil {
			return false
		}
		b.Write(vb)
	}
	return true
}

// decodeValue decodes a JSON value into v, keeping numbers in maps as
// json.Number.
func decodeValue(value any, v any) error {
	b, err := json.Marshal(value)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
