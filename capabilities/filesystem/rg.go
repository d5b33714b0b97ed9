package filesystem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/internal/text"
)

// The ripgrep tools run the rg executable: never through a shell, always
// with --no-config (so no RIPGREP_CONFIG_PATH adds arguments), the pattern
// always through --regexp (so it is never read as a flag). rg applies its own
// ignore rules (.gitignore inside a git repository, .ignore anywhere; an
// explicit glob overrides them).
//
// rg works by path, so the tools never take its word for what a path holds.
// It starts in the directory that passed the walk-root checks, held by a
// descriptor from a walk that follows no symlink (on Linux rg enters it
// through that descriptor, so a path swapped since cannot send it elsewhere).
// Below it rg walks by path, and a directory swapped for a symlink mid-walk
// can lead it out of the root; so every path it prints is checked again
// (rgPaths) and, for grep, every line against the file read through the same
// descriptor walk the other tools use (rgSource). What fails is dropped, and
// counts neither as a result nor toward the caps.
//
// grep runs rg with --text and --encoding none, so that rg searches every
// file's raw bytes, and applies the binary rule of read_file and
// search_files itself (a NUL byte in the first 8192 bytes) as it checks the
// lines: rg's own rule (stop at the first NUL anywhere; decode UTF-16 after
// a byte-order mark) would answer differently for the same file.
//
// rg runs under the call's deadline in a process group of its own, killed
// whole when the deadline passes; what it printed until then is returned with
// a note. Files rg could not read (gone since it listed them, say) are counted
// in a note, and the rest of the result stands.

func init() {
	registerTool(ToolListFiles, func(fs *FS) capabilities.Tool {
		return &tool{
			name: ToolListFiles,
			description: "List the files under a directory, recursively, sorted by path (ripgrep). Respects " +
				".gitignore inside git repositories and .ignore files; glob (a ripgrep glob, gitignore-style: without " +
				"a '/' it matches file names at any depth, e.g. '*.py'; a leading '!' excludes, e.g. '!*.min.js') " +
				"filters the files and overrides ignore files. Hidden files are not listed.",
			params: object(map[string]any{
				"path": param("string", "The directory to list, relative to the working directory. Default '.'."),
				"glob": param("string", "Only list files matching this ripgrep glob (gitignore-style: '*.py' matches at any depth, 'src/*.py' only directly in src)."),
			}),
			call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var args struct {
					Path *string `json:"path,omitempty"`
					Glob *string `json:"glob,omitempty"`
				}
				if err := decodeArgs(raw, &args); err != nil {
					return "", err
				}
				return fs.listFiles(ctx, deref(args.Path, "."), deref(args.Glob, ""))
			},
		}
	})
	registerTool(ToolGrep, func(fs *FS) capabilities.Tool {
		return &tool{
			name: ToolGrep,
			description: "Search file contents with ripgrep. Returns path:line:text for matches and path-line-text " +
				"for context lines, sorted by path. pattern is a ripgrep (Rust) regex unless literal is set. path " +
				"may be a file or a directory. Respects .gitignore inside git repositories and .ignore files; an " +
				"explicit glob overrides them. Hidden files are not searched, nor binary ones (a NUL byte in the first " +
				"8192 bytes), as in search_files.",
			params: object(map[string]any{
				"pattern":     param("string", "The regular expression (or, with literal, the text) to search for."),
				"path":        param("string", "The file or directory to search, relative to the working directory. Default '.'."),
				"glob":        param("string", "Only search files matching this ripgrep glob (gitignore-style: '*.py' matches at any depth, 'src/*.py' only directly in src)."),
				"file_type":   param("string", "Only search files of this ripgrep type, e.g. 'py' or 'go'."),
				"ignore_case": param("boolean", "Match case-insensitively. Default false."),
				"literal":     param("boolean", "Treat pattern as literal text, not a regex. Default false."),
				"context":     param("integer", "Lines of context around each match, 0 to 20. Default 0."),
			}, "pattern"),
			call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				var args struct {
					Pattern    string  `json:"pattern"`
					Path       *string `json:"path,omitempty"`
					Glob       *string `json:"glob,omitempty"`
					FileType   *string `json:"file_type,omitempty"`
					IgnoreCase *bool   `json:"ignore_case,omitempty"`
					Literal    *bool   `json:"literal,omitempty"`
					Context    *int    `json:"context,omitempty"`
				}
				if err := decodeArgs(raw, &args); err != nil {
					return "", err
				}
				return fs.grep(ctx, grepArgs{
					pattern:    args.Pattern,
					path:       deref(args.Path, "."),
					glob:       deref(args.Glob, ""),
					fileType:   deref(args.FileType, ""),
					ignoreCase: deref(args.IgnoreCase, false),
					literal:    deref(args.Literal, false),
					context:    deref(args.Context, 0),
				})
			},
		}
	})
}

