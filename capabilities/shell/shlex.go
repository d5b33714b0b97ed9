package shell

import (
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// firstToken is the program the command line starts: the first word of its
// first simple command, parsed as a POSIX shell parses it, quotes removed
// ("r"m is rm). Assignments before it are skipped (FOO=1 rm runs rm), and
// a command line that starts with something other than a simple command
// (a subshell, a group, a compound command) answers with its first word as
// written, so that an allowed list refuses it. ok is false when the line
// does not parse (an unclosed quote, a trailing backslash): the reference
// then skips the list checks, and the shell itself fails on the line.
// empty is true when there is no command at all.
//
// Only the first program is compared with the command lists, as the
// reference compares its first word: the lists are a guardrail, and the
// kernel's confinement is the boundary.
func firstToken(command string) (token string, empty, ok bool) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(command), "")
	if err != nil {
		return "", false, false
	}
	if len(file.Stmts) == 0 {
		return "", true, true
	}
	call, isCall := file.Stmts[0].Cmd.(*syntax.CallExpr)
	switch {
	case isCall && len(call.Args) > 0:
		word := call.Args[0]
		// A Config of its own each time: expand writes to the one it is
		// given (nil would be its shared default), and commands are checked
		// from many goroutines.
		if fields, err := expand.Fields(&expand.Config{}, word); err == nil && len(fields) == 1 {
			return fields[0], false, true
		}
		var b strings.Builder
		_ = syntax.NewPrinter().Print(&b, word) // a word with a substitution: as written
		return b.String(), false, true
	case isCall:
		return "", true, true // assignments alone run no program
	}
	fields := strings.Fields(command)
	return fields[0], false, true
}
