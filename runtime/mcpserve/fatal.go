package mcpserve

import (
	"cmp"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/agentspec/agentspec/capabilities"
)

// fatal is a failure the client must not take for a tool's ordinary error
// result: a JSON-RPC error.
func fatal(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// callFailed is the JSON-RPC error a call that failed fatally is answered
// with. Its message names no path of this machine outside the served roots
// (where the events file, the spec, agentspec's own files lie), which the
// client has no business knowing: each is "…". roots are what the call's
// client may see: the server's, and its session's (Options.Session). The
// whole error is the ToolResult event's Message, and goes to Notice.
func (s *Server) callFailed(id, tool string, err error, roots []string) error {
	if s.notice != nil {
		s.notice(tool + " (call " + id + ") failed: " + err.Error())
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: withoutPaths(err, roots)}
}

// servedRoots are the paths caps reach (capabilities.ReachOf), as given
// and with their symbolic links resolved, as an error may name either.
func servedRoots(caps []capabilities.Capability) []string {
	var roots []string
	for _, c := range caps {
		r, _ := capabilities.ReachOf(c)
		for _, p := range r.Paths {
			roots = append(roots, filepath.Clean(p.Path))
			if real, err := filepath.EvalSymlinks(p.Path); err == nil {
				roots = append(roots, real)
			}
		}
	}
	slices.Sort(roots)
	return slices.Compact(roots)
}

// withoutPaths is err's text with "…" for every absolute path in it that
// lies outside roots. The paths err's chain holds (an fs.PathError's, an
// os.LinkError's) are found whole, spaces and all; any other is found in
// the text: a "/" (or a drive's "C:\" or "C:/", or a share's "\\") that
// begins a word or follows a word's ":" (root_dir:/x), up to the space or
// quote that ends it, or within quotes, up to the closing quote, a ":" or
// "." that ends it aside. A file URL's text after "file://" is such a path
// (file:///x, file://localhost/x), or a share's (file://server/x). Any
// other URL's path begins no word ("http://h/x"), and is kept.
func withoutPaths(err error, roots []string) string {
	msg := err.Error()
	var known []string
	walkErrors(err, func(e error) {
		switch e := e.(type) {
		case *fs.PathError:
			known = append(known, e.Path)
		case *os.LinkError:
			known = append(known, e.Old, e.New)
		}
	})
	// Longest first, so that a path is not cut by one it begins with.
	slices.SortFunc(known, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, p := range known {
		if filepath.IsAbs(p) && filepath.Clean(p) != string(filepath.Separator) && !within(p, roots) {
			msg = replacePath(msg, p)
		}
	}
	return scrubText(msg, roots)
}

// walkErrors calls f with err and every error its chain wraps, both
// branches of a join included.
func walkErrors(err error, f func(error)) {
	for err != nil {
		f(err)
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walkErrors(e, f)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}

// scrubText is msg with "…" for the absolute paths outside roots it finds
// in the text (see withoutPaths).
func scrubText(msg string, roots []string) string {
	var b strings.Builder
	i := 0
	for i < len(msg) {
		start := pathStart(msg, i)
		if start < 0 {
			b.WriteString(msg[i:])
			break
		}
		end := pathEnd(msg, start)
		p := strings.TrimRight(msg[start:end], ":.")
		b.WriteString(msg[i:start])
		if local, ok := fileURL(p); ok {
			// Its text after "file://" is kept or hidden whole: a host
			// other than localhost is the server's share.
			b.WriteString(p[:len(fileScheme)])
			if local != "" && within(local, roots) {
				b.WriteString(p[len(fileScheme):])
			} else {
				b.WriteString("…")
			}
		} else if filepath.Clean(p) == "/" || within(p, roots) { // "/" alone tells nothing
			b.WriteString(p)
		} else {
			b.WriteString("…")
		}
		i = start + len(p)
	}
	return b.String()
}

const fileScheme = "file://"

// fileURL reports whether p is a file URL (file:///x, file://localhost/x,
// file://server/x), and returns the local path it names: its path, unescaped,
// when its host is empty or localhost, else "".
func fileURL(p string) (local string, ok bool) {
	if len(p) < len(fileScheme) || !strings.EqualFold(p[:len(fileScheme)], fileScheme) {
		return "", false
	}
	host, path, _ := strings.Cut(p[len(fileScheme):], "/")
	if host != "" && !strings.EqualFold(host, "localhost") {
		return "", true
	}
	if unescaped, err := url.PathUnescape(path); err == nil {
		path = unescaped
	}
	return "/" + path, true
}

// replacePath is msg with "…" for each p in it that is not part of a
// longer path or word: a PathError's "/tmp" is not the end of
// "/srv/project/tmp", nor the start of "/tmp/project". Such a longer path
// is scrubbed, or kept, in its own right (see scrubText).
func replacePath(msg, p string) string {
	var b strings.Builder
	for {
		j := strings.Index(msg, p)
		if j < 0 {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:j])
		end := j + len(p)
		if (j == 0 || !inPath(msg[j-1])) && (end == len(msg) || !inPath(msg[end])) {
			b.WriteString("…")
		} else {
			b.WriteString(p)
		}
		msg = msg[end:]
	}
}

// inPath reports whether c may be part of a path's name or separate its
// names.
func inPath(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c >= 0x80 || strings.IndexByte("._-~/\\", c) >= 0
}

// beginsPath reports whether a path may begin at i in msg: at its start,
// or after a space, a quote, a bracket, "=", or what ends one (see
// pathEnd), so that "/a,/b" is two paths, or after a word's ":"
// (root_dir:/x), unless what follows is the "//" of a URL.
func beginsPath(msg string, i int) bool {
	if i > 0 && msg[i-1] == ':' {
		return !strings.HasPrefix(msg[i:], "//")
	}
	return i == 0 || strings.ContainsRune(" \t\r\n\"'`()[]{}<>=,;", rune(msg[i-1]))
}

// pathStart is the index of the first absolute path in msg at or after i,
// or -1 (see beginsPath). A file URL is one, from its scheme on.
func pathStart(msg string, i int) int {
	for ; i < len(msg); i++ {
		if !beginsPath(msg, i) {
			continue
		}
		if len(msg)-i > len(fileScheme) && strings.EqualFold(msg[i:i+len(fileScheme)], fileScheme) {
			return i
		}
		if msg[i] == '/' {
			return i
		}
		if i+2 < len(msg) && isLetter(msg[i]) && msg[i+1] == ':' && (msg[i+2] == '\\' || msg[i+2] == '/') {
			return i // Windows takes either separator
		}
		if i+2 < len(msg) && msg[i] == '\\' && msg[i+1] == '\\' && msg[i+2] != '\\' {
			return i // a share's path, \\server\share\...
		}
	}
	return -1
}

// pathEnd is the index just past the path that begins at start: the
// closing quote of one in quotes, else the first space, quote or bracket.
func pathEnd(msg string, start int) int {
	if start > 0 {
		if q := msg[start-1]; q == '"' || q == '\'' || q == '`' {
			if n := strings.IndexByte(msg[start:], q); n >= 0 {
				return start + n
			}
		}
	}
	if n := strings.IndexAny(msg[start:], " \t\r\n\"'`()[]{}<>,;"); n >= 0 {
		return start + n
	}
	return len(msg)
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// within reports whether p is one of roots or lies below one.
func within(p string, roots []string) bool {
	p = filepath.Clean(p)
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r) && (strings.HasSuffix(r, string(filepath.Separator)) || p[len(r)] == filepath.Separator) {
			return true
		}
	}
	return false
}
