package filesystem

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/ordered"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/search"
	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

func newSearchFiles(fs *FS) capabilities.Tool {
	return &tool[searchArgs]{
		name: ToolSearchFiles,
		description: "Search file contents with a regular expression (Go RE2 syntax: no lookarounds or " +
			"backreferences), line by line. Returns path:line:text for each matching line, sorted by path. " +
			"path may be a directory (searched recursively) or a file; include_glob keeps only files whose " +
			"path relative to the root matches it (fnmatch: '*' also matches '/'). Hidden and binary files " +
			"are skipped. A line longer than " + strconv.Itoa(MaxLineChars) + " characters is shown as the part " +
			"around its first match.",
		params: sharedSchema(schemaKey{tool: ToolSearchFiles}, searchFilesSchema),
		call: func(ctx context.Context, args searchArgs) (string, error) {
			return fs.searchFiles(ctx, args.Pattern, deref(args.Path, "."), deref(args.IncludeGlob, ""))
		},
	}
}

func searchFilesSchema(schemaKey) map[string]any {
	return object(map[string]any{
		"pattern":      param("string", "The regular expression to search for."),
		"path":         param("string", "The directory or file to search, relative to the working directory. Default '.'."),
		"include_glob": param("string", "Only search files whose root-relative path matches this fnmatch glob, where '*' also matches '/': '*.py' matches Python files at any depth."),
	}, "pattern")
}

type searchArgs struct {
	Pattern     string  `json:"pattern"`
	Path        *string `json:"path,omitempty"`
	IncludeGlob *string `json:"include_glob,omitempty"`
}

// searchWorkers is how many files search_files reads and searches at once.
// Reading is mostly system time, so two keep a core busy each without
// crowding out the rest of the process.
const searchWorkers = 2

// searchJob is a file search_files reads: an entry opened through its
// walk's directory, or the in-root target of a symlink.
type searchJob struct {
	path   string     // the entry's root-relative path, as output names it
	file   *walk.File // a regular file of the walk
	target string     // else the canonical rel of a symlink's target
}

// scanners holds the search buffers between searches, so that a search
// reads into memory it already has. Measured with BenchmarkSearchFilesSmall,
// 16 interleaved runs against a build without the pool: a small search took
// 5.9x as long without it (1.71 ms against 305 us), allocating 2.1 MB
// against 50 KB; over GOROOT (BenchmarkSearchFilesNew) it makes no
// difference.
var scanners = sync.Pool{New: func() any { return search.NewScanner(searchBuffer) }}

// searchFiles implements search_files.
//
// Its memory does not depend on the size of the files or of their lines:
// beside the walk, it holds searchWorkers scanners of searchBuffer bytes
// each (1 MiB, plus 64 KiB to read a long line's match again), a decoded
// copy of a buffer that holds invalid UTF-8, and the result lines, each at
// most MaxLineChars characters with its path and markers: at most
// max_search_results + 1 lines per file, for the files whose results wait to
// be delivered in order (at most ordered's window, 64).
func (fs *FS) searchFiles(ctx context.Context, pattern, path, include string) (string, error) {
	m, err := search.Compile(pattern)
	if err != nil {
		return "", invalidPattern(pattern, err)
	}
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	s := &fileSearch{ctx: ctx, fs: fs, m: m, listing: listing{limit: fs.opts.MaxSearchResults}}
	if include != "" {
		p := compilePattern(include)
		s.include = &p
	}
	if err := s.run(ctx, rel); err != nil {
		return "", err
	}
	return fs.searched(ctx, rel, pattern, SearchGrep, &s.listing, s.in, "No matches found.", "matches")
}

// fileSearch is one search_files call.
type fileSearch struct {
	ctx     context.Context
	fs      *FS
	m       *search.Matcher
	include *pattern
	listing // the output lines
	in      incomplete
}

// run searches rel, a directory (recursively) or a single file. Anything
// else, or nothing at all, has no matches.
func (s *fileSearch) run(ctx context.Context, rel string) error {
	if hidden(rel) {
		return nil
	}
	st, err := s.fs.dir.Lstat(rel)
	switch {
	case err != nil:
		return nil
	case st.Mode().IsRegular():
		if s.included(rel) && s.fs.readable(rel) {
			sc := scanners.Get().(*search.Scanner)
			s.collect(s.search(searchJob{path: rel, target: rel}, sc))
			scanners.Put(sc)
		}
		return nil
	case !st.IsDir():
		return nil
	}
	w, err := newWalk(s.fs, rel, struct{}{})
	if err != nil {
		return nil // gone or unreadable since the lstat
	}
	defer w.Close()

	scs := make([]*search.Scanner, searchWorkers)
	for i := range scs {
		scs[i] = scanners.Get().(*search.Scanner)
	}
	defer func() {
		for _, sc := range scs {
			scanners.Put(sc)
		}
	}()
	next := func() (searchJob, bool) {
		for ctx.Err() == nil && w.Next() {
			if job, ok := s.job(w); ok {
				return job, true
			}
		}
		return searchJob{}, false
	}
	work := func(i int, job searchJob) []string { return s.search(job, scs[i]) }
	ordered.Run(searchWorkers, next, work, s.collect)
	s.in.visited = w.Capped()
	return context.Cause(ctx)
}

