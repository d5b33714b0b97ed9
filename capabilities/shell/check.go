package shell

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentspec/agentspec/capabilities"
)

// interactivePrefixes are the programs the reference refuses as
// interactive, matched at the start of the stripped command and followed by
// a word boundary (Python's re.match of `^(vi|...|man)\b`, `^passwd\b`,
// ...); sudo must be followed by white space (`^sudo\s`).
var interactivePrefixes = []string{"vi", "vim", "nano", "emacs", "less", "more", "top", "htop", "man", "passwd", "ssh", "telnet", "ftp"}

// isInteractive reports whether a command, already stripped, starts as the
// reference's interactive patterns say, with Python's Unicode-aware \b and
// \s.
func isInteractive(s string) bool {
	if rest, ok := strings.CutPrefix(s, "sudo"); ok {
		r, _ := utf8.DecodeRuneInString(rest)
		if rest != "" && isPySpace(r) {
			return true
		}
	}
	for _, p := range interactivePrefixes {
		rest, ok := strings.CutPrefix(s, p)
		if !ok {
			continue
		}
		r, _ := utf8.DecodeRuneInString(rest)
		if rest == "" || !isPyWord(r) {
			return true
		}
	}
	return false
}

// isPyWord is Python's \w for a str pattern: alphanumeric or underscore.
func isPyWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r)
}

// policy is what the checks consult.
type policy struct {
	allowed, denied  []string
	operators        []string
	allowInteractive bool
}

// check runs the reference's checks in their order and returns the retry
// for the first that fails, nil when the command may run. badEncoding says
// the command could not be encoded for the operating system (a lone
// surrogate in the model's JSON).
func (p policy) check(command string, badEncoding bool) error {
	if strings.IndexByte(command, 0) >= 0 {
		return refuse("The command contains a NUL byte, which cannot be passed to a process.")
	}
	if badEncoding {
		return refuse("The command contains characters that cannot be encoded for the operating system.")
	}
	if !p.allowInteractive && isInteractive(pyStrip(command)) {
		return refuse("Interactive commands are not allowed. Command: " + pyRepr(command))
	}
	for _, op := range p.operators {
		if strings.Contains(command, op) {
			return refuse("Shell operator " + pyRepr(op) + " is not allowed.")
		}
	}
	exe, empty, err := firstToken(command)
	switch {
	case err != nil && (len(p.denied) > 0 || len(p.allowed) > 0):
		// The reference runs a line shlex cannot split, unchecked; but
		// sh may run part of it, so a line whose program is unknown does
		// not pass the lists.
		return refuse("The command cannot be parsed as a shell command line, so the program it starts " +
			"cannot be checked against the allowed and denied commands (" + err.Error() + ").")
	case err != nil || empty:
		return nil
	}
	if slices.Contains(p.denied, exe) {
		return refuse("Command " + pyRepr(exe) + " is denied.")
	}
	if len(p.allowed) > 0 && !slices.Contains(p.allowed, exe) {
		return refuse("Command " + pyRepr(exe) + " is not in the allowed list.")
	}
	return nil
}

func refuse(msg string) error {
	return &capabilities.RetryError{Message: msg, Refusal: capabilities.RefusedCommand}
}

// pyStrip is Python's str.strip(): white space as str.isspace() sees it.
func pyStrip(s string) string {
	return strings.TrimFunc(s, isPySpace)
}

// isPySpace is Python's str.isspace() of one character: Unicode white space
// and the ASCII separators \x1c-\x1f.
func isPySpace(r rune) bool {
	switch r {
	case 0x1c, 0x1d, 0x1e, 0x1f, 0x85:
		return true
	}
	return unicode.IsSpace(r)
}