var errNoRipgrep = capabilities.Retry("ripgrep (rg) is not installed. Install it, or use the pure-Python search tools.")

// listFiles implements list_files.
func (fs *FS) listFiles(ctx context.Context, path, pattern string) (string, error) {
	if err := checkRipgrepArg("glob", pattern, MaxRipgrepGlob); err != nil {
		return "", err
	}
	rel, err := fs.resolveGated(path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	notDir := capabilities.Retry("Path %s is not a directory.", pyRepr(path))
	if st, err := fs.dir.Lstat(rel); err != nil || !st.IsDir() {
		return "", notDir
	}
	args := []string{"--null", "--color=never", "--files", "--sort", "path"}
	args = append(args, glob.RipgrepArgs(pattern)...)
	found := listing{limit: fs.opts.MaxFindResults}
	run, err := fs.runRipgrep(ctx, path, rel, notDir, rg.SplitPaths, args, "", func(rec []byte, paths *rgPaths) bool {
		full, ok := paths.check(string(rec))
		if !ok {
			return true
		}
		return found.add(fs.relToCwd(full))
	})
	if err != nil {
		return "", err
	}
	found.truncated = run.truncated
	if err := fs.searchedIncomplete(ctx, rel, pattern, SearchFind, &found, run.incomplete); err != nil {
		return "", err
	}
	return withNotes(found.render("No files found.", "files"), run.incomplete), nil
}

type grepArgs struct {
	pattern, path, glob, fileType string
	ignoreCase, literal           bool
	context                       int
}

// grep implements grep.
func (fs *FS) grep(ctx context.Context, a grepArgs) (string, error) {
	if a.context < 0 || a.context > 20 {
		return "", capabilities.Retry("context must be between 0 and 20.")
	}
	for _, arg := range []struct {
		name, value string
		limit       int
	}{{"pattern", a.pattern, MaxRipgrepPattern}, {"glob", a.glob, MaxRipgrepGlob}, {"file_type", a.fileType, MaxRipgrepFileType}} {
		if err := checkRipgrepArg(arg.name, arg.value, arg.limit); err != nil {
			return "", err
		}
	}
	if strings.Contains(a.pattern, "\n") {
		// rg would refuse it with advice to pass --multiline, which the
		// model cannot.
		return "", capabilities.Retry("Argument 'pattern' contains a line break; grep matches within one line. " +
			"Search for the text of one line at a time.")
	}
	rel, err := fs.resolveGated(a.path, fs.checkWalkRoot)
	if err != nil {
		return "", err
	}
	// rg runs in the directory searched, or in a file's directory with the
	// file as its target, so that every path it prints is relative to dir.
	dir, target := rel, "."
	notFound := capabilities.Retry("Path %s is not a file or directory.", pyRepr(a.path))
	switch st, err := fs.dir.Lstat(rel); {
	case err == nil && st.IsDir():
	case err == nil && st.Mode().IsRegular():
		var name string
		dir, name = sandbox.Split(rel)
		target = "./" + name
	default:
		return "", notFound
	}
	args := []string{
		"--null", "--color=never", "--line-number", "--with-filename", "--sort", "path",
		"--max-columns", "4096", "--max-columns-preview", "--context", strconv.Itoa(a.context),
		"--text", "--encoding", "none",
		"--regex-size-limit", RipgrepSizeLimit, "--dfa-size-limit", RipgrepSizeLimit,
	}
	args = append(args, glob.RipgrepArgs(a.glob)...)
	if a.fileType != "" {
		// One argument: rg would read a separate value starting with
		// "--" as a flag of its own (globs and patterns it never does).
		args = append(args, "--type="+a.fileType)
	}
	if a.ignoreCase {
		args = append(args, "--ignore-case")
	}
	if a.literal {
		args = append(args, "--fixed-strings")
	}
	args = append(args, "--regexp", a.pattern, "--", target)

	found := listing{limit: fs.opts.MaxSearchResults}
	src := rgSource{fs: fs}
	defer src.close()
	run, err := fs.runRipgrep(ctx, a.path, dir, notFound, rg.SplitMatches, args, a.pattern, func(rec []byte, paths *rgPaths) bool {
		l, ok := rg.ParseLine(rec)
		if !ok {
			return true
		}
		full, ok := paths.check(string(l.Path[len("./"):]))
		if !ok || !src.has(full, l.Number, l.Text) {
			return true
		}
		sep := ":"
		if l.Context {
			sep = "-"
		}
		return found.add(fs.relToCwd(full) + sep + string(l.Number) + sep + string(text.Decode(l.Text)))
	})
	if err != nil {
		return "", err
	}
	found.truncated = run.truncated
	if err := fs.searchedIncomplete(ctx, rel, a.pattern, SearchGrep, &found, run.incomplete); err != nil {
		return "", err
	}
	return withNotes(found.render("No matches found.", "lines"), run.incomplete), nil
}

// rgRun is how an rg run ended, short of failing.
type rgRun struct {
	truncated bool // record refused one, or a record was too long
	incomplete
}

// runRipgrep runs rg with args in dir, a canonical rel, and hands each output
// record (as split cuts them) to record until it returns false, which stops
// rg and counts as truncated. A record too long to be a path or a line also
// ends the output as truncated. path is dir as the model gave it (or the
// file in it), and gone the error for a dir that is no longer a directory;
// pattern is grep's pattern, for the message when rg refuses it.
func (fs *FS) runRipgrep(ctx context.Context, path, dir string, gone error, split bufio.SplitFunc, args []string, pattern string, record func([]byte, *rgPaths) bool) (run rgRun, err error) {
	paths, err := fs.openRGPaths(dir)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return run, changedToSymlink(path)
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR):
		return run, gone
	case err != nil:
		return run, osError(&iofs.PathError{Op: "open", Path: dir, Err: err})
	}
	defer paths.close()
	p, err := rg.Start(ctx, fs.rgWorkDir(&paths.c, dir), split, args...)
	var chdir *iofs.PathError
	switch {
	case errors.Is(err, rg.ErrNotInstalled):
		return run, errNoRipgrep
	case errors.As(err, &chdir) && chdir.Op == "chdir":
		// The directory went away since it was checked; name it as the
		// model knows it, never by its host path.
		return run, osError(&iofs.PathError{Op: "chdir", Path: dir, Err: chdir.Err})
	case err != nil:
		return run, err
	}
	for {
		rec, ok := p.Next()
		if !ok {
			run.truncated = p.Truncated()
			run.outputCut = p.OutputCut()
			break
		}
		if !record(rec, paths) {
			run.truncated = true
			p.Stop()
			break
		}
	}
	var failure *rg.Failure
	switch err := p.Wait(); {
	case errors.As(err, &failure) && regexRefused(failure):
		return rgRun{}, grepRegexError(pattern, fs.scrubHostPaths(failure.Stderr))
	case errors.As(err, &failure):
		return rgRun{}, capabilities.Retry("ripgrep failed: %s", fs.scrubHostPaths(failure.Error()))
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// rg was killed at the deadline: what it printed until then
		// stands, with a note.
		run.timedOut = true
	case err != nil:
		return rgRun{}, err
	}
	run.unreadable = p.Unreadable()
	return run, nil
}

