package filesystem

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/ordered"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/search"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/walk"
)

func init() {
	registerTool(ToolSearchFiles, func(fs *FS) capabilities.Tool {
		return &tool{
			name: ToolSearchFiles,
			description: "Search file contents with a regular expression (Go RE2 syntax: no lookarounds or " +
				"backreferences), line by line. Returns path:line:text for each matching line, sorted by path. " +
				"path may be a directory (searched recursively) or a file; include_glob keeps only files whose " +
				"path relative to the root matches it (fnmatch: '*' also matches '/'). Hidden and binary files " +
				"are skipped.",
			params: object(map[string]any{
				"pattern":      param("string", "The regular expression to search for."),
				"path":         param("string", "The directory or file to search, relative to the working directory. Default '.'."),
				"include_glob": param("string", "Only search files whose root-relative path matches this fnmatch glob, where '*' also matches '/': '*.py' matches Python files at any depth."),
			}, "pattern"),
			call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var args struct {
					Pattern     string  `json:"pattern"`
					Path        *string `json:"path,omitempty"`
					IncludeGlob *string `json:"include_glob,omitempty"`
				}
				if err := decodeArgs(raw, &args); err != nil {
					return "", err
				}
				return fs.searchFiles(ctx, args.Pattern, deref(args.Path, "."), deref(args.IncludeGlob, ""))
			},
		}
	})
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

// bufPool holds file buffers between searches, so that a search reads into
// memory it already has.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf is the largest buffer kept for reuse; a bigger file gets its
// own, which is dropped afterwards.
const maxPooledBuf = 4 << 20

// searchFiles implements search_files.
func (fs *FS) searchFiles(ctx context.Context, pattern, path, include string) (string, error) {
	m, err := search.Compile(pattern)
	if err != nil {
		return "", capabilities.Retry("Invalid regex pattern: %s", err)
	}
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	s := &fileSearch{fs: fs, m: m, listing: listing{limit: fs.opts.MaxSearchResults}}
	if include != "" {
		p := compilePattern(include)
		s.include = &p
	}
	if err := s.run(ctx, rel); err != nil {
		return "", err
	}
	if err := fs.searchedIncomplete(ctx, rel, pattern, SearchGrep, &s.listing, s.in); err != nil {
		return "", err
	}
	return withNotes(s.render("No matches found.", "matches"), s.in), nil
}

// fileSearch is one search_files call.
type fileSearch struct {
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
	st, err := s.fs.lstat(rel)
	switch {
	case err != nil:
		return nil
	case st.Mode().IsRegular():
		if s.wanted(rel) {
			s.collect(s.search(searchJob{path: rel, target: rel}, new([]byte)))
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

	bufs := make([]*[]byte, searchWorkers)
	for i := range bufs {
		bufs[i] = bufPool.Get().(*[]byte)
	}
	defer func() {
		for _, b := range bufs {
			if cap(*b) <= maxPooledBuf {
				bufPool.Put(b)
			}
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
	work := func(i int, job searchJob) []string { return s.search(job, bufs[i]) }
	ordered.Run(searchWorkers, next, work, s.collect)
	s.in.visited = w.Capped()
	return context.Cause(ctx)
}

// job turns the walker's current entry into a file to search, entering
// directories on the way.
func (s *fileSearch) job(w *walk.Walker[struct{}]) (searchJob, bool) {
	e := w.Entry()
	if strings.HasPrefix(e.Name(), ".") {
		return searchJob{}, false
	}
	switch e.Type {
	case walk.Dir:
		// Everything below a denied directory is denied too: skip it whole.
		if _, denied := matchAny(s.fs.denied, e.Path, true); !denied {
			w.Descend(struct{}{})
		}
	case walk.Regular:
		if s.wanted(e.Path) {
			return searchJob{path: e.Path, file: w.File()}, true
		}
	case walk.Symlink:
		if s.include != nil && !s.include.match(e.Path) {
			break
		}
		if target, ok := s.fs.visibleTarget(e.Path); ok {
			return searchJob{path: e.Path, target: target}, true
		}
	}
	return searchJob{}, false
}

// wanted reports whether the file at rel, not a symlink, is to be searched.
func (s *fileSearch) wanted(rel string) bool {
	return (s.include == nil || s.include.match(rel)) && s.fs.readable(rel)
}

// search reads one file into *buf and returns its output lines, at most one
// more than the cap. A file that cannot be read as a regular text file has
// none.
func (s *fileSearch) search(job searchJob, buf *[]byte) []string {
	var data []byte
	var err error
	if job.file != nil {
		data, err = job.file.Read(*buf, true)
		job.file.Close()
	} else {
		var f *os.File
		if f, err = s.fs.openFile(job.target, os.O_RDONLY, 0); err == nil {
			data, err = walk.ReadOpen(f, *buf, true)
			f.Close()
		}
	}
	if cap(data) > cap(*buf) {
		*buf = data[:0]
	}
	if err != nil {
		return nil
	}
	var out []string
	var name string
	s.m.Match(data, func(n int, line []byte) bool {
		if out == nil {
			name = s.fs.relToCwd(job.path)
		}
		out = append(out, name+":"+strconv.Itoa(n)+":"+string(line))
		return len(out) <= s.limit
	})
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
// find_files, search_files, list_files or grep (kind), and what it found.
func (fs *FS) searched(ctx context.Context, rel, pattern, kind string, found *listing) error {
	return fs.emit(ctx, &FilesSearchedEvent{
		EventBase:  fs.base(ctx, rel),
		Pattern:    pattern,
		Search:     kind,
		MatchCount: len(found.lines),
		Truncated:  found.truncated,
	})
}
