package sandbox

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Names a model must not be shown raw
//
// A file name can hold bytes that would mislead whoever reads a listing: a
// newline that forges a second entry, an escape sequence for the terminal,
// a bidirectional override that shows "txt.exe" as "exe.txt", bytes that are
// not UTF-8 at all. Listings and search results show such a name escaped:
// each backslash as \\, each such byte or invalid byte as \xNN, each such
// code point as \uNNNN, everything else as it is. Names without any of them
// are shown unchanged, backslashes included.
//
// The escaped form is reversible, and any tool given it addresses the same
// file: when no file has the escaped name itself, resolution tries the name
// it unescapes to (filesystem's path.go). Tools refuse to create such names
// (filesystem's checkNewName).

// escapedRune reports whether r is shown escaped: C0 and C1 controls, DEL,
// the line and paragraph separators, the bidirectional controls, and U+FFFD
// (so that a real U+FFFD differs from a byte that is not UTF-8).
func escapedRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0x061c:
		return false // the common case, ASCII among it, decided in three comparisons
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional marks, embeddings, overrides and isolates
	case r == 0x2028, r == 0x2029, r == utf8.RuneError:
		return true
	}
	return false
}

// NeedsEscape reports whether name holds anything shown escaped.
func NeedsEscape(name string) bool {
	for _, r := range name {
		if escapedRune(r) { // includes invalid bytes, which decode as RuneError
			return true
		}
	}
	return false
}

// DisplayName is name as listings show it: unchanged unless it holds
// something shown escaped, escaped otherwise. It works on whole paths too,
// since '/' is never escaped.
func DisplayName(name string) string {
	if !NeedsEscape(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 8)
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case size == 1 && escapedRune(r): // an ASCII control, or a byte that is not UTF-8
			fmt.Fprintf(&b, `\x%02x`, name[i])
		case escapedRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(name[i : i+size])
		}
		i += size
	}
	return b.String()
}

// UnescapeName reverses DisplayName for one component. ok is false when name
// is not an escaped form (a backslash not followed by \, xNN or uNNNN), or
// unescapes to a name that would not have been shown escaped.
func UnescapeName(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(name) {
			return "", false
		}
		switch name[i+1] {
		case '\\':
			b.WriteByte('\\')
			i++
		case 'x':
			if i+4 > len(name) {
				return "", false
			}
			v, err := strconv.ParseUint(name[i+2:i+4], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 3
		case 'u':
			if i+6 > len(name) {
				return "", false
			}
			v, err := strconv.ParseUint(name[i+2:i+6], 16, 32)
			if err != nil {
				return "", false
			}
			b.WriteRune(rune(v))
			i += 5
		default:
			return "", false
		}
	}
	raw := b.String()
	// One component unescapes to one component: a slash (\x2f) or NUL in
	// it would address another file than the name shown, outside the root
	// with "..".
	if strings.ContainsAny(raw, "/\x00") {
		return "", false
	}
	return raw, NeedsEscape(raw)
}

// leavesDir reports whether name, given to a Cursor as one component of the
// directory it is at, would address something outside that directory: ".."
// or a name with a slash in it. Each Cursor call refuses such a name with
// EXDEV, the kernel's answer to a walk that would leave where it must stay.
func leavesDir(name string) bool { return name == ".." || strings.IndexByte(name, '/') >= 0 }

// Names a file system may take for .git
//
// A .git entry configures git, and git runs hooks, filters and fsmonitor
// commands from it, so no tool writes one (filesystem's checkWrite) and no
// walker shows one. But on NTFS and HFS+ other names reach the same entry,
// and a rule on the name ".git" alone misses them: NTFS drops trailing dots
// and spaces (".git. "), reads "name:stream" as a stream of name
// (".git::$INDEX_ALLOCATION" is the directory itself) and gives ".git" the
// short name "GIT~1"; HFS+ ignores some invisible code points anywhere in a
// name ("\u200c.git"); both fold case. Git refuses such names in a checkout
// for the same reason (core.protectNTFS, core.protectHFS); IsDotGit
// recognises what git's checks recognise, on every platform, since a root
// on Linux can be a mounted NTFS volume or a tree later checked out on one.

// IsDotGit reports whether NTFS or HFS+ may take name, one path component,
// for ".git".
func IsDotGit(name string) bool {
	return isNTFSDotGit(name) || isHFSDotGit(name)
}

// EntryName is the name NTFS or HFS+ may take name, one path component,
// for, in lower case (both fold case): without the code points HFS+
// ignores, and up to a stream (":") or a Windows separator, without the
// trailing dots and spaces NTFS drops. A rule on one name ("pre-commit")
// so covers the others that reach its entry ("Pre-Commit.",
// "pre-commit::$DATA", "pre\u200c-commit"), on every platform, as
// IsDotGit does for .git. A short name ("PRE-CO~1") cannot be told from the
// name alone.
func EntryName(name string) string {
	name = strings.Map(func(r rune) rune {
		if hfsIgnored(r) {
			return -1
		}
		return r
	}, name)
	if i := strings.IndexAny(name, ":\\"); i >= 0 {
		name = name[:i]
	}
	return strings.ToLower(strings.TrimRight(name, ". "))
}

// isNTFSDotGit: ".git" or its short name "git~1", in any case, followed by
// nothing but dots and spaces, which NTFS drops, up to the end of the name,
// a stream (":") or a Windows separator.
func isNTFSDotGit(name string) bool {
	var rest string
	switch {
	case hasPrefixFoldASCII(name, ".git"):
		rest = name[len(".git"):]
	case hasPrefixFoldASCII(name, "git~1"):
		rest = name[len("git~1"):]
	default:
		return false
	}
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '.', ' ':
		case ':', '\\':
			return true
		default:
			return false
		}
	}
	return true
}

// isHFSDotGit: ".git" in any (ASCII) case once the code points HFS+ ignores
// are left out. Bytes that are not UTF-8 never make ".git".
func isHFSDotGit(name string) bool {
	const want = ".git"
	n := 0 // bytes of want matched
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case hfsIgnored(r):
			continue
		case n == len(want) || r >= utf8.RuneSelf || lowerASCII(byte(r)) != want[n]:
			return false
		}
		n++
	}
	return n == len(want)
}

// hfsIgnored reports whether HFS+ leaves r out of a name when it compares
// names: zero-width joiners, directional marks, embeddings and overrides,
// the deprecated format characters and the byte order mark.
func hfsIgnored(r rune) bool {
	return r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff
}

// hasPrefixFoldASCII reports whether s starts with prefix, a lower-case
// ASCII string, ignoring the case of ASCII letters only.
func hasPrefixFoldASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(s[i]) != prefix[i] {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
