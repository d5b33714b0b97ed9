package filesystem

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/stretchr/testify/assert"
)

func TestFnmatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		yes, no []string
	}{
		{"*.py", []string{"a.py", "src/main.py", ".py", "a/b/c.py"}, []string{"a.pyc", "a.PY", "py"}},
		{"*", []string{"", ".", "a/b", ".env"}, nil},
		{"?", []string{"a", "/", "é"}, []string{"", "ab"}},
		{"src/*", []string{"src/a", "src/a/b", "src/"}, []string{"src", "x/src/a"}},
		{"[abc]", []string{"a", "c"}, []string{"d", "ab", ""}},
		{"[!abc]", []string{"d", "/"}, []string{"a"}},
		{"[]]", []string{"]"}, []string{"["}},
		{"[!]]", []string{"a"}, []string{"]"}},
		{"[]a]", []string{"]", "a"}, []string{"b"}},
		{"[a-c]", []string{"a", "b", "c"}, []string{"d", "-"}},
		{"[a-]", []string{"a", "-"}, []string{"b"}},
		{"[-a]", []string{"a", "-"}, []string{"b"}},
		{"[!-a]", []string{"b"}, []string{"-", "a"}},
		{"[a-c-e]", []string{"b", "-", "e"}, []string{"d"}},
		{"[z-a]", nil, []string{"a", "z", "m", "-"}},
		{"[az-ab]", []string{"a", "b"}, []string{"z", "m", "-"}},
		{"[!z-a]", []string{"a", "q", "-"}, nil},
		{"[z-a!-#]", []string{"a", "!", "$"}, []string{"-", "#"}},
		{"[a--b]", []string{"b"}, []string{"a", "-"}},
		{"[\\]", []string{"\\"}, []string{"]"}},
		{"[^a]", []string{"^", "a"}, []string{"b"}},
		{"[", []string{"["}, []string{""}},
		{"a[", []string{"a["}, []string{"a"}},
		{"[!]", []string{"[!]"}, []string{"!"}},
		{"[]", []string{"[]"}, nil},
		{`\*`, []string{`\x`, `\`}, []string{"*"}},
		{"**/secrets*", []string{"secrets.yaml", "config/secrets.yaml", "a/b/secrets"}, []string{"mysecrets", "x/y"}},
		{"**/x", []string{"x", "a/x"}, []string{"x/y"}},
		{"a*b*c", []string{"abc", "a/b/c", "aXbYbZc"}, []string{"acb", "abcd"}},
		{"*a*a*a*", []string{"aaa", "banana/a"}, []string{"aa", strings.Repeat("b", 100)}},
		{"é?", []string{"éa", "éé"}, []string{"é"}},
	}
	for _, tt := range tests {
		for _, s := range tt.yes {
			assert.True(t, fnmatch(s, tt.pattern), "%q should match %q", s, tt.pattern)
		}
		for _, s := range tt.no {
			assert.False(t, fnmatch(s, tt.pattern), "%q should not match %q", s, tt.pattern)
		}
	}
}

func TestMatchAnyAncestors(t *testing.T) {
	t.Parallel()
	ps := compilePatterns([]string{"private", "*.log"})
	tests := []struct {
		rel       string
		ancestors bool
		want      string
	}{
		{"private", false, "private"},
		{"private/secret.txt", false, ""},
		{"private/secret.txt", true, "private"},
		{"a/private/x", true, ""},
		{"logs/x.log/y", true, "*.log"},
		{"privateer/x", true, ""},
	}
	for _, tt := range tests {
		got, _ := matchAny(ps, tt.rel, tt.ancestors)
		assert.Equal(t, tt.want, got, "%s ancestors=%v", tt.rel, tt.ancestors)
	}
}

func TestDefaultProtectedPatterns(t *testing.T) {
	t.Parallel()
	ps := compilePatterns(DefaultProtectedPatterns)
	for _, rel := range []string{
		".git/config", ".git/refs/heads/main", ".env", ".env.local", "server.pem", "certs/server.pem", "id.key",
		"secrets.yaml", "config/secrets.json", "apps/.env", "apps/web/.env", "apps/.env.prod", "vendor/lib/.git/HEAD",
	} {
		_, ok := matchAny(ps, rel, true)
		assert.True(t, ok, "%s should be protected", rel)
	}
	for _, rel := range []string{".gitignore", "notes.md", ".git", "env", "src/environment.go", "keys.txt"} {
		_, ok := matchAny(ps, rel, true)
		assert.False(t, ok, "%s should not be protected", rel)
	}
}

func TestAccessChecks(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{
		AllowedPatterns: []string{"*.py", "*.txt", "*.md", "it's/*", "private/*"},
		DeniedPatterns:  []string{"config/*", "private"},
		SecretPatterns:  []string{}, // the reference's behaviour
	}, nil)
	fs := c.fs
	tests := []struct {
		rel, read, write string
	}{
		{"a.py", "", ""},
		{"notes.md", "", ""},
		{"config/secret.txt", "Path 'config/secret.txt' is denied by pattern 'config/*'.", "Path 'config/secret.txt' is denied by pattern 'config/*'."},
		{"private/x.txt", "Path 'private/x.txt' is denied by pattern 'private'.", "Path 'private/x.txt' is denied by pattern 'private'."},
		{"image.png", "Path 'image.png' does not match any allowed pattern.", "Path 'image.png' does not match any allowed pattern."},
		{".env.txt", "", "Path '.env.txt' is protected (matches '.env.*')."},
		{"deploy.key", "Path 'deploy.key' does not match any allowed pattern.", "Path 'deploy.key' is protected (matches '*.key')."},
		{"it's/a", "", ""},
		{"it's/.env", "", "Path \"it's/.env\" is protected (matches '*/.env')."},
		{"it's", "Path \"it's\" does not match any allowed pattern.", "Path \"it's\" does not match any allowed pattern."},
	}
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		m, _ := capabilities.AsRetry(err)
		return m
	}
	for _, tt := range tests {
		assert.Equal(t, tt.read, msg(fs.checkRead(tt.rel)), "read %s", tt.rel)
		assert.Equal(t, tt.write, msg(fs.checkWrite(tt.rel)), "write %s", tt.rel)
		assert.Equal(t, tt.read == "", fs.readable(tt.rel), "readable %s", tt.rel)
	}
	assert.NoError(t, fs.checkWalkRoot("."), "a walk root is not gated by allowed patterns")
	assert.NoError(t, fs.checkWalkRoot("config"), "config/* does not cover config itself")
	assert.Error(t, fs.checkWalkRoot("config/sub"))
	assert.Error(t, fs.checkWalkRoot("private/sub"))

	star, _ := newTestFS(t, Options{DeniedPatterns: []string{"*"}}, nil)
	assert.Equal(t, "Path '.' is denied by pattern '*'.", msg(star.fs.checkWalkRoot(".")))
}

// Walkers call readable for every entry: it must not allocate.
func TestReadableDoesNotAllocate(t *testing.T) {
	c, _ := newTestFS(t, Options{AllowedPatterns: []string{"*.go", "[a-z]*.md"}, DeniedPatterns: []string{"vendor", "**/testdata/*"}}, nil)
	allocs := testing.AllocsPerRun(100, func() {
		c.fs.readable("src/pkg/deep/file_test.go")
		c.fs.readable("vendor/x/y.go")
		c.fs.readable("docs/readme.md")
	})
	assert.Zero(t, allocs)
}

// pyTranslate is an oracle for fnmatch: a line-by-line port of Python's
// fnmatch.translate to Go regexp syntax, kept separate from the matcher under
// test.
func pyTranslate(pat string) string {
	p := []rune(pat)
	var res strings.Builder
	lastStar := false
	for i, n := 0, len(p); i < n; {
		c := p[i]
		i++
		if c == '*' {
			if !lastStar {
				res.WriteString(".*")
			}
			lastStar = true
			continue
		}
		lastStar = false
		switch c {
		case '?':
			res.WriteString(".")
		case '[':
			j := i
			if j < n && p[j] == '!' {
				j++
			}
			if j < n && p[j] == ']' {
				j++
			}
			for j < n && p[j] != ']' {
				j++
			}
			if j >= n {
				res.WriteString(`\[`)
				continue
			}
			var stuff string
			if !slices.Contains(p[i:j], '-') {
				stuff = strings.ReplaceAll(string(p[i:j]), `\`, `\\`)
			} else {
				var chunks []string
				k := i + 1
				if p[i] == '!' {
					k = i + 2
				}
				for {
					k = indexRune(p, '-', k, j)
					if k < 0 {
						break
					}
					chunks = append(chunks, string(p[i:k]))
					i = k + 1
					k += 3
				}
				if chunk := string(p[i:j]); chunk != "" {
					chunks = append(chunks, chunk)
				} else {
					chunks[len(chunks)-1] += "-"
				}
				for k := len(chunks) - 1; k > 0; k-- {
					a, b := []rune(chunks[k-1]), []rune(chunks[k])
					if a[len(a)-1] > b[0] {
						chunks[k-1] = string(a[:len(a)-1]) + string(b[1:])
						chunks = slices.Delete(chunks, k, k+1)
					}
				}
				for k, s := range chunks {
					chunks[k] = strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "-", `\-`)
				}
				stuff = strings.Join(chunks, "-")
			}
			stuff = regexp.MustCompile(`([&~|])`).ReplaceAllString(stuff, `\$1`)
			i = j + 1
			switch {
			case stuff == "":
				res.WriteString(`[^\x00-\x{10FFFF}]`) // Python's (?!): never matches
			case stuff == "!":
				res.WriteString(".")
			default:
				if stuff[0] == '!' {
					stuff = "^" + stuff[1:]
				} else if stuff[0] == '^' || stuff[0] == '[' {
					stuff = `\` + stuff
				}
				res.WriteString("[" + stuff + "]")
			}
		default:
			res.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return `(?s)^(?:` + res.String() + `)$`
}

func FuzzFnmatch(f *testing.F) {
	for _, s := range [][2]string{
		{"src/main.py", "*.py"}, {"]", "[]]"}, {"-", "[a-]"}, {"b", "[z-a!-#]"}, {"x", "[!]"}, {"a/b", "a?b"},
		{"secrets", "**/secrets*"}, {"\\", "[\\]"}, {"&", "[&&]"}, {"é", "[à-ê]"}, {"ab", "[!a-c-e]b"}, {"a-", "*[--/]"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, pat string) {
		got := fnmatch(name, pat) // must never panic
		re, err := regexp.Compile(pyTranslate(pat))
		if err != nil {
			t.Skip() // Python's re would reject it too
		}
		want := re.MatchString(name)
		if strings.HasPrefix(pat, "**/") {
			want = want || regexp.MustCompile(pyTranslate(pat[3:])).MatchString(name)
		}
		if got != want {
			t.Fatalf("fnmatch(%q, %q) = %v, oracle %v (%s)", name, pat, got, want, pyTranslate(pat))
		}
	})
}