// scrubHostPaths rewrites the root's absolute path in rg's messages (about
// an ignore file, say) as root-relative text, so that no host path reaches the
// model.
func (fs *FS) scrubHostPaths(msg string) string {
	msg = strings.ReplaceAll(msg, fs.rootDir+string(filepath.Separator), "")
	return strings.ReplaceAll(msg, fs.rootDir, ".")
}

// rgPaths checks the paths rg prints, relative to the directory it runs in
// (base). rg enters the directories below base by path as it walks, so one
// swapped for a symlink at the right moment leads it anywhere: a path is
// shown only if, when it is checked, each directory on it is a real directory
// reached from base without following a symlink and the file is a regular
// file in the last one, and if it passes the dotfile and read-level pattern
// checks. The directories are held as a stack of descriptors, which suits
// rg's output sorted by path: each is opened once while rg prints what it
// holds.
type rgPaths struct {
	fs   *FS
	base string         // canonical rel of the directory rg runs in
	c    sandbox.Cursor // at base, or below it at the directory of the last path checked
	dirs []string       // the components below base that c has entered
	at   string         // dirs joined, "." for base
	// What each directory on the stack holds: base's first, then one per
	// entry of dirs.
	lists []rgListing
	buf   []byte // for listing

	// The last path checked and the verdict: grep prints a file's lines
	// one after another.
	last, lastFull string
	lastOK, seen   bool
}

