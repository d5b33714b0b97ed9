package filesystem

import (
	"math/bits"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
)

// find_files patterns follow Python's Path.glob (3.13), not fnmatch: the
// pattern is cut into components at '/', and each component matches one
// component of a path with fnmatch's rules ('*', '?', [seq], [!seq]; within
// a component '*' cannot cross a '/'). A "**" component matches zero or more
// directories; as the last component it matches every entry below, files and
// directories alike, including the directory before it ("a/**" yields "a/").
// "**" inside a longer component is a plain '*'. A trailing '/' keeps only
// directories. "." components are dropped; a ".." component, an empty
// pattern and an absolute one are refused. The walk root itself is never a
// result.
//
// Unlike Path.glob, no walker here enters a symlinked directory, whichever
// component would lead into it; a symlink can still be a result.
//
// A pattern is matched by a small automaton over components: a state is the
// set of pattern components that may match next, one bit each, which the
// walker carries from each directory to its entries. That bounds a pattern to
// maxGlobParts components, far beyond any real use.

const maxGlobParts = 64

type globPart struct {
	recursive bool // "**"
	m         matcher
}

// glob is a compiled find_files pattern.
type glob struct {
	parts    []globPart
	dirsOnly bool
}

// globState is the set of pattern components that may match the next path
// component: bit i for parts[i], bit len(parts) for "the whole pattern has
// matched".
type globState uint64

// compileGlob compiles a find_files pattern, or returns the retry error the
// model gets for it.
func compileGlob(pattern string) (*glob, error) {
	if strings.HasPrefix(pattern, "/") {
		return nil, capabilities.Retry("Pattern %s must be relative to the search path, not absolute.", pyRepr(pattern))
	}
	invalid := capabilities.Retry("Pattern %s is not a valid glob pattern.", pyRepr(pattern))
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, invalid
	}
	g := &glob{dirsOnly: strings.HasSuffix(pattern, "/")}
	for _, c := range strings.Split(pattern, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, invalid
		case "**":
			if n := len(g.parts); n > 0 && g.parts[n-1].recursive {
				continue // "**/**" is "**"
			}
			g.parts = append(g.parts, globPart{recursive: true})
		default:
			g.parts = append(g.parts, globPart{m: compileMatcher(c)})
		}
	}
	if len(g.parts) == 0 || len(g.parts) >= maxGlobParts {
		return nil, invalid
	}
	return g, nil
}

// start is the state of the walk root.
func (g *glob) start() globState { return g.closure(1) }

// closure adds, for every "**" in s, the component after it: "**" may match
// no directory at all.
func (g *glob) closure(s globState) globState {
	for i, p := range g.parts {
		if p.recursive && s&(1<<i) != 0 {
			s |= 1 << (i + 1)
		}
	}
	return s
}

// step returns the state after an entry called name in a directory whose
// state is s. An inner "**" consumes only a real directory (realDir: not a
// symlink to one), since walks never enter symlinked directories; a trailing
// "**" consumes any entry.
func (g *glob) step(s globState, name string, realDir bool) globState {
	var next globState
	for rest := s &^ (1 << len(g.parts)); rest != 0; rest &= rest - 1 {
		i := bits.TrailingZeros64(uint64(rest))
		p := &g.parts[i]
		switch {
		case !p.recursive:
			if p.m.match(name) {
				next |= 1 << (i + 1)
			}
		case i == len(g.parts)-1 || realDir:
			next |= 1 << i
		}
	}
	return g.closure(next)
}

// matched reports whether an entry with state s is a result, given whether
// its target is a directory.
func (g *glob) matched(s globState, dir bool) bool {
	return s&(1<<len(g.parts)) != 0 && (dir || !g.dirsOnly)
}

// alive reports whether entries below a directory with state s can match.
func (g *glob) alive(s globState) bool {
	return s&^(1<<len(g.parts)) != 0
}
