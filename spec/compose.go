package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/schema"
)

// composedSchema caches the schema composed for one version of a registry.
type composedSchema struct {
	reg     *capabilities.Registry
	version int
	doc     []byte
}

// Schema returns the JSON Schema of agent specs (draft 2020-12) with every
// capability type of l's registry: what `agentspec schema` prints and editors
// use through `# yaml-language-server: $schema=...`. It accepts the capability
// entries the loader accepts. It is composed once per registry version.
func (l *Loader) Schema() ([]byte, error) {
	reg := l.registry()
	version := reg.Version()
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.composed; c.reg == reg && c.version == version && c.doc != nil {
		return slices.Clone(c.doc), nil
	}
	doc, err := compose(reg)
	if err != nil {
		return nil, err
	}
	l.composed = composedSchema{reg: reg, version: version, doc: doc}
	return slices.Clone(doc), nil
}

// compose fills the agent schema's capability entry with the types of reg.
//
// An entry is any of: the name of a type that needs no options; a mapping
// from a type's name to its options, to nothing, or to the value of its
// positional option; or the long form {name, arguments}. Each type's options
// schema is embedded once, under $defs, with an $id of its own so that
// references inside it keep working, and the forms refer to it.
func compose(reg *capabilities.Registry) ([]byte, error) {
	var doc map[string]any
	if err := decodeJSON(schema.Agent(), &doc); err != nil {
		return nil, fmt.Errorf("agent schema: %w", err)
	}
	allowNulls(doc)
	defs := doc["$defs"].(map[string]any)
	names := reg.Names()
	if len(names) == 0 {
		defs["capability"] = map[string]any{"description": "No capability types are registered.", "not": map[string]any{}}
		return marshalSchema(allowEnvStrings(bothKinds(doc)).(map[string]any))
	}

	var (
		bare    []any // types usable by name alone
		forms   []any
		longIfs []any
	)
	for _, name := range names {
		t, _ := reg.Lookup(name)
		id, optionsDef := embedType(reg, t)
		defs["capability."+name] = optionsDef
		bareOK := reg.ValidateOptions(name, map[string]any{}) == nil
		if bareOK {
			bare = append(bare, name)
		}
		options := map[string]any{"type": "object", "$ref": id}
		positional := positionalRef(t, optionsDef, id)

		short := []any{options}
		long := []any{options}
		if bareOK {
			short = append(short, map[string]any{"type": "null"})
			long = append(long, map[string]any{"type": "null"})
		}
		if positional != "" {
			short = append(short, map[string]any{"$ref": positional, "not": map[string]any{"type": []any{"object", "null"}}})
			long = append(long,
				map[string]any{"$ref": positional, "not": map[string]any{"type": []any{"object", "null", "array"}}},
				map[string]any{"type": "array", "minItems": 1, "maxItems": 1, "items": map[string]any{"$ref": positional}})
		}
		forms = append(forms, map[string]any{
			"title":                name,
			"description":          t.Description,
			"type":                 "object",
			"properties":           map[string]any{name: map[string]any{"description": t.Description, "anyOf": short}},
			"required":             []any{name},
			"additionalProperties": false,
		})
		then := map[string]any{"properties": map[string]any{"arguments": map[string]any{"anyOf": long}}}
		if !bareOK {
			then["required"] = []any{"arguments"}
		}
		longIfs = append(longIfs, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"name": map[string]any{"const": name}}},
			"then": then,
		})
	}
	if len(bare) > 0 {
		forms = append([]any{map[string]any{
			"description": "A capability type that needs no options.",
			"type":        "string",
			"enum":        bare,
		}}, forms...)
	}
	forms = append(forms, map[string]any{
		"title":       "long form",
		"description": "A capability as {name: Type, arguments: options}.",
		"type":        "object",
		"properties": map[string]any{
			"name":      map[string]any{"description": "The capability type.", "enum": anySlice(names)},
			"arguments": map[string]any{"description": "The options: a mapping, or the value of the type's positional option."},
		},
		"required":             []any{"name"},
		"additionalProperties": false,
		"allOf":                longIfs,
	})
	// The entry forms are added once the rest is widened: a type's name is
	// a key or the long form's name, which the long form's ifs compare with
	// each type's, so no reference stands for it.
	root := allowEnvStrings(bothKinds(doc)).(map[string]any)
	root["$defs"].(map[string]any)["capability"] = map[string]any{
		"description": "A capability: `- Name`, `- Name: {options}`, `- Name: value` or `{name: Name, arguments: ...}`.",
		"anyOf":       forms,
	}
	return marshalSchema(root)
}

