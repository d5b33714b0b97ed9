package spec

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// yamlSyntax reports a yaml.v3 parse error. Its messages look like
// "yaml: line 3: mapping values are not allowed in this context"; errors on
// the first line and a few others come without a line, and none has a column,
// so the position is worked out from the source where possible.
func (d *document) yamlSyntax(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pos := Position{File: d.file}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, found := strings.Cut(rest, ": "); found {
			if line, err := strconv.Atoi(n); err == nil {
				pos.Line, msg = line, after
			}
		}
	}
	// Parser errors (as opposed to scanner errors) give a 0-based line: where
	// the enclosing block or flow collection starts, or the problem itself.
	if strings.HasPrefix(msg, "did not find expected ") {
		pos.Line++
	}
	if pos.Line == 0 {
		pos = d.offsetPos(d.yamlErrorOffset(msg))
	}
	line := d.line(pos.Line)
	hint := ""
	switch {
	case strings.HasPrefix(msg, "did not find expected ',' or "), msg == "did not find expected node content":
		// A flow collection left open: yaml.v3 gives the line it starts on,
		// or where parsing stopped when that is the first line, so the
		// bracket is on the line given or above it. The content missing
		// after a trailing comma ([a, b,) is the same mistake.
		opens := "[{"
		switch {
		case strings.HasSuffix(msg, "']'"):
			opens = "["
		case strings.HasSuffix(msg, "'}'"):
			opens = "{"
		}
		if at, open, ok := d.findLine(pos.Line, -1, unclosed(opens)); ok {
			pos = at
			hint = fmt.Sprintf("is the %c opened here closed?", open)
			if strings.Contains(d.line(at.Line), "${") {
				hint += " Inside {...} and [...], quote values holding ${VAR}"
			}
		}
	case strings.Contains(msg, "tab character"):
		// yaml.v3 gives the line where the scalar or block holding the tab
		// starts; the tab is on that line or below it.
		if at, _, ok := d.findLine(pos.Line, 1, indentTab); ok {
			pos = at
		}
		hint = "indent with spaces: YAML does not allow tabs"
	case strings.Contains(msg, "cannot start any token"):
		if i := strings.IndexAny(line, "\t@`"); i >= 0 {
			pos.Col = 1 + utf8.RuneCountInString(line[:i])
			if line[i] == '\t' {
				hint = "indent with spaces: YAML does not allow tabs"
			} else {
				hint = fmt.Sprintf("a value starting with %c must be quoted", line[i])
			}
		}
	case strings.Contains(msg, "mapping values are not allowed"):
		hint = `a value containing ": " must be quoted, and nested keys must be indented under their parent`
		if i := secondColon(line); i > 0 { // "key: text: more": the second colon is the problem
			pos.Col = 1 + utf8.RuneCountInString(line[:i])
		}
	case strings.Contains(msg, "did not find expected key"), strings.Contains(msg, "did not find expected '-'"):
		hint = "check the indentation of this line and the one before"
	case strings.Contains(msg, "unexpected end of stream"):
		hint = "is a quote or a bracket left open?"
		// A quoted scalar left open: yaml.v3 gives the line it starts on,
		// or the one after when that is the last, so the quote is on the
		// line given or above it.
		if at, q, ok := d.findLine(pos.Line, -1, unclosedQuote); ok {
			pos = at
			hint = fmt.Sprintf("is the %c opened here closed?", q)
		}
	}
	if pos.Col == 0 {
		pos.Col = 1 + utf8.RuneCountInString(line) - utf8.RuneCountInString(strings.TrimLeftFunc(line, unicode.IsSpace))
	}
	msg = "invalid YAML: " + msg
	if hint != "" {
		msg += " (" + hint + ")"
	}
	d.add("", pos, msg)
}

