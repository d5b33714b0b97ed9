// Package lax reads a number written as a string the way pydantic's lax
// mode does, for the settings a spec ported from pydantic-ai may write so:
// "3", " 3 ", "+3", "1_000", "3.0".
package lax

import (
	"encoding/json"
	"regexp"
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