// allowNulls widens the top-level keys pydantic-ai reads null for to take
// null, as the loader does (dropNulls), so that editors do not flag
// `name:` with nothing after it.
func allowNulls(doc map[string]any) {
	props, _ := doc["properties"].(map[string]any)
	for _, k := range nullableKeys {
		p, ok := props[k].(map[string]any)
		if !ok {
			continue
		}
		p = maps.Clone(p)
		switch t := p["type"].(type) {
		case string:
			p["type"] = []any{t, "null"}
		case nil:
			if alts, ok := p["anyOf"].([]any); ok {
				p["anyOf"] = append(slices.Clone(alts), map[string]any{"type": "null"})
			}
		}
		props[k] = p
	}
}

// bothKinds makes the composed agent schema cover pipeline files too, so
// that editors complete both: the agent schema moves under $defs/agent, the
// pipeline's beside it (a step's inline spec refers to the agent's), and
// the root picks one by whether the file has steps:, as the loaders do.
func bothKinds(doc map[string]any) map[string]any {
	defs := doc["$defs"].(map[string]any)
	root := map[string]any{"$defs": defs}
	agent := map[string]any{}
	for k, v := range doc {
		switch k {
		case "$schema", "$id":
			root[k] = v
		case "$defs":
		default:
			agent[k] = v
		}
	}
	file, step := schema.Pipeline()
	var pipeline, pipelineStep map[string]any
	if decodeJSON(file, &pipeline) != nil || decodeJSON(step, &pipelineStep) != nil {
		panic("spec: the embedded pipeline schema is not JSON") // a build that ships it broken
	}
	defs["agent"], defs["pipeline"], defs["pipeline.step"] = agent, pipeline, pipelineStep
	root["title"] = "agentspec agent spec or pipeline"
	root["description"] = "An agent spec (agent.yaml), or a pipeline: a file whose top level has steps:."
	root["if"] = map[string]any{"type": "object", "required": []any{"steps"}}
	root["then"] = map[string]any{"$ref": "#/$defs/pipeline"}
	root["else"] = map[string]any{"$ref": "#/$defs/agent"}
	return root
}

// embedType returns the schema of t's options to put under $defs and the URL
// that refers to it.
func embedType(reg *capabilities.Registry, t capabilities.Type) (string, map[string]any) {
	doc, _ := reg.SchemaDoc(t.Name)
	var def map[string]any
	switch d := doc.(type) {
	case nil:
		def = map[string]any{"type": "object", "maxProperties": 0}
	case map[string]any:
		def = maps.Clone(d) // the registry's copy is shared
	default: // a boolean schema
		def = map[string]any{"allOf": []any{d}}
	}
	if t.Description != "" && def["description"] == nil {
		def["description"] = t.Description
	}
	if props, ok := def["properties"].(map[string]any); ok && len(t.Nested) > 0 {
		// An option holding a capability entry takes any entry the
		// capabilities list takes.
		props = maps.Clone(props)
		for _, opt := range t.Nested {
			nested := map[string]any{"$ref": schema.ID + "#/$defs/capability"}
			if old, ok := props[opt].(map[string]any); ok && old["description"] != nil {
				nested["description"] = old["description"]
			}
			props[opt] = nested
		}
		def["properties"] = props
	}
	allowOptionNulls(def)
	id, ok := def["$id"].(string)
	if !ok {
		id = "capabilities/" + t.Name + ".json" // relative to the agent schema's $id
		def["$id"] = id
	}
	return id, def
}

// allowOptionNulls widens the options of def, a type's options schema, that
// are not required to take null too, as the loader leaves such an option
// out (dropRefusedNulls), so that editors do not flag `max_uses: null` or
// `id: ~`. A required option's null stays refused: it has no default.
func allowOptionNulls(def map[string]any) {
	props, ok := def["properties"].(map[string]any)
	if !ok {
		return
	}
	required, _ := def["required"].([]any)
	props = maps.Clone(props) // the registry's copy is shared
	for k, p := range props {
		if slices.Contains(required, any(k)) {
			continue
		}
		outer := map[string]any{}
		if m, ok := p.(map[string]any); ok {
			inner := maps.Clone(m)
			for _, a := range annotations {
				if v, ok := inner[a]; ok {
					outer[a] = v
					delete(inner, a)
				}
			}
			p = inner
		}
		outer["anyOf"] = []any{p, map[string]any{"type": "null"}}
		props[k] = outer
	}
	def["properties"] = props
}

// positionalRef returns the reference to the schema of t's positional option,
// or "" when t has no scalar form the loader could accept.
func positionalRef(t capabilities.Type, def map[string]any, id string) string {
	if t.Positional == "" {
		return ""
	}
	props, _ := def["properties"].(map[string]any)
	if _, ok := props[t.Positional]; !ok {
		return ""
	}
	// The value becomes {Positional: value}: that cannot satisfy a schema
	// requiring other options.
	required, _ := def["required"].([]any)
	for _, r := range required {
		if r != t.Positional {
			return ""
		}
	}
	return id + "#" + child("/properties", t.Positional)
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

func marshalSchema(doc map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
