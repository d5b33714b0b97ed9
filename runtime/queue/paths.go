package queue

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
)

// paths names the worker's paths of one job as its submitter knows them,
// for what goes back to the submitter (a result's error and warnings, a
// retry's): the worker's root, its copy of a shipped workspace and its
// scratch directory are of the worker's machine, which the submitter
// neither knows nor needs to.
type paths struct {
	workspace string // the job's workspace here, a real path; "" when not found
	label     string // how the submitter names it
	root      string // the worker's workspace root, a real path
	scratch   string // the worker's scratch directory, which holds each spec's files in a directory of their own
}

// name is how the submitter knows p, an absolute clean path here: within
// the job's workspace, or anywhere the workspace root reaches (its
// directories and those that hold it), it is named from the submitter's
// workspace; a spec's file by its name beside the spec. Before the job has
// a workspace, a path in the root is of a directory not shown ("…/x").
// Any other path (/etc) is the same everywhere.
func (w paths) name(p string) string {
	if w.scratch != "" && within(w.scratch, p) {
		if rel, _ := filepath.Rel(w.scratch, p); strings.HasPrefix(rel, spoolPrefix) {
			// The worker's own (see shipTo), of no spec: of a directory
			// not shown, as mcpserve shows one.
			return "…" + string(filepath.Separator) + rel
		} else if rel != "." {
			// The first component is the spec's own directory.
			if _, below, ok := strings.Cut(filepath.ToSlash(rel), "/"); ok {
				return below
			}
		}
		return "."
	}
	if w.workspace == "" {
		// The job failed before it had a workspace (its shipped copy
		// could not be made): nothing of the root is the submitter's,
		// and it is shown as a directory not shown, as the scratch
		// directory's own files are.
		if within(w.root, p) {
			if rel, _ := filepath.Rel(w.root, p); rel != "." {
				return "…" + string(filepath.Separator) + rel
			}
			return "…"
		}
		return p
	}
	if within(w.workspace, p) || within(w.root, p) || within(p, w.root) {
		rel, err := filepath.Rel(w.workspace, p)
		if err == nil {
			return filepath.Join(w.label, rel)
		}
	}
	return p
}

// refusal is the error of a job the worker refused or whose run failed,
// as the submitter reads it (see describe): with text's names, and a path
// the spec reaches outside the workspace named from it even where text
// finds none, as a directory that holds the root ("../..") is.
func (w paths) refusal(err error) string {
	msg := describe(err)
	var out *outsideError
	if errors.As(err, &out) && !within(w.root, out.path) && w.workspace != "" {
		named := *out
		named.path = w.name(out.path)
		msg = strings.Replace(msg, out.Error(), named.Error(), 1)
	}
	return w.text(msg)
}

// text is msg with each of the worker's paths that it holds named as
// name names them: a path is found where it starts with the scratch
// directory, the workspace or the root, and ends at the first character
// that no name of a path here would hold. One pass: what it writes is not
// read again.
func (w paths) text(msg string) string { return w.replace(msg, false) }

// json is text for line, a JSON value: each name is written escaped as a
// JSON string's content, so that the line stays JSON whatever the
// submitter named its workspace. (A path of ours holds nothing JSON
// escapes, so it is found in the line as in a text.) What is around a
// path is read as the text the line's string holds: an escape before it
// as the character it stands for ("\n/srv/..." begins a line), the
// string's closing quote as the text's end.
func (w paths) json(line []byte) []byte { return []byte(w.replace(string(line), true)) }

// replace is text, or json when inJSON is set.
func (w paths) replace(msg string, inJSON bool) string {
	quote := func(s string) string { return s }
	before := func(i int) byte { return msg[i-1] }
	ends := sentenceEnd
	if inJSON {
		quote = func(s string) string {
			q, _ := json.Marshal(s)
			return string(q[1 : len(q)-1])
		}
		before = func(i int) byte { return unescaped(msg[:i]) }
		ends = jsonSentenceEnd
	}
	var bases []string
	for _, base := range []string{w.scratch, w.workspace, w.root} {
		if base != "" && base != string(filepath.Separator) {
			bases = append(bases, base)
		}
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		base := ""
		for _, c := range bases {
			end := i + len(c)
			// Not a longer name that begins as c does.
			if strings.HasPrefix(msg[i:], c) && len(c) > len(base) &&
				(end == len(msg) || msg[end] == filepath.Separator || !pathByte(msg[end]) || ends(msg[end:])) {
				base = c
			}
		}
		// Only where a path begins: what is before it is read only then,
		// an escape's backslashes once for each path.
		if base != "" && i > 0 {
			if c := before(i); pathByte(c) || c == filepath.Separator {
				base = ""
			}
		}
		if base == "" {
			b.WriteByte(msg[i])
			i++
			continue
		}
		end := i + len(base)
		for end < len(msg) && (pathByte(msg[end]) || msg[end] == filepath.Separator) && !ends(msg[end:]) {
			end++
		}
		b.WriteString(quote(w.name(filepath.Clean(msg[i:end]))))
		i = end
	}
	return b.String()
}

// pathByte reports whether c may be part of one of a path's names as the
// worker makes them and as specs name files: letters, digits and ._-~+@.
func pathByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-~+@", c) >= 0 || c >= 0x80
}

// sentenceEnd reports whether s, what follows a path in a message, starts
// with a full stop that ends it rather than a name's dot: one at the end,
// or before a space.
func sentenceEnd(s string) bool {
	return s[0] == '.' && (len(s) == 1 || s[1] == ' ' || s[1] == '\n')
}

// jsonSentenceEnd is sentenceEnd for s in a JSON string: its full stop is
// the text's last character where the string's closing quote follows it,
// and one before a line's end where "\n" does.
func jsonSentenceEnd(s string) bool {
	return sentenceEnd(s) || s[0] == '.' && len(s) > 1 && (s[1] == '"' || strings.HasPrefix(s[1:], `\n`))
}

// unescaped is the last character of the text that s, the start of a JSON
// string's content, holds: the character an escape that ends it stands
// for (0x80, which no check here takes for an ASCII one, for a \u escape
// of a character beyond ASCII), or its last byte.
func unescaped(s string) byte {
	escape := func(at int) bool { // s[at] is a backslash that escapes what follows it
		n := 0
		for i := at; i >= 0 && s[i] == '\\'; i-- {
			n++
		}
		return n%2 == 1
	}
	n := len(s)
	if n >= 6 && s[n-5] == 'u' && escape(n-6) {
		if c, err := strconv.ParseUint(s[n-4:], 16, 16); err == nil {
			return byte(min(c, 0x80))
		}
	}
	if n >= 2 && escape(n-2) {
		switch s[n-1] {
		case 'n':
			return '\n'
		case 't':
			return '\t'
		case 'r':
			return '\r'
		case 'b':
			return '\b'
		case 'f':
			return '\f'
		}
	}
	return s[n-1]
}
