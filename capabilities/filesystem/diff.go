package filesystem

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
)

// maxDiffLineProduct bounds the line-matching work: texts whose line counts
// multiply past it are not diffed.
const maxDiffLineProduct = 65536

// unifiedDiff returns the unified diff (3 lines of context, Python difflib's
// hunk format) from old to new for the file rel, bounded for events, and
// whether it was cut or left out. Equal texts give "". A final line without a
// newline is followed by git's "\ No newline at end of file" marker, so a
// change to the final newline alone shows.
func unifiedDiff(old, new, rel string) (string, bool) {
	if old == new {
		return "", false
	}
	if runeCount(old) > MaxDiffSourceChars || runeCount(new) > MaxDiffSourceChars ||
		(strings.Count(old, "\n")+1)*(strings.Count(new, "\n")+1) > maxDiffLineProduct {
		return diffHeadersOnly(rel), true
	}
	a, b := splitNewlines(old), splitNewlines(new)
	groups := difflib.NewMatcher(a, b).GetGroupedOpCodes(3)
	var sb strings.Builder
	sb.WriteString(diffHeaders(rel))
	for _, g := range groups {
		first, last := g[0], g[len(g)-1]
		fmt.Fprintf(&sb, "\n@@ -%s +%s @@", hunkRange(first.I1, last.I2), hunkRange(first.J1, last.J2))
		for _, op := range g {
			if op.Tag == 'e' {
				writeDiffLines(&sb, ' ', a[op.I1:op.I2])
				continue
			}
			// An insert's old range is empty, a delete's new one.
			writeDiffLines(&sb, '-', a[op.I1:op.I2])
			writeDiffLines(&sb, '+', b[op.J1:op.J2])
		}
	}
	return clipDiff(sb.String())
}

// diffHeadersOnly is the diff of a change whose content is not shown: too
// large, or not readable.
func diffHeadersOnly(rel string) string {
	d, _ := clipDiff(diffHeaders(rel))
	return d
}

func diffHeaders(rel string) string {
	return "--- " + gitQuote("a/"+rel) + "\n+++ " + gitQuote("b/"+rel)
}

func writeDiffLines(sb *strings.Builder, tag byte, lines []string) {
	for _, l := range lines {
		sb.WriteByte('\n')
		sb.WriteByte(tag)
		if text, ok := strings.CutSuffix(l, "\n"); ok {
			sb.WriteString(text)
		} else {
			sb.WriteString(l)
			sb.WriteString("\n\\ No newline at end of file")
		}
	}
}

// splitNewlines splits s after each "\n" (only), keeping it.
func splitNewlines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// hunkRange formats a hunk's line range as difflib does: "start,length", just
// "start" for one line, and the line before for none.
func hunkRange(start, stop int) string {
	begin, length := start+1, stop-start
	switch length {
	case 1:
		return strconv.Itoa(begin)
	case 0:
		begin--
	}
	return strconv.Itoa(begin) + "," + strconv.Itoa(length)
}

// clipDiff cuts d to at most MaxEventDiffChars code points, at the last line
// break within the limit.
func clipDiff(d string) (string, bool) {
	if len(d) <= MaxEventDiffChars || runeCount(d) <= MaxEventDiffChars {
		return d, false
	}
	// Byte offset just past code point MaxEventDiffChars+1, so that a line
	// break right at the limit keeps the line before it.
	end, n := 0, 0
	for n <= MaxEventDiffChars {
		_, size := utf8.DecodeRuneInString(d[end:])
		end += size
		n++
	}
	if i := strings.LastIndexByte(d[:end], '\n'); i >= 0 {
		return d[:i], true
	}
	return "", true
}

// gitQuote quotes a diff header path the way git does when it holds a
// character that is not printable, a byte that is not UTF-8, a double quote
// or a backslash: in double quotes, with C escapes and octal bytes.
func gitQuote(p string) string {
	if utf8.ValidString(p) && !strings.ContainsFunc(p, func(r rune) bool { return r == '"' || r == '\\' || !unicode.IsPrint(r) }) {
		return p
	}
	// The controls git writes as C escapes, and the letter of each.
	const controls, letters = "\a\b\t\n\v\f\r", "abtnvfr"
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		switch c := strings.IndexRune(controls, r); {
		case r == '"' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case c >= 0:
			sb.WriteByte('\\')
			sb.WriteByte(letters[c])
		case (r == utf8.RuneError && size == 1) || !unicode.IsPrint(r):
			for _, b := range []byte(p[i : i+size]) {
				fmt.Fprintf(&sb, `\%03o`, b)
			}
		default:
			sb.WriteString(p[i : i+size])
		}
		i += size
	}
	sb.WriteByte('"')
	return sb.String()
}
