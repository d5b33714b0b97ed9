package spec

import (
	"fmt"
	"strings"
)

// Environment references in string values:
//
//	${VAR}           the variable's value; an error when it is not set
//	${VAR:-default}  the value, or default when the variable is unset or empty
//	$${              a literal "${"
//
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
	var (
		b    strings.Builder
		errs []envProblem
	)
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				errs = append(errs, envProblem{i, "${", `unterminated "${": add a closing "}", or write "$${" for a literal "${"`})
				b.WriteString(s[i:])
				i = len(s)
				continue
			}
			ref := s[i : i+end+1]
			value, err := resolveRef(ref[2:len(ref)-1], lookup)
			if err != "" {
				errs = append(errs, envProblem{i, ref, err})
				value = ref
			}
			b.WriteString(value)
			i += len(ref)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), errs
}

// resolveRef returns the value of the reference body "VAR" or "VAR:-default",
// or a message saying why it has none.
func resolveRef(body string, lookup func(string) (string, bool)) (value, errMsg string) {
	name, def, hasDef := strings.Cut(body, ":-")
	if !isEnvName(name) {
		return "", fmt.Sprintf("invalid environment reference %q: write ${NAME} or ${NAME:-default}, "+
			"NAME made of letters, digits and _ (or $${ for a literal ${)", "${"+body+"}")
	}
	v, ok := lookup(name)
	switch {
	case hasDef && v == "":
		return def, ""
	case !ok:
		return "", fmt.Sprintf("environment variable %s is not set (set it, or give a default: ${%s:-value})", name, name)
	}
	return v, ""
}

func isEnvName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}
