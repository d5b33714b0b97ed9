package glob

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// The fnmatch dialect is Python's fnmatch.fnmatch, not path.Match: '*'
// matches any run of characters including '/', '?' any one character
// including '/', [seq] and [!seq] are character classes (with fnmatch's
// quirks: a leading ']' is literal, empty ranges such as z-a are dropped), an
// unclosed '[' is literal, and there is no escaping. Matching is
// case-sensitive and counts in code points. A pattern starting with "**/" is
// tried a second time without that prefix, so "**/secrets*" also matches
// "secrets.yaml" at the top level.
//
// Patterns are compiled once into tokens; matching walks the name with a
// single backtracking point (the last '*'), which is linear in practice and
// allocates nothing, since walkers match every entry they meet. Before that
// walk, the pattern's literal text is looked for in the name as bytes: its
// literal start and end, and every other literal run between wildcards. A
// walker's entries rarely match an access pattern, and most fail there, at
// the cost of a strings.HasSuffix, without decoding a rune.

// Fnmatch is a compiled fnmatch pattern.
type Fnmatch struct {
	m   matcher
	alt *matcher // the pattern without its "**/" prefix
}

// NewFnmatch compiles pat. Every string is a pattern: fnmatch has no syntax
// errors.
func NewFnmatch(pat string) Fnmatch {
	p := Fnmatch{m: compileMatcher(pat)}
	if len(pat) > 3 && pat[:3] == "**/" {
		alt := compileMatcher(pat[3:])
		p.alt = &alt
	}
	return p
}

// Match reports whether name matches. It allocates nothing.
func (p *Fnmatch) Match(name string) bool {
	return p.m.match(name) || (p.alt != nil && p.alt.match(name))
}

// MatchFnmatch reports whether name matches pat, compiling pat on each call
// (hot paths compile once with NewFnmatch).
func MatchFnmatch(name, pat string) bool {
	p := NewFnmatch(pat)
	return p.Match(name)
}

type tokKind uint8

const (
	tokLit   tokKind = iota // one literal code point
	tokAny                  // '?'
	tokStar                 // '*'
	tokClass                // [...]
)

type token struct {
	kind  tokKind
	r     rune
	class *charClass
}

type matcher struct {
	toks []token
	// Literal text every match holds, in bytes: what the name starts with
	// (before any wildcard), ends with (after the last one), and contains
	// (the other literal runs). A run stops at a wildcard and at a literal
	// U+FFFD, which also matches a byte of invalid UTF-8 in the name.
	prefix, suffix string
	inner          []string
}

// charClass is a [...] set: a union of inclusive ranges, possibly negated.
type charClass struct {
	negate bool
	ranges [][2]rune
}

func (c *charClass) contains(r rune) bool {
	for _, rg := range c.ranges {
		if rg[0] <= r && r <= rg[1] {
			return !c.negate
		}
	}
	return c.negate
}

func (t *token) matches(r rune) bool {
	switch t.kind {
	case tokLit:
		return t.r == r
	case tokAny:
		return true
	default:
		return t.class.contains(r)
	}
}

func (m *matcher) match(s string) bool {
	if !strings.HasSuffix(s, m.suffix) || !strings.HasPrefix(s, m.prefix) {
		return false
	}
	for _, lit := range m.inner {
		if !strings.Contains(s, lit) {
			return false
		}
	}
	toks := m.toks
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(toks) && toks[ti].kind == tokStar {
			starTi, starSi = ti, si
			ti++
			continue
		}
		if si == len(s) && ti == len(toks) {
			return true
		}
		if si < len(s) && ti < len(toks) {
			r, size := utf8.DecodeRuneInString(s[si:])
			if toks[ti].matches(r) {
				ti++
				si += size
				continue
			}
		}
		// Mismatch: let the last '*' swallow one more character.
		if starTi < 0 || starSi == len(s) {
			return false
		}
		_, size := utf8.DecodeRuneInString(s[starSi:])
		starSi += size
		si, ti = starSi, starTi+1
	}
}

