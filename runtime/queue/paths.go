package queue

import (
	"encoding/json"
	"errors"
	"path/filepath"
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
// workspace; a spec's file by its name beside the spec. Any other path
// (/etc) is the same everywhere.
func (w paths) name(p string) string {
	if w.scratch != "" && within(w.scratch, p) {
		if rel, _ := filepath.Rel(w.scratch, p); rel != "." {
			// The first component is the spec's own directory.
			if _, below, ok := strings.Cut(filepath.ToSlash(rel), "/"); ok {
				return below
			}
		}
		return "."
	}
	if w.workspace == "" {
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
func (w paths) text(msg string) string { return w.replace(msg, func(s string) string { return s }) }

// json is text for line, a JSON value: each name is written escaped as a
// JSON string's content, so that the line stays JSON whatever the
// submitter named its workspace. (A path of ours holds nothing JSON
// escapes, so it is found in the line as in a text.)
func (w paths) json(line []byte) []byte {
	return []byte(w.replace(string(line), func(s string) string {
		q, _ := json.Marshal(s)
		return string(q[1 : len(q)-1])
	}))
}

// replace is text, writing each name as quote has it.
func (w paths) replace(msg string, quote func(string) string) string {
	var bases []string
	for _, base := range []string{w.scratch, w.workspace, w.root} {
		if base != "" && base != string(filepath.Separator) {
			bases = append(bases, base)
		}
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		base := ""
		if i == 0 || !pathByte(msg[i-1]) && msg[i-1] != filepath.Separator {
			for _, c := range bases {
				end := i + len(c)
				// Not a longer name that begins as c does.
				if strings.HasPrefix(msg[i:], c) && len(c) > len(base) &&
					(end == len(msg) || msg[end] == filepath.Separator || !pathByte(msg[end]) || sentenceEnd(msg[end:])) {
					base = c
				}
			}
		}
		if base == "" {
			b.WriteByte(msg[i])
			i++
			continue
		}
		end := i + len(base)
		for end < len(msg) && (pathByte(msg[end]) || msg[end] == filepath.Separator) && !sentenceEnd(msg[end:]) {
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
