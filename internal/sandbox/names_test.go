package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Names that would mislead a reader are shown escaped, and the escaped form
// reverses to the raw name.
func TestNameEscaping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, shown string }{
		{"plain.txt", "plain.txt"},
		{`back\slash`, `back\slash`},
		{"new\nline", `new\x0aline`},
		{"esc\x1b[31m", `esc\x1b[31m`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"txt.\u202eexe", `txt.\u202eexe`},
		{"mixed\\\n", `mixed\\\x0a`},
		{"repl\ufffd", `repl\ufffd`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085", `c1\u0085`},
		{"日本語.md", "日本語.md"},
	} {
		assert.Equal(t, tc.shown, DisplayName(tc.raw), "%q", tc.raw)
		if tc.raw != tc.shown {
			back, ok := UnescapeName(tc.shown)
			assert.True(t, ok, tc.shown)
			assert.Equal(t, tc.raw, back, "reversible")
		}
	}
	for _, s := range []string{`a\qb`, `a\x4`, `a\x41`, `\\`, `x\`} {
		_, ok := UnescapeName(s)
		assert.False(t, ok, "%s is not an escaped form", s)
	}
	// One component never unescapes to a path: a name shown escaped (here
	// for its \x01) with a slash or NUL spelled out in it is not an escaped
	// form, or "bad\x01\x2f.." would name the root's parent.
	for _, s := range []string{`bad\x01\x2f..`, `\x2f`, `bad\u0001\u002fetc`, `bad\x01\x00`} {
		_, ok := UnescapeName(s)
		assert.False(t, ok, "%s", s)
	}
}

// The names NTFS or HFS+ may take for ".git", as git's core.protectNTFS and
// core.protectHFS checks recognise them, and names they do not.
func TestIsDotGit(t *testing.T) {
	t.Parallel()
	dotGit := []string{
		".git", ".GIT", ".Git", ".gIt", ".giT",
		// NTFS: trailing dots and spaces, streams, the 8.3 short name.
		".git.", ".git ", ".git...", ".git . .", ".GIT. ",
		".git::$INDEX_ALLOCATION", ".git:", ".git:stream", ".git. :x", ".git\\config",
		"git~1", "GIT~1", "Git~1", "git~1.", "git~1 ", "git~1::$INDEX_ALLOCATION",
	}
	// HFS+: the code points it ignores, anywhere in the name, in any case.
	ignored := []rune{
		0x200c, 0x200d, 0x200e, 0x200f,
		0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
		0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f,
		0xfeff,
	}
	for _, r := range ignored {
		for _, base := range []string{".git", ".GIT"} {
			for i := 0; i <= len(base); i++ {
				dotGit = append(dotGit, base[:i]+string(r)+base[i:])
			}
		}
	}
	dotGit = append(dotGit, "\u200c\u200d.g\ufeffi\u202et\u206f")
	for _, name := range dotGit {
		assert.True(t, IsDotGit(name), "%+q reaches .git", name)
	}

	for _, name := range []string{
		"", ".", "..", "git", ".gi", ".gitignore", ".gitmodules", ".git-credentials", ".gitx", ".git.x", ".git x",
		"..git", " .git", "x.git", "git", "git~", "git~2", "git~10", "git~1x", ".git~1", "GIT~1~1",
		// Neither file system's rule alone: an ignored code point and then
		// a trailing dot, a code point HFS+ keeps, look-alike letters,
		// bytes that are not UTF-8.
		".git\u200c.", "\u200b.git", ".g\u0131t", ".G\u0130T", "\uff0egit", ".\uff47it", "\xff.git", ".git\xff",
		".git\ufffd", "\u200c", ".\u200cgi",
	} {
		assert.False(t, IsDotGit(name), "%+q does not reach .git", name)
	}
}

func TestEntryName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"pre-commit":             "pre-commit",
		"Pre-Commit":             "pre-commit",
		"pre-commit.":            "pre-commit",
		"pre-commit . .":         "pre-commit",
		"pre-commit::$DATA":      "pre-commit",
		"pre-commit:stream":      "pre-commit",
		"pre-commit. :x":         "pre-commit",
		"pre-commit\\x":          "pre-commit",
		"pre\u200c-commit\ufeff": "pre-commit",
		"pre-commit.sample":      "pre-commit.sample",
		" pre-commit":            " pre-commit",
		"pre-commit~1":           "pre-commit~1",
		"":                       "",
		"...":                    "",
	} {
		assert.Equal(t, want, EntryName(name), "%+q", name)
	}
}
