package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentspec/agentspec/spec"
)

// outputSchema is a spec's output_schema, compiled once per run.
type outputSchema struct {
	raw    json.RawMessage // as written, for the system prompt
	schema *jsonschema.Schema
}

// schemaURL names the schema in validation messages. It is not a host path:
// those messages go to the model.
const schemaURL = "agentspec://output_schema.json"

func compileOutputSchema(raw json.RawMessage) (*outputSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("output_schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("output_schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("output_schema is not a valid JSON Schema: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("output_schema: %w", err)
	}
	return &outputSchema{raw: compact.Bytes(), schema: s}, nil
}

// instructions tells the model how to write its final answer.
func (o *outputSchema) instructions() string {
	return "Your final answer must be a single JSON value that conforms to this JSON Schema:\n" +
		"```json\n" + string(o.raw) + "\n```\n" +
		"Reply with the JSON only, without any text around it."
}

// parse finds the JSON in the model's answer and validates it. The error is
// meant for the model: it says what to fix.
func (o *outputSchema) parse(answer string) (json.RawMessage, error) {
	raw, err := extractJSON(answer, o.valid)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the response is not valid JSON: %v", err)
	}
	if err := o.schema.Validate(v); err != nil {
		return nil, describeValidation(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("the response is not valid JSON: %v", err)
	}
	return compact.Bytes(), nil
}

// valid reports whether raw is JSON the schema accepts.
func (o *outputSchema) valid(raw []byte) bool {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	return err == nil && o.schema.Validate(v) == nil
}

var errNoJSON = errors.New("the response contains no JSON value; reply with JSON that conforms to the schema")

// extractJSON returns the JSON value in an answer: the whole answer, else the
// first ```json (or bare ```) fenced block, else the first {...} or [...] in
// the prose that parses and that prefer accepts, else the first that parses.
// prefer may be nil.
func extractJSON(answer string, prefer func([]byte) bool) ([]byte, error) {
	s := strings.TrimSpace(answer)
	if s == "" {
		return nil, errors.New("the response is empty; reply with JSON that conforms to the schema")
	}
	if json.Valid([]byte(s)) {
		return []byte(s), nil
	}
	if block, ok := fencedBlock(s); ok {
		if !json.Valid([]byte(block)) {
			var v any
			err := json.Unmarshal([]byte(block), &v)
			return nil, fmt.Errorf("the fenced block is not valid JSON: %v", err)
		}
		return []byte(block), nil
	}
	// Try each opening bracket in turn: prose before the JSON may contain
	// brackets of its own ("[see below]"), some of which parse ("[1]"), so
	// the first value the schema takes wins over the first that parses.
	const maxTries = 32
	var first json.RawMessage
	var broken error // why the first value begun as JSON does not parse
	for i, tries := 0, 0; i < len(s) && tries < maxTries; i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		tries++
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			if broken == nil && begunObject(s[i:]) {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					err = errors.New("unexpected end of JSON input") // json.Unmarshal's words, as for a fenced block
				}
				broken = err
			}
			continue
		}
		if prefer == nil || prefer(v) {
			return v, nil
		}
		if first == nil {
			first = v
		}
	}
	if first != nil {
		return first, nil
	}
	if broken != nil {
		// JSON cut short or mistyped: saying there is none would send
		// the model looking for the wrong mistake.
		return nil, fmt.Errorf("the response is not valid JSON: %v", broken)
	}
	return nil, errNoJSON
}

// begunObject reports whether s starts as a JSON object does, with a key
// or its end, not as braces in prose ("{do}").
func begunObject(s string) bool {
	rest := strings.TrimLeft(s[1:], " \t\r\n")
	return s[0] == '{' && (strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, "}"))
}

// fencedBlock returns the content of the first ```json block, or of the first
// ``` block when there is no json one.
func fencedBlock(s string) (string, bool) {
	first := ""
	found := false
	for rest := s; ; {
		start := strings.Index(rest, "```")
		if start < 0 {
			break
		}
		rest = rest[start+3:]
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			break
		}
		lang := strings.TrimSpace(rest[:nl])
		body := rest[nl+1:]
		end := strings.Index(body, "```")
		if end < 0 {
			break
		}
		content := strings.TrimSpace(body[:end])
		rest = body[end+3:]
		if strings.EqualFold(lang, "json") {
			return content, true
		}
		if !found && lang == "" {
			first, found = content, true
		}
	}
	return first, found
}

// describeValidation turns a schema validation error into one line per
// problem, without the schema's URL.
func describeValidation(err error) error {
	return fmt.Errorf("the response does not match the schema: %s", validationProblems(err))
}

// validationProblems lists the problems a validation error reports, joined
// with "; ", without the schema's URL.
func validationProblems(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			lines = append(lines, e.Error())
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(lines, "; ")
}

// CheckAnswer checks an answer that did not come from this process's own
// run (a queue worker's result, which anyone able to publish could have
// forged) as a fresh answer's JSON is checked: against the spec's
// output_schema. It returns the answer compacted; a spec without an
// output_schema takes any answer.
func CheckAnswer(s *spec.Spec, answer json.RawMessage) (json.RawMessage, error) {
	if s.OutputSchema == nil {
		return answer, nil
	}
	schema, err := compileOutputSchema(s.OutputSchema)
	if err != nil {
		return nil, err
	}
	return schema.parse(string(answer))
}