// openRGPaths holds base, reached from the root without following a
// symlink; rg is started in the directory held.
func (fs *FS) openRGPaths(base string) (*rgPaths, error) {
	c, err := fs.rgCursor(base)
	if err != nil {
		return nil, err
	}
	return &rgPaths{fs: fs, base: base, c: c, at: ".", lists: make([]rgListing, 1)}, nil
}

func (p *rgPaths) close() { p.c.Close() }

// check returns the canonical rel of the file rg printed as rel (relative to
// base), or false when it must not be shown.
func (p *rgPaths) check(rel string) (string, bool) {
	if !p.seen || rel != p.last {
		p.lastFull, p.lastOK = p.verify(rel)
		p.last, p.seen = rel, true
	}
	return p.lastFull, p.lastOK
}

func (p *rgPaths) verify(rel string) (string, bool) {
	full := sandbox.Join(p.base, rel)
	if rel == "" || hidden(full) {
		return "", false
	}
	dir, name := sandbox.Split(rel)
	if !p.enter(dir) || !p.lists[len(p.dirs)].regular(&p.c, name, &p.buf) || !p.fs.readable(full) {
		return "", false
	}
	return full, true
}

// enter moves the cursor to dir, relative to base, and reports whether every
// component on the way is a directory.
func (p *rgPaths) enter(dir string) bool {
	if dir == p.at {
		return true
	}
	var want []string
	if dir != "." {
		want = strings.Split(dir, "/")
	}
	keep := 0
	for keep < len(p.dirs) && keep < len(want) && p.dirs[keep] == want[keep] {
		keep++
	}
	for len(p.dirs) > keep {
		p.c.Up()
		p.dirs = p.dirs[:len(p.dirs)-1]
		p.lists = p.lists[:len(p.lists)-1]
	}
	ok := true
	for _, name := range want[keep:] {
		// hidden has refused "." and ".." already, but down must never
		// see them: ".." would leave the directory.
		if name == "" || name == "." || name == ".." || p.c.Down(name) != nil {
			ok = false
			break
		}
		p.dirs = append(p.dirs, name)
		p.lists = append(p.lists, rgListing{})
	}
	p.at = "."
	if len(p.dirs) > 0 {
		p.at = strings.Join(p.dirs, "/")
	}
	return ok
}

