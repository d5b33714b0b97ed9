package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Environment references in string values:
//
//	${VAR}           the variable's value; an error when it is not set
//	${VAR:-default}  the value, or default when the variable is unset or empty
//	$${              a literal "${"
//
// A default is expanded in turn, and only when it is used, so that
// ${MODEL:-${DEFAULT_MODEL}} reads DEFAULT_MODEL when MODEL is unset: a
// reference ends at the brace that closes it, not at the first one.
// Keys are never expanded. Expansion happens before validation, so a
// reference that expands to a number where a number is expected is fine.

// envProblem is a reference expandEnv could not fill.
type envProblem struct {
	offset int    // byte offset of the reference in the string
	ref    string // the reference as written, e.g. "${API_KEY"
	msg    string
}

// expandEnv fills the references in s using lookup. References it cannot fill
// are left as written and reported.
func expandEnv(s string, lookup func(string) (string, bool)) (string, []envProblem) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	e := envExpander{s: s, lookup: lookup, closing: closingBraces(s)}
	e.out = make([]byte, 0, len(s))
	e.expand(0, len(s))
	return string(e.out), e.errs
}

// envExpander fills the references of s into out. The braces that close
// them are found in one pass (closing), and a default used is filled where
// it is written, into out too, so that references nested in defaults take
// time and memory in proportion to s, however deep they go.
type envExpander struct {
	s       string
	lookup  func(string) (string, bool)
	closing map[int]int // the index of the "}" ending the reference at each "${"
	out     []byte
	errs    []envProblem
}

// usedDefault is a reference whose default is being filled.
type usedDefault struct {
	ref      string // the reference, written in its place if its default has a problem
	at       int    // the index in s of the reference's start
	to       int    // where the text holding the reference ends
	out      int    // len(out) before the default
	problems int    // len(errs) before the default
}

// expand fills the references in s[from:to].
func (e *envExpander) expand(from, to int) {
	var defaults []usedDefault // the defaults being filled, innermost last
	for i := from; ; {
		if i >= to {
			n := len(defaults)
			if n == 0 {
				return
			}
			d := defaults[n-1]
			defaults = defaults[:n-1]
			if len(e.errs) > d.problems {
				e.out = append(e.out[:d.out], d.ref...)
			}
			i, to = d.at+len(d.ref), d.to
			continue
		}
		s := e.s[:to]
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			e.out = append(e.out, "${"...)
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, ok := e.closing[i]
			if !ok {
				e.errs = append(e.errs, envProblem{i, "${", `unterminated "${": add a closing "}", or write "$${" for a literal "${"`})
				e.out = append(e.out, s[i:]...)
				i = to
				continue
			}
			ref := s[i : end+1]
			body := ref[2 : len(ref)-1]
			value, def, err := resolveRef(body, e.lookup)
			switch {
			case err != "":
				e.errs = append(e.errs, envProblem{i, ref, err})
				e.out = append(e.out, ref...)
				i = end + 1
			case def != nil:
				// The default is used: its own references are filled now,
				// their problems placed where they are written.
				defaults = append(defaults, usedDefault{ref: ref, at: i, to: to, out: len(e.out), problems: len(e.errs)})
				i, to = end-len(*def), end
			default:
				e.out = append(e.out, value...)
				i = end + 1
			}
		default:
			e.out = append(e.out, s[i])
			i++
		}
	}
}

// closingBraces returns the index of the "}" that ends each reference in s
// by the index of its "${", as closingBrace finds it, for all of them in one
// pass; an unterminated one has none.
func closingBraces(s string) map[int]int {
	closing := map[int]int{}
	var open []int // the "${" not yet closed; -1 for the literal one of a $${
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			open = append(open, -1)
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			open = append(open, i)
			i += 2
		case s[i] == '}':
			if n := len(open); n > 0 {
				if open[n-1] >= 0 {
					closing[open[n-1]] = i
				}
				open = open[:n-1]
			}
			i++
		default:
			i++
		}
	}
	return closing
}

