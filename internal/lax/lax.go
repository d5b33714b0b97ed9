// Package lax reads a value the way pydantic's lax mode does, for the
// settings a spec ported from pydantic-ai may write so: a number written as
// a string ("3", " 3 ", "+3", "1_000", "3.0"), a boolean written as a word
// or a number ('yes', 'off', 1).
package lax

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// intRE is what lax mode reads as an integer once spaces and underscores
// are gone: digits, a sign, and a fraction of zeros.
var intRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?[0-9]+(?:\.0*)?$`)
})

// Integer returns the integer s holds in lax mode, as JSON writes it
// ("-3", "1000", "0"), and whether s holds one: digits with a sign,
// underscores among them, spaces around and a fraction of zeros.
func Integer(s string) (json.Number, bool) {
	text := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if !intRE().MatchString(text) {
		return "", false
	}
	text, _, _ = strings.Cut(strings.TrimPrefix(text, "+"), ".")
	sign, digits := "", text
	if rest, ok := strings.CutPrefix(text, "-"); ok {
		sign, digits = "-", rest
	}
	if digits = strings.TrimLeft(digits, "0"); digits == "" {
		sign, digits = "", "0"
	}
	return json.Number(sign + digits), true
}

// boolWords are the strings lax mode reads as a boolean, in lower case: a
// string is one of them when lowered, with no spaces around it.
var boolWords = map[string]bool{
	"0": false, "off": false, "f": false, "false": false, "n": false, "no": false,
	"1": true, "on": true, "t": true, "true": true, "y": true, "yes": true,
}

// Bool returns the boolean v holds in lax mode and whether it holds one:
// true or false, the number 0 or 1 (0.0 and 1.0 too), or a string that is
// one of 0, off, f, false, n, no, 1, on, t, true, y, yes in any case.
func Bool(v any) (value, ok bool) {
	var f float64
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		value, ok = boolWords[strings.ToLower(v)]
		return value, ok
	case json.Number:
		n, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return false, false
		}
		f = n
	case float64:
		f = v
	case int:
		f = float64(v)
	case int64:
		f = float64(v)
	default:
		return false, false
	}
	switch {
	case f == 0:
		return false, true
	case f == 1:
		return true, true
	}
	return false, false
}
