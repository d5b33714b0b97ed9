package filesystem

import "github.com/agentspec/agentspec/capabilities"

// re2Hint names the first construct of pattern that Go's RE2 syntax does not
// have but Perl, Python or PCRE do, and says what to write instead; it
// returns "" when pattern holds none. Patterns come from models that learnt
// regexes from Python and PCRE, so a bare "invalid escape sequence: `\1`"
// would leave them guessing. The search tools add the hint after RE2's own
// error, so it is only asked about patterns that failed to compile.
//
// The scan skips escaped characters and character classes, where these
// sequences are literal text.
func re2Hint(pattern string) string {
	inClass := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		rest := pattern[i:]
		switch {
		case c == '\\' && i+1 < len(pattern):
			if !inClass {
				if h := escapeHint(pattern[i+1]); h != "" {
					return h
				}
			}
			i++ // the escaped character is literal
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ']' first in the class, after an optional '^', is literal.
			if j := i + 1; j < len(pattern) && pattern[j] == '^' {
				i = j
			}
			if j := i + 1; j < len(pattern) && pattern[j] == ']' {
				i = j
			}
		case c == '(':
			for _, g := range groupHints {
				if len(rest) >= len(g.open) && rest[:len(g.open)] == g.open {
					return g.hint
				}
			}
		case (c == '*' || c == '+' || c == '?' || c == '}') && i+1 < len(pattern) && pattern[i+1] == '+':
			return "Possessive quantifiers such as a++ are not supported (RE2 syntax); use the plain quantifier " +
				"(a+): RE2 never backtracks, so the result is the same."
		}
	}
	return ""
}

// groupHints are the group openings RE2 lacks, longest first where one is
// the start of another.
var groupHints = []struct{ open, hint string }{
	{"(?<=", "Look-behind (?<=...) is not supported (RE2 syntax); match the preceding text as part of the pattern " +
		"instead, e.g. 'price: \\d+' for '(?<=price: )\\d+'."},
	{"(?<!", "Negative look-behind (?<!...) is not supported (RE2 syntax); match the allowed preceding character " +
		"explicitly, e.g. '(^|[^$])\\d+' for '(?<!\\$)\\d+'."},
	{"(?=", "Look-ahead (?=...) is not supported (RE2 syntax); match the following text as part of the pattern " +
		"instead, e.g. 'foo bar' for 'foo(?= bar)'."},
	{"(?!", "Negative look-ahead (?!...) is not supported (RE2 syntax); use a negated character class, e.g. " +
		"'foo([^b]|$)' for 'foo(?!b)', or search for the wider pattern and skip the lines you do not want."},
	{"(?>", "Atomic groups (?>...) are not supported (RE2 syntax); use a plain group (?:...): RE2 never " +
		"backtracks, so the result is the same."},
	{"(?P=", "Back-references such as (?P=name) are not supported (RE2 syntax); repeat the group's pattern " +
		"instead, e.g. '(\\w+) \\w+' for '(?P<w>\\w+) (?P=w)', and check the repeated text yourself."},
}

// escapeHint returns the hint for the escape \c, or "".
func escapeHint(c byte) string {
	switch {
	case c >= '1' && c <= '9', c == 'k', c == 'g':
		return "Back-references such as \\1 are not supported (RE2 syntax); repeat the group's pattern instead, " +
			"e.g. '(\\w+) \\w+' for '(\\w+) \\1', and check the repeated text yourself."
	case c == 'Z':
		return "\\Z is not supported (RE2 syntax); use \\z or $ for the end of the line."
	}
	return ""
}

// invalidPattern is the retry for a pattern that does not compile: RE2's
// reason, then re2Hint's advice when it has some.
func invalidPattern(pattern string, err error) error {
	if h := re2Hint(pattern); h != "" {
		return capabilities.Retry("Invalid regex pattern: %s. %s", err, h)
	}
	return capabilities.Retry("Invalid regex pattern: %s", err)
}