// closingBrace returns the index in s, which starts with "${", of the "}"
// that ends the reference, past the references nested in its default and
// the literal ${...} a $${ writes there, whose "}" is its own; -1 when none
// does.
func closingBrace(s string) int {
	depth := 0
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			depth++
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			depth++
			i += 2
		case s[i] == '}':
			if depth--; depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
	}
	return -1
}

// resolveRef returns the value of the reference body "VAR" or "VAR:-default",
// or the default, not yet expanded, when it is to be used instead, or a
// message saying why it has neither.
func resolveRef(body string, lookup func(string) (string, bool)) (value string, def *string, errMsg string) {
	name, d, hasDef := strings.Cut(body, ":-")
	if !isEnvName(name) {
		return "", nil, fmt.Sprintf("invalid environment reference %q: write ${NAME} or ${NAME:-default}, "+
			"NAME made of letters, digits and _ (or $${ for a literal ${)", "${"+body+"}")
	}
	v, ok := lookup(name)
	switch {
	case hasDef && v == "":
		return "", &d, ""
	case !ok:
		return "", nil, fmt.Sprintf("environment variable %s is not set (set it, or give a default: ${%s:-value})", name, name)
	}
	return v, nil, ""
}

func isEnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// wholeRef tells whether s is one reference and nothing else: "${ROUNDS}",
// "${ROUNDS:-20}", not "${A}${B}" or "${ROUNDS}0".
func wholeRef(s string) bool {
	return strings.HasPrefix(s, "${") && closingBrace(s) == len(s)-1
}

// quotedRef records that the string at ptr is the whole reference text,
// written quoted, or unquoted and kept a string (see document.refs).
func (d *document) quotedRef(ptr, text string) {
	if d.refs == nil {
		d.refs = map[string]string{}
	}
	d.refs[ptr] = text
}

// retypeRefs gives the strings the validation of inst (at the document's
// pointer base) refused for their type, and that are one whole reference
// written quoted, the type of their value, where it is a number or a boolean
// the schema wants there: JSON has no unquoted value, and YAML's {...} and
// [...] take a reference only quoted, yet a number or a boolean may come from
// the environment there too, as it does unquoted (yamlConverter.str). A
// string stays one wherever a string is wanted. It reports whether it changed
// anything, so that inst is to be validated again.
func retypeRefs(d *document, inst any, base string, err error) bool {
	var ve *jsonschema.ValidationError
	if len(d.refs) == 0 || !errors.As(err, &ve) {
		return false
	}
	changed := false
	for _, l := range leaves(ve) {
		k, ok := l.ErrorKind.(*kind.Type)
		if !ok {
			continue
		}
		if _, ok := d.refs[pointer(base, l.InstanceLocation)]; !ok {
			continue
		}
		s, ok := valueAt(inst, pointer("", l.InstanceLocation)).(string)
		if !ok {
			continue // retyped already, for another leaf
		}
		v := typedScalar(s)
		switch v := v.(type) {
		case bool:
			ok = slices.Contains(k.Want, "boolean")
		case json.Number:
			ok = slices.Contains(k.Want, "number") ||
				slices.Contains(k.Want, "integer") && !strings.ContainsAny(string(v), ".eE")
		default:
			ok = false
		}
		if ok && setAt(inst, l.InstanceLocation, v) {
			changed = true
		}
	}
	return changed
}

// setAt replaces the value at the path toks in v, a mapping or a list, and
// reports whether there was one.
func setAt(v any, toks []string, val any) bool {
	if len(toks) == 0 {
		return false
	}
	for _, t := range toks[:len(toks)-1] {
		v = valueAt(v, pointer("", []string{t}))
	}
	last := toks[len(toks)-1]
	switch c := v.(type) {
	case map[string]any:
		if _, ok := c[last]; ok {
			c[last] = val
			return true
		}
	case []any:
		if i, err := strconv.Atoi(last); err == nil && i >= 0 && i < len(c) {
			c[i] = val
			return true
		}
	}
	return false
}