// job turns the walker's current entry into a file to search, entering
// directories on the way.
func (s *fileSearch) job(w *walk.Walker[struct{}]) (searchJob, bool) {
	e := w.Entry()
	if hiddenName(e.Name()) {
		return searchJob{}, false
	}
	switch e.Type {
	case walk.Dir:
		// Everything below a denied directory is denied too: skip it whole.
		if !s.fs.entryDenied(e.Path) {
			w.Descend(struct{}{})
		}
	case walk.Regular:
		if s.included(e.Path) && s.fs.entryReadable(e.Path) {
			return searchJob{path: e.Path, file: w.File()}, true
		}
	case walk.Symlink:
		if !s.included(e.Path) {
			break
		}
		if target, ok := s.fs.visibleTarget(e.Path); ok {
			return searchJob{path: e.Path, target: target}, true
		}
	}
	return searchJob{}, false
}

// included reports whether include_glob, if any, matches rel.
func (s *fileSearch) included(rel string) bool {
	return s.include == nil || s.include.match(rel)
}

// search streams one file through sc and returns its output lines, at most
// one more than the cap. A file that cannot be read as a regular text file
// to its end has none.
func (s *fileSearch) search(job searchJob, sc *search.Scanner) []string {
	var src interface {
		search.Source
		io.Closer
	}
	var err error
	if job.file != nil {
		src, err = job.file.Open()
		job.file.Close()
	} else {
		src, err = s.fs.dir.OpenFile(job.target, os.O_RDONLY, 0)
	}
	if err != nil {
		return nil
	}
	defer src.Close()
	var out []string
	var name string
	err = sc.Scan(s.ctx, s.m, src, MaxLineChars, true, func(l search.Line) bool {
		if out == nil {
			name = s.fs.relToCwd(job.path)
		}
		out = append(out, searchLine(name, l))
		return len(out) <= s.limit
	})
	if err != nil {
		return nil
	}
	return out
}

// collect adds one file's lines to the result and reports whether the
// search should go on.
func (s *fileSearch) collect(lines []string) bool {
	for _, l := range lines {
		if !s.add(l) {
			return false
		}
	}
	return true
}

// listing collects the result lines of a tool that walks or searches, up to
// its limit.
type listing struct {
	lines     []string
	limit     int
	truncated bool // a line past the limit was refused
}

// add appends line and reports true, or, at the limit, marks the listing
// truncated and reports false: the walk should stop.
func (l *listing) add(line string) bool {
	if len(l.lines) == l.limit {
		l.truncated = true
		return false
	}
	l.lines = append(l.lines, line)
	return true
}

// render returns empty when the listing holds nothing, its lines otherwise,
// the last one "[... truncated at <limit> <unit>]" when it was truncated.
func (l *listing) render(empty, unit string) string {
	if len(l.lines) == 0 && !l.truncated {
		return empty
	}
	lines := l.lines
	if l.truncated {
		lines = append(lines[:len(lines):len(lines)], "[... truncated at "+strconv.Itoa(l.limit)+" "+unit+"]")
	}
	return strings.Join(lines, "\n")
}

// searched reports to the listener a finished search of rel for pattern, by
// find_files, search_files, list_files or grep (kind), and what it found (a
// search the bounds cut short, in, counts as truncated), then renders found
// with in's notes: empty when it is empty, unit naming what it counts.
func (fs *FS) searched(ctx context.Context, rel, pattern, kind string, found *listing, in incomplete, empty, unit string) (string, error) {
	err := fs.emit(ctx, &FilesSearchedEvent{
		EventBase:  fs.base(ctx, rel),
		Pattern:    pattern,
		Search:     kind,
		MatchCount: len(found.lines),
		Truncated:  found.truncated || in != incomplete{},
	})
	if err != nil {
		return "", err
	}
	return withNotes(found.render(empty, unit), in), nil
}
