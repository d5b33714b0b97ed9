package filesystem

import (
	"slices"
	"strconv"
	"strings"

	"github.com/agentspec/agentspec/capabilities/filesystem/internal/search"
	"github.com/agentspec/agentspec/internal/text"
)

// MaxLineChars is the longest line text, in characters (code points, as the
// reference counts them), that read_file and search_files return. A longer
// line is cut and a marker says how many characters were left out and how
// to see them: read_file shows a line's start, search_files the part around
// its first match. A file that is one 50 MB line thus costs a model a few
// thousand characters, not its whole context.
//
// read_file applies the cap when max_read_chars is 0 (the default); with
// max_read_chars set, that budget bounds the whole result and lines are
// shown whole or not at all, exactly as the reference does.
const MaxLineChars = 2000

// readLineCut is the marker read_file puts after the first MaxLineChars
// characters of a longer line, before its terminator.
func readLineCut(cut int) string {
	return " [... " + groupThousands(cut) + " more characters in this line not shown; " +
		"search_files shows the part of a long line around a match.]"
}

// nextShown reads one line of read_file's window when no max_read_chars
// budget applies: it appends the line to dst, its text cut to MaxLineChars
// with readLineCut's marker, then its terminator.
func (lr *lineReader) nextShown(dst []byte) ([]byte, bool) {
	dst, n, termBytes, ok := lr.read(dst, MaxLineChars, true)
	if !ok {
		return dst, false
	}
	// n counts the terminator's characters too: \r\n is two.
	termChars := text.CountChars(dst[len(dst)-termBytes:])
	if cut := n - termChars - MaxLineChars; cut > 0 {
		dst = slices.Insert(dst, len(dst)-termBytes, []byte(readLineCut(cut))...)
	}
	return dst, true
}

// searchBuffer is the buffer each search_files worker streams files
// through. A line up to this long is matched in memory at full speed; a
// longer one is matched as it streams past (linear time, slower) and its
// match shown by reading that part again. It must be at least 4 ×
// MaxLineChars (see search.NewScanner).
const searchBuffer = 1 << 20

// searchLine renders a search_files result line: the path, the line number,
// and the line's text, or the MaxLineChars of it around its first match
// with markers counting what was left out.
func searchLine(name string, l search.Line) string {
	var b strings.Builder
	b.Grow(len(name) + len(l.Text) + 16)
	b.WriteString(name)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(l.N))
	b.WriteByte(':')
	if l.Before > 0 {
		b.WriteString("[... " + groupThousands(l.Before) + " earlier characters not shown] ")
	}
	b.Write(l.Text)
	if l.After > 0 {
		b.WriteString(" [... " + groupThousands(l.After) + " more characters not shown; " +
			"search for text later in the line to see them]")
	}
	return b.String()
}

// lineCapNote tells the model, in read_file's description, that long lines
// are cut, when they are.
func lineCapNote(fs *FS) string {
	if fs.opts.MaxReadChars > 0 {
		return ""
	}
	return " Lines longer than " + strconv.Itoa(MaxLineChars) + " characters are cut; search_files shows the part of such a line around a match."
}
