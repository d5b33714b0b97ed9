package glob

import (
	"regexp"
	"slices"
	"strings"
	"testing"

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
			assert.True(t, MatchFnmatch(s, tt.pattern), "%q should match %q", s, tt.pattern)
		}
		for _, s := range tt.no {
			assert.False(t, MatchFnmatch(s, tt.pattern), "%q should not match %q", s, tt.pattern)
		}
	}
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
		got := MatchFnmatch(name, pat) // must never panic
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

// TestFnmatchLiterals pins the byte checks made before the walk: a literal
// start, end or inner run missing from the name refuses it, and a literal
// U+FFFD, which matches a byte of invalid UTF-8, takes no part in them.
func TestFnmatchLiterals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		yes, no []string
	}{
		{"*.pem", []string{".pem", "a/b.pem", "x.pem.pem"}, []string{"a.pem.bak", "a.pe", "pem"}},
		{"**/id_rsa", []string{"id_rsa", "a/id_rsa", "a/b/id_rsa"}, []string{"id_rsa.pub", "a/xid_rsa.x", "id_rs"}},
		{"**/.ssh/*", []string{".ssh/x", "a/.ssh/", "a/.ssh/b/c"}, []string{".ssh", "a/ssh/x", "a/.sshx"}},
		{"src/*.go", []string{"src/a.go", "src/a/b.go"}, []string{"srca.go", "x/src/a.go", "src/a.gox"}},
		{"a*mid*z", []string{"amidz", "a/x/mid/y/z"}, []string{"amiz", "az", "amidzx"}},
		{"a?c*de?f", []string{"abcdexf", "a/c/de/f"}, []string{"abcdef", "abcdxef"}},
		{"abc", []string{"abc"}, []string{"ab", "abcabc", "xabc"}},
		{"[a]bc*", []string{"abc", "abcd"}, []string{"bbc", "bc"}},
		{"\uFFFD*", []string{"\xff", "\xffabc", "\uFFFDa"}, []string{"a\xff"}},
		{"*x\uFFFDy*", []string{"x\xfey", "ax\uFFFDyb"}, []string{"xy", "x\xfe\xfey"}},
		{"é*è", []string{"éè", "éaè"}, []string{"e\u0301è", "é"}},
	}
	for _, tt := range tests {
		for _, s := range tt.yes {
			assert.True(t, MatchFnmatch(s, tt.pattern), "%q should match %q", s, tt.pattern)
		}
		for _, s := range tt.no {
			assert.False(t, MatchFnmatch(s, tt.pattern), "%q should not match %q", s, tt.pattern)
		}
		for _, s := range append(tt.yes, tt.no...) {
			want := regexp.MustCompile(pyTranslate(tt.pattern)).MatchString(s)
			if strings.HasPrefix(tt.pattern, "**/") {
				want = want || regexp.MustCompile(pyTranslate(tt.pattern[3:])).MatchString(s)
			}
			assert.Equal(t, want, MatchFnmatch(s, tt.pattern), "oracle for %q against %q", s, tt.pattern)
		}
	}
}

// indexRune is Python's str.find(r, from, to) over p: -1 when r is not in
// p[from:to], from past to included.
func indexRune(p []rune, r rune, from, to int) int {
	for k := from; k < to; k++ {
		if p[k] == r {
			return k
		}
	}
	return -1
}
