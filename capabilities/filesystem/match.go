package filesystem

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Access patterns use Python's fnmatch.fnmatch semantics, not path.Match: '*'
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
// allocates nothing, since walkers match every entry they meet.

// pattern is a compiled access pattern.
type pattern struct {
	text   string
	m      matcher
	alt    *matcher  // text without its "**/" prefix
	except []pattern // a name these match is not matched after all
}

func compilePattern(text string) pattern {
	p := pattern{text: text, m: compileMatcher(text)}
	if len(text) > 3 && text[:3] == "**/" {
		alt := compileMatcher(text[3:])
		p.alt = &alt
	}
	return p
}

func compilePatterns(texts []string) []pattern {
	ps := make([]pattern, len(texts))
	for i, t := range texts {
		ps[i] = compilePattern(t)
	}
	return ps
}

func (p *pattern) match(name string) bool {
	if !p.m.match(name) && (p.alt == nil || !p.alt.match(name)) {
		return false
	}
	for i := range p.except {
		if p.except[i].match(name) {
			return false
		}
	}
	return true
}

// compileExcepting compiles a list in which a pattern starting with "!"
// exempts what it matches from every other pattern of the list, as
// secret_patterns does.
func compileExcepting(texts []string) []pattern {
	var plain, except []string
	for _, t := range texts {
		if rest, ok := strings.CutPrefix(t, "!"); ok {
			except = append(except, rest)
		} else {
			plain = append(plain, t)
		}
	}
	ps := compilePatterns(plain)
	ex := compilePatterns(except)
	for i := range ps {
		ps[i].except = ex
	}
	return ps
}

// fnmatch reports whether name matches pattern (compiling it on each call;
// hot paths compile once with compilePattern).
func fnmatch(name, pat string) bool {
	p := compilePattern(pat)
	return p.match(name)
}

// matchAny returns the first pattern, in order, that matches rel or, with
// ancestors set, any directory above rel ("a" and "a/b" for "a/b/c"): denied
// and protected patterns cover whole subtrees.
func matchAny(ps []pattern, rel string, ancestors bool) (string, bool) {
	for i := range ps {
		p := &ps[i]
		if p.match(rel) {
			return p.text, true
		}
		if !ancestors {
			continue
		}
		for j := 0; j < len(rel); j++ {
			if rel[j] == '/' && p.match(rel[:j]) {
				return p.text, true
			}
		}
	}
	return "", false
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

type matcher struct{ toks []token }

// charClass is a [...] set: a union of inclusive ranges, possibly negated.
type charClass struct {
	negate bool
	ranges [][2]rune
}

func (c *charClass) contains(r rune) bool {
	in := false
	for _, rg := range c.ranges {
		if rg[0] <= r && r <= rg[1] {
			in = true
			break
		}
	}
	return in != c.negate
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
	return matcher{toks: toks}
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
		for {
			k = indexRune(p, '-', k, j)
			if k < 0 {
				break
			}
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

func indexRune(p []rune, r rune, from, to int) int {
	for k := from; k < to; k++ {
		if p[k] == r {
			return k
		}
	}
	return -1
}
