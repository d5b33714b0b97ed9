package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/internal/lax"
)

// Keys pydantic-ai's agent spec defines that mean nothing, or something
// else, in agentspec are accepted, each with a one-line warning; keys a team
// adds under an x- prefix (to hold YAML anchors) are dropped.

// dropExtensions removes the top-level x- keys: they are the file's own
// business, not part of what the spec means.
func dropExtensions(root map[string]any) {
	for k := range root {
		if strings.HasPrefix(k, "x-") {
			delete(root, k)
		}
	}
}

// nullableKeys are the top-level keys pydantic-ai reads null as absent for.
var nullableKeys = []string{"$schema", "model", "name", "description", "instructions", "deps_schema",
	"output_schema", "model_settings", "retries", "tool_timeout", "metadata"}

// dropNulls removes the top-level keys whose null pydantic-ai reads as the
// key's absence (`name:` with nothing after it).
func dropNulls(root map[string]any) {
	for _, k := range nullableKeys {
		if v, ok := root[k]; ok && v == nil {
			delete(root, k)
		}
	}
}

// laxFloatRE is what pydantic's lax mode reads as a finite number in a
// string, without its spaces and underscores.
var laxFloatRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$`)
})

// coerceLax converts the values pydantic-ai reads in pydantic's lax mode,
// where agentspec's schema wants a number: retries (and its tools and
// output) and tool_timeout take a string holding a number ("3", "2.5"
// for tool_timeout), and true and false as 1 and 0. A float without a
// fraction is an integer already (see floatNumber). Other values are
// left for the schema to refuse; messages show what the file wrote.
func coerceLax(d *document, root map[string]any) {
	convert := func(m map[string]any, key, ptr string, integer bool) {
		switch v := m[key].(type) {
		case bool:
			m[key] = json.Number("0")
			if v {
				m[key] = json.Number("1")
			}
			d.numbers[ptr] = fmt.Sprint(v)
		case string:
			n, ok := lax.Integer(v)
			if !integer {
				// pydantic reads 1_000 as 1000, and takes the spaces around.
				text := strings.ReplaceAll(strings.TrimSpace(v), "_", "")
				if !laxFloatRE().MatchString(text) {
					return
				}
				f, err := strconv.ParseFloat(text, 64)
				if err != nil {
					return // beyond a float64
				}
				n, ok = floatNumber(f)
			}
			if ok {
				m[key] = n
				d.numbers[ptr] = strconv.Quote(v)
			}
		}
	}
	convert(root, "retries", "/retries", true)
	if r, ok := root["retries"].(map[string]any); ok {
		convert(r, "tools", "/retries/tools", true)
		convert(r, "output", "/retries/output", true)
	}
	convert(root, "tool_timeout", "/tool_timeout", false)
}

// v1Providers are the providers pydantic-ai V1 named that V2 refuses, which
// agentspec serves as it served them: a spec written for V1 runs, and
// validate says what pydantic-ai calls them now.
var v1Providers = map[string]struct{ now, what string }{
	"google-gla":    {"google", "google (the Gemini API)"},
	"google-vertex": {"google-cloud", "google-cloud (Gemini on Vertex AI)"},
}

// retiredProviders are pydantic-ai V1's other provider names, which V2
// refuses and agentspec does too, each with the name V2 gives it: a near
// spelling of another provider would mislead (grok is xAI's, not Groq's).
var retiredProviders = map[string]string{
	"grok":                  "xai",
	"vertexai":              "google-cloud",
	"gateway/gemini":        "gateway/google-cloud",
	"gateway/google-vertex": "gateway/google-cloud",
}

// compatWarnings returns the warnings about keys the spec gives that have no
// effect in agentspec, and about what pydantic-ai would refuse.
func compatWarnings(d *document, root map[string]any) []*Error {
	var ws []*Error
	warn := func(ptr, msg string) {
		ws = append(ws, &Error{Pos: d.keyPos(ptr), Msg: "warning: " + prefixed(ptr, msg)})
	}
	if _, ok := root["instrument"]; ok {
		warn("/instrument", "has no effect in agentspec (it is pydantic-ai's Logfire switch); --events FILE records every event of a run")
	}
	if _, ok := root["end_strategy"]; ok {
		warn("/end_strategy", "has no effect in agentspec: an answer never comes with tool calls, so every tool call the model makes is run")
	}
	if model, ok := root["model"].(string); ok {
		provider, name, _ := strings.Cut(model, ":")
		if v1, ok := v1Providers[provider]; ok {
			ws = append(ws, &Error{Pos: d.pos("/model"), Msg: "warning: " + prefixed("/model", fmt.Sprintf(
				"%s is pydantic-ai V1's name for %s, which pydantic-ai now refuses as an unknown model; write %s:%s for a spec both load",
				provider, v1.what, v1.now, name))})
		}
	}
	if deps, ok := root["deps_schema"].(map[string]any); ok {
		props, _ := deps["properties"].(map[string]any)
		for _, key := range []string{"instructions", "description"} {
			for _, name := range placeholders(root[key]) {
				if _, ok := props[name]; !ok {
					warn("/"+key, fmt.Sprintf("uses {{%s}}, which deps_schema does not list among its properties", name))
				}
			}
		}
	}
	return ws
}

// placeholderRE matches the {{name}} placeholders the runtime fills, and
// the escaped ones (EscapedAt) it leaves as text.
var placeholderRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}`)
})

