// Package redact shows URLs in messages without the parts where services
// put tokens: a password, a query, a path segment that may be one. An
// MCP server's URL and a spec's values reach errors, events and CI logs.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// URL is a URL as messages show it: without its password, query or
// fragment, where tokens are put ("https://h/mcp?…"), and with "…" for a
// path segment that may be one ("https://h/mcp/…/sse", see Word).
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "an unparsable URL"
	}
	q := u.RawQuery != "" || u.ForceQuery
	p, _ := Path(u)
	u.Opaque, u.Path, u.RawPath, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", "", "", "", false, "", ""
	if q {
		return u.Redacted() + p + "?…"
	}
	return u.Redacted() + p
}

// Path is u's path as messages show it: "…" in place of each segment
// that is not a word (see Word). hidden are those segments, as they
// are written in the URL and unescaped. The opaque part of a URL written
// without its scheme's // ("host:443/mcp/TOKEN", its host read as the
// scheme) counts as its path, and its first segment, when it is a port
// (five digits at most), is shown.
func Path(u *url.URL) (shown string, hidden []string) {
	p := u.EscapedPath()
	if u.Opaque != "" {
		p = u.Opaque
	}
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if i == 0 && u.Opaque != "" && isPort(seg) {
			continue
		}
		plain, err := url.PathUnescape(seg)
		if err != nil || !Word(plain) {
			hidden = append(hidden, seg, plain)
			segs[i] = "…"
		}
	}
	return strings.Join(segs, "/"), hidden
}

func isPort(s string) bool {
	return len(s) >= 1 && len(s) <= 5 && strings.Trim(s, "0123456789") == ""
}

// maxWord is the longest path segment shown as a word.
const maxWord = 32

// Word reports whether a URL path segment (unescaped) reads as a
// name, which messages show: letters, with - _ . @ ~ among them, no digit,
// at most maxWord long, and not a mix of upper and lower case 16 or more
// long (mcp, sse, api, server-everything, @acme); or a version (v1, v2.1);
// or empty. Any other segment may be a token a service put in its URL
// (.../mcp/sk-4f9a..., a UUID, base64), and is shown as "…". A token of
// lowercase letters alone of at most maxWord, which a word cannot be told
// from, is shown.
func Word(s string) bool {
	if version.MatchString(s) {
		return true
	}
	if len(s) > maxWord {
		return false
	}
	upper, lower := false, false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case !strings.ContainsRune("-_.@~", r):
			return false
		}
	}
	return !(upper && lower && len(s) >= 16)
}

// version is a path segment that names an API's version.
var version = regexp.MustCompile(`^v[0-9]{1,3}(\.[0-9]{1,3}){0,2}$`)