// findLine returns where find (which returns a byte index, or -1) first
// finds something on the lines from line on, going down (step 1) or up
// (step -1), and the byte found.
func (d *document) findLine(line, step int, find func(string) int) (Position, byte, bool) {
	lines := strings.Split(string(d.src), "\n")
	for n := line; n >= 1 && n <= len(lines); n += step {
		text := strings.TrimSuffix(lines[n-1], "\r")
		if i := find(text); i >= 0 {
			return Position{File: d.file, Line: n, Col: 1 + utf8.RuneCountInString(text[:i])}, text[i], true
		}
	}
	return Position{}, 0, false
}

// unclosed returns a finder of the last bracket among opens that a line opens
// and does not close.
func unclosed(opens string) func(string) int {
	return func(line string) int {
		var open []int
	scan:
		for i := 0; i < len(line); i++ {
			switch line[i] {
			case '[', '{':
				open = append(open, i)
			case ']', '}':
				if len(open) > 0 {
					open = open[:len(open)-1]
				}
			case '$':
				// Inside brackets, YAML reads ${ as a value followed by a
				// mapping, and stops there.
				if len(open) > 0 && strings.HasPrefix(line[i:], "${") {
					break scan
				}
			}
		}
		for k := len(open) - 1; k >= 0; k-- {
			if strings.IndexByte(opens, line[open[k]]) >= 0 {
				return open[k]
			}
		}
		return -1
	}
}

// unclosedQuote finds a quote that opens a quoted scalar on a line and is
// not closed on it: one that starts a value (at the line's start, or after
// a blank or a flow indicator), outside a comment. In double quotes a
// backslash escapes the next character; in single quotes a doubled quote
// stands for one.
func unclosedQuote(line string) int {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return -1 // a comment to the end of the line
		case c != '"' && c != '\'':
			continue
		case i > 0 && !strings.ContainsRune(" \t[{,", rune(line[i-1])):
			continue // a quote inside a plain scalar: it's
		}
		j := i + 1
		for ; j < len(line); j++ {
			if c == '"' && line[j] == '\\' {
				j++
			} else if line[j] == c {
				if c == '\'' && j+1 < len(line) && line[j+1] == '\'' {
					j++
					continue
				}
				break
			}
		}
		if j >= len(line) {
			return i
		}
		i = j
	}
	return -1
}

// indentTab finds a tab among the blanks that indent a line.
func indentTab(line string) int {
	indent := len(line) - len(strings.TrimLeft(line, " \t"))
	return strings.IndexByte(line[:indent], '\t')
}

// secondColon returns the byte index of the second ": " (or final ":") on a
// line, or -1.
func secondColon(line string) int {
	first := strings.Index(line, ": ")
	if first < 0 {
		return -1
	}
	rest := line[first+2:]
	if i := strings.Index(rest, ": "); i >= 0 {
		return first + 2 + i
	}
	if strings.HasSuffix(rest, ":") {
		return len(line) - 1
	}
	return -1
}

// yamlErrorOffset finds in the source what a yaml.v3 message without a line
// number is about. Scanner errors on the first line are the common case.
func (d *document) yamlErrorOffset(msg string) int {
	if name, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
		name, _, _ = strings.Cut(name, "'")
		if i := bytes.Index(d.src, []byte("*"+name)); i >= 0 {
			return i
		}
	}
	if strings.Contains(msg, "control characters") {
		if i := bytes.IndexFunc(d.src, func(r rune) bool {
			return unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r'
		}); i >= 0 {
			return i
		}
	}
	if strings.Contains(msg, "UTF-8") {
		for i := 0; i < len(d.src); {
			r, size := utf8.DecodeRune(d.src[i:])
			if r == utf8.RuneError && size <= 1 {
				return i
			}
			i += size
		}
	}
	return 0
}

// prefixed puts the label of ptr before msg: "workspace.checks[0]: msg".
// A label longer than maxLabel characters (keys nested deeply, or long) is
// cut in its middle: the position says where the value is.
func prefixed(ptr, msg string) string {
	l := label(ptr)
	if l == "" {
		return msg
	}
	if r := []rune(l); len(r) > maxLabel {
		l = string(r[:maxLabel/2]) + "..." + string(r[len(r)-(maxLabel/2-3):])
	}
	return l + ": " + msg
}

const maxLabel = 120