// EscapedAt tells how the {{ at text[open:] is escaped, as Handlebars
// (pydantic-ai's templates) escapes a mustache with backslashes. After one
// backslash (\{{name}}), literal is true: the braces are text, {{name}}.
// After two (\\{{name}}), literal is false: one backslash is text and the
// braces open the placeholder. Either way, drop is true: the backslash just
// before the braces, text[open-1], is not part of the text. Only the two
// characters before the braces count, as in Handlebars: \\\{{name}} is two
// backslashes and the placeholder.
func EscapedAt(text string, open int) (literal, drop bool) {
	if open < 1 || text[open-1] != '\\' {
		return false, false
	}
	return open < 2 || text[open-2] != '\\', true
}

// placeholders returns the names used in a string or a list of strings, each
// once.
func placeholders(v any) []string {
	var texts []string
	switch v := v.(type) {
	case string:
		texts = []string{v}
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				texts = append(texts, s)
			}
		}
	}
	return Placeholders(texts...)
}

// checkOutputSchema rejects the output schemas pydantic-ai rejects: the root
// must be an object schema (type: object), or a $ref, and no $defs entry may
// refer back to itself. The $ref must lead to an object schema too: the
// answer is one JSON object (pydantic-ai keeps another $ref as written, which
// no provider takes as the parameters of its output tool).
func checkOutputSchema(d *document, root map[string]any) {
	const ptr = "/output_schema"
	sch, ok := root["output_schema"].(map[string]any)
	if !ok || d.reported(ptr) {
		return
	}
	const expected = "expected an object schema (type: object, or a $ref to one under $defs): the answer is one JSON object; found "
	ref, hasRef := sch["$ref"].(string)
	t, _ := sch["type"].(string)
	if t != "object" && !hasRef {
		at := ptr
		found := "no type"
		if v, ok := sch["type"]; ok {
			at, found = ptr+"/type", "type "+d.describe(ptr+"/type", v, false)
			if _, isString := v.(string); !isString {
				b, _ := json.Marshal(v)
				found = "type " + string(b)
			}
		}
		d.add(at, d.pos(at), prefixed(ptr, expected+found))
		return
	}
	if t != "object" && !d.reported(ptr+"/$ref") {
		if found := refTargetType(sch, ref); found != "" {
			d.add(ptr+"/$ref", d.pos(ptr+"/$ref"), prefixed(ptr+"/$ref", expected+"a $ref to "+found))
			return
		}
	}
	defs, _ := sch["$defs"].(map[string]any)
	for _, name := range sortedKeys(defs) {
		if refersTo(defs, defs[name], name, map[string]bool{}) {
			at := ptr + "/$defs/" + name
			d.add(at, d.keyPos(at), prefixed(at,
				"refers to itself through $ref; an output schema cannot be recursive (pydantic-ai refuses recursive $defs too)"))
			return
		}
	}
}

// refTargetType follows ref, a $ref at the root of sch, through the local
// references it leads to, and says what the schema it ends at is when that is
// no object schema: `type "string"`, "a schema with no type". It returns ""
// for an object schema, and for a reference that leads nowhere or round in
// a circle, which the schema's compilation reports.
func refTargetType(sch map[string]any, ref string) string {
	seen := map[string]bool{}
	for {
		frag, ok := strings.CutPrefix(ref, "#")
		if !ok || seen[ref] {
			return ""
		}
		seen[ref] = true
		target, ok := valueAt(sch, frag).(map[string]any)
		if !ok {
			return ""
		}
		if next, ok := target["$ref"].(string); ok {
			if _, typed := target["type"]; !typed {
				ref = next
				continue
			}
		}
		switch v, ok := target["type"]; {
		case !ok:
			return "a schema with no type"
		case v == "object":
			return ""
		default:
			b, _ := json.Marshal(v)
			return "type " + string(b)
		}
	}
}

// refersTo reports whether v, followed through #/$defs references, reaches
// the definition target.
func refersTo(defs map[string]any, v any, target string, seen map[string]bool) bool {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
				if name == target {
					return true
				}
				if !seen[name] {
					seen[name] = true
					if refersTo(defs, defs[name], target, seen) {
						return true
					}
				}
			}
		}
		for _, k := range sortedKeys(v) {
			if refersTo(defs, v[k], target, seen) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if refersTo(defs, e, target, seen) {
				return true
			}
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