// rgSource confirms the lines grep shows: each must be the line of its
// number in the file at the path checked, read through the descriptor walk
// every other tool opens files with, and the file must be text by the rule
// read_file and search_files apply (text.IsBinary on its first
// text.BinaryProbe bytes). rg opens a file by path, so a directory
// swapped for a symlink at the right moment hands it another file, whose
// lines then differ from the checked file's and are dropped. rg prints a
// file's lines in order and files one after another, so each file is read
// once, up to its last line shown.
type rgSource struct {
	fs      *FS
	started bool
	rel     string              // the file being read
	f       *sandbox.FileReader // rel, or nil when it could not be opened or is binary
	lines   *bufio.Reader       // reads f; kept from file to file
	n       int                 // lines of rel read so far
	buf     []byte              // the start of the line compared
}

// has reports whether rg's text (rg.Line.Text) is what rg prints for line
// number (decimal digits) of rel.
func (s *rgSource) has(rel string, number, text []byte) bool {
	if !s.started || rel != s.rel {
		s.open(rel)
	}
	n, ok := lineNumber(number)
	if s.f == nil || !ok || n <= s.n {
		return false
	}
	for s.n < n-1 {
		if !s.skipLine() {
			return false
		}
	}
	return s.matchLine(text)
}

func (s *rgSource) open(rel string) {
	s.close()
	s.started, s.rel, s.n = true, rel, 0
	f, err := s.fs.dir.OpenReader(rel)
	if err != nil {
		return
	}
	s.f = f
	if s.lines == nil {
		s.lines = bufio.NewReaderSize(f, 64<<10)
	} else {
		s.lines.Reset(f)
	}
	// rg searches raw bytes (--text --encoding none); a binary file is
	// skipped here, whole, as search_files skips it. A read error leaves
	// head short, and the lines then fail to match as they fail to read.
	if head, _ := s.lines.Peek(text.BinaryProbe); text.IsBinary(head) {
		s.close()
	}
}

func (s *rgSource) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// skipLine reads past the next line, and reports false at the end of the
// file: there is no further line to show.
func (s *rgSource) skipLine() bool {
	for {
		_, err := s.lines.ReadSlice('\n')
		switch err {
		case nil:
			s.n++
			return true
		case bufio.ErrBufferFull:
		default:
			return false
		}
	}
}

// matchLine reads the next line and reports whether rg prints it as text.
// Only as much of the line as the comparison needs is kept.
func (s *rgSource) matchLine(text []byte) bool {
	limit := len(text) + len("\r\n")
	s.buf = s.buf[:0]
	size := 0
	for {
		chunk, err := s.lines.ReadSlice('\n')
		size += len(chunk)
		if room := limit - len(s.buf); room > 0 {
			s.buf = append(s.buf, chunk[:min(room, len(chunk))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if (err != nil && err != io.EOF) || size == 0 {
			return false
		}
		break
	}
	s.n++
	return printedAs(s.buf, size <= limit, text)
}

// printedAs reports whether rg, with --max-columns-preview, prints a line
// as text (rg.Line.Text: without its terminator or one "\r" before it).
// line is the line with its terminator when whole, or a prefix of it at
// least len(text)+2 bytes long otherwise.
func printedAs(line []byte, whole bool, text []byte) bool {
	if whole {
		l := bytes.TrimSuffix(line, []byte{'\n'})
		if bytes.Equal(bytes.TrimSuffix(l, []byte{'\r'}), text) {
			return true
		}
	}
	preview, ok := bytes.CutSuffix(text, []byte(rg.Previewed))
	return ok && bytes.HasPrefix(line, preview)
}

// lineNumber parses rg's decimal line number.
func lineNumber(digits []byte) (int, bool) {
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	n := 0
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int(d-'0')
	}
	return n, true
}
