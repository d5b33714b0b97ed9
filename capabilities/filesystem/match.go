package filesystem

import (
	"slices"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/internal/glob"
)

// Access patterns are the fnmatch dialect of internal/glob (Python's
// fnmatch.fnmatch, a "**/" prefix also tried without it); here they become
// the allowed, denied, protected and secret lists, with secret_patterns' "!"
// exceptions.

// pattern is a compiled access pattern.
type pattern struct {
	text   string
	m      glob.Fnmatch
	except []pattern // a name these match is not matched after all
}

func compilePattern(text string) pattern {
	return pattern{text: text, m: glob.NewFnmatch(text)}
}

func compilePatterns(texts []string) []pattern {
	ps := make([]pattern, len(texts))
	for i, t := range texts {
		ps[i] = compilePattern(t)
	}
	return ps
}

func (p *pattern) match(name string) bool {
	if !p.m.Match(name) {
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

// patternSet is what an FS matches paths against, compiled from the pattern
// lists of its options. One set serves every FS built from the same lists
// (patternSets), so nothing changes it once compiled: neither its slices nor
// their patterns, nor the exceptions they share. Its slices are clipped, so
// that an append to one copies it.
type patternSet struct {
	allowed, denied, protected []pattern
	secret                     []pattern // the secret patterns alone (denied holds them too)
}

// patternLists are the option lists a patternSet is compiled from.
type patternLists struct {
	allowed, denied, protected, secret []string
}

func (l patternLists) equal(o patternLists) bool {
	return slices.Equal(l.allowed, o.allowed) && slices.Equal(l.denied, o.denied) &&
		slices.Equal(l.protected, o.protected) && slices.Equal(l.secret, o.secret)
}

// clone copies the lists, so that a caller changing its slices afterwards
// does not change a key patternSets holds.
func (l patternLists) clone() patternLists {
	return patternLists{slices.Clone(l.allowed), slices.Clone(l.denied), slices.Clone(l.protected), slices.Clone(l.secret)}
}

func compilePatternSet(l patternLists) *patternSet {
	secret := slices.Clip(compileExcepting(l.secret))
	return &patternSet{
		allowed: slices.Clip(compilePatterns(l.allowed)),
		// Secrets behave exactly like denied paths (decision D10).
		denied:    slices.Clip(append(compilePatterns(l.denied), secret...)),
		protected: slices.Clip(compilePatterns(l.protected)),
		secret:    secret,
	}
}

// patternSets are the pattern sets compiled last, for the last
// maxPatternSets distinct lists, most recently used first. A batch builds a
// FileSystem per job, all from the spec's same lists (by default some sixty
// patterns), so one compilation serves them all; a list seen after eight
// others is compiled again. Measured with BenchmarkNewClose (New with the
// default options, the tool list, Close): 21 against 141 µs, 4.7 against
// 91 KB and 61 against 995 allocations a job with it and without; with
// BenchmarkJobLifecycle/watch_changes=false (New, three calls, Close), 581
// against 719 µs, 12 against 99 KB and 195 against 1129 allocations a job
// (medians of seven interleaved runs on a two-CPU machine at load 1.5).
var patternSets struct {
	sync.Mutex
	entries []patternSetEntry
}

type patternSetEntry struct {
	lists patternLists // copied: the caller's slices may change afterwards
	set   *patternSet
}

// maxPatternSets bounds patternSets: a process serves a few specs at once,
// rarely more.
const maxPatternSets = 8

// compiledPatternSet is the patternSet of the normalized opts, compiled
// once for the same lists in patternSets. It compiles under the lock, so that
// FileSystems built at once from the same lists share one compilation.
func compiledPatternSet(opts Options) *patternSet {
	l := patternLists{
		allowed:   opts.AllowedPatterns,
		denied:    opts.DeniedPatterns,
		protected: opts.ProtectedPatterns,
		secret:    opts.SecretPatterns,
	}
	patternSets.Lock()
	defer patternSets.Unlock()
	es := patternSets.entries
	var e patternSetEntry
	if i := slices.IndexFunc(es, func(e patternSetEntry) bool { return e.lists.equal(l) }); i >= 0 {
		e = es[i]
		es = slices.Delete(es, i, i+1)
	} else {
		e = patternSetEntry{lists: l.clone(), set: compilePatternSet(l)}
		es = es[:min(len(es), maxPatternSets-1)] // the least recently used goes
	}
	patternSets.entries = slices.Insert(es, 0, e)
	return e.set
}
