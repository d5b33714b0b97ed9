package spec

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Some values are written in languages of their own: output_schema and a
// check's json_schema are JSON Schemas, a check's matches is a regular
// expression. They are compiled at load time so that a mistake in one is
// reported with its position now, not when a run reaches it.

// checkEmbedded compiles the schemas and regular expressions in a spec whose
// structure is otherwise valid.
func checkEmbedded(d *document, root map[string]any) {
	if s, ok := root["output_schema"].(map[string]any); ok && !d.reported("/output_schema") {
		checkSchema(d, "/output_schema", s)
	}
	ws, _ := root["workspace"].(map[string]any)
	checks, _ := ws["checks"].([]any)
	for i, c := range checks {
		check, _ := c.(map[string]any)
		ptr := index("/workspace/checks", i)
		if re, ok := check["matches"].(string); ok && !d.reported(ptr+"/matches") {
			if _, err := regexp.Compile(re); err != nil {
				p := ptr + "/matches"
				d.add(p, d.pos(p), prefixed(p, regexpMsg(re, err)))
			}
		}
		if s, ok := check["json_schema"].(map[string]any); ok && !d.reported(ptr+"/json_schema") {
			checkSchema(d, ptr+"/json_schema", s)
		}
	}
}

// regexpMsg describes why re does not compile, without repeating it.
func regexpMsg(re string, err error) string {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return fmt.Sprintf("invalid regular expression %s: %v", quoteShort(re), err)
	}
	msg := fmt.Sprintf("invalid regular expression %s: %s", quoteShort(re), se.Code)
	if se.Expr != re {
		msg += " in " + quoteShort(se.Expr)
	}
	if se.Code == syntax.ErrInvalidPerlOp || hasPerlOnly(re) {
		msg += " (Go's RE2 syntax has no lookarounds or backreferences)"
	}
	return msg
}

// perlOnly matches constructs of Perl-style regular expressions that RE2
// lacks: lookarounds and backreferences.
var perlOnly = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\(\?<?[=!]|\\[1-9]`) })

func hasPerlOnly(re string) bool { return perlOnly().MatchString(re) }

// userSchemaURL is the URL a spec's schema is compiled under; it appears in
// no message.
const userSchemaURL = "agentspec://spec/schema.json"

// refusingLoader refuses to load referenced schemas: a spec's schemas must be
// self-contained, and loading a spec must not read files or the network.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, errors.New("external references are not supported")
}

// checkSchema compiles the JSON Schema doc found at ptr and reports what is
// wrong with it, at the position of the faulty part.
func checkSchema(d *document, ptr string, doc map[string]any) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(userSchemaURL, doc); err != nil {
		d.add(ptr, d.pos(ptr), prefixed(ptr, "not a valid JSON Schema: "+err.Error()))
		return
	}
	_, err := c.Compile(userSchemaURL)
	if err == nil {
		return
	}
	var (
		invalid  *jsonschema.SchemaValidationError
		badRegex *jsonschema.InvalidRegexError
		load     *jsonschema.LoadURLError
		anchor   *jsonschema.AnchorNotFoundError
		missing  *jsonschema.JSONPointerNotFoundError
	)
	switch {
	case errors.As(err, &invalid):
		// The schema broke its metaschema: report like any other validation,
		// with the schema as the instance.
		at := ptr + fragment(invalid.URL)
		newReporter(d, nil, valueAt(doc, fragment(invalid.URL)), at, "key").report(invalid.Err)
	case errors.As(err, &badRegex):
		at := ptr + fragment(badRegex.URL)
		d.add(at, d.pos(at), prefixed(at, regexpMsg(badRegex.Regex, badRegex.Err)))
	case errors.As(err, &load):
		at := findRef(doc, ptr, func(ref string) bool {
			target, _, _ := strings.Cut(ref, "#")
			return target != "" && strings.HasSuffix(load.URL, target)
		})
		d.add(at, d.pos(at), prefixed(at, fmt.Sprintf("cannot resolve %s: a schema in a spec must be self-contained "+
			"(agentspec does not fetch schemas from files or the network); put definitions under $defs", refIn(doc, at, ptr, load.URL))))
	case errors.As(err, &anchor), errors.As(err, &missing):
		url := ""
		if anchor != nil {
			url = anchor.Reference
		} else {
			url = missing.URL
		}
		_, frag, _ := strings.Cut(url, "#")
		at := findRef(doc, ptr, func(ref string) bool { return strings.HasSuffix(ref, "#"+frag) })
		d.add(at, d.pos(at), prefixed(at, fmt.Sprintf("$ref %q points to nothing in this schema", "#"+frag)))
	default:
		msg := strings.ReplaceAll(err.Error(), userSchemaURL, "")
		d.add(ptr, d.pos(ptr), prefixed(ptr, "not a valid JSON Schema: "+msg))
	}
}

// fragment returns the JSON pointer in a schema location's fragment.
func fragment(url string) string {
	_, frag, _ := strings.Cut(url, "#")
	return frag
}

// findRef returns the pointer of the first "$ref" value inside v (found at
// ptr) that match accepts, or ptr itself.
func findRef(v any, ptr string, match func(string) bool) string {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok && match(ref) {
			return child(ptr, "$ref")
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if p := findRef(v[k], child(ptr, k), match); p != child(ptr, k) {
				return p
			}
		}
	case []any:
		for i, c := range v {
			if p := findRef(c, index(ptr, i), match); p != index(ptr, i) {
				return p
			}
		}
	}
	return ptr
}

// refIn names the reference at `at` for a message: `$ref "other.json"`, or
// the URL when no $ref was found.
func refIn(doc any, at, root, url string) string {
	if ref, ok := valueAt(doc, strings.TrimPrefix(at, root)).(string); ok {
		return fmt.Sprintf("$ref %q", ref)
	}
	return fmt.Sprintf("%q", url)
}
