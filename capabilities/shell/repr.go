package shell

import (
	"strconv"
	"strings"

	"github.com/agentspec/agentspec/internal/text"
)

// pyRepr quotes s as Python's repr() quotes a str (text.PyRepr), since the
// reference's messages embed commands, operators and IDs that way.
var pyRepr = text.PyRepr

// pyFloat formats f as Python's str(float) does for the values a timeout
// takes: the shortest representation that reads back, with ".0" added to a
// whole number (30 -> "30.0", 0.5 -> "0.5") and exponent form from 1e16 up
// or below 1e-4, as Python switches.
func pyFloat(f float64) string {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if abs != 0 && (abs >= 1e16 || abs < 1e-4) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Python writes at least two exponent digits, as Go does.
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
