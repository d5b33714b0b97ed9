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
// written, so that an allowed list refuses it. empty is true when there is
// no command at all.
//
// sh runs a command line one complete command at a time, so what comes
// after the first command does not have to parse for it to run: the first
// command of "rm x\necho 'a" runs before sh finds the open quote. The first
// command is therefore read on its own, and the rest may fail to parse. ok
// is false only when the first command itself does not parse (an unclosed
// quote, syntax sh would read otherwise): then which program it starts is
// not known.
//
// Only the first program is compared with the command lists, as the
// reference compares its first word: the lists are a guardrail, and the
// kernel's confinement is the boundary.
func firstToken(command string) (token string, empty bool, err error) {
	var first *syntax.Stmt
	err = syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Stmts(strings.NewReader(command), func(s *syntax.Stmt) bool {
		first = s
		return false
	})
	switch {
	case first == nil && err != nil:
		return "", false, err
	case first == nil:
		return "", true, nil
	}
	call, isCall := first.Cmd.(*syntax.CallExpr)
	switch {
	case isCall && len(call.Args) > 0:
		word := call.Args[0]
		// A Config of its own each time: expand writes to the one it is
		// given (nil would be its shared default), and commands are checked
		// from many goroutines.
		if fields, err := expand.Fields(&expand.Config{}, word); err == nil && len(fields) == 1 {
			return fields[0], false, nil
		}
		var b strings.Builder
		_ = syntax.NewPrinter().Print(&b, word) // a word with a substitution: as written
		return b.String(), false, nil
	case isCall:
		return "", true, nil // assignments alone run no program
	}
	fields := strings.Fields(command[first.Pos().Offset():])
	return fields[0], false, nil
}
