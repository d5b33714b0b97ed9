package glob

import (
	"errors"
	"math/bits"
	"strings"
)

// The find_files dialect follows Python's Path.glob (3.13), not fnmatch: the
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
// Unlike Path.glob, find_files's walker never enters a symlinked directory, whichever
// component would lead into it; a symlink can still be a result.
//
// A pattern is matched by a small automaton over components: a state is the
// set of pattern components that may match next, one bit each, which the
// walker carries from each directory to its entries. That bounds a pattern to
// MaxFindFilesParts components, far beyond any real use.

// MaxFindFilesParts bounds the components of a find_files pattern.
const MaxFindFilesParts = 64

type findPart struct {
	recursive bool // "**"
	m         matcher
}

// FindFiles is a compiled find_files pattern.
type FindFiles struct {
	parts    []findPart
	dirsOnly bool
}

// State is the set of pattern components that may match the next path
// component: bit i for parts[i], bit len(parts) for "the whole pattern has
// matched".
type State uint64

// The errors of CompileFindFiles.
var (
	ErrAbsolute = errors.New("a find_files pattern must be relative")
	ErrInvalid  = errors.New("not a valid find_files pattern")
)

// CompileFindFiles compiles a find_files pattern: ErrAbsolute for one that
// starts with '/', ErrInvalid for an empty one, one with a ".." component or
// a NUL byte, or one of MaxFindFilesParts components or more.
func CompileFindFiles(pattern string) (*FindFiles, error) {
	if strings.HasPrefix(pattern, "/") {
		return nil, ErrAbsolute
	}
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, ErrInvalid
	}
	g := &FindFiles{dirsOnly: strings.HasSuffix(pattern, "/")}
	for _, c := range strings.Split(pattern, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, ErrInvalid
		case "**":
			if n := len(g.parts); n > 0 && g.parts[n-1].recursive {
				continue // "**/**" is "**"
			}
			g.parts = append(g.parts, findPart{recursive: true})
		default:
			g.parts = append(g.parts, findPart{m: compileMatcher(c)})
		}
	}
	if len(g.parts) == 0 || len(g.parts) >= MaxFindFilesParts {
		return nil, ErrInvalid
	}
	return g, nil
}

// Start is the state of the walk root.
func (g *FindFiles) Start() State { return g.closure(1) }

// closure adds, for every "**" in s, the component after it: "**" may match
// no directory at all.
func (g *FindFiles) closure(s State) State {
	for i, p := range g.parts {
		if p.recursive && s&(1<<i) != 0 {
			s |= 1 << (i + 1)
		}
	}
	return s
}

// Step returns the state after an entry called name in a directory whose
// state is s. An inner "**" consumes only a real directory (realDir: not a
// symlink to one), since walks never enter symlinked directories; a trailing
// "**" consumes any entry.
func (g *FindFiles) Step(s State, name string, realDir bool) State {
	var next State
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

// Matched reports whether an entry with state s is a result, given whether
// its target is a directory.
func (g *FindFiles) Matched(s State, dir bool) bool {
	return s&(1<<len(g.parts)) != 0 && (dir || !g.dirsOnly)
}

// Alive reports whether entries below a directory with state s can match.
func (g *FindFiles) Alive(s State) bool {
	return s&^(1<<len(g.parts)) != 0
}