// compileMatcher translates a pattern the way Python's fnmatch.translate does.
func compileMatcher(pat string) matcher {
	p := []rune(pat)
	var toks []token
	for i := 0; i < len(p); {
		c := p[i]
		i++
		switch c {
		case '*':
			if len(toks) == 0 || toks[len(toks)-1].kind != tokStar {
				toks = append(toks, token{kind: tokStar})
			}
		case '?':
			toks = append(toks, token{kind: tokAny})
		case '[':
			j := i
			if j < len(p) && p[j] == '!' {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				j++
			}
			if j >= len(p) {
				toks = append(toks, token{kind: tokLit, r: '['})
				continue
			}
			toks = append(toks, token{kind: tokClass, class: compileClass(p, i, j)})
			i = j + 1
		default:
			toks = append(toks, token{kind: tokLit, r: c})
		}
	}
	m := matcher{toks: toks}
	m.literals()
	return m
}

// literals sets m's prefix, suffix and inner runs from its tokens. A run
// that matched in the name decoded as exactly its own UTF-8 bytes, so the
// name holds those bytes: each check is necessary, never sufficient.
func (m *matcher) literals() {
	lit := func(t token) bool { return t.kind == tokLit && t.r != utf8.RuneError }
	text := func(toks []token) string {
		r := make([]rune, len(toks))
		for i, t := range toks {
			r[i] = t.r
		}
		return string(r)
	}
	toks := m.toks
	i := 0
	for i < len(toks) && lit(toks[i]) {
		i++
	}
	if m.prefix = text(toks[:i]); i == len(toks) { // no wildcard at all
		m.suffix = m.prefix
		return
	}
	j := len(toks) // toks[i] is no literal, so j stops after it
	for lit(toks[j-1]) {
		j--
	}
	m.suffix = text(toks[j:])
	for k := i + 1; k < j; k++ {
		if start := k; lit(toks[k]) {
			for k < j && lit(toks[k]) {
				k++
			}
			m.inner = append(m.inner, text(toks[start:k]))
		}
	}
}

// compileClass builds the set p[i:j] (between '[' and ']') denotes. It follows
// fnmatch.translate step by step: the text is cut into chunks at the hyphens
// that form ranges, ranges whose ends are out of order are removed by merging
// their chunks, and the chunks are joined back with range hyphens. A range
// joins the last character of one chunk and the first of the next; every
// other character is literal. A leading '!' negates, and a set that comes out
// as just "!" matches any character.
func compileClass(p []rune, i, j int) *charClass {
	var chunks [][]rune
	if !slices.Contains(p[i:j], '-') {
		chunks = [][]rune{p[i:j]}
	} else {
		k := i + 1
		if p[i] == '!' {
			k = i + 2
		}
		for k < j { // fnmatch's pat.find('-', k, j)
			d := slices.Index(p[k:j], '-')
			if d < 0 {
				break
			}
			k += d
			chunks = append(chunks, p[i:k])
			i = k + 1
			k += 3
		}
		if chunk := p[i:j]; len(chunk) > 0 {
			chunks = append(chunks, chunk)
		} else {
			last := len(chunks) - 1
			chunks[last] = append(slices.Clip(chunks[last]), '-')
		}
		for k := len(chunks) - 1; k > 0; k-- {
			prev, next := chunks[k-1], chunks[k]
			if prev[len(prev)-1] > next[0] {
				chunks[k-1] = slices.Concat(prev[:len(prev)-1], next[1:])
				chunks = slices.Delete(chunks, k, k+1)
			}
		}
	}
	cls := &charClass{}
	switch {
	case len(chunks) == 1 && len(chunks[0]) == 0: // empty set: never matches
		return cls
	case len(chunks) == 1 && len(chunks[0]) == 1 && chunks[0][0] == '!': // "[!]"-like: any character
		cls.negate = true
		return cls
	}
	skipFirst, brokenRange := false, false
	if chunks[0][0] == '!' {
		cls.negate, skipFirst = true, true
		// A chunk that was only the '!' leaves its range hyphen first in
		// the set, where it is a literal.
		brokenRange = len(chunks[0]) == 1
	}
	for c, chunk := range chunks {
		for q, r := range chunk {
			if c == 0 && q == 0 && skipFirst {
				continue
			}
			rangeEnd := c > 0 && q == 0
			if rangeEnd && !(c == 1 && brokenRange) {
				continue // added with its start
			}
			if c < len(chunks)-1 && q == len(chunk)-1 && !(c == 0 && brokenRange) {
				cls.ranges = append(cls.ranges, [2]rune{r, chunks[c+1][0]})
				continue
			}
			cls.ranges = append(cls.ranges, [2]rune{r, r})
		}
		if c == 0 && brokenRange {
			cls.ranges = append(cls.ranges, [2]rune{'-', '-'})
		}
	}
	return cls
}
